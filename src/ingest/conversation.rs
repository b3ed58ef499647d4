//! Chat messages, whatever format they came in (OpenAI chat, OpenTelemetry GenAI parts,
//! OpenInference, OpenLLMetry), and the events they become: user text → `msg.in`,
//! assistant text → `msg.out`, each tool call → `tool.call`, each tool reply →
//! `tool.result`. System prompts are instructions, not turns of the conversation: they
//! become no event.

use std::collections::HashMap;

use serde_json::Value;

use crate::model::{Event, Schema};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The role a format names; unknown roles are none of ours.
    pub fn parse(role: &str) -> Option<Self> {
        match role.to_ascii_lowercase().as_str() {
            "system" | "developer" => Some(Self::System),
            "user" | "human" => Some(Self::User),
            "assistant" | "ai" | "model" | "bot" => Some(Self::Assistant),
            "tool" | "function" | "ipython" => Some(Self::Tool),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    ToolCall {
        id: Option<String>,
        name: String,
        arguments: Option<Value>,
    },
    /// A tool's answer; `failed` when the format says so.
    ToolResult {
        id: Option<String>,
        name: Option<String>,
        result: Value,
        failed: bool,
    },
}

impl Message {
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self { role, parts: vec![Part::Text(text.into())] }
    }

    /// The message as JSON, kept as the payload of the events made from it.
    pub fn to_json(&self) -> String {
        let parts: Vec<Value> = self
            .parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => serde_json::json!({"type": "text", "content": text}),
                Part::ToolCall { id, name, arguments } => {
                    serde_json::json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments})
                }
                Part::ToolResult { id, name, result, failed } => {
                    serde_json::json!({"type": "tool_call_response", "id": id, "name": name, "response": result, "failed": failed})
                }
            })
            .collect();
        let role = match self.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        serde_json::json!({"role": role, "parts": parts}).to_string()
    }
}

/// A tool call's name and parameters (`tool_params` form), by call id.
pub type Calls = HashMap<String, (String, Option<String>)>;

/// The events of one message. Tool results take the name (if they name none) and the
/// parameters of the call with their id in `calls`.
pub fn message_events(message: &Message, calls: &Calls, base: &Event<'static>) -> Vec<Event<'static>> {
    let mut events = Vec::new();
    let payload = message.to_json();
    for part in &message.parts {
        let mut event = base.clone();
        event.payload = payload.clone().into();
        match (message.role, part) {
            (Role::System, _) => continue,
            (Role::User, Part::Text(text)) => {
                event.set_type("msg.in");
                event.role = Some("user".into());
                event.from = Some("user".into());
                event.content = Some(text.clone().into());
            }
            (Role::Assistant, Part::Text(text)) => {
                event.set_type("msg.out");
                event.role = Some("assistant".into());
                event.to = Some("user".into());
                event.content = Some(text.clone().into());
            }
            (Role::Tool, Part::Text(text)) => {
                let result = Part::ToolResult { id: None, name: None, result: Value::String(text.clone()), failed: false };
                tool_result(&mut event, &result, calls);
            }
            (_, Part::ToolCall { id, name, arguments }) => {
                event.set_type("tool.call");
                event.tool_name = Some(name.clone().into());
                event.tool_params = arguments.as_ref().map(|a| canonical_json(a).into());
                event.tool_call_id = id.clone().map(Into::into);
            }
            (_, result @ Part::ToolResult { .. }) => tool_result(&mut event, result, calls),
        }
        events.push(event);
    }
    events
}

fn tool_result(event: &mut Event, part: &Part, calls: &Calls) {
    let Part::ToolResult { id, name, result, failed } = part else { return };
    event.set_type("tool.result");
    let id = id.clone().or_else(|| event.tool_call_id.as_deref().map(str::to_owned));
    let call = id.as_ref().and_then(|id| calls.get(id));
    event.tool_name = name.clone().or_else(|| call.map(|(name, _)| name.clone())).map(Into::into);
    event.tool_params = call.and_then(|(_, params)| params.clone()).map(Into::into);
    event.tool_call_id = id.map(Into::into);
    let text = match result {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    if *failed || reads_as_failure(result) {
        event.tool_error = Some(text.into());
        event.tool_is_error = Some(true);
    } else {
        event.tool_result = Some(result.to_string().into());
    }
}

/// Whether a tool's answer, in a format with no error flag (OpenAI chat), reports a
/// failure: text that begins with "Error" (as tool wrappers format exceptions:
/// `Error: …`, `Error executing tool …`), or a JSON object with a non-empty `error` or a
/// true `isError`/`is_error` (MCP and common API shapes).
pub fn reads_as_failure(result: &Value) -> bool {
    match result {
        Value::String(text) => {
            let text = text.trim_start();
            if text.get(..5).is_some_and(|head| head.eq_ignore_ascii_case("error")) {
                return !text[5..].starts_with(|c: char| c.is_alphanumeric());
            }
            text.starts_with('{') && serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object() && reads_as_failure(&v))
        }
        Value::Object(fields) => {
            let flagged = ["isError", "is_error"].iter().any(|k| fields.get(*k).and_then(Value::as_bool) == Some(true));
            let error = fields.get("error").is_some_and(|e| !matches!(e, Value::Null | Value::Bool(false)) && e != "");
            flagged || error
        }
        _ => false,
    }
}

/// Tool arguments in the canonical form of `tool_params` (compact, keys sorted), so that
/// a call compares equal however its publisher wrote it. Arguments given as a JSON
/// string are parsed first; text that is not JSON is kept as a JSON string.
pub fn canonical_json(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(parsed) => parsed.to_string(),
            Err(_) => arguments.to_string(),
        },
        other => other.to_string(),
    }
}

/// Every call in `messages` that has an id.
pub fn calls_of<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Calls {
    let mut calls = Calls::new();
    for message in messages {
        for part in &message.parts {
            if let Part::ToolCall { id: Some(id), name, arguments } = part {
                calls.insert(id.clone(), (name.clone(), arguments.as_ref().map(canonical_json)));
            }
        }
    }
    calls
}

/// An event with only its place, time and source set, for [`message_events`] to fill in.
pub fn base_event(stream_seq: u64, id: String, ts: i64, agent: &str, session: &str, schema: Schema) -> Event<'static> {
    Event::new(stream_seq, id, ts, agent.to_owned(), session.to_owned(), "msg.in", schema)
}

/// Messages in the OpenAI chat format (`role`, `content` as text or parts, `tool_calls`,
/// `tool_call_id`, `name`), or the GenAI conventions' (`role`, `parts`).
pub fn parse_message(value: &Value) -> Option<Message> {
    let role = Role::parse(value.get("role")?.as_str()?)?;
    let mut parts = Vec::new();
    if let Some(items) = value.get("parts").and_then(Value::as_array) {
        parts.extend(items.iter().filter_map(parse_part));
    }
    let tool_call_id = value.get("tool_call_id").and_then(Value::as_str).map(str::to_owned);
    let failed = value.get("status").and_then(Value::as_str) == Some("error")
        || ["is_error", "isError"].iter().any(|k| value.get(*k).and_then(Value::as_bool) == Some(true));
    match value.get("content") {
        Some(Value::String(text)) if role == Role::Tool || tool_call_id.is_some() => parts.push(Part::ToolResult {
            id: tool_call_id.clone(),
            name: value.get("name").and_then(Value::as_str).map(str::to_owned),
            result: Value::String(text.clone()),
            failed,
        }),
        Some(Value::String(text)) if !text.is_empty() => parts.push(Part::Text(text.clone())),
        Some(Value::Array(items)) => {
            let text: Vec<&str> = items.iter().filter_map(|i| i.as_str().or_else(|| i.get("text").and_then(Value::as_str))).collect();
            if role == Role::Tool {
                parts.push(Part::ToolResult { id: tool_call_id.clone(), name: None, result: Value::String(text.join("\n")), failed });
            } else if !text.is_empty() {
                parts.push(Part::Text(text.join("\n")));
            }
        }
        _ => {}
    }
    for call in value.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let function = call.get("function").unwrap_or(call);
        if let Some(name) = function.get("name").and_then(Value::as_str) {
            parts.push(Part::ToolCall {
                id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                name: name.to_owned(),
                arguments: function.get("arguments").cloned(),
            });
        }
    }
    Some(Message { role, parts })
}

/// One part of the GenAI conventions' messages (`text`, `tool_call`, `tool_call_response`).
fn parse_part(part: &Value) -> Option<Part> {
    let id = || part.get("id").and_then(Value::as_str).map(str::to_owned);
    match part.get("type").and_then(Value::as_str)? {
        "text" => part.get("content").and_then(Value::as_str).map(|t| Part::Text(t.to_owned())),
        "tool_call" | "function_call" => Some(Part::ToolCall {
            id: id(),
            name: part.get("name").and_then(Value::as_str)?.to_owned(),
            arguments: part.get("arguments").cloned(),
        }),
        "tool_call_response" => Some(Part::ToolResult {
            id: id(),
            name: part.get("name").and_then(Value::as_str).map(str::to_owned),
            result: part.get("response").or_else(|| part.get("result")).cloned().unwrap_or(Value::Null),
            failed: false,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Event<'static> {
        base_event(1, "e".into(), 0, "a", "s", Schema::Chat)
    }

    #[test]
    fn an_openai_exchange_becomes_messages_calls_and_results() {
        let messages: Vec<Message> = [
            serde_json::json!({"role": "system", "content": "be nice"}),
            serde_json::json!({"role": "user", "content": "refund W1"}),
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "refund", "arguments": "{\"order\": \"W1\", \"all\": true}"}}]}),
            serde_json::json!({"role": "tool", "tool_call_id": "c1", "content": "Error: refund service timed out"}),
            serde_json::json!({"role": "assistant", "content": "Done."}),
        ]
        .iter()
        .filter_map(parse_message)
        .collect();
        let calls = calls_of(&messages);
        let events: Vec<Event> = messages.iter().flat_map(|m| message_events(m, &calls, &base())).collect();
        let types: Vec<&str> = events.iter().map(|e| &*e.event_type).collect();
        assert_eq!(types, ["msg.in", "tool.call", "tool.result", "msg.out"]);
        assert_eq!(events[1].tool_params.as_deref(), Some(r#"{"all":true,"order":"W1"}"#));
        assert_eq!(
            (events[2].tool_name.as_deref(), events[2].tool_error.as_deref()),
            (Some("refund"), Some("Error: refund service timed out"))
        );
        assert_eq!(events[2].tool_params, events[1].tool_params);
        assert_eq!(events[2].tool_is_error, Some(true));
    }

    #[test]
    fn failures_are_read_from_flags_and_from_errors_at_the_start() {
        let fails = |v: Value| reads_as_failure(&v);
        assert!(fails("Error: not enough seats".into()));
        assert!(fails("error executing tool".into()));
        assert!(fails(serde_json::json!({"isError": true, "content": []})));
        assert!(fails(r#"{"error": "not found"}"#.into()));
        assert!(!fails("Errors found: none".into()));
        assert!(!fails("The error rate is low".into()));
        assert!(!fails(serde_json::json!({"error": null, "ok": 1})));
    }
}
