//! `tracelake factors` on traffic with a planted factor: sessions that call one tool fail
//! at three times the base rate, everything else is random.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::common::{tracelake, tracelake_ok};

/// How the outcomes are known.
#[derive(Clone, Copy, PartialEq)]
enum Told {
    /// An outcomes file, imported.
    ByFile,
    /// Only by what the user says after the agent's answer.
    InWords,
}

/// 400 sessions; `planted` and `null_tool` are each called in about 30 % of them, at
/// random; a session that calls `planted` fails with probability 0.45, any other with 0.15.
fn planted_lake(dir: &std::path::Path, told: Told) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut events, mut outcomes) = (Vec::new(), Vec::new());
    for s in 0..400 {
        let session = format!("s{s}");
        let ts = 1_767_225_600_000_i64 + s * 60_000;
        let mut push = |n: i64, kind: &str, payload: Value| {
            events.push(json!({"id": format!("{session}-{n}"), "ts": ts + n * 1000, "agent": "support", "session": session, "type": kind, "payload": payload}).to_string());
        };
        push(0, "msg.in", json!({"content": "Help me, please."}));
        let mut n = 1;
        let mut planted = false;
        for tool in ["planted", "null_tool", "lookup"] {
            if rng.random_bool(if tool == "lookup" { 0.5 } else { 0.3 }) {
                planted |= tool == "planted";
                push(n, "tool.call", json!({"toolName": tool, "params": {"n": n}}));
                push(n + 1, "tool.result", json!({"toolName": tool, "result": {"ok": true}}));
                n += 2;
            }
        }
        push(n, "msg.out", json!({"content": "Here you are."}));
        let failed = rng.random_bool(if planted { 0.45 } else { 0.15 });
        if told == Told::InWords {
            push(n + 1, "msg.in", json!({"content": if failed { "That's wrong, not what I asked." } else { "Thanks, that's all!" }}));
        }
        outcomes.push(json!({"session": session, "outcome": if failed { "failure" } else { "success" }}).to_string());
    }
    let (events_file, outcomes_file) = (dir.join("events.jsonl"), dir.join("outcomes.jsonl"));
    std::fs::write(&events_file, events.join("\n") + "\n").unwrap();
    std::fs::write(&outcomes_file, outcomes.join("\n") + "\n").unwrap();
    let lake = dir.join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, events_file.to_str().unwrap()]);
    if told == Told::ByFile {
        tracelake_ok(&["outcomes", "import", "--lake", &lake, outcomes_file.to_str().unwrap()]);
    }
    lake
}

fn factor<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["factors"].as_array().unwrap().iter().find(|f| f["factor"] == name).unwrap_or_else(|| panic!("{name}: {report:#}"))
}

#[test]
fn a_planted_factor_ranks_first_and_a_null_one_is_not_significant() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let report: Value = serde_json::from_str(&tracelake_ok(&["factors", "--lake", &lake, "--format", "json"])).unwrap();
    let first = &report["factors"][0];
    assert_eq!((first["factor"].as_str(), first["value"].as_str()), (Some("tool:planted"), Some("used")), "{report:#}");
    assert!(first["qValue"].as_f64().unwrap() < 0.01 && first["lift"].as_f64().unwrap() > 2.0, "{first}");
    let (planted, null) = (first["sessions"].as_u64().unwrap(), factor(&report, "tool:null_tool"));
    assert!(null["sessions"].as_u64().unwrap().abs_diff(planted) < 40, "the same support: {null}");
    assert!(null["qValue"].as_f64().unwrap() > 0.05, "a null factor is not significant: {null}");
    let (low, high, rate) = (first["ciLow"].as_f64().unwrap(), first["ciHigh"].as_f64().unwrap(), first["failureRate"].as_f64().unwrap());
    assert!(low < rate && rate < high && (0.3..0.6).contains(&rate), "{first}");

    let table = tracelake_ok(&["factors", "--lake", &lake]);
    assert!(table.lines().nth(3).is_some_and(|l| l.starts_with("tool:planted = used")), "{table}");
    let csv = tracelake_ok(&["factors", "--lake", &lake, "--format", "csv"]);
    assert!(csv.starts_with("factor,value,sessions,failed,failure_rate,ci_low,ci_high,lift,p_value,q_value\ntool:planted,used,"), "{csv}");
}

/// The risk model learns the planted tool: on held-out tasks it ranks failures above
/// successes better than chance, and its riskiest unflagged sessions called the tool.
#[test]
fn the_risk_model_ranks_held_out_failures_and_names_unflagged_risky_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let report: Value = serde_json::from_str(&tracelake_ok(&["risk", "--lake", &lake, "--format", "json", "--top", "5"])).unwrap();
    let auc = report["crossValidatedAuc"].as_f64().unwrap();
    assert!(auc > 0.6 && auc <= 1.0, "{report:#}");
    assert_eq!((report["sessionsScored"].as_u64(), report["folds"].as_u64()), (Some(400), Some(5)));
    let riskiest = report["riskiestWithoutFinding"].as_array().unwrap();
    assert_eq!(riskiest.len(), 5);
    let called: Vec<Value> = crate::common::sql_rows(&lake, "SELECT DISTINCT session FROM events WHERE tool_name = 'planted'");
    for s in riskiest {
        assert!(called.contains(&json!({"session": s["session"]})), "{s} did not call the planted tool");
    }
    let table = tracelake_ok(&["risk", "--lake", &lake]);
    assert!(table.contains("cross-validated AUC over 5 folds by task: 0."), "{table}");
}

/// The same traffic with its outcomes only in the users' last words.
#[test]
fn a_planted_factor_ranks_first_on_inferred_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::InWords);
    let without = tracelake(&["factors", "--lake", &lake]);
    assert!(String::from_utf8_lossy(&without.stderr).contains("the lake has no outcomes"), "imported ones only by default");
    let report: Value =
        serde_json::from_str(&tracelake_ok(&["factors", "--lake", &lake, "--outcomes", "inferred", "--format", "json"])).unwrap();
    assert_eq!(report["sessionsScored"], 400, "every session's outcome is read from its words");
    let first = &report["factors"][0];
    assert_eq!((first["factor"].as_str(), first["value"].as_str()), (Some("tool:planted"), Some("used")), "{report:#}");
    assert!(first["qValue"].as_f64().unwrap() < 0.01, "{first}");
    assert!(factor(&report, "tool:null_tool")["qValue"].as_f64().unwrap() > 0.05);
    let scores = tracelake_ok(&["score", "--lake", &lake, "--outcomes", "inferred"]);
    assert!(scores.starts_with("400 sessions with a known outcome"), "{scores}");
}

#[test]
fn factor_files_add_factors_and_a_broken_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let lake = planted_lake(dir.path(), Told::ByFile);
    let factors = dir.path().join("factors");
    std::fs::create_dir(&factors).unwrap();
    std::fs::write(
        factors.join("planted.sql"),
        "SELECT DISTINCT session, 'calls_planted' AS factor, 'yes' AS value FROM events WHERE tool_name = 'planted';\n",
    )
    .unwrap();
    let dir_arg = factors.to_str().unwrap();
    let report: Value =
        serde_json::from_str(&tracelake_ok(&["factors", "--lake", &lake, "--factors", dir_arg, "--format", "json"])).unwrap();
    let (copy, planted) = (factor(&report, "calls_planted"), factor(&report, "tool:planted"));
    assert_eq!((&copy["sessions"], &copy["pValue"]), (&planted["sessions"], &planted["pValue"]), "the same sessions score the same");
    let listed = tracelake_ok(&["factors", "--lake", &lake, "--factors", dir_arg, "--list"]);
    assert!(listed.contains("calls_planted") && listed.contains("tool:null_tool") && listed.contains("user_turns"), "{listed}");

    std::fs::write(factors.join("broken.sql"), "SELECT session FROM events").unwrap();
    let out = tracelake(&["factors", "--lake", &lake, "--factors", dir_arg]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(said.contains("broken.sql: a factor file is one query returning session, factor and value"), "{said}");
}

#[test]
fn factors_without_outcomes_say_how_to_load_them() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, crate::common::realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let out = tracelake(&["factors", "--lake", &lake]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&format!("`tracelake outcomes import --lake {lake} FILE`")), "{said}");
}
