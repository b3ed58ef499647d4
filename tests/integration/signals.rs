//! The signal-detector tests of spec §14.3 (correction 12, tool-fail 10, doom-loop 10,
//! dissatisfied 10, repeat-fail 10, hallucination 10, unverified-claim 8), run through the
//! SQL detectors on small hand-built traces.

use serde_json::json;

use crate::trace::{Trace, detect, of};

const CORRECTION: &str = "SIG-CORRECTION";
const TOOL_FAIL: &str = "SIG-TOOL-FAIL";
const DOOM: &str = "SIG-DOOM-LOOP";
const DISSATISFIED: &str = "SIG-DISSATISFIED";
const REPEAT: &str = "SIG-REPEAT-FAIL";
const HALLUCINATION: &str = "SIG-HALLUCINATION";
const UNVERIFIED: &str = "SIG-UNVERIFIED-CLAIM";

fn corrections(user: &str, after_agent: &str) -> usize {
    let mut t = Trace::new();
    t.user("Wie ist der Status?").agent(after_agent).user(user);
    of(&detect(&t), CORRECTION).len()
}

mod correction {
    use super::*;

    #[test]
    fn detects_nein_das_ist_falsch_after_an_assertion() {
        assert_eq!(corrections("nein, das ist falsch", "Der Server läuft auf Port 8080."), 1);
    }
    #[test]
    fn detects_thats_not_right_after_an_assertion() {
        assert_eq!(corrections("that's not right", "The build finished in 3 minutes."), 1);
    }
    #[test]
    fn nein_after_a_question_is_an_answer() {
        assert_eq!(corrections("nein", "Is the config in /etc/app?"), 0);
    }
    #[test]
    fn nein_to_soll_ich_is_an_answer() {
        assert_eq!(corrections("Nein", "Soll ich den Dienst neu starten"), 0);
    }
    #[test]
    fn german_keywords() {
        for text in ["das stimmt nicht", "du hast dich geirrt", "Korrektur: es war gestern", "so nicht!"] {
            assert_eq!(corrections(text, "Die Datei wurde gelöscht."), 1, "{text}");
        }
    }
    #[test]
    fn english_keywords() {
        for text in ["that's wrong", "you're wrong about that", "not what I asked", "actually no, the other one", "undo that please"] {
            assert_eq!(corrections(text, "I updated the README."), 1, "{text}");
        }
    }
    #[test]
    fn clean_chain_has_none() {
        let mut t = Trace::new();
        t.user("Kannst du die Logs prüfen?").agent("Die Logs sind sauber.").user("Danke!");
        assert!(of(&detect(&t), CORRECTION).is_empty());
    }
    #[test]
    fn several_corrections_give_several_signals() {
        let mut t = Trace::new();
        t.user("Status?").agent("Port 80.").user("falsch").agent("Port 8080.").user("wrong again");
        let found = of(&detect(&t), CORRECTION);
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].start, found[0].end, found[1].start, found[1].end), (1, 2, 3, 4));
    }
    #[test]
    fn severity_is_medium() {
        let mut t = Trace::new();
        t.agent("Erledigt.").user("nein, das ist falsch");
        let found = of(&detect(&t), CORRECTION);
        assert_eq!(found[0].severity, "medium");
        assert!(found[0].summary.starts_with("User corrected agent after: 'Erledigt.'"), "{}", found[0].summary);
    }
    #[test]
    fn empty_content_is_handled() {
        let mut t = Trace::new();
        t.agent("").event("msg.in", json!({})).user("");
        assert!(of(&detect(&t), CORRECTION).is_empty());
    }
    #[test]
    fn nein_inside_a_longer_sentence_is_a_correction() {
        assert_eq!(corrections("nein, ich meine etwas anderes", "Soll ich X tun?"), 1);
    }
    #[test]
    fn not_across_a_tool_call() {
        let mut t = Trace::new();
        t.agent("Die Datei liegt in /tmp.").call("exec", json!({"command": "ls"})).user("nein, das ist falsch");
        assert!(of(&detect(&t), CORRECTION).is_empty());
    }
}

mod tool_fail {
    use super::*;

    fn found(t: &Trace) -> Vec<crate::trace::Found> {
        of(&detect(t), TOOL_FAIL)
    }

    #[test]
    fn detects_an_unrecovered_failure_before_the_answer() {
        let mut t = Trace::new();
        t.user("Lies die Config").tool_fail("read", json!({"path": "/etc/x"}), "ENOENT").agent("Die Datei gibt es nicht.");
        let f = found(&t);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].start, f[0].end), (1, 2));
        assert_eq!(f[0].summary, "Unrecovered tool failure: read — ENOENT");
    }
    #[test]
    fn a_successful_different_tool_recovers() {
        let mut t = Trace::new();
        t.tool_fail("read", json!({"path": "/etc/x"}), "ENOENT").tool_ok("exec", json!({"command": "cat /etc/x"})).agent("Hier ist sie.");
        assert!(found(&t).is_empty());
    }
    #[test]
    fn same_tool_with_different_params_that_succeeds_recovers() {
        let mut t = Trace::new();
        t.tool_fail("read", json!({"path": "/etc/x"}), "ENOENT").tool_ok("read", json!({"path": "/opt/y"})).agent("Gefunden.");
        assert!(found(&t).is_empty());
    }
    #[test]
    fn a_retry_with_the_same_params_that_fails_again_is_no_recovery() {
        let mut t = Trace::new();
        t.tool_fail("read", json!({"path": "/etc/x"}), "EACCES")
            .tool_fail("read", json!({"path": "/etc/x"}), "EACCES")
            .agent("Kein Zugriff.");
        assert_eq!(found(&t).len(), 2);
    }
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
        assert_eq!(found(&t).len(), 1);
    }
    #[test]
    fn only_successful_tools_give_nothing() {
        let mut t = Trace::new();
        t.tool_ok("exec", json!({"command": "ls"})).tool_ok("read", json!({"path": "a"})).agent("Alles da.");
        assert!(found(&t).is_empty());
    }
    #[test]
    fn severity_is_low() {
        let mut t = Trace::new();
        t.tool_fail("exec", json!({"command": "make"}), "exit 2").agent("Build kaputt.");
        assert_eq!(found(&t)[0].severity, "low");
    }
    #[test]
    fn several_unrecovered_failures_give_several_signals() {
        let mut t = Trace::new();
        t.tool_fail("exec", json!({"command": "make"}), "exit 2")
            .agent("Kaputt.")
            .user("und jetzt?")
            .tool_fail("deploy", json!({"env": "prod"}), "403")
            .agent("Auch kaputt.");
        assert_eq!(found(&t).len(), 2);
    }
    #[test]
    fn no_signal_when_no_answer_follows() {
        let mut t = Trace::new();
        t.user("Mach mal").tool_fail("exec", json!({"command": "make"}), "exit 2");
        assert!(found(&t).is_empty());
    }
}

mod doom_loop {
    use super::*;

    fn looped(t: &Trace) -> Vec<crate::trace::Found> {
        of(&detect(t), DOOM)
    }
    fn fails(t: &mut Trace, n: usize, command: impl Fn(usize) -> String) {
        for i in 0..n {
            t.tool_fail("exec", json!({"command": command(i)}), "Permission denied");
        }
    }

    #[test]
    fn three_identical_exec_failures() {
        let mut t = Trace::new();
        fails(&mut t, 3, |_| "cat /etc/shadow".into());
        let f = looped(&t);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].start, f[0].end), (0, 5));
        assert_eq!(f[0].summary, "Doom loop: 3× exec with similar params, all failing");
    }
    #[test]
    fn five_failures_are_critical() {
        let mut t = Trace::new();
        fails(&mut t, 5, |_| "cat /etc/shadow".into());
        assert_eq!(looped(&t)[0].severity, "critical");
    }
    #[test]
    fn varied_approaches_are_no_loop() {
        let mut t = Trace::new();
        let commands = ["cat /etc/shadow", "sudo -l", "ls -la /var/log/nginx/"];
        fails(&mut t, 3, |i| commands[i].into());
        assert!(looped(&t).is_empty());
    }
    #[test]
    fn success_on_the_second_attempt_is_no_loop() {
        let mut t = Trace::new();
        t.tool_fail("exec", json!({"command": "make"}), "x").tool_ok("exec", json!({"command": "make"})).tool_fail(
            "exec",
            json!({"command": "make"}),
            "x",
        );
        assert!(looped(&t).is_empty());
    }
    #[test]
    fn similar_but_not_identical_params_loop() {
        let mut t = Trace::new();
        fails(&mut t, 3, |i| format!("curl -s https://api.example.org/v1/status?try={i}"));
        assert_eq!(looped(&t).len(), 1);
    }
    #[test]
    fn dissimilar_params_do_not_loop() {
        let mut t = Trace::new();
        fails(&mut t, 3, |i| ["git push origin main", "npm publish --access public", "docker compose up -d"][i].into());
        assert!(looped(&t).is_empty());
    }
    #[test]
    fn non_exec_tools_use_jaccard_similarity() {
        let mut t = Trace::new();
        for _ in 0..3 {
            t.tool_fail("web_fetch", json!({"url": "https://example.org", "timeout": 5}), "timeout");
        }
        assert_eq!(looped(&t).len(), 1);
        let mut different = Trace::new();
        for i in 0..3 {
            different.tool_fail("web_fetch", json!({"url": format!("https://example.org/{i}")}), "timeout");
        }
        assert!(looped(&different).is_empty());
    }
    #[test]
    fn no_tools_no_loop() {
        let mut t = Trace::new();
        t.user("hi").agent("hello");
        assert!(looped(&t).is_empty());
    }
    #[test]
    fn successes_between_two_loops_separate_them() {
        let mut t = Trace::new();
        fails(&mut t, 3, |_| "make".into());
        t.tool_ok("exec", json!({"command": "make clean"}));
        fails(&mut t, 4, |_| "make".into());
        let f = looped(&t);
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].start, f[0].end, f[1].start, f[1].end), (0, 5, 8, 15));
    }
    #[test]
    fn three_is_high_five_or_more_is_critical() {
        for (n, severity) in [(3, "high"), (4, "high"), (5, "critical"), (7, "critical")] {
            let mut t = Trace::new();
            fails(&mut t, n, |_| "make".into());
            assert_eq!(looped(&t)[0].severity, severity, "{n}");
        }
    }
}

mod dissatisfied {
    use super::*;

    fn ending(user: &str) -> usize {
        let mut t = Trace::new();
        t.user("Kannst du das fixen?").agent("Ich habe es versucht.").user(user);
        of(&detect(&t), DISSATISFIED).len()
    }

    #[test]
    fn vergiss_es_at_the_end() {
        assert_eq!(ending("vergiss es"), 1);
    }
    #[test]
    fn forget_it_at_the_end() {
        assert_eq!(ending("forget it"), 1);
    }
    #[test]
    fn satisfaction_is_not_dissatisfaction() {
        assert_eq!(ending("danke, passt"), 0);
    }
    #[test]
    fn not_in_the_middle_of_a_chain() {
        let mut t = Trace::new();
        t.user("vergiss es")
            .agent("Okay.")
            .user("Neue Frage: wie spät ist es?")
            .agent("12 Uhr.")
            .tool_ok("exec", json!({"command": "date"}))
            .agent("Genau 12:00.");
        assert!(of(&detect(&t), DISSATISFIED).is_empty());
    }
    #[test]
    fn ich_machs_selbst() {
        assert_eq!(ending("ich mach's selbst"), 1);
    }
    #[test]
    fn a_resolving_answer_clears_it() {
        let mut t = Trace::new();
        t.agent("Das ging nicht.").user("das bringt nichts").agent("Entschuldigung, lass mich einen anderen Weg versuchen.");
        assert!(of(&detect(&t), DISSATISFIED).is_empty());
    }
    #[test]
    fn no_user_messages() {
        let mut t = Trace::new();
        t.agent("Hallo").agent("Noch da?");
        assert!(of(&detect(&t), DISSATISFIED).is_empty());
    }
    #[test]
    fn severity_is_high_and_range_runs_to_the_end() {
        let mut t = Trace::new();
        t.user("mach").agent("gemacht?").user("this is useless").event("session.end", json!({}));
        let f = of(&detect(&t), DISSATISFIED);
        assert_eq!((f[0].severity.as_str(), f[0].start, f[0].end), ("high", 2, 3));
    }
    #[test]
    fn this_is_useless() {
        assert_eq!(ending("this is useless"), 1);
    }
    #[test]
    fn nein_alone_is_ambiguous() {
        assert_eq!(ending("nein"), 0);
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
        for (name, t) in [("a.jsonl", &first), ("b.jsonl", &second)] {
            let path = dir.path().join(name);
            std::fs::write(&path, t.lines().replace("test-", name)).unwrap();
            crate::common::tracelake_ok(&["import", "--lake", &lake, path.to_str().unwrap()]);
            if name == "a.jsonl" {
                crate::common::tracelake_ok(&["analyze", "--lake", &lake]);
            }
        }
        let report: serde_json::Value =
            serde_json::from_str(&crate::common::tracelake_ok(&["analyze", "--lake", &lake, "--format", "json"])).unwrap();
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

mod hallucination {
    use super::*;

    fn claims_after(fail: bool, claim: &str) -> Vec<crate::trace::Found> {
        let mut t = Trace::new();
        t.user("Deploy bitte");
        if fail {
            t.tool_fail("deploy", json!({"env": "prod"}), "connect ECONNREFUSED");
        } else {
            t.tool_ok("deploy", json!({"env": "prod"}));
        }
        t.agent(claim);
        of(&detect(&t), HALLUCINATION)
    }

    #[test]
    fn done_check_mark_after_a_tool_error() {
        let f = claims_after(true, "Done ✅");
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].start, f[0].end), (1, 3));
    }
    #[test]
    fn erledigt_after_a_failure() {
        assert_eq!(claims_after(true, "Erledigt, ist live.").len(), 1);
    }
    #[test]
    fn done_after_success_is_fine() {
        assert!(claims_after(false, "Done ✅").is_empty());
    }
    #[test]
    fn a_question_is_no_claim() {
        assert!(claims_after(true, "Is it done?").is_empty());
    }
    #[test]
    fn severity_is_critical() {
        assert_eq!(claims_after(true, "Deployed!")[0].severity, "critical");
    }
    #[test]
    fn no_tools_no_signal() {
        let mut t = Trace::new();
        t.user("Status?").agent("Done ✅");
        assert!(of(&detect(&t), HALLUCINATION).is_empty());
    }
    #[test]
    fn successfully_deployed_after_connection_failure() {
        let f = claims_after(true, "Successfully deployed to production.");
        assert!(f[0].summary.contains("Successfully deployed"), "{}", f[0].summary);
    }
    #[test]
    fn no_tool_results_no_signal() {
        let mut t = Trace::new();
        t.call("deploy", json!({})).agent("Done!");
        assert!(of(&detect(&t), HALLUCINATION).is_empty());
    }
    #[test]
    fn only_messages_after_a_failure_are_flagged() {
        let mut t = Trace::new();
        t.tool_ok("exec", json!({"command": "a"}))
            .agent("Done with step one.")
            .tool_fail("exec", json!({"command": "b"}), "boom")
            .agent("All done ✅")
            .tool_ok("exec", json!({"command": "c"}))
            .agent("Finished.");
        let f = of(&detect(&t), HALLUCINATION);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].end, 5);
    }
    #[test]
    fn a_result_without_error_or_success_field_counts_as_success() {
        let mut t = Trace::new();
        t.call("exec", json!({"command": "x"})).event("tool.result", json!({"toolName": "exec"})).agent("Done.");
        assert!(of(&detect(&t), HALLUCINATION).is_empty());
    }
}

mod unverified_claim {
    use super::*;

    fn claims(build: impl Fn(&mut Trace)) -> Vec<crate::trace::Found> {
        let mut t = Trace::new();
        build(&mut t);
        of(&detect(&t), UNVERIFIED)
    }

    #[test]
    fn disk_usage_without_a_tool_call() {
        let f = claims(|t| {
            t.user("Wie voll ist die Platte?").agent("The disk usage is at 45%... actually, disk usage is 45% right now.");
        });
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].start, f[0].end), (0, 1));
    }
    #[test]
    fn the_same_claim_after_exec_is_verified() {
        assert!(
            claims(|t| {
                t.user("Wie voll?").tool_ok("exec", json!({"command": "df -h"})).agent("The disk usage is 45%.");
            })
            .is_empty()
        );
    }
    #[test]
    fn service_is_running_without_verification() {
        assert_eq!(
            claims(|t| {
                t.user("Läuft nginx?").agent("Yes, the service is running.");
            })
            .len(),
            1
        );
    }
    #[test]
    fn opinions_are_no_claims() {
        assert!(
            claims(|t| {
                t.user("Läuft nginx?").agent("I think the service is running.");
            })
            .is_empty()
        );
    }
    #[test]
    fn severity_is_medium() {
        assert_eq!(
            claims(|t| {
                t.user("?").agent("There are 3 errors in the log.");
            })[0]
                .severity,
            "medium"
        );
    }
    #[test]
    fn claims_in_code_blocks_are_skipped() {
        assert!(
            claims(|t| {
                t.user("Wie prüfe ich das?").agent("Run:\n```\necho 'the service is running'\n```");
            })
            .is_empty()
        );
    }
    #[test]
    fn only_tool_calls_no_claims() {
        assert!(
            claims(|t| {
                t.tool_ok("exec", json!({"command": "df"})).tool_ok("exec", json!({"command": "free"}));
            })
            .is_empty()
        );
    }
    #[test]
    fn any_tool_call_verifies() {
        assert!(
            claims(|t| {
                t.user("Wie voll?").tool_ok("web_search", json!({"q": "disk"})).agent("The disk usage is 45%.");
            })
            .is_empty()
        );
    }
}
