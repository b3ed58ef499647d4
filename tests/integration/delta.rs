//! The lake read as Delta tables by delta-rs's Python package, as DuckDB, Spark or Polars
//! read it: every table, exactly the rows `tracelake sql` returns.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{python_venv, realworld, sql_rows, tracelake_ok};

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

fn assert_same_rows(lake: &str) {
    let delta = delta_tables(lake);
    for table in TABLES {
        let seen = &delta[table];
        assert!(seen.is_object(), "{table} has a Delta log: {delta}");
        let by_date: BTreeMap<String, u64> =
            seen["by_date"].as_object().unwrap().iter().map(|(d, n)| (d.clone(), n.as_u64().unwrap())).collect();
        assert_eq!(by_date, rows_by_date(lake, table), "{table}: rows per date");
    }
    assert_eq!(delta["events"]["keys"].as_array().unwrap(), &keys(lake, "SELECT id AS k FROM events ORDER BY 1"));
    assert_eq!(delta["findings"]["keys"].as_array().unwrap(), &keys(lake, "SELECT finding_id AS k FROM findings ORDER BY 1"));
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

#[test]
fn a_lake_made_before_the_delta_logs_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake]);
    for table in TABLES {
        let _ = std::fs::remove_dir_all(dir.path().join("lake").join(table).join("_delta_log"));
    }
    let files_before = crate::common::parquet_files(&dir.path().join("lake"));
    let status = tracelake_ok(&["status", "--lake", &lake]);
    assert!(status.contains("without a Delta log yet; `tracelake upgrade --lake"), "{status}");
    assert!(delta_tables(&lake).as_object().unwrap().is_empty(), "no table reads as Delta before the upgrade");

    let upgraded = tracelake_ok(&["upgrade", "--lake", &lake]);
    assert!(upgraded.contains("events           Delta version 0, "), "{upgraded}");
    assert_same_rows(&lake);
    assert_eq!(crate::common::parquet_files(&dir.path().join("lake")), files_before, "nothing copied");
    assert!(!tracelake_ok(&["status", "--lake", &lake]).contains("without a Delta log"));
}
