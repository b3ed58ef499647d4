//! The interactive prompt of `tracelake sql`: statements end with `;`; backslash commands
//! as in psql and datafusion-cli (`\d`, `\d NAME`, `\timing`, `\?`), and DuckDB's dot
//! commands that do the same (`.tables`, `.schema NAME`, `.timer`, `.quit`); the history kept
//! between sessions in `~/.tracelake_history`; tab completion of tables, views, columns,
//! functions and keywords.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context as _;
use datafusion::prelude::SessionContext;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use tracelake::engine::{PrintFormat, PrintOptions, did_you_mean, nearest_table, print_statements, query_json};
use tracelake::lake::Lake;

use super::interrupt::{Cancel, Statement};

const HELP: &str = "\
\\d                list tables and views (\\dt tables, \\dv views)
\\d NAME           the columns of a table or view
\\timing [on|off]  say how long each query took (on at the start)
\\maxrows N|inf    rows a table shows at most
\\maxwidth [N|inf] characters a table's lines take at most, values cut to fit (none: the terminal's width; inf: values whole)
\\pset format F    print results as table, csv, json or ndjson
\\i FILE           run the statements and commands of a file
\\?                this help
\\q                quit (or Ctrl-D)
DuckDB's .tables, .schema [NAME], .timer on|off, .maxrows N, .maxwidth N, .mode F, .read FILE, .help and .quit do the same,
and as in DuckDB, FROM events LIMIT 5 reads every column and SUMMARIZE events describes each one.
End SQL statements with `;`. A file path reads the file: SELECT * FROM 'traces.jsonl'.
JSON columns: tool_params->>'order_id', json_get_int(evidence, 'loopSize'); put `->>` in parentheses
before `=` or `IS`: (tool_params->>'order_id') IS NOT NULL. `tracelake functions` lists tracelake's own functions.";

/// Words SQL statements are made of, for completion.
const KEYWORDS: &[&str] = &[
    "select",
    "from",
    "where",
    "group",
    "by",
    "order",
    "having",
    "limit",
    "offset",
    "join",
    "left",
    "right",
    "inner",
    "outer",
    "full",
    "cross",
    "on",
    "using",
    "as",
    "and",
    "or",
    "not",
    "in",
    "is",
    "null",
    "like",
    "ilike",
    "between",
    "case",
    "when",
    "then",
    "else",
    "end",
    "distinct",
    "union",
    "all",
    "with",
    "over",
    "partition",
    "desc",
    "asc",
    "count",
    "explain",
    "analyze",
    "describe",
    "show",
    "tables",
    "create",
    "view",
    "table",
    "drop",
    "copy",
    "to",
    "cast",
    "interval",
    "true",
    "false",
    "exists",
    "filter",
    "window",
];

/// How the prompt ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    Quietly,
    /// With a cancelled statement whose plan still holds the engine's threads: the
    /// process must exit without waiting for them.
    Stuck,
}

/// What the prompt does after an input.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

pub struct Repl {
    session: SessionContext,
    lake: Option<Lake>,
    options: PrintOptions,
    history: Option<PathBuf>,
}

impl Repl {
    pub fn new(session: SessionContext, lake: Option<Lake>, options: PrintOptions) -> Self {
        let history = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".tracelake_history"));
        Self { session, lake, options, history }
    }

    pub async fn run(mut self) -> anyhow::Result<Ended> {
        let mut editor: Editor<Completion, DefaultHistory> = Editor::new().context("starting the interactive prompt")?;
        editor.set_helper(Some(Completion { words: self.names().await? }));
        if let Some(path) = &self.history {
            // A first session has no history file yet.
            let _ = editor.load_history(path);
        }
        println!("{}", self.banner().await?);
        let cancel = Cancel::install()?;
        let mut buffer = String::new();
        let mut buffer_before_meta = String::new();
        loop {
            let prompt = if buffer.is_empty() { "tracelake> " } else { "       ...> " };
            let line = match editor.readline(prompt) {
                Ok(line) => line,
                Err(ReadlineError::Interrupted) => {
                    buffer.clear();
                    continue;
                }
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(e).context("reading input"),
            };
            // A backslash command on a continuation line runs as one, and the statement
            // typed so far waits for its end, as in psql.
            let meta = !buffer.is_empty() && line.trim_start().starts_with('\\');
            if meta {
                buffer_before_meta = std::mem::take(&mut buffer);
            }
            buffer.push_str(&line);
            buffer.push('\n');
            let input = buffer.trim();
            if !is_complete(input) {
                continue;
            }
            let _ = editor.add_history_entry(input);
            if let Some(path) = &self.history {
                let _ = editor.save_history(path);
            }
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let run = cancel.run(self.handle(input, &mut out)).await;
            buffer = std::mem::take(&mut buffer_before_meta);
            match run {
                Statement::Done(Ok(Flow::Quit)) => break,
                Statement::Done(Ok(Flow::Continue)) => {}
                Statement::Done(Err(e)) => eprintln!("error: {}", super::message(&e)),
                Statement::Cancelled => {
                    writeln!(out, "Query cancelled")?;
                    continue;
                }
                Statement::Stuck => {
                    writeln!(out, "Query cancelled, but its plan does not yield and keeps every thread of the engine: quitting")?;
                    return Ok(Ended::Stuck);
                }
            }
            drop(out);
            if let Some(helper) = editor.helper_mut() {
                helper.words = self.names().await?;
            }
        }
        Ok(Ended::Quietly)
    }

    /// Runs a script given at once (an argument, a file, standard input): each line that
    /// starts with a backslash is a command, the lines between them SQL, as psql reads it.
    pub async fn run_script(&mut self, script: &str, out: &mut dyn Write) -> anyhow::Result<()> {
        let mut sql = String::new();
        for line in script.lines() {
            // A dot command only where no statement waits for its end: `e\n.session` is SQL.
            let between_statements = sql.trim().is_empty() || sql.trim_end().ends_with(';');
            let command = line.trim_start().starts_with('\\') || (between_statements && is_dot_command(line.trim_start()));
            if !command {
                sql.push_str(line);
                sql.push('\n');
                continue;
            }
            if !sql.trim().is_empty() {
                self.handle(std::mem::take(&mut sql).trim(), out).await?;
            }
            if self.handle(line.trim(), out).await? == Flow::Quit {
                return Ok(());
            }
        }
        if !sql.trim().is_empty() {
            self.handle(sql.trim(), out).await?;
        }
        Ok(())
    }

    /// Runs one complete input: a backslash command, or statements ending with `;`.
    pub async fn handle(&mut self, input: &str, out: &mut dyn Write) -> anyhow::Result<Flow> {
        let command = match input.strip_prefix('\\') {
            Some(command) => command.to_owned(),
            None if is_dot_command(input) => as_backslash_command(input)?,
            None => {
                if matches!(input, "quit" | "exit") {
                    return Ok(Flow::Quit);
                }
                print_statements(&self.session, self.lake.as_ref(), input, &self.options, out).await.map_err(|e| with_hint(e, input))?;
                return Ok(Flow::Continue);
            }
        };
        let (name, argument) = split_command(&command);
        match (name, argument) {
            ("q", _) => return Ok(Flow::Quit),
            ("?", _) => writeln!(out, "{HELP}")?,
            ("d", "") => self.list(out, None).await?,
            ("dt", _) => self.list(out, Some("BASE TABLE")).await?,
            ("dv", _) => self.list(out, Some("VIEW")).await?,
            ("d", table) => self.describe(out, table).await?,
            ("timing", switch) => {
                self.options.timing = match switch {
                    "" => !self.options.timing,
                    "on" => true,
                    "off" => false,
                    other => anyhow::bail!("\\timing takes on or off, not `{other}`"),
                };
                writeln!(out, "Timing is {}.", if self.options.timing { "on" } else { "off" })?;
            }
            ("pset", setting) => match split_command(setting) {
                ("format", name) => {
                    self.options.format = name.parse().map_err(anyhow::Error::msg)?;
                    writeln!(out, "Output format is {name}.")?;
                }
                _ => anyhow::bail!("\\pset takes format table|csv|json|ndjson, not `{setting}`"),
            },
            ("i", "") => anyhow::bail!("\\i takes a file: \\i FILE (DuckDB's .read FILE)"),
            ("i", path) => {
                let script = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
                // Boxed: a file's commands may include another file.
                Box::pin(self.run_script(&script, out)).await?;
            }
            ("maxrows", rows) => {
                self.options.max_rows = super::sql::max_rows(rows).map_err(anyhow::Error::msg)?;
                writeln!(out, "Tables show at most {} rows.", if self.options.max_rows == 0 { "all".to_owned() } else { rows.to_owned() })?;
            }
            ("maxwidth", "") => {
                self.options.max_width = super::sql::terminal_width();
                match self.options.max_width {
                    0 => writeln!(out, "Tables show values whole: the output is no terminal.")?,
                    n => writeln!(out, "Tables fit the terminal's width, {n} characters.")?,
                }
            }
            ("maxwidth", width) => {
                self.options.max_width = super::sql::max_width(width).map_err(anyhow::Error::msg)?;
                match self.options.max_width {
                    0 => writeln!(out, "Tables show values whole.")?,
                    n => writeln!(out, "Tables take at most {n} characters a line.")?,
                }
            }
            _ => anyhow::bail!("unknown command `\\{name}`: `\\?` lists the commands"),
        }
        Ok(Flow::Continue)
    }

    /// The tables and views, or those of one `kind`.
    async fn list(&self, out: &mut dyn Write, kind: Option<&str>) -> anyhow::Result<()> {
        let filter = kind.map(|k| format!(" AND table_type = '{k}'")).unwrap_or_default();
        let sql = format!(
            "SELECT table_name AS name, CASE table_type WHEN 'VIEW' THEN 'view' ELSE 'table' END AS kind \
             FROM information_schema.tables WHERE table_schema = 'public'{filter} ORDER BY name"
        );
        self.print_listing(&sql, out).await
    }

    async fn describe(&self, out: &mut dyn Write, table: &str) -> anyhow::Result<()> {
        // As in SQL: a name in double quotes keeps its case, others are lower-cased.
        let name = table.strip_prefix('"').and_then(|t| t.strip_suffix('"')).map_or_else(|| table.to_lowercase(), str::to_owned);
        let literal = tracelake::engine::sql::string_literal(&name);
        let sql = format!(
            "SELECT column_name AS column, data_type AS type, is_nullable AS nullable FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name = {literal} ORDER BY ordinal_position"
        );
        if query_json(&self.session, &sql).await?.is_empty() {
            let hint = did_you_mean(nearest_table(&self.session, &name).as_deref());
            anyhow::bail!("no table or view `{name}`{hint}: `\\d` lists them");
        }
        self.print_listing(&sql, out).await
    }

    async fn print_listing(&self, sql: &str, out: &mut dyn Write) -> anyhow::Result<()> {
        let options = PrintOptions { format: PrintFormat::Table, max_rows: 0, timing: false, max_width: self.options.max_width };
        print_statements(&self.session, self.lake.as_ref(), sql, &options, out).await?;
        Ok(())
    }

    async fn banner(&self) -> anyhow::Result<String> {
        let mut tables = Vec::new();
        let mut views = Vec::new();
        let sql = "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name";
        for row in query_json(&self.session, sql).await? {
            let name = row["table_name"].as_str().unwrap_or_default().to_owned();
            if row["table_type"] == "VIEW" { views.push(name) } else { tables.push(name) }
        }
        let on = match &self.lake {
            Some(lake) => format!("tracelake SQL on {}\ntables: {}\nviews: {}", lake.location(), tables.join(", "), views.join(", ")),
            None => "tracelake SQL with no lake (--lake DIR or TRACELAKE_LAKE for one): query files by path, \
                     SELECT * FROM 'events.jsonl'"
                .to_owned(),
        };
        Ok(format!("{on}\nEnd statements with `;`. `\\?` for help, `\\q` to quit."))
    }

    /// Every name the prompt completes: tables, views, columns, functions, keywords.
    async fn names(&self) -> anyhow::Result<Vec<String>> {
        let sql = "SELECT DISTINCT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' \
                   UNION SELECT DISTINCT column_name FROM information_schema.columns WHERE table_schema = 'public'";
        let mut words: Vec<String> =
            query_json(&self.session, sql).await?.iter().filter_map(|r| r["name"].as_str().map(str::to_owned)).collect();
        let state = self.session.state();
        words.extend(state.scalar_functions().keys().cloned());
        words.extend(state.aggregate_functions().keys().cloned());
        words.extend(state.window_functions().keys().cloned());
        words.extend(KEYWORDS.iter().map(|k| (*k).to_owned()));
        words.sort();
        words.dedup();
        Ok(words)
    }
}

/// `e` with what to do about it, where the error alone misleads: `->>` binds more loosely
/// than `=` and `IS`, so `tool_params->>'id' IS NULL` hands a Boolean to `json_as_text`;
/// and DataFusion cannot run a scalar subquery correlated by anything but `=`, which it
/// reports as an unsupported expression or a failed optimizer rule; DuckDB's `SUMMARIZE`
/// runs only on its own, and a query that starts with `FROM` takes its `SELECT` before
/// any other clause, as in DuckDB.
fn with_hint(e: tracelake::engine::EngineError, input: &str) -> anyhow::Error {
    let text = e.to_string();
    if text.contains("Boolean") && (text.contains("json_as_text") || text.contains("json_get")) {
        return anyhow::anyhow!(
            "{text}\nhint: `->` and `->>` bind more loosely than `=`, `IS` and `AND`: put them in parentheses, as in (tool_params->>'order_id') IS NOT NULL"
        );
    }
    if text.contains("logical expression ScalarSubquery") || text.contains("'scalar_subquery_to_join' failed") {
        return anyhow::anyhow!(
            "{text}\nhint: a subquery in the select list or WHERE that compares the outer query's columns other than by `=` \
             (as `WHERE c.idx < u.idx`) cannot be run; join and aggregate instead, as in \
             SELECT u.id, count(c.id) FROM events u LEFT JOIN events c ON c.session = u.session AND c.ts < u.ts GROUP BY u.id"
        );
    }
    if text.to_ascii_lowercase().contains("found: summarize") {
        return anyhow::anyhow!("{text}\nhint: {SUMMARIZE_HERE}");
    }
    let from_first = input.split(';').any(|statement| statement.split_whitespace().next().is_some_and(|w| w.eq_ignore_ascii_case("FROM")));
    if from_first
        && ["WHERE", "GROUP", "HAVING", "QUALIFY", "ORDER", "LIMIT"]
            .iter()
            .any(|clause| text.to_ascii_uppercase().contains(&format!("END OF STATEMENT, FOUND: {clause}")))
    {
        return anyhow::anyhow!(
            "{text}\nhint: a query that starts with FROM takes its SELECT before any other clause, as in DuckDB: write \
             FROM events SELECT id WHERE type = 'tool.call', or FROM events WHERE type = 'tool.call' for every column"
        );
    }
    e.into()
}

/// Where DuckDB's `SUMMARIZE` runs here.
const SUMMARIZE_HERE: &str =
    "SUMMARIZE runs as an input of its own (`SUMMARIZE events`, or `SUMMARIZE SELECT …`), not among other statements";

/// Whether the lines typed so far make an input to run: a backslash or dot command,
/// `quit`, or SQL ending with `;`.
fn is_complete(input: &str) -> bool {
    input.starts_with('\\') || is_dot_command(input) || matches!(input, "quit" | "exit") || input.ends_with(';')
}

/// A command's name and its argument, trimmed.
fn split_command(command: &str) -> (&str, &str) {
    command.split_once(char::is_whitespace).map_or((command, ""), |(name, argument)| (name, argument.trim()))
}

/// Whether `input` is one of DuckDB's and sqlite3's dot commands (`.tables`); no SQL
/// statement starts with a dot.
fn is_dot_command(input: &str) -> bool {
    input.strip_prefix('.').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// The backslash command that does what the dot command `input` does in DuckDB.
fn as_backslash_command(input: &str) -> anyhow::Result<String> {
    let (name, argument) = split_command(&input[1..]);
    Ok(match name {
        // DuckDB's `.tables` takes a pattern, not a table to describe.
        "tables" => "d".to_owned(),
        "schema" => format!("d {argument}"),
        "timer" => format!("timing {argument}"),
        "maxrows" => format!("maxrows {argument}"),
        // DuckDB's `.maxwidth 0` is the terminal's width.
        "maxwidth" if argument == "0" => "maxwidth".to_owned(),
        "maxwidth" => format!("maxwidth {argument}"),
        "mode" => format!(
            "pset format {}",
            match argument {
                "jsonlines" => "ndjson",
                "box" | "duckbox" => "table",
                other => other,
            }
        ),
        "read" => format!("i {argument}"),
        "help" => "?".to_owned(),
        "quit" | "exit" => "q".to_owned(),
        _ => anyhow::bail!("unknown command `.{name}`: `\\?` lists the commands"),
    })
}

struct Completion {
    words: Vec<String>,
}

impl Completer for Completion {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _: &Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, words) = completions(&self.words, line, pos);
        Ok((start, words.into_iter().map(|w| Pair { display: w.clone(), replacement: w }).collect()))
    }
}

/// Where the word before `pos` starts, and the names it may be the start of. A keyword
/// is offered in capitals when the word is typed in capitals.
fn completions(words: &[String], line: &str, pos: usize) -> (usize, Vec<String>) {
    let before = &line[..pos];
    let start =
        before.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + before[i..].chars().next().map_or(1, char::len_utf8));
    let prefix = &before[start..];
    if prefix.is_empty() {
        return (pos, Vec::new());
    }
    let lower = prefix.to_lowercase();
    let capitals = prefix.chars().any(char::is_alphabetic) && !prefix.chars().any(char::is_lowercase);
    let mut found: Vec<String> = words
        .iter()
        .filter(|w| w.to_lowercase().starts_with(&lower))
        .map(|w| if capitals && KEYWORDS.contains(&w.as_str()) { w.to_uppercase() } else { w.clone() })
        .collect();
    found.sort_unstable();
    found.dedup();
    (start, found)
}

impl Hinter for Completion {
    type Hint = String;
}
impl Highlighter for Completion {}
impl Validator for Completion {}
impl Helper for Completion {}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Vec<String> {
        ["chain_events", "chain_endings", "events", "tool_params", "json_get_int", "select", "session"].map(str::to_owned).to_vec()
    }

    #[test]
    fn completes_the_word_before_the_cursor() {
        let line = "SELECT tool_pa";
        assert_eq!(completions(&words(), line, line.len()), (7, vec!["tool_params".to_owned()]));
        let line = "select * from chain_e";
        assert_eq!(completions(&words(), line, line.len()).1, ["chain_endings", "chain_events"]);
        assert_eq!(completions(&words(), "json_get_i(", 10), (0, vec!["json_get_int".to_owned()]));
        assert_eq!(completions(&words(), "SEL", 3).1, ["SELECT"], "a keyword in the case it is typed in");
        assert_eq!(completions(&words(), "se", 2).1, ["select", "session"]);
        assert_eq!(completions(&words(), "SELECT ", 7).1, Vec::<String>::new(), "no word, no guess");
        assert_eq!(completions(&words(), "»ev", 4), (2, vec!["events".to_owned()]), "after a character of two bytes");
    }
}
