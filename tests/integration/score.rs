//! Outcomes (`tracelake outcomes import`), `tracelake score`, and every finding kept in the
//! lake whatever the report lists.

use serde_json::Value;

use crate::analyze::write_config;
use crate::common::{realworld, tracelake, tracelake_ok};

/// A temporary directory with a lake of `events` in it.
fn lake_of(events: &std::path::Path) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, events.to_str().unwrap()]);
    (dir, lake)
}

/// A temporary directory with a lake of the bundled sample in it.
fn sample_lake() -> (tempfile::TempDir, String) {
    lake_of(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/data/sample.events.jsonl")))
}

fn dev_set() -> std::path::PathBuf {
    realworld("../outcomes/tau-airline.outcomes.jsonl")
}

#[test]
fn the_airline_development_set_is_scored_and_the_findings_separate_failure_from_success() {
    let (_dir, lake) = lake_of(&realworld("tau-airline.events.jsonl"));
    tracelake_ok(&["analyze", "--lake", &lake, "--full"]);
    let imported = tracelake_ok(&["outcomes", "import", "--lake", &lake, dev_set().to_str().unwrap()]);
    assert!(imported.contains("200 outcomes, 0 lines rejected"), "{imported}");

    let by_outcome = tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "csv",
        "SELECT outcome, count(*) AS n FROM outcomes GROUP BY outcome ORDER BY outcome",
    ]);
    assert_eq!(by_outcome.trim(), "outcome,n\nfailure,116\nsuccess,84");

    let scores: Value = serde_json::from_str(&tracelake_ok(&["score", "--lake", &lake, "--format", "json"])).unwrap();
    assert_eq!(
        (scores["sessionsScored"].as_u64(), scores["failed"].as_u64(), scores["succeeded"].as_u64()),
        (Some(200), Some(116), Some(84))
    );
    assert_eq!(scores["sessionsWithoutOutcome"], 0);
    // Where a session has both, how the outcomes inferred from the users' words agree with
    // the imported ones, counted over the same sessions.
    let agreement = &scores["inferredAgreement"];
    let (sessions, agreed) = (agreement["sessions"].as_u64().unwrap(), agreement["agreed"].as_u64().unwrap());
    assert_eq!(sessions + agreement["notInferred"].as_u64().unwrap(), 200, "{agreement}");
    assert!(agreed <= sessions && (agreement["accuracy"].as_f64().unwrap() - agreed as f64 / sessions as f64).abs() < 1e-12);
    assert!(agreement["kappa"].as_f64().is_some_and(|k| (-1.0..=1.0).contains(&k)), "{agreement}");
    let signals = scores["signals"].as_array().unwrap();
    let any = &signals[0];
    assert_eq!(any["signal"], "(any)");
    let (recall, lift) = (any["failedRate"].as_f64().unwrap(), any["lift"].as_f64().unwrap());
    // The bar of the default config on this set: at least 30 % of the failed sessions
    // flagged, each flagged session at least 5 times likelier a failed one.
    assert!(recall >= 0.30 && lift >= 5.0, "recall {recall}, lift {lift}: {any}");
    for s in &signals[1..] {
        assert!(s["failedFlagged"].as_u64() <= any["failedFlagged"].as_u64(), "{s}");
        assert_eq!(s["failed"], 116);
    }
    // Each signal's p-value is Fisher's exact test of its flagged sessions by outcome.
    for s in signals {
        let count = |key: &str| s[key].as_u64().unwrap();
        let (ff, sf) = (count("failedFlagged"), count("succeededFlagged"));
        let p = tracelake::output::stats::fisher_exact([[ff, 116 - ff], [sf, 84 - sf]]);
        assert!((s["pValue"].as_f64().unwrap() - p).abs() < 1e-12, "{s}");
    }
    assert!(any["pValue"].as_f64().unwrap() < 1e-6, "the findings separate the outcomes: {any}");
    let table = tracelake_ok(&["score", "--lake", &lake]);
    assert!(table.starts_with("200 sessions with a known outcome: 116 failed, 84 succeeded"), "{table}");
    let header = table.lines().find(|l| l.starts_with("signal")).unwrap();
    assert!(header.split_whitespace().collect::<Vec<_>>().ends_with(&["lift", "p", "findings/session"]), "{table}");
    let any_row = table.lines().find(|l| l.starts_with("(any)")).unwrap();
    let any_p = tracelake::output::stats::probability_text(any["pValue"].as_f64().unwrap(), 4);
    assert!(any_row.contains(&format!(" {any_p} ")), "{any_row}");

    // Five folds by task: the four trials of each of the 50 tasks share a fold, and the
    // folds add up to the whole.
    let folded: Value = serde_json::from_str(&tracelake_ok(&["score", "--lake", &lake, "--folds", "5", "--format", "json"])).unwrap();
    let folds = &folded["folds"];
    assert_eq!(folds["folds"], 5);
    let by_signal = folds["signals"].as_array().unwrap();
    assert_eq!(by_signal[0]["signal"], "(any)");
    let sum = |s: &Value, key: &str| s["folds"].as_array().unwrap().iter().map(|f| f[key].as_u64().unwrap()).sum::<u64>();
    for s in by_signal {
        assert_eq!(s["folds"].as_array().unwrap().len(), 5, "{s}");
        assert_eq!((sum(s, "tasks"), sum(s, "failed"), sum(s, "succeeded")), (50, 116, 84), "{s}");
        let overall = signals.iter().find(|o| o["signal"] == s["signal"]).expect("the same signals");
        assert_eq!(sum(s, "failedFlagged"), overall["failedFlagged"].as_u64().unwrap(), "{s}");
        assert_eq!(sum(s, "succeededFlagged"), overall["succeededFlagged"].as_u64().unwrap(), "{s}");
    }
    let per_session: Value =
        serde_json::from_str(&tracelake_ok(&["score", "--lake", &lake, "--folds", "5", "--group-by", "session", "--format", "json"]))
            .unwrap();
    assert_eq!(sum(&per_session["folds"]["signals"][0], "tasks"), 200);
    let table = tracelake_ok(&["score", "--lake", &lake, "--folds", "5"]);
    assert!(table.contains("5 folds by task") && table.contains("lift by fold"), "{table}");
    let out = tracelake(&["score", "--lake", &lake, "--group-by", "session"]);
    assert_eq!(out.status.code(), Some(2), "--group-by needs --folds");
}

#[test]
fn outcomes_from_csv_with_bad_lines_counted_and_a_repeat_skipped() {
    let (dir, lake) = sample_lake();
    let csv = dir.path().join("evals.csv");
    std::fs::write(&csv, "session,outcome,score\ns-1,success,0.9\ns-2,maybe,0.1\ns-3,failure,\n").unwrap();
    let out = tracelake(&["outcomes", "import", "--lake", &lake, csv.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 outcomes, 1 lines rejected"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 3: outcome \"maybe\" is neither success nor failure"));
    let again = tracelake_ok(&["outcomes", "import", "--lake", &lake, csv.to_str().unwrap()]);
    assert!(again.starts_with("skipped"), "{again}");
    let rows = tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "csv",
        "SELECT session, outcome, score, source FROM session_outcomes ORDER BY session",
    ]);
    let source = csv.display().to_string();
    assert_eq!(rows.trim(), format!("session,outcome,score,source\ns-1,success,0.9,{source}\ns-3,failure,,{source}"));

    // Outcomes of sessions the lake does not have are not scored, and say so.
    tracelake_ok(&["analyze", "--lake", &lake, "--full"]);
    let scores: Value = serde_json::from_str(&tracelake_ok(&["score", "--lake", &lake, "--format", "json"])).unwrap();
    assert_eq!(scores["sessionsScored"], 0);
    assert_eq!(scores["outcomesWithoutEvents"], 2);

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "{\"id\": 1}\n").unwrap();
    let out = tracelake(&["outcomes", "import", "--lake", &lake, empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no outcome"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn score_without_outcomes_says_how_to_load_them() {
    let (_dir, lake) = sample_lake();
    let out = tracelake(&["score", "--lake", &lake]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&format!("`tracelake outcomes import --lake {lake} FILE`")), "the hint names the lake: {said}");
}

#[test]
fn every_finding_is_kept_in_the_lake_and_the_report_says_how_many_it_does_not_list() {
    let (dir, lake) = sample_lake();
    let config = write_config(dir.path(), r#"{"output": {"maxFindings": 5}}"#);
    let report: Value =
        serde_json::from_str(&tracelake_ok(&["analyze", "--lake", &lake, "--config", &config, "--full", "--format", "json"])).unwrap();
    let detected = report["stats"]["findingsDetected"].as_u64().unwrap();
    assert!(detected > 5, "{}", report["stats"]);
    assert_eq!(report["findings"].as_array().unwrap().len(), 5);
    assert_eq!(report["stats"]["findingsNotListed"].as_u64(), Some(detected - 5));
    let counted: u64 = report["signalStats"].as_array().unwrap().iter().map(|s| s["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, detected, "signal statistics count every finding");
    let stored =
        tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT count(*) AS n, count(DISTINCT finding_id) AS ids FROM findings"]);
    assert_eq!(stored.trim(), format!("n,ids\n{detected},{detected}"));

    let table = tracelake_ok(&["analyze", "--lake", &lake, "--config", &config, "--full"]);
    assert!(table.contains(&format!("… {} more, all in tracelake sql --lake {lake} ", detected - 5)), "{table}");
    let html = dir.path().join("report.html");
    tracelake_ok(&["report", "--lake", &lake, "--format", "html", "--max-findings", "5", "--output", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(&format!("The 5 most severe of {detected} findings; all are in the lake")), "the page says what it leaves out");
    // The next run reports none of them again.
    let next: Value = serde_json::from_str(&tracelake_ok(&["analyze", "--lake", &lake, "--config", &config, "--format", "json"])).unwrap();
    assert_eq!(next["stats"]["findingsDetected"], 0);
}

#[test]
fn a_task_expression_that_does_not_plan_is_named() {
    let (dir, lake) = sample_lake();
    let csv = dir.path().join("evals.csv");
    std::fs::write(&csv, "session,outcome\ns-1,success\n").unwrap();
    tracelake_ok(&["outcomes", "import", "--lake", &lake, csv.to_str().unwrap()]);
    let out = tracelake(&["score", "--lake", &lake, "--folds", "3", "--group-by", "no_such_column"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--group-by \"no_such_column\" is not a SQL expression over `session`"), "{stderr}");
}
