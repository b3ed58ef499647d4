//! Normalization of raw events (spec §2): schema detection, sessions, payload mapping per
//! type and schema, defaults, and every quarantine reason.

use serde_json::{Value, json};
use tracelake::ingest::QuarantineReason;
use tracelake::ingest::lines::Line;
use tracelake::ingest::normalize::normalize_session;
use tracelake::model::Schema;

use crate::common::{decode, decoder, event};

const TS: i64 = 1_771_504_212_206;

fn a(kind: &str, payload: Value) -> Value {
    json!({"id": "3b241101-e2bb-4255-8caf-4136c566a962", "ts": TS, "agent": "main", "session": "s-1", "type": kind, "payload": payload})
}

fn b(kind: &str, payload: Value) -> Value {
    json!({"id": "m1x2y3-ab12cd34", "timestamp": TS, "agent": "main", "session": "agent:main:8ae7c1b0-1111", "type": kind,
           "visibility": "internal", "payload": payload, "meta": {"source": "session-sync", "runId": "run-9", "seq": 4, "stream": "conversation"}})
}

fn reason(raw: Value) -> QuarantineReason {
    decode(raw).expect_err("must be quarantined").reason
}

#[test]
fn schema_a_is_detected_by_ts_and_hook_types() {
    let e = event(a("msg.in", json!({"content": "hi"})));
    assert_eq!(e.schema, Schema::A);
    assert_eq!(e.ts, TS);
}

#[test]
fn schema_b_is_detected_by_timestamp_and_conversation_types() {
    let e = event(b("conversation.message.in", json!({"role": "user", "text_preview": [{"type": "text", "text": "hi"}]})));
    assert_eq!(e.schema, Schema::B);
    assert_eq!(e.ts, TS, "`timestamp` becomes ts");
    let lifecycle = event(json!({"ts": TS, "type": "lifecycle.start", "payload": {}}));
    assert_eq!(lifecycle.schema, Schema::B, "lifecycle.* is schema B even with ts");
}

#[test]
fn sessions_are_normalized_as_the_spec_says() {
    assert_eq!(normalize_session("agent:main:8ae7c1b0-1111"), "8ae7c1b0-1111");
    assert_eq!(normalize_session("agent:main"), "main");
    assert_eq!(normalize_session("unknown"), "unknown");
    assert_eq!(normalize_session("main"), "main");
    assert_eq!(normalize_session("s-1"), "s-1");
    assert_eq!(event(b("conversation.message.out", json!({}))).session, "8ae7c1b0-1111");
    assert_eq!(event(a("msg.in", json!({}))).session, "s-1", "schema A sessions are kept as they are");
}

#[test]
fn missing_agent_and_session_default_to_unknown() {
    let e = event(json!({"ts": TS, "type": "msg.in", "payload": {"content": "x"}}));
    assert_eq!((&*e.agent, &*e.session), ("unknown", "unknown"));
    assert_eq!(e.id, "");
    let null_fields = event(json!({"ts": TS, "type": "msg.in", "agent": null, "session": null}));
    assert_eq!((&*null_fields.agent, &*null_fields.session), ("unknown", "unknown"));
    assert_eq!(null_fields.payload, "null", "a missing payload is kept as JSON null");
}

#[test]
fn schema_b_types_are_remapped() {
    for (raw, canonical) in [
        ("conversation.message.in", "msg.in"),
        ("conversation.message.out", "msg.out"),
        ("conversation.tool_call", "tool.call"),
        ("conversation.tool_result", "tool.result"),
        ("lifecycle.start", "run.start"),
        ("lifecycle.end", "run.end"),
        ("lifecycle.error", "run.error"),
    ] {
        let e = event(b(raw, json!({})));
        assert_eq!((&*e.event_type, &*e.raw_type), (canonical, raw));
    }
}

#[test]
fn all_seventeen_schema_a_types_are_kept_with_their_type() {
    let types = [
        "msg.in",
        "msg.out",
        "msg.sending",
        "tool.call",
        "tool.result",
        "run.start",
        "run.end",
        "run.error",
        "llm.input",
        "llm.output",
        "session.start",
        "session.end",
        "session.compaction_start",
        "session.compaction_end",
        "session.reset",
        "gateway.start",
        "gateway.stop",
    ];
    for kind in types {
        let e = event(a(kind, json!({"sessionId": "s-1"})));
        assert_eq!(e.event_type, kind);
        assert_eq!(e.schema, Schema::A);
        assert_eq!(e.payload, r#"{"sessionId":"s-1"}"#);
    }
}

#[test]
fn unknown_types_are_kept_with_their_raw_type() {
    let e = event(a("custom.metric", json!({"value": 3})));
    assert_eq!((&*e.event_type, &*e.raw_type), ("custom.metric", "custom.metric"));
    assert_eq!(e.payload, r#"{"value":3}"#);
}

#[test]
fn schema_a_messages_map_content_from_to_channel_success() {
    let msg_in = event(a(
        "msg.in",
        json!({"from": "matrix:@albert:vainplex.dev", "content": "und nu?", "timestamp": TS, "channel": "matrix", "metadata": {"to": "x"}}),
    ));
    assert_eq!(msg_in.content.as_deref(), Some("und nu?"));
    assert_eq!(msg_in.from.as_deref(), Some("matrix:@albert:vainplex.dev"));
    assert_eq!(msg_in.channel.as_deref(), Some("matrix"));
    assert_eq!(msg_in.role.as_deref(), Some("user"));
    assert!(msg_in.payload.contains("metadata"), "unmapped payload fields stay in payload");

    let msg_out = event(a(
        "msg.out",
        json!({"to": "room:!Wgox", "content": "Gateway restart ok", "success": false, "error": "rate limited", "channel": "matrix"}),
    ));
    assert_eq!(msg_out.content.as_deref(), Some("Gateway restart ok"));
    assert_eq!(msg_out.to.as_deref(), Some("room:!Wgox"));
    assert_eq!(msg_out.success, Some(false));
    assert_eq!(msg_out.error.as_deref(), Some("rate limited"));
    assert_eq!(msg_out.role.as_deref(), Some("assistant"));

    let sending = event(a("msg.sending", json!({"to": "room", "content": "typing"})));
    assert_eq!(sending.content.as_deref(), Some("typing"));
}

#[test]
fn schema_a_tools_map_name_params_result_error_duration() {
    let call = event(a("tool.call", json!({"toolName": "exec", "params": {"command": "ls", "timeout": 15}})));
    assert_eq!(call.tool_name.as_deref(), Some("exec"));
    assert_eq!(call.tool_params.as_deref(), Some(r#"{"command":"ls","timeout":15}"#));

    let ok = event(a(
        "tool.result",
        json!({"toolName": "exec", "params": {"command": "ls"},
        "result": {"content": [{"type": "text", "text": "a b"}], "details": {"status": "ok", "exitCode": 0}}, "durationMs": 5893}),
    ));
    assert_eq!(ok.tool_result.as_deref(), Some(r#"{"content":[{"text":"a b","type":"text"}],"details":{"exitCode":0,"status":"ok"}}"#));
    assert_eq!(ok.tool_error, None);
    assert_eq!(ok.tool_is_error, None);
    assert_eq!(ok.tool_duration_ms, Some(5893));

    let failed = event(a("tool.result", json!({"toolName": "exec", "params": {}, "error": "Command failed: exit 1"})));
    assert_eq!(failed.tool_error.as_deref(), Some("Command failed: exit 1"));
    let empty_error = event(a("tool.result", json!({"toolName": "exec", "error": ""})));
    assert_eq!(empty_error.tool_error, None, "an empty error string is no error");
}

#[test]
fn schema_a_runs_llm_calls_and_sessions() {
    let start = event(a("run.start", json!({"prompt": "deploy it"})));
    assert_eq!(start.content.as_deref(), Some("deploy it"));
    let end = event(a("run.end", json!({"success": false, "error": "boom", "durationMs": 1200, "messageCount": 4})));
    assert_eq!((end.success, end.error.as_deref(), end.duration_ms), (Some(false), Some("boom"), Some(1200)));
    let err = event(a("run.error", json!({"error": "provider down"})));
    assert_eq!(err.error.as_deref(), Some("provider down"));

    let input = event(a(
        "llm.input",
        json!({"runId": "r1", "sessionId": "s-1", "provider": "anthropic", "model": "claude-sonnet-4", "prompt": "hi"}),
    ));
    assert_eq!(
        (input.model.as_deref(), input.provider.as_deref(), input.run_id.as_deref()),
        (Some("claude-sonnet-4"), Some("anthropic"), Some("r1"))
    );
    let output = event(a(
        "llm.output",
        json!({"runId": "r1", "model": "gpt-5", "assistantTexts": ["one", "two"],
        "usage": {"input": 1200, "output": 85, "cacheRead": 900, "cacheWrite": 7, "total": 1285}}),
    ));
    assert_eq!(output.content.as_deref(), Some("one\ntwo"));
    assert_eq!(
        (output.usage_input, output.usage_output, output.usage_cache_read, output.usage_cache_write, output.usage_total),
        (Some(1200), Some(85), Some(900), Some(7), Some(1285))
    );
    let session_end = event(a("session.end", json!({"sessionId": "s-1", "messageCount": 0, "durationMs": 99})));
    assert_eq!(session_end.duration_ms, Some(99));
}

#[test]
fn schema_b_messages_take_the_first_text_block() {
    let e = event(b(
        "conversation.message.in",
        json!({"role": "user", "text_preview": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}], "content_length": 11, "sessionId": "x"}),
    ));
    assert_eq!(e.content.as_deref(), Some("first"));
    assert_eq!(e.role.as_deref(), Some("user"));
    let out = event(b("conversation.message.out", json!({"text_preview": [{"type": "text", "text": "answer"}]})));
    assert_eq!((out.content.as_deref(), out.role.as_deref()), (Some("answer"), Some("assistant")));
}

#[test]
fn schema_b_tools_map_nested_data() {
    let call = event(b(
        "conversation.tool_call",
        json!({"runId": "run-1", "stream": "tool", "data": {"phase": "start", "name": "exec", "toolCallId": "call_1", "args": {"command": "ls"}}, "sessionKey": "agent:main:x", "seq": 3, "ts": TS}),
    ));
    assert_eq!(call.tool_name.as_deref(), Some("exec"));
    assert_eq!(call.tool_params.as_deref(), Some(r#"{"command":"ls"}"#));
    assert_eq!(call.tool_call_id.as_deref(), Some("call_1"));
    assert_eq!(call.run_id.as_deref(), Some("run-9"), "meta.runId");

    let failed = event(b(
        "conversation.tool_result",
        json!({"data": {"phase": "result", "name": "exec", "toolCallId": "call_1", "isError": true,
        "result": {"content": [{"type": "text", "text": "ENOENT: no such file"}], "details": {"status": "error"}}}}),
    ));
    assert_eq!(failed.tool_is_error, Some(true));
    assert_eq!(failed.tool_error.as_deref(), Some("ENOENT: no such file"), "error text comes from the result content");
    assert!(failed.tool_result.as_deref().unwrap().contains("details"));

    let ok = event(b(
        "conversation.tool_result",
        json!({"data": {"name": "read", "isError": false, "result": {"content": [{"type": "text", "text": "file body"}], "details": {}}}}),
    ));
    assert_eq!((ok.tool_is_error, ok.tool_error.as_deref()), (Some(false), None));
}

#[test]
fn schema_b_keeps_visibility_and_meta_in_extra() {
    let e = event(b("conversation.message.in", json!({})));
    let extra: Value = serde_json::from_str(e.extra.as_deref().unwrap()).unwrap();
    assert_eq!(extra["visibility"], "internal");
    assert_eq!(extra["meta"]["seq"], 4);
}

#[test]
fn v1_envelope_fields_become_columns() {
    let e = event(
        json!({"id": "evt-0123456789abcdef", "ts": TS, "agent": "main", "type": "tool.call", "canonicalType": "tool_call", "legacyType": "tool.call",
        "schemaVersion": 1, "source": "openclaw-nats-eventstore", "actor": {"kind": "agent"},
        "scope": {"sessionKey": "agent:main:abc", "sessionId": "abc", "runId": "run-2", "toolCallId": "call_7", "messageId": "m1"},
        "trace": {"traceId": "t1", "spanId": "sp1", "parentSpanId": "sp0"}, "payload": {"toolName": "exec", "params": {}}}),
    );
    assert_eq!(e.id, "evt-0123456789abcdef");
    assert_eq!(e.session, "abc", "session falls back to scope.sessionKey");
    assert_eq!(e.canonical_type.as_deref(), Some("tool_call"));
    assert_eq!((e.run_id.as_deref(), e.tool_call_id.as_deref()), (Some("run-2"), Some("call_7")));
    assert_eq!((e.trace_id.as_deref(), e.span_id.as_deref(), e.parent_span_id.as_deref()), (Some("t1"), Some("sp1"), Some("sp0")));
    let no_type = event(json!({"ts": TS, "legacyType": "msg.in", "payload": {"content": "x"}}));
    assert_eq!(no_type.event_type, "msg.in", "legacyType stands in for a missing type");
}

#[test]
fn no_event_without_timestamp_or_type() {
    assert_eq!(reason(json!({"type": "msg.in", "payload": {}})), QuarantineReason::MissingTimestamp);
    assert_eq!(reason(json!({"ts": 0, "type": "msg.in"})), QuarantineReason::MissingTimestamp);
    assert_eq!(reason(json!({"ts": "yesterday", "type": "msg.in"})), QuarantineReason::MissingTimestamp);
    assert_eq!(reason(json!({"ts": -5, "type": "msg.in"})), QuarantineReason::InvalidTimestamp);
    assert_eq!(reason(json!({"ts": 9e15, "type": "msg.in"})), QuarantineReason::InvalidTimestamp);
    assert_eq!(reason(json!({"ts": TS, "payload": {}})), QuarantineReason::MissingType);
    assert_eq!(reason(json!({"ts": TS, "type": ""})), QuarantineReason::MissingType);
}

#[test]
fn times_are_read_in_the_forms_agents_write_them() {
    let at = |ts: Value| event(json!({"ts": ts, "type": "msg.in", "payload": {"content": "x"}})).ts;
    let jan_5 = 1_767_607_203_000_i64;
    assert_eq!(at(json!("2026-01-05T10:00:03Z")), jan_5, "RFC 3339");
    assert_eq!(at(json!("2026-01-05T11:00:03+01:00")), jan_5, "RFC 3339 with an offset");
    assert_eq!(at(json!(1_767_607_203)), jan_5, "epoch seconds");
    assert_eq!(at(json!(1_767_607_203.5)), jan_5 + 500, "epoch seconds with a fraction");
    assert_eq!(at(json!(jan_5)), jan_5, "epoch milliseconds");
    assert_eq!(at(json!(jan_5 * 1000)), jan_5, "epoch microseconds");
    assert_eq!(at(json!("1767607203")), jan_5, "epoch seconds as text");
    let b = event(json!({"timestamp": "2026-01-05T10:00:03.000Z", "type": "conversation.message.in", "payload": {}}));
    assert_eq!((b.ts, b.schema), (jan_5, Schema::B));
}

#[test]
fn an_implausible_time_is_quarantined_not_written_as_1970() {
    assert_eq!(reason(json!({"ts": 20_000_000, "type": "msg.in"})), QuarantineReason::InvalidTimestamp, "1970 in seconds");
    assert_eq!(reason(json!({"ts": "1999-12-31T23:59:59Z", "type": "msg.in"})), QuarantineReason::InvalidTimestamp);
    let next_week = chrono::Utc::now().timestamp_millis() + 7 * 86_400_000;
    assert_eq!(reason(json!({"ts": next_week, "type": "msg.in"})), QuarantineReason::InvalidTimestamp, "a week ahead");
    let quarantined = decode(json!({"ts": 5, "type": "msg.in"})).expect_err("1970");
    assert!(quarantined.detail.contains("before 2000"), "{}", quarantined.detail);
}

#[test]
fn every_quarantine_reason_is_reported_with_its_position() {
    let d = decoder();
    let q = |bytes: &[u8]| d.decode(bytes, "f.jsonl", 7, None).expect_err("quarantined");
    assert_eq!(q(b"\xff\xfe{}").reason, QuarantineReason::InvalidUtf8);
    assert_eq!(q(b"{\"ts\": 1,").reason, QuarantineReason::InvalidJson);
    assert_eq!(q(b"[1,2]").reason, QuarantineReason::NotAnObject);
    assert_eq!(q(b"{\"type\":\"msg.in\"}").reason, QuarantineReason::MissingTimestamp);
    assert_eq!(q(b"{\"ts\":-1,\"type\":\"msg.in\"}").reason, QuarantineReason::InvalidTimestamp);
    assert_eq!(q(b"{\"ts\":1767607203}").reason, QuarantineReason::MissingType);
    let too_large = d.decode_line(&Line::TooLong { prefix: b"{\"ts\"".to_vec(), len: 99 }, "f.jsonl", 8).expect_err("quarantined");
    assert_eq!((too_large.reason, too_large.raw_bytes, too_large.position), (QuarantineReason::TooLarge, 99, 8));
    let bad = q(b"{\"ts\": 1,");
    assert_eq!((bad.source.as_str(), bad.position, bad.raw.as_str()), ("f.jsonl", 7, "{\"ts\": 1,"));
    let spans = br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "not-an-id", "spanId": "eee19b7ec3c1b174"}]}]}]}"#;
    let bad_spans = d.decode_events(&Line::Complete(spans.to_vec().into()), "f.jsonl", 9).expect_err("quarantined");
    assert_eq!((bad_spans.reason, bad_spans.position), (QuarantineReason::InvalidSpans, 9));
    assert!(bad_spans.detail.contains("not-an-id"), "{}", bad_spans.detail);
    // A span without its start time (or one in 1970) would be an event of 1970.
    let spans = br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "eee19b7ec3c1b174", "name": "chat m"}]}]}]}"#;
    let no_start = d.decode_events(&Line::Complete(spans.to_vec().into()), "f.jsonl", 10).expect_err("quarantined");
    assert_eq!(no_start.reason, QuarantineReason::InvalidTimestamp);
    assert!(no_start.detail.contains("span `chat m` (eee19b7ec3c1b174) starts at 1970-01-01"), "{}", no_start.detail);
    assert_eq!(QuarantineReason::ALL.len(), 8, "a new reason needs a case above");
}

#[test]
fn quarantined_raw_text_is_redacted() {
    let line = decoder().decode(b"{\"broken\": \"sk-abcdefghijklmnopqrstuvwxyz\"", "f", 1, None).expect_err("invalid json");
    assert!(!line.raw.contains("sk-abcdefghijklmnopqrstuvwxyz"), "{}", line.raw);
    assert!(line.raw.contains("[REDACTED_API_KEY]"));
}

/// A line over the size limit is kept cut off; a secret the cut splits in two is no longer
/// one the redactor knows, so its first part must not be kept either, wherever the cut.
#[test]
fn a_secret_cut_by_the_size_limit_leaves_nothing_of_itself_in_quarantine() {
    let d = decoder();
    // Each secret, and how much of its start is no secret (a scheme, a name, a header).
    let secrets = [
        (format!("ghp_GhpTokenVALUE{}", "a".repeat(30)), 4),
        ("sk_live_StripeSecretVALUE0123456789".to_owned(), 8),
        ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJKd3RTZWNyZXRWQUxVRSJ9.JwtSignatureVALUE0123456789abc".to_owned(), 0),
        ("Bearer BearerSecretVALUE0123456789abc".to_owned(), 7),
        ("postgres://admin:UrlPassVALUE42@db.example.org/x".to_owned(), 17),
        ("xoxb-1234-SlackTokenVALUE-abcdef".to_owned(), 5),
        ("AIzaGoogleKeyVALUE0123456789abcdefghijklm".to_owned(), 4),
        ("PASSWORD=EnvPassVALUE42".to_owned(), 9),
        ("-----BEGIN RSA PRIVATE KEY-----\\nMIIEpemBodyVALUE0123456789\\n-----END RSA PRIVATE KEY-----".to_owned(), 33),
    ];
    for (secret, public) in &secrets {
        let line = format!("{{\"ts\": 1767607203000, \"type\": \"msg.in\", \"payload\": {{\"content\": \"see {secret} now\"}}}}");
        let at = line.find(secret.as_str()).unwrap();
        for cut in (public + 1).max(6)..secret.len() {
            let prefix = line.as_bytes()[..at + cut].to_vec();
            let q = d.decode_line(&Line::TooLong { prefix, len: line.len() as u64 }, "f.jsonl", 1).expect_err("quarantined");
            assert_eq!(q.reason, QuarantineReason::TooLarge);
            let part = &secret[..cut];
            assert!(!q.raw.contains(part), "{secret} cut after {cut} bytes is kept: {}", q.raw);
            assert!(q.raw.starts_with("{\"ts\": 1767607203000, \"type\": \"msg.in\""), "the rest is kept: {}", q.raw);
        }
    }
}
