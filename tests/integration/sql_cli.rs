//! `tracelake sql`: output formats, several statements, files, errors.

use std::io::Write;

use serde_json::{Value, json};

use crate::common::{realworld, tracelake, tracelake_ok};

pub fn imported_lake() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    (dir, lake)
}

const QUERY: &str = "SELECT type, count(*) AS n FROM events WHERE type IN ('session.start', 'session.end') GROUP BY type ORDER BY type";

#[test]
fn prints_every_format() {
    let (_dir, lake) = imported_lake();
    let table = tracelake_ok(&["sql", "--lake", &lake, QUERY]);
    assert!(table.contains("| session.end   | 100 |") && table.contains("2 rows"), "{table}");

    let csv = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", QUERY]);
    assert_eq!(csv, "type,n\nsession.end,100\nsession.start,100\n");

    let json: Value = serde_json::from_str(&tracelake_ok(&["sql", "--lake", &lake, "--format", "json", QUERY])).unwrap();
    assert_eq!(json, json!([{"type": "session.end", "n": 100}, {"type": "session.start", "n": 100}]));

    let ndjson = tracelake_ok(&["sql", "--lake", &lake, "--format", "ndjson", QUERY]);
    assert_eq!(ndjson, "{\"type\":\"session.end\",\"n\":100}\n{\"type\":\"session.start\",\"n\":100}\n");

    let empty = tracelake_ok(&["sql", "--lake", &lake, "--format", "json", "SELECT id FROM events WHERE false"]);
    assert_eq!(empty.trim(), "[]");

    // A query pasted from a file often begins with a comment, which is no option.
    let commented = format!("-- sessions begun and ended\n{QUERY}");
    assert_eq!(tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", &commented]), csv);
}

#[test]
fn runs_several_statements_from_a_file() {
    let (dir, lake) = imported_lake();
    let file = dir.path().join("q.sql");
    let mut f = std::fs::File::create(&file).unwrap();
    writeln!(f, "CREATE VIEW tool_failures AS SELECT * FROM events WHERE tool_error IS NOT NULL;").unwrap();
    writeln!(f, "SELECT count(*) AS failures FROM tool_failures;").unwrap();
    writeln!(f, "SELECT chain_id('s', 'main', 1700000000000) AS id, redact('PASSWORD=x') AS r;").unwrap();
    drop(f);
    let out = tracelake_ok(&["sql", "--lake", &lake, "--format", "ndjson", "-f", file.to_str().unwrap()]);
    let expected_failures =
        std::fs::read_to_string(realworld("tau-retail.events.jsonl")).unwrap().lines().filter(|l| l.contains("\"error\":")).count();
    assert_eq!(
        out,
        format!(
            "{{\"failures\":{expected_failures}}}\n{{\"id\":\"{}\",\"r\":\"PASSWORD=[REDACTED]\"}}\n",
            tracelake::udfs::chain_id::chain_id("s", "main", 1_700_000_000_000)
        )
    );
}

/// `tracelake ARGS` with `input` on its standard input.
fn with_input(args: &[&str], input: &[u8]) -> std::process::Output {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn reads_sql_from_standard_input() {
    let (_dir, lake) = imported_lake();
    let out = with_input(&["sql", "--lake", &lake, "--format", "csv"], b"SELECT count(*) AS n FROM events;");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n3160\n");
}

/// Backslash commands work from an argument and from standard input, as in psql.
#[test]
fn meta_commands_work_outside_the_prompt() {
    let (_dir, lake) = imported_lake();
    let help = tracelake_ok(&["sql", "--lake", &lake, "\\?"]);
    assert!(help.contains("(tool_params->>'order_id') IS NOT NULL"), "the example uses real columns: {help}");
    let columns = tracelake_ok(&["sql", "--lake", &lake, "\\d events"]);
    assert!(columns.contains("| tool_params ") && columns.contains("| column "), "{columns}");
    let misspelt = tracelake(&["sql", "--lake", &lake, "\\d evnts"]);
    let said = String::from_utf8_lossy(&misspelt.stderr);
    assert!(said.contains("no table or view `evnts` (did you mean events?): `\\d` lists them"), "{said}");
    let out = with_input(&["sql", "--lake", &lake], b"\\dt\nSELECT 40 + 2\n  AS answer;\n\\dv\n");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (tables, views) = (shown.find("| events ").unwrap(), shown.rfind("| chain_events ").unwrap());
    let answer = shown.find("| 42 ").expect("the SQL between the commands ran");
    assert!(tables < answer && answer < views, "in the order given: {shown}");

    // DuckDB's dot commands do the same; a dot that continues a statement is SQL.
    assert_eq!(tracelake_ok(&["sql", "--lake", &lake, ".schema events"]), columns);
    let script = b".tables\nSELECT count(*) AS n FROM events e WHERE e\n.session IS NOT NULL;\n.quit\nSELECT 1;\n";
    let out = with_input(&["sql", "--lake", &lake, "--format", "csv"], script);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(shown.contains("| events ") && shown.ends_with("n\n3160\n"), "listed, ran, quit before the last: {shown}");
    let out = with_input(&["sql", "--lake", &lake], b".mode csv\nSELECT 42 AS answer;\n\\pset format jsonx\n");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(shown, "Output format is csv.\nanswer\n42\n");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("format `jsonx` is not one of table, csv, json, ndjson"), "{said}");
    let out = with_input(&["sql", "--lake", &lake], b"\\pset format ndjson\n.mode jsonlines\nSELECT 42 AS answer;\n");
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("\n{\"answer\":42}\n"));
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("inner.sql");
    std::fs::write(&inner, "\\d events\n").unwrap();
    let outer = dir.path().join("outer.sql");
    std::fs::write(&outer, format!("SELECT 42 AS answer;\n.read {}\n", inner.display())).unwrap();
    let included = tracelake_ok(&["sql", "--lake", &lake, &format!("\\i {}", outer.display())]);
    assert!(included.contains("| 42 ") && included.contains("| tool_params "), "both files ran: {included}");
    let missing = tracelake(&["sql", "--lake", &lake, "\\i /nonexistent/x.sql"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("reading /nonexistent/x.sql"));
    let no_file = tracelake(&["sql", "--lake", &lake, ".read"]);
    assert!(String::from_utf8_lossy(&no_file.stderr).contains("\\i takes a file: \\i FILE"));
    let unknown = tracelake(&["sql", "--lake", &lake, ".open other.db"]);
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(said.contains("unknown command `.open`: `\\?` lists the commands"), "{said}");
}

#[test]
fn errors_are_clear_and_exit_1() {
    let (dir, lake) = imported_lake();
    let bad = tracelake(&["sql", "--lake", &lake, "SELEC nonsense"]);
    assert_eq!(bad.status.code(), Some(1));
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.starts_with("error: SQL syntax error: ") && said.contains("Line: 1, Column: 1"), "{said}");
    assert_eq!((said.lines().count(), said.matches("SELEC").count()), (1, 1), "one line, the text once: {said}");

    let among_others = tracelake(&["sql", "--lake", &lake, "SELECT 1; summarize events"]);
    let said = String::from_utf8_lossy(&among_others.stderr);
    assert!(said.contains("hint: SUMMARIZE runs as an input of its own"), "{said}");
    let where_then_select = tracelake(&["sql", "--lake", &lake, "FROM events WHERE type = 'tool.call' SELECT id"]);
    let said = String::from_utf8_lossy(&where_then_select.stderr);
    assert!(said.starts_with("error: SQL syntax error: Expected: end of statement, found: WHERE"), "one line, no debug form: {said}");
    assert!(said.contains("hint: a query that starts with FROM takes its SELECT before any other clause"), "{said}");
    let examples = said.split("write ").nth(1).expect("examples").trim().trim_end_matches(" for every column");
    for example in examples.split(", or ") {
        let calls = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", &format!("SELECT count(*) AS n FROM ({example})")]);
        assert_ne!(calls, "n\n0\n", "{example} runs and finds the calls");
    }
    let not_from_first = tracelake(&["sql", "--lake", &lake, "SELECT id FROM events LIMIT 1 WHERE type = 'tool.call'"]);
    assert!(!String::from_utf8_lossy(&not_from_first.stderr).contains("hint"), "{not_from_first:?}");

    let precedence = tracelake(&["sql", "--lake", &lake, "SELECT count(*) FROM events WHERE tool_params->>'order_id' IS NOT NULL"]);
    let said = String::from_utf8_lossy(&precedence.stderr);
    assert!(said.contains("hint: `->` and `->>` bind more loosely") && said.contains("(tool_params->>'order_id') IS NOT NULL"), "{said}");

    let missing = tracelake(&["sql", "--lake", dir.path().join("nope").to_str().unwrap(), "SELECT 1"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist: make a lake with `tracelake import"), "{missing:?}");

    let traces = realworld("tau-retail.events.jsonl").display().to_string();
    for (args, said) in [
        (vec!["status", "--lake", &traces], "is a file: --lake names the directory a lake is kept in"),
        (vec!["import", "--lake", &traces, &traces], "to make one of this file, `tracelake import --lake DIR "),
        (
            vec!["sql", "--lake", &lake, "SELECT * FROM event"],
            "no table or view named event (did you mean events?); `SHOW TABLES` lists them",
        ),
        (vec!["sql", "--lake", &lake, "SELECT * FROM chain_event"], "(did you mean chain_events?)"),
        (vec!["sql", "--lake", &lake, "SELECT * FROM sessions"], "no table or view named sessions; `SHOW TABLES` lists them"),
        (vec!["sql", "--lake", &lake, "SELECT * FROM 'no/such/traces.parquet'"], "no table, view or file named no/such/traces.parquet"),
        (
            vec!["sql", "--lake", &lake, "SELECT * FROM read_csv('x.csv', hedaer = false)"],
            "error: read_csv('x.csv'): no option hedaer here (did you mean header?); options: header, delim",
        ),
        (
            vec!["sql", "--lake", &lake, "SELECT nonexistent FROM events"],
            "no column named nonexistent; the columns here are stream_seq, id, ts,",
        ),
        (
            vec!["sql", "--lake", &lake, "SELECT count(*) FROM events WHERE sesion = 'x'"],
            "no column named sesion (did you mean session?)\n",
        ),
        (
            vec!["sql", "--lake", &lake, "SELECT e.waiting FROM cortex_messages e JOIN events USING (session)"],
            "no column named waiting (did you mean waiting_for?)\n",
        ),
        (vec!["sql", "--lake", &lake, "SELECT tool_res FROM events"], "(did you mean tool_result?)"),
        (vec!["sql", "--lake", &lake, "SELECT tool FROM events"], "(did you mean tool_name, tool_params"),
        (
            vec![
                "sql",
                "--lake",
                &lake,
                "SELECT (SELECT count(*) FROM events c WHERE c.session = u.session AND c.ts < u.ts) FROM events u",
            ],
            "hint: a subquery in the select list or WHERE that compares the outer query's columns other than by `=`",
        ),
        (
            vec![
                "sql",
                "--lake",
                &lake,
                "SELECT (SELECT count(*) FROM chain_events c WHERE c.chain_no = u.chain_no AND c.idx < u.idx) FROM chain_events u",
            ],
            "join and aggregate instead",
        ),
        (vec!["import", "--lake", &lake, "/nonexistent.jsonl"], "No such file or directory"),
        (vec!["status", "--lake", &lake, "--config", "/nonexistent.json"], "No such file or directory"),
    ] {
        let out = tracelake(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.matches(said).count(), 1, "{args:?} says it once: {stderr}");
    }

    // The rewrite the subquery hint shows runs.
    let rewritten = tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "csv",
        "SELECT count(*) AS n FROM (SELECT u.id, count(c.id) FROM events u LEFT JOIN events c ON c.session = u.session AND c.ts < u.ts GROUP BY u.id)",
    ]);
    assert_eq!(rewritten, "n\n3160\n");

    let usage = tracelake(&["sql", "--lake", &lake, "--format", "xml", "SELECT 1"]);
    assert_eq!(usage.status.code(), Some(2), "usage errors exit 2");

    let no_lake = tracelake(&["status"]);
    assert!(String::from_utf8_lossy(&no_lake.stderr).contains("or set TRACELAKE_LAKE"), "{no_lake:?}");
}

/// A statement that reads the chains three times or more builds them once, into a file
/// the session reads from then on: the same rows as the views over the lake, and a
/// detector's file run by hand finds what `analyze` found.
#[test]
fn a_statement_that_reads_the_chains_often_builds_them_once() {
    let (_dir, lake) = imported_lake();
    let csv = |sql_args: &[&str]| tracelake_ok(&[&["sql", "--lake", &lake, "--format", "csv", "--maxrows", "inf"], sql_args].concat());
    let once = csv(&["EXPLAIN SELECT count(*) FROM chains"]);
    assert!(!once.contains("chain_events.parquet"), "one reading builds the chains in its plan: {once}");

    // The view binds the chains as they are before the statement after it builds them.
    let compared = csv(&["CREATE VIEW over_the_lake AS SELECT session, idx, why FROM consequential_calls; \
         SELECT (SELECT count(*) FROM over_the_lake) AS n, \
             (SELECT count(*) FROM (SELECT session, idx, why FROM consequential_calls EXCEPT SELECT * FROM over_the_lake)) AS new_only, \
             (SELECT count(*) FROM (SELECT * FROM over_the_lake EXCEPT SELECT session, idx, why FROM consequential_calls)) AS old_only; \
         EXPLAIN SELECT count(*) FROM chains"]);
    let counts = compared.lines().skip_while(|l| *l != "n,new_only,old_only").nth(1).expect("the counts");
    let counts: Vec<u64> = counts.split(',').map(|n| n.parse().unwrap()).collect();
    assert!(counts[0] > 10, "calls to compare: {compared}");
    assert_eq!(counts[1..], [0, 0], "the same calls: {compared}");
    assert!(compared.contains("chain_events.parquet"), "read from the file once built: {compared}");

    tracelake_ok(&["analyze", "--lake", &lake]);
    let detector = env!("CARGO_MANIFEST_DIR").to_owned() + "/sql/detectors/sig_terms_changed.sql";
    let by_hand = csv(&["-f", &detector]);
    let found =
        csv(&["SELECT session, start_idx, end_idx, summary FROM findings WHERE signal = 'SIG-TERMS-CHANGED' ORDER BY session, start_idx"]);
    let rows = |csv: &str, columns: &[usize]| -> Vec<String> {
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let mut rows: Vec<String> =
            reader.records().map(|r| r.unwrap()).map(|r| columns.iter().map(|&i| r[i].to_owned()).collect::<Vec<_>>().join("|")).collect();
        rows.sort();
        rows
    };
    let by_hand = rows(&by_hand, &[4, 5, 6, 10]);
    assert!(!by_hand.is_empty(), "the retail traces have terms that changed");
    assert_eq!(by_hand, rows(&found, &[0, 1, 2, 3]));
}

#[test]
fn chains_that_no_file_can_hold_are_built_as_read() {
    let (dir, lake) = imported_lake();
    let detector = std::fs::read_to_string(env!("CARGO_MANIFEST_DIR").to_owned() + "/sql/detectors/sig_terms_changed.sql").unwrap();
    let twice = dir.path().join("twice.sql");
    std::fs::write(&twice, format!("{detector};\n{detector}")).unwrap();
    let args = ["sql", "--lake", &lake, "--format", "csv", "--maxrows", "inf", "-f", twice.to_str().unwrap()];
    let expected = tracelake_ok(&args);
    // A temporary directory that holds no file over 16 KiB, as a full disk would refuse
    // the chains file (the chains of these traces take more).
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"trap '' XFSZ; ulimit -f 16; exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_tracelake"))
        .args(args)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let sorted = |csv: &str| {
        let mut lines: Vec<String> = csv.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    assert!(expected.lines().count() > 4, "terms that changed, twice: {expected}");
    assert_eq!(sorted(&String::from_utf8_lossy(&out.stdout)), sorted(&expected), "the same rows, from chains built as read");
    assert_eq!(stderr.matches("warning: the chains could not be kept in a file").count(), 1, "said once: {stderr}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the partial file removed");
}

#[test]
fn summarize_describes_each_column_as_duckdb_does() {
    let (_dir, lake) = imported_lake();
    let csv = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SUMMARIZE events"]);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    let duckdb =
        ["column_name", "column_type", "min", "max", "approx_unique", "avg", "std", "q25", "q50", "q75", "count", "null_percentage"];
    assert_eq!(header, duckdb);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let columns = tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "csv",
        "SELECT count(*) AS n FROM information_schema.columns WHERE table_name = 'events'",
    ]);
    assert_eq!(format!("n\n{}\n", rows.len()), columns, "a row per column");
    let row = |name: &str| rows.iter().find(|r| &r[0] == name).unwrap_or_else(|| panic!("{name}: {csv}")).clone();
    let types = row("type");
    assert_eq!((&types[2], &types[3], &types[10], &types[11]), ("msg.in", "tool.result", "3160", "0.0"));
    let tool = row("tool_name");
    assert!(tool[11].parse::<f64>().unwrap() > 0.0, "most events name no tool: {csv}");
    let seq = row("stream_seq");
    let quartiles: Vec<f64> = (7..10).map(|i| seq[i].parse().unwrap()).collect();
    assert!(quartiles[0] < quartiles[1] && quartiles[1] < quartiles[2] && quartiles[2] <= 3160.0, "{csv}");

    let query = tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "csv",
        "summarize SELECT tool_duration_ms FROM events WHERE type = 'tool.result';",
    ]);
    assert_eq!(query.lines().count(), 2, "{query}");
}

#[test]
fn the_lake_can_come_from_the_environment() {
    let (_dir, lake) = imported_lake();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["sql", "--format", "csv", "SELECT count(*) AS n FROM events"])
        .env("TRACELAKE_LAKE", &lake)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "n\n3160\n");
}

#[test]
fn the_text_functions_follow_the_configured_languages() {
    let (dir, lake) = imported_lake();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"patterns": {"language": "fr"}}"#).unwrap();
    let query = "SELECT is_correction('tu te trompes') AS fr, is_correction('that is wrong') AS en";
    let default = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", query]);
    assert_eq!(default, "fr,en\nfalse,true\n");
    let french = tracelake_ok(&["sql", "--lake", &lake, "--config", config.to_str().unwrap(), "--format", "csv", query]);
    assert_eq!(french, "fr,en\ntrue,false\n");
}

#[test]
fn a_window_that_needs_more_than_the_pool_fails_instead_of_growing() {
    let (_dir, lake) = imported_lake();
    // `OVER ()` holds every event (no sort, which the pool already limits, runs before it).
    let query =
        "SELECT max(length(content)) > 0 AS read, max(n) = count(*) AS whole FROM (SELECT content, count(*) OVER () AS n FROM events)";
    assert_eq!(tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", query]), "read,whole\ntrue,true\n");

    let out = tracelake(&["sql", "--lake", &lake, &format!("SET datafusion.runtime.memory_limit = '256K'; {query}")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("Resources exhausted") && stderr.contains("WindowInput"), "{stderr}");
    assert_eq!(stderr.matches("Resources exhausted").count(), 1, "the pool's refusal is told once: {stderr}");
    assert!(stderr.contains("SET datafusion.runtime.memory_limit"), "says what to do: {stderr}");
}

#[test]
fn a_reader_that_stops_early_ends_the_output_quietly() {
    let (_dir, lake) = imported_lake();
    for args in [vec!["sql", "--lake", &lake, "SELECT * FROM events"], vec!["report", "--lake", &lake, "--format", "markdown"]] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
            .args(&args)
            .env_remove("TRACELAKE_LAKE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // `| head -c 0`: the reader is gone before the first write.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.is_empty(), "tracelake {args:?} says nothing: {stderr}");
        assert_ne!(out.status.code(), Some(101), "no panic");
        assert_ne!(out.status.code(), Some(1), "no error");
    }
}

#[test]
fn an_environment_variable_sets_one_command_only() {
    let (_dir, lake) = imported_lake();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
            .args(args)
            .env("TRACELAKE_LAKE", &lake)
            .env("TRACELAKE_SQL_FORMAT", "csv")
            .output()
            .unwrap()
    };
    let sql = run(&["sql", "SELECT count(*) AS n FROM events"]);
    assert_eq!(String::from_utf8_lossy(&sql.stdout), "n\n3160\n");
    let analyze = run(&["analyze", "--full"]);
    assert!(analyze.status.success(), "analyze has no csv format and ignores sql's: {}", String::from_utf8_lossy(&analyze.stderr));
    assert!(String::from_utf8_lossy(&analyze.stdout).contains("findings"), "the table format");
}

#[test]
fn tracelake_lists_its_functions_and_a_wrong_call_fails_at_planning() {
    let all = tracelake_ok(&["functions"]);
    for name in
        ["is_correction(text)", "levenshtein_ratio(a, b)", "fail_fingerprint(tool, params, error)", "chain_position(", "redact(text)"]
    {
        assert!(all.contains(name), "{name} is listed: {all}");
    }
    assert!(all.contains("(window)") && all.contains("(scalar)"));
    assert!(!all.contains("upper("), "DataFusion's own functions are not listed");
    let tools = tracelake_ok(&["functions", "tool"]);
    assert!(tools.contains("is_consequential_tool(tool_name)") && !tools.contains("is_correction"), "{tools}");
    let none = tracelake(&["functions", "nothing-like-this"]);
    assert_eq!(none.status.code(), Some(1));

    let (_dir, lake) = imported_lake();
    for (sql, name) in [("SELECT is_correction(1, 2) FROM events", "is_correction"), ("SELECT chain_id(1, 2, 3)", "chain_id")] {
        let explain = format!("EXPLAIN {sql}");
        let out = tracelake(&["sql", "--lake", &lake, &explain]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{sql}");
        assert!(stderr.contains(name) && stderr.to_lowercase().contains("planning"), "{sql}: {stderr}");
    }
}

#[test]
fn a_statement_that_returns_no_rows_says_what_it_did() {
    let (_dir, lake) = imported_lake();
    let sql = "CREATE VIEW tool_calls AS SELECT * FROM events WHERE type = 'tool.call'; SET datafusion.execution.batch_size = 4096; \
               SELECT count(*) > 0 AS any FROM tool_calls; DROP VIEW tool_calls";
    let table = tracelake_ok(&["sql", "--lake", &lake, sql]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "CREATE VIEW tool_calls", "{table}");
    assert_eq!(lines[1], "SET datafusion.execution.batch_size", "{table}");
    assert_eq!(lines.last(), Some(&"DROP VIEW tool_calls"), "{table}");
    assert!(!table.contains("++\n++"), "no empty table: {table}");
    assert_eq!(tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", sql]), "any\ntrue\n", "machine formats hold only results");
}

/// DuckDB's options of `COPY … TO`: a CSV with no header and a delimiter of its own, a
/// Parquet folder partitioned by a column; an option it does not take is named with those
/// it does.
#[test]
fn copy_takes_duckdbs_options() {
    let (dir, lake) = imported_lake();
    let (csv, parts) = (dir.path().join("types.csv"), dir.path().join("parts"));
    let by_type = "SELECT type, count(*) AS n FROM events GROUP BY ALL ORDER BY ALL";
    let copy = format!(
        "COPY ({by_type}) TO '{}' (HEADER false, DELIMITER '|'); COPY (SELECT id, type FROM events) TO '{}' (FORMAT parquet, PARTITION_BY (type), COMPRESSION zstd)",
        csv.display(),
        parts.display()
    );
    tracelake_ok(&["sql", "--lake", &lake, &copy]);
    let types = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", by_type]);
    let expected: String = types.lines().skip(1).map(|line| line.replace(',', "|") + "\n").collect();
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), expected);
    let folders =
        std::fs::read_dir(&parts).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("type=")).count();
    assert_eq!(folders, types.lines().count() - 1, "one folder per type");
    let count = |from: &str| tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", &format!("SELECT count(*) AS n FROM {from}")]);
    assert_eq!(count(&format!("read_parquet('{}/*/*.parquet')", parts.display())), count("events"));
    // Read back as DuckDB reads them, the folders' values are the column they were written from.
    for from in [format!("'{}/*/*.parquet'", parts.display()), format!("read_parquet('{}')", parts.display())] {
        let back = tracelake_ok(&[
            "sql",
            "--lake",
            &lake,
            "--format",
            "csv",
            &format!("SELECT type, count(*) AS n FROM {from} GROUP BY ALL ORDER BY ALL"),
        ]);
        assert_eq!(back, types, "{from}");
    }
    let flat =
        tracelake(&["sql", "--lake", &lake, &format!("SELECT type FROM read_parquet('{}', hive_partitioning = false)", parts.display())]);
    assert!(String::from_utf8_lossy(&flat.stderr).contains("no column named type"), "{flat:?}");

    let wrong = tracelake(&["sql", "--lake", &lake, &format!("COPY events TO '{}' (HEADR)", csv.display())]);
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(!wrong.status.success() && said.contains("COPY … TO takes no option HEADR (did you mean HEADER?); options: FORMAT"), "{said}");
}

#[test]
fn a_file_is_queried_by_its_path() {
    let (dir, lake) = imported_lake();
    let jsonl = realworld("tau-retail.events.jsonl");
    let lines = std::fs::read_to_string(&jsonl).unwrap().lines().count();
    let parquet = dir.path().join("calls.parquet");
    let csv = dir.path().join("calls.csv");
    let copy = format!(
        "COPY (SELECT id, tool_name FROM events WHERE type = 'tool.call') TO '{}'; COPY (SELECT id FROM events LIMIT 5) TO '{}'",
        parquet.display(),
        csv.display()
    );
    tracelake_ok(&["sql", "--lake", &lake, &copy]);
    let calls = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT count(*) AS n FROM events WHERE type = 'tool.call'"]);
    for (file, expected) in [
        (jsonl.display().to_string(), format!("n\n{lines}\n")),
        (parquet.display().to_string(), calls.clone()),
        (csv.display().to_string(), "n\n5\n".to_owned()),
    ] {
        let out = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", &format!("SELECT count(*) AS n FROM '{file}'")]);
        assert_eq!(out, expected, "{file}");
    }
    // Without a lake, files are the tables, as in datafusion-cli.
    let lakeless = tracelake_ok(&["sql", "--format", "csv", &format!("SELECT count(*) AS n FROM '{}'", jsonl.display())]);
    assert_eq!(lakeless, format!("n\n{lines}\n"));
    // DuckDB's functions read in their format whatever the extension.
    let log = dir.path().join("agent.log");
    std::fs::copy(&jsonl, &log).unwrap();
    for (call, expected) in [
        (format!("read_json('{}')", log.display()), format!("n\n{lines}\n")),
        (format!("read_parquet('{}')", dir.path().join("*.parquet").display()), calls.clone()),
        (format!("read_csv_auto('{}')", csv.display()), "n\n5\n".to_owned()),
    ] {
        assert_eq!(tracelake_ok(&["sql", "--format", "csv", &format!("SELECT count(*) AS n FROM {call}")]), expected, "{call}");
    }
    let missing = tracelake(&["sql", "SELECT * FROM read_parquet('no/such.parquet')"]);
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(said.contains("read_parquet('no/such.parquet'): no such file or directory") && !said.contains("no lake"), "{said}");
    let no_table = tracelake(&["sql", "SELECT count(*) FROM events"]);
    let said = String::from_utf8_lossy(&no_table.stderr);
    assert!(
        said.contains("no table or view named events;") && said.contains("(no lake was given: --lake DIR or TRACELAKE_LAKE)"),
        "{said}"
    );
    // A Parquet file joins the lake's tables like any table.
    let join = format!("SELECT count(*) AS n FROM '{}' f JOIN events e ON f.id = e.id", parquet.display());
    assert_eq!(
        tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", &join]),
        tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", &format!("SELECT count(*) AS n FROM '{}'", parquet.display())])
    );
    // As in DuckDB: a JSON array, a tab-separated file, each table named by its file.
    let array = dir.path().join("outcomes.json");
    std::fs::write(&array, r#"[{"session": "a", "ok": true}, {"session": "b", "ok": false}]"#).unwrap();
    let tabs = dir.path().join("scores.tsv");
    std::fs::write(&tabs, "session\tscore\na\t1\nb\t0\n").unwrap();
    let both = format!(
        "SELECT outcomes.session, scores.score FROM '{}' JOIN '{}' ON outcomes.session = scores.session WHERE ok",
        array.display(),
        tabs.display()
    );
    assert_eq!(tracelake_ok(&["sql", "--format", "csv", &both]), "session,score\na,1\n");
    let options = format!("SELECT count(*) AS n FROM read_csv('{}', header = false, delim = '\\t')", tabs.display());
    assert_eq!(tracelake_ok(&["sql", "--format", "csv", &options]), "n\n3\n", "options by name, as in DuckDB");
}

#[test]
fn json_functions_read_the_json_columns() {
    let (_dir, lake) = imported_lake();
    let sql = "SELECT count(*) AS n FROM events WHERE type = 'tool.call' AND (tool_params->>'order_id') IS NOT NULL";
    let by_operator = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", sql]);
    let by_text = tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "csv",
        "SELECT count(*) AS n FROM events WHERE type = 'tool.call' AND tool_params LIKE '%\"order_id\"%'",
    ]);
    assert_eq!(by_operator, by_text);
    assert_ne!(by_operator, "n\n0\n", "the sample calls tools with an order id");
}

#[test]
fn maxrows_limits_the_rows_a_table_shows() {
    let (_dir, lake) = imported_lake();
    let sql = "SELECT id FROM events ORDER BY id LIMIT 10";
    let three = tracelake_ok(&["sql", "--lake", &lake, "--maxrows", "3", sql]);
    assert!(three.contains("10 rows (3 shown; --maxrows"), "{three}");
    assert_eq!(three.lines().filter(|l| l.starts_with("| ") && !l.contains(" id ")).count(), 3, "{three}");
    let all = tracelake_ok(&["sql", "--lake", &lake, "--maxrows", "inf", sql]);
    assert!(all.trim_end().ends_with("10 rows"), "{all}");
    let bad = tracelake(&["sql", "--lake", &lake, "--maxrows", "many", sql]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`many` is not a number of rows"));
}

#[test]
fn maxwidth_fits_a_table_to_the_terminal_as_duckdb_does() {
    let (_dir, lake) = imported_lake();
    let sql = "SELECT id, content FROM events WHERE length(content) > 200 ORDER BY id LIMIT 3";
    let whole = tracelake_ok(&["sql", "--lake", &lake, sql]);
    assert!(whole.lines().any(|l| l.chars().count() > 200), "printed to no terminal, values are whole: {whole}");
    let fitted = tracelake_ok(&["sql", "--lake", &lake, "--maxwidth", "80", sql]);
    let lines: Vec<&str> = fitted.lines().collect();
    let table = lines.iter().filter(|l| l.starts_with(['+', '|']));
    assert!(table.clone().all(|l| l.chars().count() <= 80), "{fitted}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("| evt-")).count(), 3, "a row's first line names its id: {fitted}");
    assert!(fitted.trim_end().ends_with("3 rows (3 values cut to fit 80 characters; \\maxwidth inf or --format csv for all)"), "{fitted}");
    let narrow = tracelake_ok(&["sql", "--lake", &lake, "--maxwidth", "60", "SELECT * FROM events LIMIT 1"]);
    assert!(narrow.contains("| … |") && narrow.contains("columns left out"), "{narrow}");
    let commands = tracelake_ok(&["sql", "--lake", &lake, &format!("\\maxwidth\n.maxwidth 60\n{sql};")]);
    assert!(
        commands.starts_with("Tables show values whole: the output is no terminal.\nTables take at most 60 characters a line.\n"),
        "{commands}"
    );
    assert!(commands.lines().filter(|l| l.starts_with(['+', '|'])).all(|l| l.chars().count() <= 60), "{commands}");
    let bad = tracelake(&["sql", "--lake", &lake, "--maxwidth", "wide", sql]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`wide` is not a number of characters"));
}

/// Each error is one line that says each of its causes once: a missing lake, a SQL file
/// with a bad statement, a detector file with a bad header.
#[test]
fn each_error_is_printed_once_with_its_causes() {
    let (dir, lake) = imported_lake();
    let missing = dir.path().join("no-lake").display().to_string();
    let bad_sql = dir.path().join("bad.sql");
    std::fs::write(&bad_sql, "SELECT 1;\nSELECT no_such_column FROM events;\n").unwrap();
    let detectors = dir.path().join("detectors");
    std::fs::create_dir(&detectors).unwrap();
    std::fs::write(detectors.join("mine.sql"), "-- signal: SIG-MINE\n-- severity: extreme\nSELECT 1").unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["sql", "--lake", &missing, "SELECT 1"], "no-lake does not exist"),
        (&["sql", "--lake", &lake, "-f", bad_sql.to_str().unwrap()], "no_such_column"),
        (&["analyze", "--lake", &lake, "--detectors", detectors.to_str().unwrap()], "mine.sql: line 2: `severity: extreme`"),
    ];
    for (args, names) in cases {
        let out = tracelake(args);
        let said = String::from_utf8_lossy(&out.stderr);
        let error = said.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| panic!("{args:?}: no error line in {said}"));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(error.contains(names), "{args:?}: {error}");
        let causes: Vec<&str> = error.trim_start_matches("error: ").split(": ").collect();
        for (i, cause) in causes.iter().enumerate() {
            assert!(!causes[i + 1..].iter().any(|later| later.contains(cause)), "{args:?}: `{cause}` said twice in {error}");
        }
    }
}

#[test]
fn ctrl_c_or_sigterm_ends_a_statement_and_removes_its_temporary_files() {
    let (dir, lake) = imported_lake();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let ours = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|path| path.file_name().unwrap().to_string_lossy().starts_with("tracelake-"))
            .collect()
    };
    for (signal, status) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
            .args(["sql", "--lake", &lake, "SELECT max(value % 7) FROM generate_series(1, 1000000000000)"])
            .env("TMPDIR", &tmp)
            .env_remove("TRACELAKE_LAKE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The session holds its spill directory, locked, from when it opens.
        let held = || ours().iter().any(|dir| dir.join(".lock").exists());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !held() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(held(), "the session made no temporary directory in {}", tmp.display());
        std::thread::sleep(std::time::Duration::from_millis(200));
        // SAFETY: kill(2) on a child process of this test.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{stderr}");
        assert!(stderr.contains("interrupted"), "{stderr}");
        assert!(ours().is_empty(), "left behind: {:?}", ours());
    }
}
