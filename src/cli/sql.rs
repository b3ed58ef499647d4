//! `tracelake sql`: ad-hoc SQL over the lake, one-shot or interactive.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tracelake::engine::files::with_file_tables;
use tracelake::engine::print::MAX_TABLE_ROWS;
use tracelake::engine::session::lakeless_session;
use tracelake::engine::{EngineError, EngineOptions, PrintFormat, PrintOptions, open_session};
use tracelake::lake::history::{AsOf, lake_as_of_shared};

use super::Ctx;
use super::repl::{Ended, Repl};
use super::time_args::parse_as_of;

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// SQL to run (several statements separated by `;`). Without it and without -f: an
    /// interactive prompt on a terminal, or SQL read from standard input. SQL that begins
    /// with a `--` comment is SQL too, not an option.
    #[arg(allow_hyphen_values = true)]
    query: Option<String>,
    /// Read the SQL from a file.
    #[arg(short = 'f', long = "file", env = "TRACELAKE_SQL_FILE", conflicts_with = "query")]
    file: Option<PathBuf>,
    /// Output format.
    #[arg(
        long,
        env = "TRACELAKE_SQL_FORMAT",
        default_value_t = PrintFormat::Table,
        value_parser = super::one_of::<PrintFormat>(&PrintFormat::NAMES)
    )]
    format: PrintFormat,
    /// Rows a table shows at most; `inf` (or 0) shows them all. The count of all rows is
    /// printed below the table.
    #[arg(long, env = "TRACELAKE_SQL_MAXROWS", default_value_t = MAX_TABLE_ROWS, value_parser = max_rows)]
    maxrows: usize,
    /// Characters a table's lines take at most, long values cut (`…`) and middle columns
    /// left out to fit, as DuckDB prints; `inf` (or 0) prints values whole. Default: the
    /// terminal's width when printing to one, else `inf`.
    #[arg(long, env = "TRACELAKE_SQL_MAXWIDTH", value_parser = max_width)]
    maxwidth: Option<usize>,
    /// Read the lake as it was: at a revision (as `status` prints it) or a time
    /// (`2026-11-27T10:00:00Z`, `2026-11-27`, `2h` ago).
    #[arg(long, value_parser = parse_as_of)]
    as_of: Option<AsOf>,
}

/// `inf` or a number of rows (0 for all).
pub fn max_rows(text: &str) -> Result<usize, String> {
    number_or_inf(text, "rows", "all")
}

/// `inf` or a number of characters (0 for values whole).
pub fn max_width(text: &str) -> Result<usize, String> {
    number_or_inf(text, "characters", "values whole")
}

/// `text` as a number of `what`, `inf` (what `inf` gives) as 0.
fn number_or_inf(text: &str, what: &str, inf_gives: &str) -> Result<usize, String> {
    match text.trim() {
        "inf" => Ok(0),
        n => n.parse().map_err(|_| format!("`{n}` is not a number of {what} (or `inf` for {inf_gives})")),
    }
}

/// The terminal's width when standard output is one, else 0 (values whole).
pub fn terminal_width() -> usize {
    let term = console::Term::stdout();
    if !term.is_term() {
        return 0;
    }
    term.size_checked().map_or(0, |(_, columns)| usize::from(columns))
}

pub async fn run(ctx: &Ctx, args: SqlArgs) -> anyhow::Result<ExitCode> {
    let prompt = args.query.is_none() && args.file.is_none() && std::io::stdin().is_terminal();
    if !prompt {
        // The prompt cancels a statement at Ctrl-C; statements given otherwise end with it.
        super::interrupt::exit_on_interrupt(|| "interrupted".to_owned())?;
    }
    // Without a lake, files queried by path are the only tables, as in datafusion-cli.
    let lake = if ctx.lake.is_some() { Some(ctx.existing_lake()?) } else { None };
    if lake.is_none() && args.as_of.is_some() {
        anyhow::bail!("--as-of reads a lake as it was: give the lake with --lake DIR or TRACELAKE_LAKE");
    }
    let session = match &lake {
        Some(lake) => {
            let as_of = lake_as_of_shared(lake, args.as_of)?;
            let session = open_session(lake, ctx.redactor()?, &EngineOptions { as_of, ..ctx.engine()? }).await?;
            ctx.note_single_worker();
            session
        }
        None => lakeless_session(ctx.redactor()?, &ctx.engine()?)?,
    };
    let session = with_file_tables(session)?;
    let max_width = args.maxwidth.unwrap_or_else(terminal_width);
    let options = PrintOptions { format: args.format, max_rows: args.maxrows, timing: false, max_width };
    let sql = match (&args.query, &args.file) {
        (Some(q), _) => q.clone(),
        (None, Some(path)) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        (None, None) if prompt => {
            if Repl::new(session, lake, PrintOptions { timing: true, ..options }).run().await? == Ended::Stuck {
                // The engine's threads would never be joined: end here, as an interrupt does.
                std::io::stdout().flush()?;
                super::interrupt::exit_interrupted();
            }
            return Ok(ExitCode::SUCCESS);
        }
        (None, None) => {
            let mut sql = String::new();
            std::io::stdin().read_to_string(&mut sql).context("reading SQL from standard input")?;
            sql
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let lakeless = lake.is_none();
    Repl::new(session, lake, options).run_script(&sql, &mut out).await.map_err(|e| {
        // A table the query names may be the lake's.
        let no_table = e.chain().any(|cause| matches!(cause.downcast_ref::<EngineError>(), Some(EngineError::NoSuchTable { .. })));
        if lakeless && no_table { anyhow::anyhow!("{} (no lake was given: --lake DIR or TRACELAKE_LAKE)", super::message(&e)) } else { e }
    })?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
