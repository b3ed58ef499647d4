//! Spans → events. A model-call span yields its messages (input at its start, output at
//! its end), a tool span a `tool.call` and a `tool.result` (failed when the span's status
//! is ERROR), an agent span a `run.start` and a `run.end` (or `run.error`). Other spans
//! (HTTP, database, framework steps) yield nothing.
//!
//! Each event gets a key (`once`): model calls repeat the whole chat history, and a tool
//! call appears both in the model's answer and as its own span; events with the same key
//! in a session are one event ([`super::Assembler`]).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::LazyLock;

use super::messages::{is_model_call, span_messages};
use super::span::{AnyValue, Span, attributes_json};
use crate::ingest::conversation::{Message, Part, calls_of, canonical_json, message_events, reads_as_failure};
use crate::model::{Event, Schema};

/// An event of a span, before its session is known.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub event: Event<'static>,
    /// Events of one session with the same key are one event: the first is kept.
    pub once: Option<u64>,
    /// The conversation the span names, if it names one.
    pub conversation: Option<String>,
    /// Whether the span names its agent (`gen_ai.agent.name`, `agent.name`), rather than
    /// the agent being its service's name.
    pub names_agent: bool,
}

impl Candidate {
    fn new(event: Event<'static>, once: Option<u64>) -> Self {
        Self { event, once, conversation: None, names_agent: false }
    }
}

/// Attributes naming the conversation (session) a span belongs to.
const CONVERSATION_KEYS: &[&str] = &["gen_ai.conversation.id", "session.id", "traceloop.association.properties.session_id"];

/// Attributes that hold messages: the message events carry them, not the span's payload.
const MESSAGE_KEYS: &[&str] =
    &["gen_ai.input.messages", "gen_ai.output.messages", "input.value", "output.value", "pydantic_ai.all_messages"];

/// The events of `span`.
pub fn span_events(span: &Span) -> Vec<Candidate> {
    let messages = (!is_tool(span) && !is_agent(span)).then(|| span_messages(span));
    // Most spans of an application (HTTP, database) are none of ours: nothing is built for them.
    if messages.as_ref().is_some_and(|(input, output)| input.is_empty() && output.is_empty() && !is_model_call(span)) {
        return Vec::new();
    }
    let named_agent = span.text(&["gen_ai.agent.name", "agent.name"]);
    let agent = named_agent.or_else(|| span.text(&["service.name"])).unwrap_or("unknown").to_owned();
    let conversation = span.text(CONVERSATION_KEYS).map(str::to_owned);
    let base = {
        let mut e = Event::new(0, String::new(), span.start_ms, agent, String::new(), "msg.in", Schema::Otlp);
        e.trace_id = Some(span.trace_id.clone().into());
        e.span_id = Some(span.span_id.clone().into());
        e.parent_span_id = span.parent_span_id.clone().map(Into::into);
        e.extra = Some(
            serde_json::json!({"span": span.name, "scope": span.scope, "resource": attributes_json(&span.resource)}).to_string().into(),
        );
        e
    };
    let mut out = Vec::new();
    match messages {
        Some((input, output)) => model_events(span, &input, &output, &base, &mut out),
        None if is_tool(span) => tool_events(span, &base, &mut out),
        None => agent_events(span, &base, &mut out),
    }
    for (n, candidate) in out.iter_mut().enumerate() {
        candidate.event.id = format!("{}.{n}", span.span_id).into();
        candidate.conversation.clone_from(&conversation);
        candidate.names_agent = named_agent.is_some();
    }
    out
}

fn is_tool(span: &Span) -> bool {
    span.text(&["gen_ai.operation.name"]) == Some("execute_tool")
        || span.text(&["openinference.span.kind"]) == Some("TOOL")
        || span.text(&["traceloop.span.kind"]) == Some("tool")
}

fn is_agent(span: &Span) -> bool {
    span.text(&["gen_ai.operation.name"]) == Some("invoke_agent")
        || span.text(&["openinference.span.kind"]) == Some("AGENT")
        || span.text(&["traceloop.span.kind"]) == Some("agent")
}

/// The span's own attributes as JSON, without the messages.
fn span_payload(span: &Span) -> String {
    let kept: Vec<_> = span.attributes.iter().filter(|(k, _)| !MESSAGE_KEYS.contains(&k.as_str())).cloned().collect();
    serde_json::json!({"name": span.name, "attributes": attributes_json(&kept), "error": span.error}).to_string()
}

fn tool_events(span: &Span, base: &Event<'static>, out: &mut Vec<Candidate>) {
    let name = span
        .text(&["gen_ai.tool.name", "tool.name", "traceloop.entity.name"])
        .map_or_else(|| span.name.strip_prefix("execute_tool ").unwrap_or(&span.name).to_owned(), str::to_owned);
    let call_id = span.text(&["gen_ai.tool.call.id", "tool_call.id", "tool.call.id"]).map(str::to_owned);
    let arguments =
        span.get("gen_ai.tool.call.arguments").or_else(|| span.get("input.value")).or_else(|| span.get("traceloop.entity.input"));
    let result = span.get("gen_ai.tool.call.result").or_else(|| span.get("output.value")).or_else(|| span.get("traceloop.entity.output"));
    let payload = span_payload(span);
    let mut call = base.clone();
    call.set_type("tool.call");
    call.tool_name = Some(name.into());
    call.tool_params = arguments.map(|a| canonical_json(&a.to_json()).into());
    call.tool_call_id = call_id.clone().map(Into::into);
    call.payload = payload.into();
    let mut done = call.clone();
    done.set_type("tool.result");
    done.ts = span.end_ms;
    done.tool_duration_ms = Some(span.end_ms - span.start_ms);
    let result_json = result.map(AnyValue::to_json);
    let failure = span.error.as_ref().map(|message| {
        let exception = span
            .events
            .iter()
            .find(|e| e.name == "exception")
            .and_then(|e| e.attributes.iter().find(|(k, _)| k == "exception.message").and_then(|(_, v)| v.as_str()).map(str::to_owned));
        [Some(message.clone()), exception, result_json.as_ref().and_then(|r| r.as_str().map(str::to_owned))]
            .into_iter()
            .flatten()
            .find(|m| !m.is_empty())
            .unwrap_or_else(|| "error".to_owned())
    });
    let failure = failure.or_else(|| span.text(&["error.type"]).map(str::to_owned));
    match failure {
        Some(message) => {
            done.tool_error = Some(message.into());
            done.tool_is_error = Some(true);
        }
        None => {
            done.tool_result = result_json.as_ref().map(|r| r.to_string().into());
            if result_json.as_ref().is_some_and(reads_as_failure) {
                done.tool_error = result_json.as_ref().map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned).into());
                done.tool_is_error = Some(true);
            }
        }
    }
    let key = |kind: &str| call_id.as_ref().map(|id| key_of(&(kind, id)));
    out.push(Candidate::new(call, key("tool.call")));
    out.push(Candidate::new(done, key("tool.result")));
}

fn agent_events(span: &Span, base: &Event<'static>, out: &mut Vec<Candidate>) {
    let payload = span_payload(span);
    let mut start = base.clone();
    start.set_type("run.start");
    start.payload = payload.into();
    let mut end = start.clone();
    end.ts = span.end_ms;
    end.duration_ms = Some(span.end_ms - span.start_ms);
    match &span.error {
        Some(message) => {
            end.set_type("run.error");
            end.error = Some(if message.is_empty() { "error".into() } else { message.clone().into() });
        }
        None => {
            end.set_type("run.end");
            end.success = Some(true);
        }
    }
    out.push(Candidate::new(start, None));
    out.push(Candidate::new(end, None));
}

fn model_events(span: &Span, input: &[Message], output: &[Message], base: &Event<'static>, out: &mut Vec<Candidate>) {
    let calls = calls_of(input.iter().chain(output));
    // The k-th copy of a message in the history is the same message in every call that
    // repeats the history.
    let mut copies: HashMap<u64, u64> = HashMap::new();
    let mut first_output = true;
    for (message, is_output) in input.iter().map(|m| (m, false)).chain(output.iter().map(|m| (m, true))) {
        for part in &message.parts {
            let single = Message { role: message.role, parts: vec![part.clone()] };
            let events = message_events(&single, &calls, base);
            // Every event of the part has the part's message as its payload.
            let Some(content) = events.first().map(|e| key_of(&e.payload)) else { continue };
            let copy = copies.entry(content).or_default();
            let key = match part {
                Part::ToolCall { id: Some(id), .. } => key_of(&("tool.call", id)),
                Part::ToolResult { id: Some(id), .. } => key_of(&("tool.result", id)),
                _ => key_of(&(content, *copy)),
            };
            *copy += 1;
            for mut event in events {
                if is_output {
                    event.ts = span.end_ms;
                    if first_output {
                        first_output = false;
                        model_usage(span, &mut event);
                    }
                }
                out.push(Candidate::new(event, Some(key)));
            }
        }
    }
}

/// The model and token usage of a model call, on the first event of its answer.
fn model_usage(span: &Span, event: &mut Event) {
    event.model =
        span.text(&["gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "llm.response.model"]).map(|m| m.to_owned().into());
    event.provider = span.text(&["gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"]).map(|p| p.to_owned().into());
    event.usage_input = span.int(&["gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"]);
    event.usage_output = span.int(&["gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"]);
    event.usage_cache_read = span.int(&["gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"]);
    event.usage_total = span.int(&["gen_ai.usage.total_tokens", "llm.usage.total_tokens", "llm.token_count.total"]);
}

/// A 64-bit key of `value`, the same for the same value throughout the process.
pub fn key_of<T: Hash + ?Sized>(value: &T) -> u64 {
    // Seeded once per process: keys are compared within a run only.
    static SEED: LazyLock<foldhash::fast::RandomState> = LazyLock::new(Default::default);
    SEED.hash_one(value)
}
