//! The chat messages a model-call span carries, in whichever convention wrote them:
//! GenAI `gen_ai.input.messages` / `gen_ai.output.messages`; OpenInference
//! `llm.input_messages.N.message.*`; OpenLLMetry's older `gen_ai.prompt.N.*` /
//! `gen_ai.completion.N.*`; or the older GenAI message events (`gen_ai.user.message`, …,
//! `gen_ai.choice`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::span::{AnyValue, Span};
use crate::ingest::conversation::{Message, parse_message};

/// The messages sent to a model, and those it answered with.
type Exchange = (Vec<Message>, Vec<Message>);

/// The messages sent to the model, and those it answered with.
pub fn span_messages(span: &Span) -> Exchange {
    let conventions: [fn(&Span) -> Option<Exchange>; 4] = [genai, openinference, openllmetry, message_events];
    conventions.iter().find_map(|read| read(span)).unwrap_or_default()
}

fn parse_all(value: &Value) -> Vec<Message> {
    value.as_array().into_iter().flatten().filter_map(parse_message).collect()
}

/// A JSON-valued attribute: a JSON string, or structured.
fn json_attribute(span: &Span, key: &str) -> Option<Value> {
    match span.get(key)? {
        AnyValue::Str(text) => serde_json::from_str(text).ok(),
        other => Some(other.to_json()),
    }
}

fn genai(span: &Span) -> Option<Exchange> {
    let input = json_attribute(span, "gen_ai.input.messages");
    let output = json_attribute(span, "gen_ai.output.messages");
    if input.is_none() && output.is_none() {
        return None;
    }
    Some((input.map(|v| parse_all(&v)).unwrap_or_default(), output.map(|v| parse_all(&v)).unwrap_or_default()))
}

fn openinference(span: &Span) -> Option<Exchange> {
    let read = |prefix: &str| {
        let tree = unflatten(span, prefix)?;
        let messages = tree.as_array()?.iter().filter_map(|m| m.get("message")).map(openinference_message).collect::<Vec<_>>();
        Some(parse_all(&Value::Array(messages)))
    };
    let (input, output) = (read("llm.input_messages."), read("llm.output_messages."));
    (input.is_some() || output.is_some()).then(|| (input.unwrap_or_default(), output.unwrap_or_default()))
}

/// An OpenInference message in the OpenAI chat shape.
fn openinference_message(message: &Value) -> Value {
    let mut out = Map::new();
    for key in ["role", "tool_call_id", "name"] {
        if let Some(v) = message.get(key) {
            out.insert(key.to_owned(), v.clone());
        }
    }
    let content = message.get("content").cloned().or_else(|| {
        let texts: Vec<&str> =
            message.get("contents")?.as_array()?.iter().filter_map(|c| c.get("message_content")?.get("text")?.as_str()).collect();
        (!texts.is_empty()).then(|| Value::String(texts.join("\n")))
    });
    if let Some(content) = content {
        out.insert("content".into(), content);
    }
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        let calls: Vec<Value> = calls.iter().filter_map(|c| c.get("tool_call")).cloned().collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(out)
}

fn openllmetry(span: &Span) -> Option<Exchange> {
    let read = |prefix: &str| unflatten(span, prefix).map(|tree| parse_all(&tree));
    let (input, output) = (read("gen_ai.prompt."), read("gen_ai.completion."));
    (input.is_some() || output.is_some()).then(|| (input.unwrap_or_default(), output.unwrap_or_default()))
}

fn message_events(span: &Span) -> Option<Exchange> {
    let (mut input, mut output) = (Vec::new(), Vec::new());
    for event in &span.events {
        let role = match event.name.as_str() {
            "gen_ai.system.message" => "system",
            "gen_ai.user.message" => "user",
            "gen_ai.assistant.message" => "assistant",
            "gen_ai.tool.message" => "tool",
            "gen_ai.choice" => "assistant",
            _ => continue,
        };
        let mut fields: Map<String, Value> = event
            .attributes
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    AnyValue::Str(text) if matches!(k.as_str(), "tool_calls" | "message") => {
                        serde_json::from_str(text).unwrap_or(Value::String(text.clone()))
                    }
                    other => other.to_json(),
                };
                (k.clone(), value)
            })
            .collect();
        if let Some(Value::Object(inner)) = fields.remove("message") {
            fields.extend(inner);
        }
        fields.entry("role").or_insert_with(|| Value::String(role.to_owned()));
        if role == "tool"
            && let Some(id) = fields.remove("id")
        {
            fields.entry("tool_call_id").or_insert(id);
        }
        if let Some(message) = parse_message(&Value::Object(fields)) {
            if event.name == "gen_ai.choice" { output.push(message) } else { input.push(message) }
        }
    }
    (!input.is_empty() || !output.is_empty()).then_some((input, output))
}

/// The attributes under `prefix` (`a.0.b`, `a.1.b`) as a JSON tree, numbered levels as
/// arrays in index order; `None` when there are none.
fn unflatten(span: &Span, prefix: &str) -> Option<Value> {
    #[derive(Default)]
    struct Node(BTreeMap<String, Node>, Option<Value>);
    let mut root = Node::default();
    for (key, value) in &span.attributes {
        let Some(path) = key.strip_prefix(prefix) else { continue };
        let mut node = &mut root;
        for segment in path.split('.') {
            node = node.0.entry(segment.to_owned()).or_default();
        }
        node.1 = Some(value.to_json());
    }
    fn build(node: Node) -> Value {
        if let Some(value) = node.1
            && node.0.is_empty()
        {
            return value;
        }
        if !node.0.is_empty() && node.0.keys().all(|k| k.parse::<usize>().is_ok()) {
            let mut items: Vec<(usize, Value)> = node.0.into_iter().map(|(k, v)| (k.parse().expect("checked"), build(v))).collect();
            items.sort_by_key(|(i, _)| *i);
            return Value::Array(items.into_iter().map(|(_, v)| v).collect());
        }
        Value::Object(node.0.into_iter().map(|(k, v)| (k, build(v))).collect())
    }
    (!root.0.is_empty()).then(|| build(root))
}

/// Whether the span is a model call: by its operation or kind, or the messages it carries.
pub fn is_model_call(span: &Span) -> bool {
    matches!(span.text(&["gen_ai.operation.name"]), Some("chat" | "text_completion" | "generate_content"))
        || span.text(&["openinference.span.kind"]) == Some("LLM")
        || span.text(&["llm.request.type"]).is_some()
}
