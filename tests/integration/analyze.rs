//! `tracelake analyze` end to end: exactly the injected findings of generated traces,
//! incremental runs that never report a finding twice, user detectors, exit codes.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::{Value, json};

use crate::common::{realworld, sql_rows, tracelake, tracelake_ok};

/// Every finding, UNVERIFIED-CLAIM on, no cap.
pub const ALL_FINDINGS: &str = r#"{"traceAnalyzer": {"output": {"maxFindings": 1000000}, "signals": {"SIG-TOOL-FAIL": {"enabled": true}, "SIG-REPEAT-FAIL": {"enabled": true}, "SIG-UNVERIFIED-CLAIM": {"enabled": true}, "SIG-UNANSWERED": {"enabled": true}, "SIG-ERROR-ENDING": {"enabled": true}}}}"#;

pub fn write_config(dir: &Path, text: &str) -> String {
    let path = dir.join("config.json");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

pub fn analyze_json(lake: &str, config: &str, extra: &[&str]) -> Value {
    let mut args = vec!["analyze", "--lake", lake, "--config", config, "--format", "json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&tracelake_ok(&args)).expect("a JSON report")
}

pub fn counts(report: &Value) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for f in report["findings"].as_array().unwrap() {
        *counts.entry(f["signal"]["signal"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    counts
}

/// The lake `dir/lake`, of `events` generated events (`seed`, in `dir/g.jsonl`).
fn generated_lake(dir: &Path, events: u32, seed: u32) -> String {
    let input = dir.join("g.jsonl");
    tracelake_ok(&["generate", "--events", &events.to_string(), "--seed", &seed.to_string(), "--output", input.to_str().unwrap()]);
    let lake = dir.join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, input.to_str().unwrap()]);
    lake
}

#[test]
fn the_terminal_lists_a_signal_of_a_session_once_with_how_many_times() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()]);
    let table = tracelake_ok(&["analyze", "--lake", &lake]);
    let listed: Vec<&str> = table.lines().skip_while(|l| *l != "most severe:").skip(1).take_while(|l| l.starts_with("  [")).collect();
    assert_eq!(listed.len(), 15, "{table}");
    let mut seen = HashSet::new();
    let mut represented = 0;
    for line in &listed {
        let (signal_and_session, _) = line.split_once(": ").unwrap();
        let (who, times) = signal_and_session.split_once(" ×").unwrap_or((signal_and_session, "1"));
        assert!(seen.insert(who.split_whitespace().collect::<Vec<_>>().join(" ")), "listed twice: {line}\n{table}");
        represented += times.parse::<u64>().unwrap();
    }
    assert!(represented > 15, "some session repeats a signal on these traces: {table}");
    let detected = sql_rows(&lake, "SELECT count(*) AS n FROM findings")[0]["n"].as_u64().unwrap();
    assert!(table.contains(&format!("… {} more, all in", detected - represented)), "{table}");
}

#[test]
fn finds_exactly_what_the_generator_injected() {
    let dir = tempfile::tempdir().unwrap();
    let lake = generated_lake(dir.path(), 12000, 99);
    let config = write_config(dir.path(), ALL_FINDINGS);
    let report = analyze_json(&lake, &config, &["--full"]);

    let expected: Value = serde_json::from_slice(&std::fs::read(dir.path().join("g.jsonl.expected.json")).unwrap()).unwrap();
    let expected_counts: BTreeMap<String, u64> = serde_json::from_value(expected["findings"].clone()).unwrap();
    assert_eq!(counts(&report), expected_counts);
    let mut severities: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for f in report["findings"].as_array().unwrap() {
        *severities
            .entry(f["signal"]["signal"].as_str().unwrap().to_owned())
            .or_default()
            .entry(f["signal"]["severity"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(serde_json::to_value(&severities).unwrap(), expected["severities"]);
    let decisions = sql_rows(&lake, "SELECT count(*) AS n FROM decisions");
    assert!(expected["decisions"].as_u64().unwrap() > 0, "no decision injected");
    assert_eq!(decisions[0]["n"], expected["decisions"], "the cortex patterns find exactly the planned decisions");

    // The report's shape (spec §10.4), with the raw event ids of each finding's range.
    assert_eq!(report["version"], 1);
    assert!(report["generatedAt"].as_str().unwrap().ends_with('Z'));
    assert_eq!(report["stats"]["findingsDetected"].as_u64().unwrap() as usize, report["findings"].as_array().unwrap().len());
    let f = &report["findings"][0];
    for key in ["id", "chainId", "agent", "session", "detectedAt", "occurredAt", "startEventId", "endEventId"] {
        assert!(!f[key].is_null(), "finding lacks {key}: {f}");
    }
    assert!(f["signal"]["eventRange"]["start"].as_i64().unwrap() <= f["signal"]["eventRange"]["end"].as_i64().unwrap());
}

#[test]
fn default_config_keeps_unverified_claims_off_and_caps_findings() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.events.jsonl")]);
    let report: Value = serde_json::from_str(&tracelake_ok(&["analyze", "--lake", &lake, "--full", "--format", "json"])).unwrap();
    assert!(!counts(&report).contains_key("SIG-UNVERIFIED-CLAIM"));

    let config = write_config(
        dir.path(),
        r#"{"output": {"maxFindings": 10}, "signals": {"SIG-TOOL-FAIL": {"severity": "critical", "enabled": true}, "SIG-CORRECTION": {"enabled": false}}}"#,
    );
    let capped = analyze_json(&lake, &config, &["--full"]);
    let findings = capped["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 10);
    assert!(findings.iter().all(|f| f["signal"]["severity"] == "critical"), "the most severe are kept");
    let all = analyze_json(
        &lake,
        &write_config(
            dir.path(),
            r#"{"output": {"maxFindings": 100000}, "signals": {"SIG-TOOL-FAIL": {"severity": "critical", "enabled": true}, "SIG-CORRECTION": {"enabled": false}}}"#,
        ),
        &["--full"],
    );
    assert!(!counts(&all).contains_key("SIG-CORRECTION"));
    let tool_fails: Vec<&Value> = all["findings"].as_array().unwrap().iter().filter(|f| f["signal"]["signal"] == "SIG-TOOL-FAIL").collect();
    assert!(!tool_fails.is_empty() && tool_fails.iter().all(|f| f["signal"]["severity"] == "critical"));
}

/// 6,000 generated events in `dir/g.jsonl` (returned), in time order, also split at line
/// `at` into two files of `dir` named `names`.
fn generated_in_two(dir: &Path, at: usize, names: [&str; 2]) -> std::path::PathBuf {
    let input = dir.join("g.jsonl");
    tracelake_ok(&["generate", "--events", "6000", "--seed", "5", "--output", input.to_str().unwrap()]);
    let lines: Vec<String> = std::fs::read_to_string(&input).unwrap().lines().map(str::to_owned).collect();
    let (first, second) = lines.split_at(at);
    std::fs::write(dir.join(names[0]), first.join("\n") + "\n").unwrap();
    std::fs::write(dir.join(names[1]), second.join("\n") + "\n").unwrap();
    input
}

#[test]
fn incremental_runs_report_each_finding_once() {
    let dir = tempfile::tempdir().unwrap();
    let input = generated_in_two(dir.path(), 3500, ["a.jsonl", "b.jsonl"]);
    let lake = dir.path().join("lake").display().to_string();
    let config = write_config(dir.path(), ALL_FINDINGS);

    tracelake_ok(&["import", "--lake", &lake, dir.path().join("a.jsonl").to_str().unwrap()]);
    let run1 = analyze_json(&lake, &config, &[]);
    tracelake_ok(&["import", "--lake", &lake, dir.path().join("b.jsonl").to_str().unwrap()]);
    let run2 = analyze_json(&lake, &config, &[]);
    let run3 = analyze_json(&lake, &config, &[]);
    assert_eq!(run3["findings"].as_array().unwrap().len(), 0, "nothing new, nothing reported");
    let again = tracelake(&["analyze", "--lake", &lake, "--config", &config]);
    let hint = String::from_utf8_lossy(&again.stderr);
    assert!(
        hint.contains("nothing new since") && hint.contains("--full") && hint.contains("tracelake report"),
        "says why and what to do: {hint}"
    );

    let ids =
        |r: &Value| -> Vec<String> { r["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_owned()).collect() };
    let (ids1, ids2) = (ids(&run1), ids(&run2));
    assert!(ids1.iter().all(|id| !ids2.contains(id)), "a finding reported twice");
    assert_eq!(run2["processingState"]["totalFindings"].as_u64().unwrap() as usize, ids1.len() + ids2.len());

    let full_dir = tempfile::tempdir().unwrap();
    let full_lake = full_dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &full_lake, input.to_str().unwrap()]);
    let full = analyze_json(&full_lake, &config, &["--full"]);
    let again = tracelake(&["analyze", "--lake", &full_lake, "--config", &config, "--full"]);
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(said.contains("--full: the findings") && said.contains("of 1 earlier run(s) were replaced"), "says what it reset: {said}");
    let mut all: Vec<String> = ids1.into_iter().chain(ids2).collect();
    all.sort();
    let mut expected = ids(&full);
    expected.sort();
    assert_eq!(all, expected, "two incremental runs find what one full run finds");

    let stored =
        tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT count(*) AS n, count(DISTINCT finding_id) AS ids FROM findings"]);
    assert_eq!(stored, format!("n,ids\n{0},{0}\n", all.len()));

    // A window analyzed again says its findings were reported, and where they are; one
    // that holds no events says what times the lake holds.
    let again = tracelake(&["analyze", "--lake", &lake, "--config", &config, "--since", "2026-01-01"]);
    let said = String::from_utf8_lossy(&again.stderr);
    let (count, rest) = said.split_once(" finding(s) in these sessions were reported by earlier runs").expect(&said);
    let count: usize = count.rsplit('\n').next().unwrap().parse().unwrap();
    assert!(count > 0 && count <= all.len(), "{said}");
    assert!(rest.contains(&format!("`tracelake report --lake {lake}` lists them")), "{said}");
    let empty = tracelake(&["analyze", "--lake", &lake, "--config", &config, "--since", "1h"]);
    let said = String::from_utf8_lossy(&empty.stderr);
    assert!(said.contains("no events since") && said.contains("the lake's events run from 2026-01-05"), "{said}");
}

#[test]
fn verbose_says_where_the_time_went_stage_by_stage() {
    let dir = tempfile::tempdir().unwrap();
    let lake = generated_lake(dir.path(), 2000, 3);
    let out = tracelake(&["analyze", "--lake", &lake, "--verbose"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (_, times) = stderr.split_once("where the time went:\n").expect(&stderr);
    let lines: Vec<&str> = times.lines().take(11).collect();
    let name = |l: &&str| l.trim_start().split("  ").next().unwrap().to_owned();
    let stages: Vec<String> = lines.iter().filter(|l| !l.starts_with("    ")).map(name).collect();
    assert_eq!(stages, ["plan", "scan to findings", "across sessions", "write and commit", "rule effectiveness", "total"], "{stderr}");
    // The parts of the shares' stage, under it.
    let parts: Vec<String> = lines.iter().skip(2).take_while(|l| l.starts_with("    ")).map(name).collect();
    assert_eq!(parts, ["scan, spread by session", "planning", "chains and cortex", "detectors", "merge"], "{stderr}");
    assert!(lines.iter().all(|l| l.contains(" s")), "{stderr}");
}

/// Events older than what an analysis saw, imported after it (a backfill, a late
/// collector, an agent whose clock is behind), are analyzed by the next run.
#[test]
fn a_backfill_of_older_events_is_analyzed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = generated_in_two(dir.path(), 3000, ["older.jsonl", "newer.jsonl"]);
    let config = write_config(dir.path(), ALL_FINDINGS);
    // Per session; SIG-REPEAT-FAIL compares with the sessions analyzed before, which a
    // backfill changes.
    let ids = |r: &Value| -> Vec<(String, String)> {
        let findings = r["findings"].as_array().unwrap().iter().filter(|f| f["signal"]["signal"] != "SIG-REPEAT-FAIL");
        findings.map(|f| (f["session"].as_str().unwrap().to_owned(), f["id"].as_str().unwrap().to_owned())).collect()
    };
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, dir.path().join("newer.jsonl").to_str().unwrap()]);
    analyze_json(&lake, &config, &[]);
    let status = |lake: &str| tracelake_ok(&["status", "--lake", lake]);
    assert!(status(&lake).contains("findings, nothing committed since)"), "{}", status(&lake));
    let sessions = |lake: &str| -> HashSet<String> {
        sql_rows(lake, "SELECT DISTINCT session FROM events").iter().map(|r| r["session"].as_str().unwrap().to_owned()).collect()
    };
    let newer_sessions = sessions(&lake);
    tracelake_ok(&["import", "--lake", &lake, dir.path().join("older.jsonl").to_str().unwrap()]);
    let waiting = status(&lake);
    assert!(waiting.contains("1 events file(s) committed since: the next `analyze` reads their sessions"), "{waiting}");
    // Sessions whose every event is in the backfill.
    let only_older: HashSet<String> = sessions(&lake).difference(&newer_sessions).cloned().collect();
    let full_lake = dir.path().join("full").display().to_string();
    tracelake_ok(&["import", "--lake", &full_lake, input.to_str().unwrap()]);
    let full = analyze_json(&full_lake, &config, &["--full"]);
    let mut expected: Vec<String> = ids(&full).into_iter().filter(|(session, _)| only_older.contains(session)).map(|(_, id)| id).collect();
    assert!(!expected.is_empty(), "the backfilled sessions hold findings");

    let backfill = analyze_json(&lake, &config, &[]);
    let mut found: Vec<String> = ids(&backfill).into_iter().filter(|(session, _)| only_older.contains(session)).map(|(_, id)| id).collect();
    expected.sort();
    found.sort();
    assert_eq!(found, expected, "the backfilled sessions' findings, as a full run finds them");
    let again = analyze_json(&lake, &config, &[]);
    assert_eq!(again["findings"].as_array().unwrap().len(), 0, "nothing new after the backfill was analyzed");
}

#[test]
fn user_detectors_run_and_broken_ones_are_named_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.events.jsonl")]);
    let detectors = dir.path().join("detectors");
    std::fs::create_dir(&detectors).unwrap();
    std::fs::write(
        detectors.join("slow_tools.sql"),
        "SELECT 'X-DEPLOY' AS signal, 'low' AS severity, chain_id, agent, session, idx AS start_idx, idx AS end_idx, \
         id AS start_event_id, id AS end_event_id, ts AS occurred_at, 'deploy called' AS summary, \
         json_object('tool', tool_name) AS evidence, NULL AS fingerprint FROM chain_events WHERE type = 'tool.call' AND tool_name = 'deploy'",
    )
    .unwrap();
    std::fs::write(detectors.join("broken.sql"), "SELECT nothing FROM nowhere").unwrap();
    let config = write_config(dir.path(), ALL_FINDINGS);
    let out = tracelake(&[
        "analyze",
        "--lake",
        &lake,
        "--config",
        &config,
        "--full",
        "--format",
        "json",
        "--detectors",
        detectors.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("detector broken.sql skipped"), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The generator calls `deploy` once in every hallucination session, and nowhere else.
    let expected: Value =
        serde_json::from_slice(&std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.events.jsonl.expected.json")).unwrap())
            .unwrap();
    let deploys = expected["findings"]["SIG-HALLUCINATION"].as_u64().unwrap() as usize;
    assert!(deploys > 0);
    assert_eq!(
        counts(&report).get("X-DEPLOY").copied().unwrap_or(0) as usize,
        deploys,
        "one finding per deploy call, duplicates of both schemas removed"
    );
}

#[test]
fn fail_on_exits_3_and_output_writes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.events.jsonl")]);
    let md = dir.path().join("report.md");
    let out = tracelake(&[
        "analyze",
        "--lake",
        &lake,
        "--full",
        "--format",
        "markdown",
        "--output",
        md.to_str().unwrap(),
        "--fail-on",
        "critical",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.starts_with("# Trace analysis") && text.contains("| critical | SIG-HALLUCINATION |"), "{text}");

    let quiet = dir.path().join("quiet");
    let lake2 = quiet.join("lake").display().to_string();
    std::fs::create_dir(&quiet).unwrap();
    let input = quiet.join("clean.jsonl");
    std::fs::write(
        &input,
        [
            json!({"id": "a", "ts": 1_767_225_600_000_i64, "agent": "m", "session": "s", "type": "msg.in", "payload": {"content": "hi"}}),
            json!({"id": "b", "ts": 1_767_225_601_000_i64, "agent": "m", "session": "s", "type": "msg.out", "payload": {"content": "hello"}}),
        ]
        .map(|v| v.to_string())
        .join("\n"),
    )
    .unwrap();
    tracelake_ok(&["import", "--lake", &lake2, input.to_str().unwrap()]);
    let clean = tracelake(&["analyze", "--lake", &lake2, "--fail-on", "low"]);
    assert_eq!(clean.status.code(), Some(0), "{clean:?}");
}

#[test]
fn analysis_in_session_buckets_finds_the_same_as_in_one_piece() {
    use tracelake::pipeline::{AnalyzeOptions, analyze};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("g.jsonl");
    tracelake_ok(&["generate", "--events", "12000", "--seed", "5", "--output", input.to_str().unwrap()]);
    let lake_dir = dir.path().join("lake");
    tracelake_ok(&["import", "--lake", lake_dir.to_str().unwrap(), input.to_str().unwrap()]);
    let lake = tracelake::lake::Lake::new(lake_dir);
    let all = tracelake::config::Config::resolve(&serde_json::from_str(ALL_FINDINGS).unwrap()).unwrap();
    // A cap below the findings of one bucket: the most severe of all buckets are kept.
    let capped = tracelake::config::Config::resolve(&json!({"output": {"maxFindings": 40}})).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let run = |config: &tracelake::config::Config, bucket_events: u64| {
        let opts = AnalyzeOptions { full: true, bucket_events, ..AnalyzeOptions::default() };
        let analysis = runtime.block_on(analyze(&lake, config, tracelake::redact::Redactor::builtin(), &opts)).unwrap();
        let mut ids: Vec<(String, tracelake::model::Severity, String)> =
            analysis.results.findings.iter().map(|f| (f.finding_id.clone(), f.severity, f.summary.clone())).collect();
        ids.sort();
        (ids, analysis.results.chains, analysis.results.events_processed, analysis.results.time_range)
    };
    let whole = run(&all, 0);
    let bucketed = run(&all, 2500);
    assert!(whole.0.iter().any(|(_, _, s)| s.starts_with("Same failure repeated")), "repeat failures cross buckets");
    assert_eq!(whole, bucketed);

    let whole = run(&capped, 0);
    assert_eq!(whole.0.len(), 40);
    assert!(whole.0.iter().all(|(_, severity, _)| *severity == tracelake::model::Severity::Critical), "{:?}", whole.0);
    assert_eq!(whole, run(&capped, 2500));
}

#[test]
fn an_analysis_leaves_no_temporary_files_and_removes_those_a_killed_run_left() {
    let dir = tempfile::tempdir().unwrap();
    let lake = generated_lake(dir.path(), 12000, 7);
    let temp = dir.path().join("tmp");
    let other = temp.join("tracelake-not-a-run-of-ours");
    std::fs::create_dir_all(&other).unwrap();
    let analyze = || {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"));
        command.args(["analyze", "--lake", &lake, "--full", "--format", "json"]).env("TMPDIR", &temp);
        command.env_remove("TRACELAKE_LAKE").env_remove("TRACELAKE_CONFIG").stdout(std::process::Stdio::piped());
        command
    };
    let runs = || -> Vec<String> {
        let names = std::fs::read_dir(&temp).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
        names.filter(|n| n.starts_with("tracelake-") && *n != "tracelake-not-a-run-of-ours").collect()
    };

    // Killed as soon as it has made its spill directory and locked it (a directory killed
    // before its lock file has its name is left alone, as one being made).
    let mut killed = analyze().spawn().unwrap();
    let started = std::time::Instant::now();
    let locked = || runs().iter().any(|n| temp.join(n).join(".lock").exists());
    while !locked() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    let left = runs();
    assert!(left.iter().any(|n| n.starts_with("tracelake-spill-")), "a killed run leaves its directories: {left:?}");

    let out = analyze().output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!report["findings"].as_array().unwrap().is_empty());
    assert_eq!(runs(), Vec::<String>::new(), "the next run removes what the killed one left, and its own");
    assert!(other.exists(), "a directory without a lock is not taken for a run's");
}
