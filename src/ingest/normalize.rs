//! Raw event JSON (schema A, schema B, v1 envelope) → one [`Event`] (spec §2).

use serde_json::{Map, Value};

use super::event::{Event, Schema};
use super::quarantine::QuarantineReason;

/// Top-level keys that become columns; every other key is kept in `extra`.
const MAPPED_KEYS: &[&str] = &["id", "ts", "timestamp", "agent", "session", "type", "payload"];

/// Latest timestamp accepted: 9999-12-31T23:59:59.999Z.
const MAX_TS_MS: i64 = 253_402_300_799_999;

/// The canonical type for a raw type; unknown types map to themselves.
pub fn canonical_type(raw: &str) -> &str {
    match raw {
        "conversation.message.in" => "msg.in",
        "conversation.message.out" => "msg.out",
        "conversation.tool_call" => "tool.call",
        "conversation.tool_result" => "tool.result",
        "lifecycle.start" => "run.start",
        "lifecycle.end" => "run.end",
        "lifecycle.error" => "run.error",
        other => other,
    }
}

/// `"agent:main:uuid"` → `"uuid"`; anything not starting with `agent:` is kept as is.
pub fn normalize_session(raw: &str) -> &str {
    match raw.strip_prefix("agent:") {
        Some(rest) => {
            let mut parts = rest.split(':');
            let second = parts.next();
            parts.next().or(second).unwrap_or(raw)
        }
        None => raw,
    }
}

/// Normalizes one parsed (and already redacted) raw event read at `stream_seq`.
pub fn normalize(raw: Value, stream_seq: u64, subject: Option<&str>) -> Result<Event, QuarantineReason> {
    let Value::Object(mut raw) = raw else {
        return Err(QuarantineReason::NotAnObject);
    };
    let ts = timestamp(&raw)?;
    let raw_type = match raw.get("type").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        Some(t) => t.to_owned(),
        None => match envelope_str(&raw, &["legacyType"]) {
            Some(t) => t,
            None => return Err(QuarantineReason::MissingType),
        },
    };
    let schema = detect_schema(&raw, &raw_type);
    let payload = raw.remove("payload").unwrap_or(Value::Null);
    let scope = raw.get("scope").unwrap_or(&Value::Null);
    let trace = raw.get("trace").unwrap_or(&Value::Null);
    let meta = raw.get("meta").unwrap_or(&Value::Null);

    let agent = text_field(raw.get("agent")).filter(|a| !a.is_empty()).unwrap_or_else(|| "unknown".into());
    let raw_session = text_field(raw.get("session"))
        .or_else(|| text_field(scope.get("sessionKey")))
        .or_else(|| text_field(scope.get("sessionId")))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let session = normalize_session(&raw_session).to_owned();
    let event_type = canonical_type(&raw_type).to_owned();

    let mut event = Event {
        stream_seq,
        id: text_field(raw.get("id")).unwrap_or_default(),
        ts,
        agent,
        session,
        event_type,
        raw_type,
        schema,
        content: None,
        role: None,
        from: None,
        to: None,
        channel: None,
        success: None,
        tool_name: None,
        tool_params: None,
        tool_result: None,
        tool_error: None,
        tool_is_error: None,
        tool_duration_ms: None,
        error: None,
        duration_ms: None,
        model: None,
        provider: None,
        usage_input: None,
        usage_output: None,
        usage_cache_read: None,
        usage_cache_write: None,
        usage_total: None,
        run_id: text_field(scope.get("runId")).or_else(|| text_field(meta.get("runId"))),
        tool_call_id: text_field(scope.get("toolCallId")),
        canonical_type: text_field(raw.get("canonicalType")),
        trace_id: text_field(trace.get("traceId")),
        span_id: text_field(trace.get("spanId")),
        parent_span_id: text_field(trace.get("parentSpanId")),
        subject: subject.map(str::to_owned),
        payload: String::new(),
        extra: None,
    };
    match schema {
        Schema::A => map_schema_a(&mut event, &payload),
        Schema::B => map_schema_b(&mut event, &payload),
    }
    event.payload = json_text(&payload);
    raw.retain(|k, _| !MAPPED_KEYS.contains(&k.as_str()));
    if !raw.is_empty() {
        event.extra = Some(json_text(&Value::Object(raw)));
    }
    Ok(event)
}

/// `ts` (schema A) or `timestamp` (schema B), milliseconds since the epoch.
fn timestamp(raw: &Map<String, Value>) -> Result<i64, QuarantineReason> {
    let number = raw
        .get("ts")
        .and_then(Value::as_f64)
        .or_else(|| raw.get("timestamp").and_then(Value::as_f64));
    match number {
        None => Err(QuarantineReason::MissingTimestamp),
        Some(ms) if ms == 0.0 => Err(QuarantineReason::MissingTimestamp),
        Some(ms) if !(1.0..=MAX_TS_MS as f64).contains(&ms) => Err(QuarantineReason::InvalidTimestamp),
        Some(ms) => Ok(ms as i64),
    }
}

fn detect_schema(raw: &Map<String, Value>, raw_type: &str) -> Schema {
    let b_type = raw_type.starts_with("conversation.") || raw_type.starts_with("lifecycle.");
    let timestamp_only = !raw.contains_key("ts") && raw.contains_key("timestamp");
    if b_type || timestamp_only { Schema::B } else { Schema::A }
}

fn envelope_str(raw: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| raw.get(*k).and_then(Value::as_str)).map(str::to_owned)
}

fn map_schema_a(e: &mut Event, p: &Value) {
    match e.event_type.as_str() {
        "msg.in" => {
            e.role = Some("user".into());
            e.content = text_of(p.get("content"));
            e.from = text_field(p.get("from"));
            e.channel = text_field(p.get("channel"));
        }
        "msg.out" | "msg.sending" => {
            e.role = Some("assistant".into());
            e.content = text_of(p.get("content"));
            e.to = text_field(p.get("to"));
            e.channel = text_field(p.get("channel"));
            e.success = p.get("success").and_then(Value::as_bool);
            e.error = error_text(p.get("error"));
        }
        "tool.call" => {
            e.tool_name = text_field(p.get("toolName"));
            e.tool_params = json_field(p.get("params"));
        }
        "tool.result" => {
            e.tool_name = text_field(p.get("toolName"));
            e.tool_params = json_field(p.get("params"));
            e.tool_result = json_field(p.get("result"));
            e.tool_error = error_text(p.get("error"));
            e.tool_is_error = p
                .get("isError")
                .or_else(|| p.get("result").and_then(|r| r.get("isError")))
                .and_then(Value::as_bool);
            e.tool_duration_ms = int_field(p.get("durationMs"));
        }
        "run.start" => e.content = text_of(p.get("prompt")),
        "run.end" => {
            e.success = p.get("success").and_then(Value::as_bool);
            e.error = error_text(p.get("error"));
            e.duration_ms = int_field(p.get("durationMs"));
        }
        "run.error" => e.error = error_text(p.get("error")).or_else(|| error_text(p.get("message"))),
        "llm.input" | "llm.output" => map_llm(e, p),
        "session.end" => e.duration_ms = int_field(p.get("durationMs")),
        _ => {}
    }
    if e.run_id.is_none() {
        e.run_id = text_field(p.get("runId"));
    }
    if e.tool_call_id.is_none() {
        e.tool_call_id = text_field(p.get("toolCallId"));
    }
}

fn map_llm(e: &mut Event, p: &Value) {
    e.model = text_field(p.get("model"));
    e.provider = text_field(p.get("provider"));
    if e.event_type == "llm.input" {
        e.content = text_of(p.get("prompt"));
        return;
    }
    e.content = text_of(p.get("assistantTexts")).or_else(|| text_of(p.get("lastAssistant")));
    if let Some(usage) = p.get("usage") {
        e.usage_input = int_field(usage.get("input"));
        e.usage_output = int_field(usage.get("output"));
        e.usage_cache_read = int_field(usage.get("cacheRead"));
        e.usage_cache_write = int_field(usage.get("cacheWrite"));
        e.usage_total = int_field(usage.get("total"));
    }
}

fn map_schema_b(e: &mut Event, p: &Value) {
    let data = p.get("data").unwrap_or(&Value::Null);
    match e.event_type.as_str() {
        "msg.in" | "msg.out" => {
            let default_role = if e.event_type == "msg.in" { "user" } else { "assistant" };
            e.role = Some(text_field(p.get("role")).unwrap_or_else(|| default_role.into()));
            e.content = first_text_block(p.get("text_preview"))
                .or_else(|| text_of(p.get("content")))
                .or_else(|| text_of(p.get("text")));
        }
        "tool.call" => {
            e.tool_name = text_field(data.get("name"));
            e.tool_params = json_field(data.get("args"));
            e.tool_call_id = text_field(data.get("toolCallId"));
        }
        "tool.result" => {
            e.tool_name = text_field(data.get("name"));
            e.tool_params = json_field(data.get("args"));
            e.tool_call_id = text_field(data.get("toolCallId"));
            let result = data.get("result");
            e.tool_result = json_field(result);
            e.tool_is_error = data.get("isError").and_then(Value::as_bool);
            e.tool_error = error_text(data.get("error"));
            if e.tool_is_error == Some(true) && e.tool_error.is_none() {
                e.tool_error = result.and_then(|r| text_of(r.get("content")).or_else(|| r.as_str().map(str::to_owned)));
            }
            e.tool_duration_ms = int_field(data.get("durationMs")).or_else(|| int_field(p.get("durationMs")));
        }
        "run.end" | "run.error" => {
            e.error = error_text(p.get("error")).or_else(|| error_text(data.get("error")));
            e.duration_ms = int_field(p.get("durationMs"));
        }
        _ => {}
    }
    e.run_id = e.run_id.take().or_else(|| text_field(p.get("runId")));
}

/// A scalar as text: strings as they are, numbers and booleans printed.
fn text_field(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Message text: a string, or the text blocks of a content array joined by newlines,
/// or any other value as JSON.
fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let texts: Vec<&str> = items
                .iter()
                .filter_map(|b| b.as_str().or_else(|| b.get("text").and_then(Value::as_str)))
                .collect();
            if texts.is_empty() && !items.is_empty() {
                Some(json_text(&Value::Array(items.clone())))
            } else if texts.is_empty() {
                None
            } else {
                Some(texts.join("\n"))
            }
        }
        other => Some(json_text(other)),
    }
}

/// Schema B's `text_preview[0].text` (or a plain string preview).
fn first_text_block(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items.first().and_then(|b| text_of(Some(b).map(|b| b.get("text").unwrap_or(b)))),
        _ => None,
    }
}

/// Error text; empty strings and `false`/`null` mean "no error" (as JavaScript's truthiness).
fn error_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null | Value::Bool(false) => None,
        Value::String(s) if s.is_empty() => None,
        other => text_of(Some(other)),
    }
}

fn json_field(v: Option<&Value>) -> Option<String> {
    v.filter(|v| !v.is_null()).map(json_text)
}

/// JSON text of a value. (`serde_json::to_string` writes straight into a buffer; `Display`
/// goes through a formatter and is markedly slower on large payloads.)
fn json_text(v: &Value) -> String {
    serde_json::to_string(v).expect("a JSON value always serializes")
}

fn int_field(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64().or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f.round() as i64))
}
