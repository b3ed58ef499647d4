//! The lake read as Delta tables by delta-rs's Python package and by DuckDB's delta
//! extension, as Spark or Polars read it: every table, exactly the rows `tracelake sql`
//! returns.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{lake_state, python_venv, realworld, sql_rows, tracelake_ok};

const TABLES: [&str; 9] =
    ["events", "quarantine", "findings", "failures", "classifications", "outputs", "outcomes", "session_risk", "cortex_messages"];

/// The command that reads the lake at `lake` as a Delta reader does (`tests/delta/read_lake.py`).
pub fn delta_reader(lake: &str) -> Command {
    static PYTHON: OnceLock<std::path::PathBuf> = OnceLock::new();
    let python = PYTHON.get_or_init(|| python_venv("tests/delta/requirements.txt"));
    let mut command = Command::new(python);
    command.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/delta/read_lake.py")).arg(lake);
    command
}

/// Every table of a lake as a Delta reader sees it: version, rows, rows per date, keys.
pub fn read_as_delta(mut reader: Command) -> Value {
    let out = reader.output().unwrap();
    assert!(out.status.success(), "reading as Delta tables failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every table of the local lake at `lake` as a Delta reader sees it.
pub fn delta_tables(lake: &str) -> Value {
    read_as_delta(delta_reader(lake))
}

/// Rows of `events` a Delta reader sees; 0 for a lake without its log.
pub fn delta_event_rows(lake: &str) -> u64 {
    delta_tables(lake).get("events").map_or(0, |t| t["rows"].as_u64().unwrap())
}

fn rows_by_date(lake: &str, table: &str) -> BTreeMap<String, u64> {
    let rows = sql_rows(lake, &format!("SELECT date, count(*) AS n FROM {table} GROUP BY date"));
    rows.iter().map(|r| (r["date"].as_str().unwrap().to_owned(), r["n"].as_u64().unwrap())).collect()
}

fn keys(lake: &str, query: &str) -> Vec<Value> {
    sql_rows(lake, query).into_iter().map(|r| r["k"].clone()).collect()
}

/// Every table of the local lake at `lake` as DuckDB's `delta_scan` sees it.
fn duckdb_tables(lake: &str) -> Value {
    let mut reader = delta_reader(lake);
    reader.args(["--engine", "duckdb"]);
    read_as_delta(reader)
}

/// Both Delta readers see in every table exactly the rows `tracelake sql` returns.
fn assert_same_rows(lake: &str) {
    for (reader, delta) in [("deltalake", delta_tables(lake)), ("duckdb", duckdb_tables(lake))] {
        for table in TABLES {
            let seen = &delta[table];
            assert!(seen.is_object(), "{reader}: {table} has a Delta log: {delta}");
            let by_date: BTreeMap<String, u64> =
                seen["by_date"].as_object().unwrap().iter().map(|(d, n)| (d.clone(), n.as_u64().unwrap())).collect();
            assert_eq!(by_date, rows_by_date(lake, table), "{reader}: {table}: rows per date");
        }
        let events = keys(lake, "SELECT id AS k FROM events ORDER BY 1");
        assert_eq!(delta["events"]["keys"].as_array().unwrap(), &events, "{reader}: event ids");
        let findings = keys(lake, "SELECT finding_id AS k FROM findings ORDER BY 1");
        assert_eq!(delta["findings"]["keys"].as_array().unwrap(), &findings, "{reader}: finding ids");
    }
}

#[test]
fn a_delta_reader_sees_every_table_with_exactly_the_rows_tracelake_returns() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"not\": \"an event\"}\nnot json at all\n").unwrap();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap(), bad.to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake, "--full"]);
    let outcomes = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/outcomes/tau-airline.outcomes.jsonl");
    tracelake_ok(&["outcomes", "import", "--lake", &lake, outcomes.to_str().unwrap()]);
    tracelake_ok(&["risk", "--lake", &lake]);
    assert_same_rows(&lake);
    for table in ["events", "quarantine", "findings", "outcomes", "session_risk"] {
        assert!(!rows_by_date(&lake, table).is_empty(), "{table} has rows, so the comparison means something");
    }

    // Files replaced by a later commit leave the table as the reader sees it.
    let findings_version = delta_tables(&lake)["findings"]["version"].as_u64().unwrap();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake, "--full"]);
    assert_same_rows(&lake);
    assert!(delta_tables(&lake)["findings"]["version"].as_u64().unwrap() > findings_version);
    let status = tracelake_ok(&["status", "--lake", &lake]);
    assert!(status.contains("events v"), "status names each table's Delta version: {status}");
}

/// A lake as an earlier release left it: its state in `_state/manifest.json`, and its
/// tables' logs (`with_logs`, as the release before this one wrote them) or none.
pub fn earlier_release_lake(dir: &Path, with_logs: bool) -> String {
    let lake = dir.join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake]);
    let state = lake_state(&dir.join("lake")).expect("the latest commit carries the state");
    std::fs::write(dir.join("lake/_state/manifest.json"), serde_json::to_vec_pretty(&state).unwrap()).unwrap();
    if with_logs {
        // The events log of that release carried no state.
        std::fs::remove_dir_all(dir.join("lake/events/_delta_log")).unwrap();
        tracelake_ok(&["upgrade", "--lake", &lake]);
        for commit in std::fs::read_dir(dir.join("lake/events/_delta_log")).unwrap().flatten() {
            let path = commit.path();
            if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                let stripped: Vec<&str> = text.lines().filter(|l| !l.starts_with("{\"commitInfo\"")).collect();
                std::fs::write(&path, stripped.join("\n")).unwrap();
            }
        }
        std::fs::rename(dir.join("lake/_state/manifest.json.upgraded"), dir.join("lake/_state/manifest.json")).unwrap();
    } else {
        for table in TABLES {
            let _ = std::fs::remove_dir_all(dir.join("lake").join(table).join("_delta_log"));
        }
    }
    lake
}

#[test]
fn a_lake_made_by_an_earlier_release_is_upgraded_in_place() {
    for with_logs in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let lake = earlier_release_lake(dir.path(), with_logs);
        let files_before = crate::common::parquet_files(&dir.path().join("lake"));
        // Every command says what to do instead of finding no rows or starting a new lake.
        for args in [
            &["sql", "--lake", &lake, "SELECT count(*) FROM events"][..],
            &["status", "--lake", &lake],
            &["analyze", "--lake", &lake],
            &["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()],
        ] {
            let out = crate::common::tracelake(args);
            let said = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
            assert!(said.contains("keeps its state in _state/manifest.json") && said.contains("run `tracelake upgrade --lake "), "{said}");
        }

        let upgraded = tracelake_ok(&["upgrade", "--lake", &lake]);
        let events_version = if with_logs { "events           Delta version 1, " } else { "events           Delta version 0, " };
        assert!(upgraded.contains(events_version), "{upgraded}");
        assert_same_rows(&lake);
        assert_eq!(crate::common::parquet_files(&dir.path().join("lake")), files_before, "nothing copied");
        assert!(!dir.path().join("lake/_state/manifest.json").exists(), "the state moved into the events log");
        assert!(tracelake_ok(&["upgrade", "--lake", &lake]).contains("nothing to upgrade"));
        tracelake_ok(&["analyze", "--lake", &lake]);
        let counted = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT count(*) AS n FROM events"]);
        assert_eq!(counted, "n\n3160\n");
    }
}

fn count_as_of(lake: &str, as_of: &str, table: &str) -> u64 {
    let out = tracelake_ok(&["sql", "--lake", lake, "--as-of", as_of, "--format", "ndjson", &format!("SELECT count(*) AS n FROM {table}")]);
    serde_json::from_str::<Value>(out.lines().next().unwrap()).unwrap()["n"].as_u64().unwrap()
}

/// The `run_id`s of `runs`, now or as of a revision or time.
fn run_ids(lake: &str, as_of: Option<&str>) -> Vec<String> {
    let mut args = vec!["sql", "--lake", lake, "--format", "ndjson"];
    args.extend(as_of.map(|at| ["--as-of", at]).into_iter().flatten());
    args.push("SELECT run_id FROM runs ORDER BY run_no");
    tracelake_ok(&args).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["run_id"].as_str().unwrap().to_owned()).collect()
}

fn count(lake: &str, table: &str) -> u64 {
    sql_rows(lake, &format!("SELECT count(*) AS n FROM {table}"))[0]["n"].as_u64().unwrap()
}

/// The revision `status` prints.
fn revision(lake: &str) -> String {
    let status = tracelake_ok(&["status", "--lake", lake]);
    let line = status.lines().find(|l| l.starts_with("revision:")).unwrap_or_else(|| panic!("status prints the revision: {status}"));
    line.split_whitespace().nth(1).unwrap().to_owned()
}

#[test]
fn as_of_reads_an_earlier_revision_until_a_vacuum_frees_what_only_it_needed() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake, "--full"]);
    let (events, findings, earlier) = (count(&lake, "events"), count(&lake, "findings"), revision(&lake));
    let first_run = run_ids(&lake, None);
    let since = chrono::Utc::now().to_rfc3339();
    std::thread::sleep(std::time::Duration::from_millis(1100));

    tracelake_ok(&["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake, "--full"]);
    assert!(count(&lake, "events") > events && count(&lake, "findings") > findings, "the second import adds rows");
    assert_eq!(count_as_of(&lake, &earlier, "events"), events, "as of a revision");
    assert_eq!(count_as_of(&lake, &earlier, "findings"), findings, "the replaced findings are read as they were");
    assert_eq!(count_as_of(&lake, &since, "events"), events, "as of a time");
    let status = tracelake_ok(&["status", "--lake", &lake, "--as-of", &earlier]);
    assert!(status.contains(&format!("as of:       revision {earlier}; the lake is now at revision ")), "{status}");
    assert!(status.contains(&format!("analyses:    1 (last: {} at ", first_run[0])), "the run of then: {status}");
    assert!(tracelake_ok(&["status", "--lake", &lake]).contains("replaced:    "), "status counts the files kept for --as-of");
    let (runs_now, runs_then) = (run_ids(&lake, None), run_ids(&lake, Some(&earlier)));
    assert!(runs_now.len() == 1 && runs_now != first_run, "the full analysis replaced the first run: {runs_now:?}");
    assert_eq!(runs_then, first_run, "runs as of a revision are the runs of then");
    assert_eq!(run_ids(&lake, Some(&since)), first_run, "runs as of a time are the runs of then");
    let report = tracelake_ok(&["report", "--lake", &lake, "--as-of", &earlier, "--format", "json"]);
    let report: Value = serde_json::from_str(&report).unwrap();
    assert_eq!(report["runId"].as_str(), Some(first_run[0].as_str()), "the report as of then is of the run of then");
    let state = |report: &Value| report["processingState"]["totalFindings"].as_u64();
    assert_eq!(state(&report), Some(findings), "the processing state as of then is the one its run left");
    let now: Value = serde_json::from_str(&tracelake_ok(&["report", "--lake", &lake, "--format", "json"])).unwrap();
    assert!(state(&now) > Some(findings), "and the state now is the last run's: {}", now["processingState"]);

    let dry = tracelake_ok(&["vacuum", "--lake", &lake, "--retain", "0s", "--dry-run"]);
    assert!(dry.contains("would delete findings/date="), "{dry}");
    assert_eq!(count_as_of(&lake, &earlier, "findings"), findings, "a dry run deletes nothing");
    assert!(tracelake_ok(&["vacuum", "--lake", &lake]).contains("deleted 0 file(s)"), "nothing is older than a week");
    let replaced_runs = || -> usize {
        let state = lake_state(&dir.path().join("lake")).unwrap();
        state.get("replacedAnalyses").and_then(Value::as_array).map_or(0, Vec::len)
    };
    assert_eq!(replaced_runs(), 1, "the first run is kept for --as-of");
    tracelake_ok(&["vacuum", "--lake", &lake, "--retain", "0s"]);
    assert_eq!(replaced_runs(), 0, "and forgotten once its files are vacuumed");
    let out = crate::common::tracelake(&["sql", "--lake", &lake, "--as-of", &earlier, "SELECT count(*) FROM findings"]);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && error.contains("were vacuumed since"), "{error}");
    assert_same_rows(&lake);

    let compacted = tracelake_ok(&["compact", "--lake", &lake]);
    assert!(compacted.contains("merged ") || compacted.contains("nothing to compact"), "{compacted}");
    assert_same_rows(&lake);
    let out = crate::common::tracelake(&["compact", "--lake", &lake, "--table", "event"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no table \"event\"; the lake's tables are events, "),
        "a mistyped table is named"
    );
}

#[test]
fn a_table_s_retention_drops_its_old_partitions_and_their_files_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake]);
    let (findings, earlier) = (count(&lake, "findings"), revision(&lake));
    let events_files = crate::common::parquet_files(&dir.path().join("lake").join("events"));
    assert!(count(&lake, "events") > 0 && findings > 0 && !events_files.is_empty());

    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"storage": {"retentionDays": {"event": 30}}}"#).unwrap();
    let out = crate::common::tracelake(&["vacuum", "--lake", &lake, "--config", config.to_str().unwrap()]);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && error.contains("storage.retentionDays: no table \"event\""), "{error}");

    std::fs::write(&config, r#"{"storage": {"retentionDays": {"events": 30}}}"#).unwrap();
    let dry = tracelake_ok(&["vacuum", "--lake", &lake, "--config", config.to_str().unwrap(), "--dry-run"]);
    assert!(dry.contains(&format!("would delete {} file(s) of partitions older than", events_files.len())), "{dry}");
    assert!(events_files.iter().all(|f| f.exists()) && count(&lake, "events") > 0, "a dry run changes nothing");
    let out = tracelake_ok(&["vacuum", "--lake", &lake, "--config", config.to_str().unwrap()]);
    assert!(
        out.contains(&format!("deleted {} file(s) of partitions older than storage.retentionDays (events 30 days)", events_files.len())),
        "{out}"
    );
    assert_eq!(count(&lake, "events"), 0, "the traces of January are past 30 days");
    assert!(events_files.iter().all(|f| !f.exists()), "their files are deleted at once");
    assert_eq!(count(&lake, "findings"), findings, "tables without a retention keep everything");
    let out = crate::common::tracelake(&["sql", "--lake", &lake, "--as-of", &earlier, "SELECT count(*) FROM events"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("were vacuumed since"), "the past is not read in part");
    assert_same_rows(&lake);
}
