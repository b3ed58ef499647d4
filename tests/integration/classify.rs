//! The classifier against a real local OpenAI-compatible server (spec §14.3
//! classifier tests, plus secrets, 429, timeouts, cache and triage).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use tracelake::classify::classifier::FindingVerdict;
use tracelake::classify::prompts::transcript;
use tracelake::classify::stage::apply_triage;
use tracelake::classify::{ActionType, ClassifyOptions, LlmCache, LlmClient, LlmEndpoint, Tiers, TranscriptEvent, classify};
use tracelake::config::Config;
use tracelake::model::{Finding, Severity};
use tracelake::redact::Redactor;

use crate::llm_server::{LlmServer, Reply};

const BASE: i64 = 1_700_000_000_000;

fn finding(id: &str, signal: &str, chain: &str) -> Finding {
    Finding {
        finding_id: id.into(),
        run_id: "run-1".into(),
        signal: signal.into(),
        severity: Severity::Medium,
        chain_id: chain.into(),
        agent: "main".into(),
        session: "s1".into(),
        start_idx: 0,
        end_idx: 1,
        start_event_id: "e1".into(),
        end_event_id: "e2".into(),
        occurred_at: BASE,
        detected_at: BASE,
        summary: "User corrected agent".into(),
        evidence: json!({"userMessage": "nein, falsch"}).to_string(),
        fingerprint: None,
    }
}

fn ev(offset_s: i64, kind: &str, content: Option<&str>) -> TranscriptEvent {
    TranscriptEvent {
        ts_ms: BASE + offset_s * 1000,
        event_type: kind.into(),
        content: content.map(Into::into),
        ..TranscriptEvent::default()
    }
}

fn chains() -> HashMap<String, Vec<TranscriptEvent>> {
    HashMap::from([("c1".to_owned(), vec![ev(0, "msg.in", Some("deploy it")), ev(1, "msg.out", Some("Done, deployed."))])])
}

fn endpoint(server: &LlmServer, model: &str, timeout_ms: u64) -> LlmEndpoint {
    LlmEndpoint {
        endpoint: server.url.clone(),
        model: model.into(),
        api_key: Some("test-key".into()),
        timeout: Duration::from_millis(timeout_ms),
    }
}

fn deep_only(server: &LlmServer) -> Tiers {
    Tiers { triage: None, deep: LlmClient::new(endpoint(server, "deep-model", 5000)).with_retries(3, Duration::from_millis(10)) }
}

fn with_triage(server: &LlmServer) -> Tiers {
    Tiers { triage: Some(LlmClient::new(endpoint(server, "triage-model", 5000))), ..deep_only(server) }
}

fn run(findings: &[Finding], tiers: &Tiers) -> Vec<FindingVerdict> {
    run_with(findings, tiers, &LlmCache::in_memory(), &ClassifyOptions::default()).verdicts
}

fn run_with(findings: &[Finding], tiers: &Tiers, cache: &LlmCache, opts: &ClassifyOptions) -> tracelake::classify::ClassifyOutcome {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(classify(findings, &chains(), tiers, &Redactor::builtin(), cache, opts))
}

fn good_answer() -> Value {
    json!({"rootCause": "claimed success without checking", "actionType": "soul_rule", "actionText": "NEVER claim a deploy worked — instead check it.", "confidence": 0.8})
}

#[test]
fn classifies_a_finding_with_a_valid_answer() {
    let server = LlmServer::answering(good_answer());
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &deep_only(&server));
    let c = verdicts[0].classification.as_ref().expect("classified");
    assert_eq!(c.root_cause, "claimed success without checking");
    assert_eq!(c.action_type, ActionType::SoulRule);
    assert_eq!(c.confidence, 0.8);
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].authorization.as_deref(), Some("Bearer test-key"));
    assert!(received[0].user().contains("USER: deploy it"), "{}", received[0].user());
}

#[test]
fn a_timeout_leaves_the_finding_unclassified() {
    let server = LlmServer::start(|_, _| Reply::After(Duration::from_millis(1500), Box::new(Reply::content(good_answer().to_string()))));
    let tiers = Tiers { triage: None, deep: LlmClient::new(endpoint(&server, "deep-model", 200)) };
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &tiers);
    assert!(verdicts[0].classification.is_none());
    assert!(verdicts[0].error.as_deref().unwrap_or_default().contains("failed"), "{:?}", verdicts[0].error);
}

#[test]
fn invalid_json_leaves_the_finding_unclassified() {
    let server = LlmServer::start(|_, _| Reply::content("I think the agent was wrong."));
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &deep_only(&server));
    assert!(verdicts[0].classification.is_none());
    assert!(verdicts[0].error.is_some());
}

#[test]
fn unknown_action_type_becomes_manual_review_and_fences_are_tolerated() {
    let answer = "```json\n{\"rootCause\": \"r\", \"actionType\": \"restart_everything\", \"actionText\": \"t\", \"confidence\": 0.9}\n```";
    let server = LlmServer::start(move |_, _| Reply::content(answer));
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &deep_only(&server));
    assert_eq!(verdicts[0].classification.as_ref().unwrap().action_type, ActionType::ManualReview);
}

#[test]
fn analyzer_llm_fields_override_the_top_level_field_by_field() {
    let config = Config::resolve(&json!({
        "llm": {"enabled": true, "endpoint": "http://top/v1", "model": "top-model", "apiKey": "top-key", "timeoutMs": 1000},
        "traceAnalyzer": {"llm": {"enabled": true, "model": "analyzer-model"}}
    }))
    .unwrap();
    let deep = LlmEndpoint::deep(&config.llm).unwrap();
    assert_eq!((deep.endpoint.as_str(), deep.model.as_str()), ("http://top/v1", "analyzer-model"));
    assert_eq!((deep.api_key.as_deref(), deep.timeout), (Some("top-key"), Duration::from_millis(1000)));
}

#[test]
fn analyzer_llm_falls_back_to_the_top_level_block() {
    let config = Config::resolve(&json!({
        "llm": {"enabled": true, "endpoint": "http://top/v1", "model": "top-model"},
        "traceAnalyzer": {}
    }))
    .unwrap();
    let deep = LlmEndpoint::deep(&config.llm).unwrap();
    assert_eq!((deep.endpoint.as_str(), deep.model.as_str()), ("http://top/v1", "top-model"));
    assert!(Tiers::from_config(&config.llm).unwrap().is_some());
}

#[test]
fn disabled_llm_means_no_classification() {
    let config = Config::resolve(&json!({"traceAnalyzer": {"llm": {"enabled": false, "endpoint": "http://x", "model": "m"}}})).unwrap();
    assert!(Tiers::from_config(&config.llm).unwrap().is_none());
    let enabled_without_endpoint = Config::resolve(&json!({"traceAnalyzer": {"llm": {"enabled": true, "model": "m"}}})).unwrap();
    let error = Tiers::from_config(&enabled_without_endpoint.llm).err().expect("an error").to_string();
    assert!(error.contains("endpoint"), "{error}");
}

#[test]
fn triage_drops_false_positives_before_deep_analysis() {
    let server = LlmServer::start(|_, r| {
        if r.is_triage() {
            let keep = !r.user().contains("SIG-DISSATISFIED");
            Reply::content(json!({"keep": keep, "severity": "high", "reason": "checked"}).to_string())
        } else {
            Reply::content(good_answer().to_string())
        }
    });
    let findings = [finding("f1", "SIG-CORRECTION", "c1"), finding("f2", "SIG-DISSATISFIED", "c1")];
    let verdicts = run(&findings, &with_triage(&server));
    assert!(!verdicts[0].dropped() && verdicts[0].classification.is_some());
    assert!(verdicts[1].dropped() && verdicts[1].classification.is_none());
    let received = server.received();
    assert_eq!(received.iter().filter(|r| r.is_triage()).count(), 2);
    assert_eq!(received.iter().filter(|r| !r.is_triage()).count(), 1, "dropped findings get no deep analysis");
    assert!(received.iter().filter(|r| r.is_triage()).all(|r| r.model() == "triage-model"));
}

#[test]
fn triage_adjusts_severity() {
    let server = LlmServer::start(|_, r| {
        if r.is_triage() {
            Reply::content(r#"{"keep": true, "severity": "critical", "reason": "data loss"}"#)
        } else {
            Reply::content(good_answer().to_string())
        }
    });
    let mut findings = vec![finding("f1", "SIG-CORRECTION", "c1")];
    let verdicts = run(&findings, &with_triage(&server));
    apply_triage(&mut findings, &verdicts);
    assert_eq!(findings[0].severity, Severity::Critical);
    let deep = server.received().into_iter().find(|r| !r.is_triage()).unwrap();
    assert!(deep.user().contains("Severity: critical"), "the deep prompt carries the adjusted severity");
}

#[test]
fn without_triage_every_finding_goes_to_deep_analysis() {
    let server = LlmServer::answering(good_answer());
    let findings = [finding("f1", "SIG-CORRECTION", "c1"), finding("f2", "SIG-DISSATISFIED", "c1")];
    let verdicts = run(&findings, &deep_only(&server));
    assert!(verdicts.iter().all(|v| v.classification.is_some()));
    assert!(server.received().iter().all(|r| !r.is_triage()));
    assert_eq!(server.received().len(), 2);
}

#[test]
fn secrets_are_redacted_before_anything_is_sent() {
    let server = LlmServer::answering(good_answer());
    let mut f = finding("f1", "SIG-CORRECTION", "c1");
    f.evidence = json!({"userMessage": "use sk-abcdefghijklmnopqrstuvwxyz123456"}).to_string();
    let mut chain = chains();
    chain.get_mut("c1").unwrap().push(TranscriptEvent {
        ts_ms: BASE + 5000,
        event_type: "tool.result".into(),
        tool_name: Some("exec".into()),
        tool_result: Some("postgres://admin:hunter2secret@db:5432/x and ghp_abcdefghijklmnopqrstuvwxyz0123456789".into()),
        ..TranscriptEvent::default()
    });
    let tiers = with_triage(&server);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(classify(&[f], &chain, &tiers, &Redactor::builtin(), &LlmCache::in_memory(), &ClassifyOptions::default()));
    let received = server.received();
    assert_eq!(received.len(), 2);
    for r in &received {
        let body = r.body.to_string();
        for secret in ["sk-abcdefghijklmnopqrstuvwxyz123456", "hunter2secret", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"] {
            assert!(!body.contains(secret), "{secret} reached the server");
        }
    }
    assert!(received.iter().any(|r| r.user().contains("[REDACTED]")));
}

#[test]
fn transcript_formatting() {
    let events = vec![
        ev(0, "session.start", None),
        ev(1, "msg.in", Some("check the disk")),
        TranscriptEvent {
            ts_ms: BASE + 2000,
            event_type: "tool.call".into(),
            tool_name: Some("exec".into()),
            tool_params: Some(r#"{"command":"df -h"}"#.into()),
            ..TranscriptEvent::default()
        },
        TranscriptEvent {
            ts_ms: BASE + 3000,
            event_type: "tool.result".into(),
            tool_name: Some("exec".into()),
            tool_error: Some("permission denied".into()),
            ..TranscriptEvent::default()
        },
        TranscriptEvent {
            ts_ms: BASE + 4000,
            event_type: "tool.result".into(),
            tool_name: Some("exec".into()),
            tool_result: Some("ok".into()),
            ..TranscriptEvent::default()
        },
        ev(5, "msg.out", Some(&"x".repeat(600))),
        ev(6, "run.end", None),
        ev(7, "session.end", None),
    ];
    let lines: Vec<String> = transcript(&events).lines().map(str::to_owned).collect();
    assert_eq!(lines[0], "[2023-11-14T22:13:20.000Z] SESSION_START");
    assert_eq!(lines[1], "[2023-11-14T22:13:21.000Z] USER: check the disk");
    assert_eq!(lines[2], r#"[2023-11-14T22:13:22.000Z] TOOL_CALL: exec({"command":"df -h"})"#);
    assert_eq!(lines[3], "[2023-11-14T22:13:23.000Z] TOOL_ERROR: exec → permission denied");
    assert_eq!(lines[4], "[2023-11-14T22:13:24.000Z] TOOL_OK: exec → ok");
    assert_eq!(lines[5], format!("[2023-11-14T22:13:25.000Z] AGENT: {}…", "x".repeat(500)));
    assert_eq!(lines[6], "[2023-11-14T22:13:26.000Z] RUN.END");
    assert_eq!(lines[7], "[2023-11-14T22:13:27.000Z] SESSION_END");
}

#[test]
fn a_finding_without_its_chain_stays_unclassified_and_costs_nothing() {
    let server = LlmServer::answering(good_answer());
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "missing-chain")], &deep_only(&server));
    assert!(verdicts[0].classification.is_none());
    assert!(server.received().is_empty());
}

#[test]
fn confidence_defaults_to_one_half_and_the_model_is_recorded() {
    let server = LlmServer::start(|_, _| {
        Reply::content(r#"{"rootCause": "r", "actionType": "cortex_pattern", "actionText": "deploy(ed)? succeeded"}"#)
    });
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &deep_only(&server));
    let c = verdicts[0].classification.as_ref().unwrap();
    assert_eq!(c.confidence, 0.5);
    assert_eq!(c.model, "deep-model");
    assert_eq!(server.received()[0].model(), "deep-model");
}

#[test]
fn retries_after_429_then_succeeds() {
    let server = LlmServer::start(|n, _| if n < 2 { Reply::Status(429) } else { Reply::content(good_answer().to_string()) });
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &deep_only(&server));
    assert!(verdicts[0].classification.is_some());
    assert_eq!(server.received().len(), 3);
}

#[test]
fn gives_up_after_the_retries_on_server_errors() {
    let server = LlmServer::start(|_, _| Reply::Status(503));
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &deep_only(&server));
    assert!(verdicts[0].classification.is_none());
    assert!(verdicts[0].error.as_deref().unwrap().contains("503"));
    assert_eq!(server.received().len(), 4, "one request and three retries");
}

#[test]
fn a_second_run_is_answered_from_the_cache() {
    let server = LlmServer::answering(good_answer());
    let cache = LlmCache::in_memory();
    let findings = [finding("f1", "SIG-CORRECTION", "c1"), finding("f2", "SIG-CORRECTION", "c1")];
    let first = run_with(&findings, &with_triage(&server), &cache, &ClassifyOptions::default());
    assert_eq!((first.llm_calls, first.cache_hits), (4, 0));
    let second = run_with(&findings, &with_triage(&server), &cache, &ClassifyOptions::default());
    assert_eq!((second.llm_calls, second.cache_hits), (0, 4));
    assert_eq!(first.verdicts, second.verdicts);
    assert_eq!(server.received().len(), 4);
}

#[test]
fn the_call_budget_is_respected() {
    let server = LlmServer::answering(good_answer());
    let findings: Vec<Finding> = (0..5).map(|i| finding(&format!("f{i}"), "SIG-CORRECTION", "c1")).collect();
    let opts = ClassifyOptions { concurrency: 1, max_calls: Some(3), ..ClassifyOptions::default() };
    let outcome = run_with(&findings, &deep_only(&server), &LlmCache::in_memory(), &opts);
    assert_eq!(outcome.verdicts.iter().filter(|v| v.classification.is_some()).count(), 3);
    assert_eq!((outcome.llm_calls, outcome.over_budget), (3, 2));
    assert_eq!(server.received().len(), 3);
}

#[test]
fn an_answer_of_unbounded_size_is_not_read() {
    let huge = "x".repeat(3 << 20);
    let server = LlmServer::start(move |_, _| Reply::content(huge.clone()));
    let verdicts = run(&[finding("f1", "SIG-CORRECTION", "c1")], &deep_only(&server));
    assert!(verdicts[0].classification.is_none());
    let error = verdicts[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("more than 1048576 bytes"), "the stored error says why: {error}");
}

#[test]
fn an_endpoint_that_keeps_failing_is_asked_no_more() {
    let server = LlmServer::start(|_, _| Reply::Status(500));
    let tiers = Tiers { triage: None, deep: LlmClient::new(endpoint(&server, "deep-model", 5000)).with_retries(0, Duration::ZERO) };
    let findings: Vec<Finding> = (0..20).map(|i| finding(&format!("f{i}"), "SIG-CORRECTION", "c1")).collect();
    let opts = ClassifyOptions { concurrency: 1, ..ClassifyOptions::default() };
    let outcome = run_with(&findings, &tiers, &LlmCache::in_memory(), &opts);
    assert_eq!(server.received().len(), tracelake::classify::classifier::FAILURES_BEFORE_GIVING_UP);
    let last = outcome.verdicts.last().unwrap().error.as_deref().unwrap_or_default();
    assert!(last.contains("failed 5 times in a row"), "{last}");
}

#[test]
fn the_llm_stage_stops_at_its_deadline() {
    let server = LlmServer::start(|_, _| Reply::After(Duration::from_secs(20), Box::new(Reply::content(good_answer().to_string()))));
    let tiers = Tiers { triage: None, deep: LlmClient::new(endpoint(&server, "deep-model", 30_000)) };
    let findings: Vec<Finding> = (0..8).map(|i| finding(&format!("f{i}"), "SIG-CORRECTION", "c1")).collect();
    let opts = ClassifyOptions { concurrency: 2, deadline: Duration::from_millis(500), ..ClassifyOptions::default() };
    let started = std::time::Instant::now();
    let outcome = run_with(&findings, &tiers, &LlmCache::in_memory(), &opts);
    assert!(started.elapsed() < Duration::from_secs(10), "the hanging endpoint held the stage for {:?}", started.elapsed());
    assert!(outcome.verdicts.iter().all(|v| v.error.as_deref().is_some_and(|e| e.contains("ran out of time"))), "{:?}", outcome.verdicts);
}
