//! OpenAI-style chat transcripts → events: one conversation (`{"messages": [...]}`, with
//! optional `session`/`id`, `agent` and `metadata`) or a bare array of messages, as one
//! session between `session.start` and `session.end` (a transcript is a finished
//! conversation; `"ended": false` leaves the end out).
//!
//! Messages keep their own time (`timestamp`, `created_at`, `ts`: epoch seconds,
//! milliseconds or microseconds, or RFC 3339, see [`super::time`]) where they have one;
//! the others follow the one before by a second, from the conversation's time or else
//! `now`. A transcript with a time that is not plausible is not read.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::conversation::{Message, base_event, calls_of, message_events, parse_message};
use super::quarantine::QuarantineReason;
use super::time;
use crate::model::{Event, Schema};

/// How far apart messages without a time of their own are put.
const STEP_MS: i64 = 1000;

/// Whether `value` is a transcript: an object with a `messages` array and no event
/// `type`, or an array of objects with a `role`.
pub fn is_transcript(value: &Value) -> bool {
    match value {
        Value::Object(fields) => fields.get("messages").is_some_and(Value::is_array) && !fields.contains_key("type"),
        Value::Array(items) => !items.is_empty() && items.iter().all(|i| i.get("role").is_some_and(Value::is_string)),
        _ => false,
    }
}

/// The events of one transcript read at `position`; `text` is the transcript as read
/// (its hash names a session that has no id).
pub fn transcript_events(value: &Value, text: &str, position: u64, now: i64) -> Result<Vec<Event<'static>>, QuarantineReason> {
    let (fields, items) = match value {
        Value::Object(fields) => (Some(fields), fields.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()),
        Value::Array(items) => (None, items.as_slice()),
        _ => return Ok(Vec::new()),
    };
    let field = |key: &str| fields.and_then(|f| f.get(key)).or_else(|| fields.and_then(|f| f.get("metadata")).and_then(|m| m.get(key)));
    let text_of = |keys: &[&str]| keys.iter().find_map(|k| field(k).and_then(value_text));
    let session = text_of(&["session", "session_id", "conversation_id", "id"])
        .unwrap_or_else(|| format!("chat-{}", &hex::encode(Sha256::digest(text.as_bytes()))[..16]));
    let agent = text_of(&["agent", "agent_name", "assistant"]).unwrap_or_else(|| "unknown".to_owned());
    let started = ["timestamp", "created_at", "created", "ts", "start_time"].iter().find_map(|k| field(k).and_then(time_ms));
    let ended = field("ended").and_then(Value::as_bool) != Some(false);

    let messages: Vec<(Option<i64>, Message)> = items
        .iter()
        .filter_map(|item| {
            parse_message(item).map(|m| (["timestamp", "created_at", "ts"].iter().find_map(|k| item.get(*k).and_then(time_ms)), m))
        })
        .collect();
    if started.into_iter().chain(messages.iter().filter_map(|(t, _)| *t)).any(|t| !time::is_plausible(t, now)) {
        return Err(QuarantineReason::InvalidTimestamp);
    }
    let started = started.unwrap_or(now);
    let calls = calls_of(messages.iter().map(|(_, m)| m));
    let mut events = Vec::new();
    let mut at = started;
    let push = |mut event: Event<'static>, at: i64, events: &mut Vec<Event<'static>>| {
        let n = events.len() as u64;
        event.stream_seq = super::sequence_in_line(position, n);
        event.id = format!("{session}:{n}").into();
        event.ts = at;
        events.push(event);
    };
    let base = base_event(0, String::new(), at, &agent, &session, Schema::Chat);
    let mut start = base.clone();
    start.set_type("session.start");
    push(start, at, &mut events);
    for (time, message) in &messages {
        for event in message_events(message, &calls, &base) {
            at = time.unwrap_or(at + STEP_MS).max(at);
            push(event, at, &mut events);
        }
    }
    if ended {
        let mut end = base;
        end.set_type("session.end");
        end.duration_ms = Some(at + STEP_MS - started);
        push(end, at + STEP_MS, &mut events);
    }
    Ok(events)
}

fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn time_ms(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_f64().and_then(time::number_ms),
        Value::String(s) => time::text_ms(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_is_one_session_between_start_and_end() {
        let text = r#"{"session": "s1", "agent": "support", "created_at": "2026-01-01T00:00:00Z", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "cancel my order"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "cancel", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "cancelled"},
            {"role": "assistant", "content": "Done."}]}"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(is_transcript(&value));
        let events = transcript_events(&value, text, 3, 0).unwrap();
        let types: Vec<&str> = events.iter().map(|e| &*e.event_type).collect();
        assert_eq!(types, ["session.start", "msg.in", "tool.call", "tool.result", "msg.out", "session.end"]);
        assert!(events.iter().all(|e| e.session == "s1" && e.agent == "support" && e.schema == Schema::Chat));
        assert_eq!(events[0].ts, 1_767_225_600_000);
        assert!(events.windows(2).all(|w| w[0].ts < w[1].ts && w[0].stream_seq < w[1].stream_seq));
        assert_eq!(events[3].tool_name.as_deref(), Some("cancel"));
    }

    #[test]
    fn a_bare_array_of_messages_is_named_by_its_content() {
        let text = r#"[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]"#;
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(is_transcript(&value));
        let once = transcript_events(&value, text, 1, 5).unwrap();
        assert_eq!(once, transcript_events(&value, text, 1, 5).unwrap());
        assert!(once[0].session.starts_with("chat-"));
        assert!(!is_transcript(&serde_json::json!({"type": "msg.in", "messages": []})));
    }

    #[test]
    fn times_in_seconds_are_read_and_times_in_1970_refused() {
        let at = |created: Value| {
            transcript_events(&serde_json::json!({"created_at": created, "messages": [{"role": "user", "content": "hi"}]}), "t", 1, 0)
        };
        assert_eq!(at(1_767_607_203.into()).unwrap()[0].ts, 1_767_607_203_000);
        assert_eq!(at("2026-01-05T10:00:03Z".into()).unwrap()[0].ts, 1_767_607_203_000);
        assert_eq!(at(20_000_000.into()), Err(QuarantineReason::InvalidTimestamp));
    }
}
