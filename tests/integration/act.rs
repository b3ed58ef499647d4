//! From findings to action, end to end: `analyze` with an LLM (classifications, outputs,
//! artifact files, cache, redaction of what is sent), rule effectiveness over three runs,
//! and `report` in every format, the HTML one rendered in headless Chromium.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{sql_rows, tracelake, tracelake_ok};
use crate::llm_server::{LlmServer, Reply};
use crate::trace::Trace;

/// Session `s1`: a correction and an unrecovered tool failure; `s2` and `s3` (each an hour
/// later): the same tool failure only.
fn three_sessions() -> Vec<String> {
    let mut t = Trace::new();
    t.session("s1", "main")
        .user("Wie ist der Status?")
        .agent("Der Server läuft auf Port 8080.")
        .user("nein, das ist falsch, ticket INTERNAL-4711")
        .user("Lies die Config")
        .tool_fail("read", json!({"path": "/etc/app.conf"}), "ENOENT")
        .agent("Die Datei gibt es nicht.");
    let first = t.events.len();
    t.wait_minutes(60)
        .session("s2", "main")
        .user("Lies die Config")
        .tool_fail("read", json!({"path": "/etc/app.conf"}), "ENOENT")
        .agent("Die Datei gibt es nicht.");
    let second = t.events.len();
    t.wait_minutes(60)
        .session("s3", "main")
        .user("Lies die Config")
        .tool_fail("read", json!({"path": "/etc/app.conf"}), "ENOENT")
        .agent("Die Datei gibt es nicht.");
    let lines = |events: &[Value]| events.iter().map(|e| e.to_string() + "\n").collect::<String>();
    vec![lines(&t.events[..first]), lines(&t.events[first..second]), lines(&t.events[second..])]
}

/// Soul rules that differ per signal; triage keeps everything.
fn rule_server() -> LlmServer {
    LlmServer::start(|_, r| {
        if r.is_triage() {
            return Reply::content(r#"{"keep": true, "reason": "real"}"#);
        }
        let text = if r.user().contains("Type: SIG-CORRECTION") {
            "NEVER state the server port from memory — instead read it from the running process."
        } else {
            "Always check that a config file exists with ls before reading it."
        };
        Reply::content(json!({"rootCause": "guessing", "actionType": "soul_rule", "actionText": text, "confidence": 0.8}).to_string())
    })
}

fn config(dir: &Path, server: &LlmServer, extra: Value) -> String {
    let mut cfg = json!({
        "llm": {"enabled": true, "endpoint": server.url, "model": "top-model"},
        "traceAnalyzer": {"llm": {"enabled": true, "model": "deep-model", "triage": {"endpoint": server.url, "model": "triage-model"}},
                          "output": {"maxFindings": 1000}, "signals": {"SIG-TOOL-FAIL": {"enabled": true}}}
    });
    if let Value::Object(map) = extra {
        for (k, v) in map {
            cfg["traceAnalyzer"][k] = v;
        }
    }
    let path = dir.join("cortex.json");
    std::fs::write(&path, cfg.to_string()).unwrap();
    path.display().to_string()
}

fn import(dir: &Path, lake: &str, name: &str, lines: &str) {
    let file = dir.join(name);
    std::fs::write(&file, lines).unwrap();
    tracelake_ok(&["import", "--lake", lake, file.to_str().unwrap()]);
}

#[test]
fn analyze_classifies_generates_artifacts_and_never_sends_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    import(dir.path(), &lake, "s1.jsonl", &three_sessions()[0]);
    let server = rule_server();
    // The lake holds INTERNAL-4711; the custom pattern exists only at analysis time.
    let cfg = config(dir.path(), &server, json!({"redactPatterns": ["INTERNAL-[0-9]+"]}));
    // Small buckets: the chains of the findings are read back for the transcripts.
    let out = tracelake(&["analyze", "--lake", &lake, "--config", &cfg, "--format", "json", "--bucket-events", "4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "{report:#}");
    assert!(findings.iter().all(|f| f["classification"]["actionType"] == "soul_rule" && f["classification"]["model"] == "deep-model"));
    assert_eq!(report["stats"]["findingsClassified"], 2);
    assert_eq!(report["generatedOutputs"].as_array().unwrap().len(), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("llm: 4 requests, 0 cached answers"));

    let received = server.received();
    assert_eq!(received.len(), 4);
    assert!(received.iter().all(|r| !r.body.to_string().contains("INTERNAL-4711")), "a secret reached the LLM");
    assert!(received.iter().any(|r| r.body.to_string().contains("[REDACTED]")));
    assert!(received.iter().filter(|r| !r.is_triage()).all(|r| r.model() == "deep-model"));

    let soul = std::fs::read_to_string(Path::new(&lake).join("artifacts/soul-rules.md")).unwrap();
    assert!(soul.contains("NEVER state the server port from memory"));
    assert!(soul.contains("[1× beobachtet in Traces, Findings: "));
    let classified = sql_rows(&lake, "SELECT count(*) AS n FROM classifications WHERE action_type = 'soul_rule' AND triage_keep");
    assert_eq!(classified[0]["n"], 2);
    assert_eq!(sql_rows(&lake, "SELECT count(*) AS n FROM outputs")[0]["n"], 2);

    // A full re-run finds the same findings and pays nothing.
    let again = tracelake(&["analyze", "--lake", &lake, "--config", &cfg, "--full", "--format", "json"]);
    assert!(again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("llm: 0 requests, 4 cached answers"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(server.received().len(), 4);
}

#[test]
fn triage_drops_are_kept_out_of_findings_but_queryable() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    import(dir.path(), &lake, "s1.jsonl", &three_sessions()[0]);
    let server = LlmServer::start(|_, r| {
        if r.is_triage() {
            let keep = !r.user().contains("SIG-CORRECTION");
            Reply::content(json!({"keep": keep, "severity": "low", "reason": "asked"}).to_string())
        } else {
            Reply::content(r#"{"rootCause": "r", "actionType": "manual_review", "actionText": "look"}"#)
        }
    });
    let cfg = config(dir.path(), &server, json!({}));
    let report: Value = serde_json::from_str(&tracelake_ok(&["analyze", "--lake", &lake, "--config", &cfg, "--format", "json"])).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1);
    assert_eq!(findings[0]["signal"]["signal"], "SIG-TOOL-FAIL");
    assert_eq!(findings[0]["signal"]["severity"], "low", "triage adjusted the severity");
    assert!(report["generatedOutputs"].as_array().unwrap().is_empty(), "manual_review makes no artifact");
    let dropped = sql_rows(&lake, "SELECT signal FROM classifications WHERE NOT triage_keep");
    assert_eq!(dropped, vec![json!({"signal": "SIG-CORRECTION"})]);
    assert_eq!(sql_rows(&lake, "SELECT count(*) AS n FROM findings")[0]["n"], 1);
}

#[test]
fn rule_effectiveness_over_three_runs() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let server = rule_server();
    let cfg = config(dir.path(), &server, json!({}));
    let mut statuses = Vec::new();
    let (mut events, mut findings) = (0, 0);
    for (i, lines) in three_sessions().iter().enumerate() {
        import(dir.path(), &lake, &format!("s{i}.jsonl"), lines);
        let report: Value =
            serde_json::from_str(&tracelake_ok(&["analyze", "--lake", &lake, "--config", &cfg, "--format", "json"])).unwrap();
        // Incremental totals accumulate across runs (spec §14.3 report test 7).
        events += report["stats"]["eventsProcessed"].as_u64().unwrap();
        findings += report["stats"]["findingsDetected"].as_u64().unwrap();
        assert!(report["stats"]["eventsProcessed"].as_u64().unwrap() > 0);
        assert_eq!(report["processingState"]["totalEventsProcessed"].as_u64().unwrap(), events);
        assert_eq!(report["processingState"]["totalFindings"].as_u64().unwrap(), findings);
        let mut by_signal: Vec<(String, String, Value)> = report["ruleEffectiveness"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["signal"].as_str().unwrap().to_owned(), r["status"].as_str().unwrap().to_owned(), r["effectiveness"].clone()))
            .collect();
        by_signal.sort_by(|a, b| a.0.cmp(&b.0));
        statuses.push(by_signal);
    }
    let pending = |s: &str| (s.to_owned(), "pending".to_owned());
    let strip = |run: &Vec<(String, String, Value)>| run.iter().map(|(s, st, _)| (s.clone(), st.clone())).collect::<Vec<_>>();
    assert_eq!(strip(&statuses[0]), vec![pending("SIG-CORRECTION"), pending("SIG-TOOL-FAIL")]);
    assert_eq!(strip(&statuses[1]), vec![pending("SIG-CORRECTION"), pending("SIG-TOOL-FAIL")]);
    assert_eq!(
        statuses[2],
        vec![
            ("SIG-CORRECTION".to_owned(), "effective".to_owned(), json!(100.0)),
            ("SIG-TOOL-FAIL".to_owned(), "ineffective".to_owned(), json!(0.0)),
        ]
    );
    let rules = sql_rows(&lake, "SELECT signal, failures_before, failures_after, runs_after FROM rule_effectiveness ORDER BY signal");
    assert_eq!(rules[0], json!({"signal": "SIG-CORRECTION", "failures_before": 1, "failures_after": 0.0, "runs_after": 2}));
    assert_eq!(rules[1], json!({"signal": "SIG-TOOL-FAIL", "failures_before": 1, "failures_after": 1.0, "runs_after": 2}));
}
