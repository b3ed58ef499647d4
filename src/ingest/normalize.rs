//! Raw event JSON (schema A, schema B, v1 envelope) → one [`Event`] (spec §2).

use std::borrow::Cow;

use serde_json::Value;

use super::quarantine::QuarantineReason;
use super::raw::{Raw, RawObject};
use super::time;
use crate::model::{Event, Schema};

/// Top-level keys that become columns; every other key is kept in `extra`.
const MAPPED_KEYS: &[&str] = &["id", "ts", "timestamp", "agent", "session", "type", "payload"];

/// The canonical type for a raw type; unknown types map to themselves.
pub fn canonical_type<'a>(raw: &Cow<'a, str>) -> Cow<'a, str> {
    let canonical = match raw.as_ref() {
        "conversation.message.in" => "msg.in",
        "conversation.message.out" => "msg.out",
        "conversation.tool_call" => "tool.call",
        "conversation.tool_result" => "tool.result",
        "lifecycle.start" => "run.start",
        "lifecycle.end" => "run.end",
        "lifecycle.error" => "run.error",
        _ => return raw.clone(),
    };
    Cow::Borrowed(canonical)
}

/// [`normalize_session`] of a borrowed or owned text.
fn normalized_session(raw: Cow<str>) -> Cow<str> {
    match raw {
        Cow::Borrowed(text) => Cow::Borrowed(normalize_session(text)),
        Cow::Owned(text) => Cow::Owned(normalize_session(&text).to_owned()),
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

/// Normalizes one raw (already redacted) event read at `stream_seq`; `now_ms` bounds the
/// times that are plausible.
pub fn normalize<'a>(
    raw: &RawObject<'a>,
    stream_seq: u64,
    subject: Option<Cow<'a, str>>,
    now_ms: i64,
) -> Result<Event<'a>, QuarantineReason> {
    let ts = timestamp(raw, now_ms)?;
    let raw_type = match raw.get("type").and_then(Raw::as_str).filter(|t| !t.is_empty()) {
        Some(t) => t,
        None => match raw.get("legacyType").and_then(Raw::as_str) {
            Some(t) => t,
            None => return Err(QuarantineReason::MissingType),
        },
    };
    let schema = detect_schema(raw, &raw_type);
    let payload = raw.get("payload");
    let payload_fields = payload.map(Raw::object).unwrap_or_default();
    let scope = object_field(raw, "scope");
    let trace = object_field(raw, "trace");
    let meta = object_field(raw, "meta");

    let agent = text_field(raw.get("agent")).filter(|a| !a.is_empty()).unwrap_or(Cow::Borrowed("unknown"));
    let raw_session = text_field(raw.get("session"))
        .or_else(|| text_field(scope.get("sessionKey")))
        .or_else(|| text_field(scope.get("sessionId")))
        .filter(|s| !s.is_empty())
        .unwrap_or(Cow::Borrowed("unknown"));
    let session = normalized_session(raw_session);
    let event_type = canonical_type(&raw_type);

    let id = text_field(raw.get("id")).unwrap_or_default();
    let mut event = Event::new(stream_seq, id, ts, agent, session, event_type, schema);
    event.raw_type = raw_type;
    event.run_id = text_field(scope.get("runId")).or_else(|| text_field(meta.get("runId")));
    event.tool_call_id = text_field(scope.get("toolCallId"));
    event.canonical_type = text_field(raw.get("canonicalType"));
    event.trace_id = text_field(trace.get("traceId"));
    event.span_id = text_field(trace.get("spanId"));
    event.parent_span_id = text_field(trace.get("parentSpanId"));
    event.subject = subject;
    event.payload = Cow::Borrowed(payload.map_or("null", Raw::text));
    event.extra = raw.json_without(MAPPED_KEYS).map(Cow::Owned);
    if schema == Schema::B {
        map_schema_b(&mut event, &payload_fields);
    } else {
        map_schema_a(&mut event, &payload_fields);
    }
    Ok(event)
}

fn object_field<'a>(raw: &RawObject<'a>, key: &str) -> RawObject<'a> {
    raw.get(key).map(Raw::object).unwrap_or_default()
}

/// `ts` (schema A) or `timestamp` (schema B) as milliseconds since the epoch: a number
/// (read by its magnitude) or an RFC 3339 text, see [`time`].
fn timestamp(raw: &RawObject, now_ms: i64) -> Result<i64, QuarantineReason> {
    let read = |key| {
        raw.get(key).and_then(|v| match v.as_f64() {
            Some(n) => time::number_ms(n),
            None => v.as_str().and_then(|t| time::text_ms(&t)),
        })
    };
    match read("ts").or_else(|| read("timestamp")) {
        None | Some(0) => Err(QuarantineReason::MissingTimestamp),
        Some(ms) if !time::is_plausible(ms, now_ms) => Err(QuarantineReason::InvalidTimestamp),
        Some(ms) => Ok(ms),
    }
}

fn detect_schema(raw: &RawObject, raw_type: &str) -> Schema {
    let b_type = raw_type.starts_with("conversation.") || raw_type.starts_with("lifecycle.");
    let timestamp_only = !raw.contains_key("ts") && raw.contains_key("timestamp");
    if b_type || timestamp_only { Schema::B } else { Schema::A }
}

fn map_schema_a<'a>(e: &mut Event<'a>, p: &RawObject<'a>) {
    match &*e.event_type {
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
            e.success = p.get("success").and_then(Raw::as_bool);
            e.error = error_text(p.get("error"));
        }
        "tool.call" => {
            e.tool_name = text_field(p.get("toolName"));
            e.tool_params = params_field(p.get("params"));
        }
        "tool.result" => {
            e.tool_name = text_field(p.get("toolName"));
            e.tool_params = params_field(p.get("params"));
            let result = p.get("result");
            e.tool_result = json_field(result);
            e.tool_error = error_text(p.get("error"));
            e.tool_is_error =
                p.get("isError").and_then(Raw::as_bool).or_else(|| result.and_then(|r| r.object().get("isError")).and_then(Raw::as_bool));
            e.tool_duration_ms = p.get("durationMs").and_then(Raw::as_i64);
        }
        "run.start" => e.content = text_of(p.get("prompt")),
        "run.end" => {
            e.success = p.get("success").and_then(Raw::as_bool);
            e.error = error_text(p.get("error"));
            e.duration_ms = p.get("durationMs").and_then(Raw::as_i64);
        }
        "run.error" => e.error = error_text(p.get("error")).or_else(|| error_text(p.get("message"))),
        "llm.input" | "llm.output" => map_llm(e, p),
        "session.end" => e.duration_ms = p.get("durationMs").and_then(Raw::as_i64),
        _ => {}
    }
    if e.run_id.is_none() {
        e.run_id = text_field(p.get("runId"));
    }
    if e.tool_call_id.is_none() {
        e.tool_call_id = text_field(p.get("toolCallId"));
    }
}

fn map_llm<'a>(e: &mut Event<'a>, p: &RawObject<'a>) {
    e.model = text_field(p.get("model"));
    e.provider = text_field(p.get("provider"));
    if e.event_type == "llm.input" {
        e.content = text_of(p.get("prompt"));
        return;
    }
    e.content = text_of(p.get("assistantTexts")).or_else(|| text_of(p.get("lastAssistant")));
    if let Some(usage) = p.get("usage") {
        let usage = usage.object();
        let int = |key| usage.get(key).and_then(Raw::as_i64);
        e.usage_input = int("input");
        e.usage_output = int("output");
        e.usage_cache_read = int("cacheRead");
        e.usage_cache_write = int("cacheWrite");
        e.usage_total = int("total");
    }
}

fn map_schema_b<'a>(e: &mut Event<'a>, p: &RawObject<'a>) {
    let data = object_field(p, "data");
    match &*e.event_type {
        "msg.in" | "msg.out" => {
            let default_role = if e.event_type == "msg.in" { "user" } else { "assistant" };
            e.role = Some(text_field(p.get("role")).unwrap_or(Cow::Borrowed(default_role)));
            e.content = first_text_block(p.get("text_preview")).or_else(|| text_of(p.get("content"))).or_else(|| text_of(p.get("text")));
        }
        "tool.call" => {
            e.tool_name = text_field(data.get("name"));
            e.tool_params = params_field(data.get("args"));
            e.tool_call_id = text_field(data.get("toolCallId"));
        }
        "tool.result" => {
            e.tool_name = text_field(data.get("name"));
            e.tool_params = params_field(data.get("args"));
            e.tool_call_id = text_field(data.get("toolCallId"));
            let result = data.get("result");
            e.tool_result = json_field(result);
            e.tool_is_error = data.get("isError").and_then(Raw::as_bool);
            e.tool_error = error_text(data.get("error"));
            if e.tool_is_error == Some(true) && e.tool_error.is_none() {
                e.tool_error = result.and_then(|r| text_of(r.object().get("content")).or_else(|| r.as_str()));
            }
            e.tool_duration_ms = data.get("durationMs").and_then(Raw::as_i64).or_else(|| p.get("durationMs").and_then(Raw::as_i64));
        }
        "run.end" | "run.error" => {
            e.error = error_text(p.get("error")).or_else(|| error_text(data.get("error")));
            e.duration_ms = p.get("durationMs").and_then(Raw::as_i64);
        }
        _ => {}
    }
    e.run_id = e.run_id.take().or_else(|| text_field(p.get("runId")));
}

/// A scalar as text: strings as they are, numbers and booleans printed.
fn text_field(v: Option<Raw>) -> Option<Cow<str>> {
    let v = v?;
    if let Some(s) = v.as_str() {
        return Some(s);
    }
    match v.value() {
        Some(Value::Number(n)) => Some(Cow::Owned(n.to_string())),
        Some(Value::Bool(b)) => Some(Cow::Borrowed(if b { "true" } else { "false" })),
        // A number beyond f64, as written.
        None if v.is_number() => Some(Cow::Borrowed(v.text())),
        _ => None,
    }
}

/// Message text: a string, or the text blocks of a content array joined by newlines,
/// or any other value as JSON.
fn text_of(v: Option<Raw>) -> Option<Cow<str>> {
    let v = v?;
    if let Some(s) = v.as_str() {
        return Some(s);
    }
    match v.value() {
        Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let texts: Vec<&str> = items.iter().filter_map(|b| b.as_str().or_else(|| b.get("text").and_then(Value::as_str))).collect();
            if texts.is_empty() && !items.is_empty() {
                Some(Cow::Borrowed(v.text()))
            } else if texts.is_empty() {
                None
            } else {
                Some(Cow::Owned(texts.join("\n")))
            }
        }
        _ => Some(Cow::Borrowed(v.text())),
    }
}

/// Schema B's `text_preview[0].text` (or a plain string preview).
fn first_text_block(v: Option<Raw>) -> Option<Cow<str>> {
    let v = v?;
    if let Some(s) = v.as_str() {
        return Some(s);
    }
    match v.value() {
        Some(Value::Array(items)) => items.first().and_then(|b| value_text(b.get("text").unwrap_or(b))).map(Cow::Owned),
        _ => None,
    }
}

fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(serde_json::to_string(other).expect("a JSON value always serializes")),
    }
}

/// Error text; empty strings and `false`/`null` mean "no error" (as JavaScript's truthiness).
fn error_text(v: Option<Raw>) -> Option<Cow<str>> {
    let v = v?;
    match v.text() {
        "null" | "false" | "\"\"" => None,
        _ => text_of(Some(v)),
    }
}

/// JSON text exactly as it arrived.
fn json_field(v: Option<Raw>) -> Option<Cow<str>> {
    v.filter(|v| !v.is_null()).map(|v| Cow::Borrowed(v.text()))
}

/// Tool parameters in one canonical form (compact, keys sorted): both schemas' copies of a
/// call compare equal, whatever order their publishers wrote the keys in.
fn params_field(v: Option<Raw>) -> Option<Cow<str>> {
    v.filter(|v| !v.is_null()).map(|v| match v.value() {
        Some(value) => Cow::Owned(serde_json::to_string(&value).expect("a JSON value always serializes")),
        // Beyond what a tree holds (`1e400`, deep nesting): kept as written.
        None => Cow::Borrowed(v.text()),
    })
}
