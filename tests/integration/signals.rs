//! The signal-detector tests of spec §14.3 that need the whole pipeline: events decoded
//! from their wire schemas, and SIG-REPEAT-FAIL's failure history across sessions and
//! runs. The others are `.slt` cases in `tests/sql/` (one file per detector).

use serde_json::json;

use crate::trace::{Trace, detect, of};

const TOOL_FAIL: &str = "SIG-TOOL-FAIL";
const REPEAT: &str = "SIG-REPEAT-FAIL";
const HALLUCINATION: &str = "SIG-HALLUCINATION";

mod decoded {
    use super::*;

    #[test]
    fn schema_b_is_error_counts() {
        let lines = [
            json!({"id": "c", "timestamp": 1_700_000_001_000_i64, "agent": "main", "session": "agent:main:s", "type": "conversation.tool_call", "payload": {"data": {"name": "exec", "args": {"command": "x"}}}}),
            json!({"id": "r", "timestamp": 1_700_000_002_000_i64, "agent": "main", "session": "agent:main:s", "type": "conversation.tool_result", "payload": {"data": {"name": "exec", "isError": true, "result": {"content": [{"type": "text", "text": "boom"}]}}}}),
            json!({"id": "o", "timestamp": 1_700_000_003_000_i64, "agent": "main", "session": "agent:main:s", "type": "conversation.message.out", "payload": {"text_preview": [{"type": "text", "text": "Das ging nicht."}]}}),
        ];
        let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
        let f = of(&crate::trace::detect_lines(&text, None), TOOL_FAIL);
        assert_eq!(f.len(), 1);
        assert!(f[0].summary.ends_with("boom"), "{}", f[0].summary);
    }
    #[test]
    fn schema_a_error_string_counts() {
        let mut t = Trace::new();
        t.tool_fail("exec", json!({"command": "make"}), "exit code 2").agent("Der Build ist kaputt.");
        assert_eq!(of(&detect(&t), TOOL_FAIL).len(), 1);
    }
    #[test]
    fn a_result_without_error_or_success_field_counts_as_success() {
        let mut t = Trace::new();
        t.call("exec", json!({"command": "x"})).event("tool.result", json!({"toolName": "exec"})).agent("Done.");
        assert!(of(&detect(&t), HALLUCINATION).is_empty());
    }
}

mod repeat_fail {
    use super::*;

    fn session_with_failure(t: &mut Trace, session: &str, params: serde_json::Value, error: &str) {
        t.session(session, "main")
            .user("deploy")
            .tool_fail("deploy", params, error)
            .tool_ok("ticket", json!({"title": session}))
            .agent("Ticket angelegt.");
    }

    #[test]
    fn same_failure_in_two_sessions() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod"}), "403 Forbidden");
        session_with_failure(&mut t, "s2", json!({"env": "prod"}), "403 Forbidden");
        let f = of(&detect(&t), REPEAT);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, "high");
        assert!(f[0].summary.starts_with("Same failure repeated across 2 sessions: deploy — 403"), "{}", f[0].summary);
    }
    #[test]
    fn not_within_one_session() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod"}), "403");
        session_with_failure(&mut t, "s1", json!({"env": "prod"}), "403");
        assert!(of(&detect(&t), REPEAT).is_empty());
    }
    #[test]
    fn the_third_session_is_critical() {
        let mut t = Trace::new();
        for s in ["s1", "s2", "s3"] {
            session_with_failure(&mut t, s, json!({"env": "prod"}), "403");
        }
        let mut severities: Vec<String> = of(&detect(&t), REPEAT).into_iter().map(|f| f.severity).collect();
        severities.sort();
        assert_eq!(severities, ["critical", "high"], "the second session is high, the third critical");
    }
    #[test]
    fn timestamps_in_errors_are_normalized() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod"}), "2026-01-01T10:00:00.123Z connection refused");
        session_with_failure(&mut t, "s2", json!({"env": "prod"}), "2026-03-04 11:22:33 connection refused");
        assert_eq!(of(&detect(&t), REPEAT).len(), 1);
    }
    #[test]
    fn pids_in_errors_are_normalized() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod"}), "worker pid=1234 crashed");
        session_with_failure(&mut t, "s2", json!({"env": "prod"}), "worker pid 98 crashed");
        assert_eq!(of(&detect(&t), REPEAT).len(), 1);
    }
    #[test]
    fn history_counts_across_runs() {
        // Across runs the history is the lake: a later run sees the earlier sessions.
        let dir = tempfile::tempdir().unwrap();
        let lake = dir.path().join("lake").display().to_string();
        let mut first = Trace::new();
        session_with_failure(&mut first, "s1", json!({"env": "prod"}), "403");
        let mut second = Trace::new();
        second.wait_minutes(120);
        session_with_failure(&mut second, "s2", json!({"env": "prod"}), "403");
        let config = crate::analyze::write_config(dir.path(), crate::analyze::ALL_FINDINGS);
        for (name, t) in [("a.jsonl", &first), ("b.jsonl", &second)] {
            let path = dir.path().join(name);
            std::fs::write(&path, t.lines().replace("test-", name)).unwrap();
            crate::common::tracelake_ok(&["import", "--lake", &lake, path.to_str().unwrap()]);
            if name == "a.jsonl" {
                crate::common::tracelake_ok(&["analyze", "--lake", &lake, "--config", &config]);
            }
        }
        let report: serde_json::Value =
            serde_json::from_str(&crate::common::tracelake_ok(&["analyze", "--lake", &lake, "--config", &config, "--format", "json"]))
                .unwrap();
        let signals: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["signal"]["signal"].as_str().unwrap()).collect();
        assert_eq!(signals, [REPEAT], "{report}");
    }
    #[test]
    fn volatile_params_do_not_split_a_fingerprint() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod", "timeout": 5, "timestamp": 1}), "403");
        session_with_failure(&mut t, "s2", json!({"env": "prod", "timeout": 30, "timestamp": 2}), "403");
        assert_eq!(of(&detect(&t), REPEAT).len(), 1);
    }
    #[test]
    fn different_params_are_different_failures() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod"}), "403");
        session_with_failure(&mut t, "s2", json!({"env": "staging"}), "403");
        assert!(of(&detect(&t), REPEAT).is_empty());
    }
    #[test]
    fn same_tool_same_error_different_params_do_not_match() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod", "version": "1"}), "403");
        session_with_failure(&mut t, "s2", json!({"env": "prod", "version": "2"}), "403");
        assert!(of(&detect(&t), REPEAT).is_empty());
    }
    #[test]
    fn a_first_occurrence_alone_reports_nothing() {
        let mut t = Trace::new();
        session_with_failure(&mut t, "s1", json!({"env": "prod"}), "403");
        assert!(of(&detect(&t), REPEAT).is_empty());
    }
}
