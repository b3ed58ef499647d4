//! OpenTelemetry traces → events: spans of the GenAI semantic conventions, OpenInference
//! and OpenLLMetry ([`span`], [`messages`], [`events`]), put together across the batches
//! they arrive in ([`Assembler`]).
//!
//! The session of a span is the conversation it names (`gen_ai.conversation.id`,
//! `session.id`), else its trace; the spans of one trace always share a session: the first
//! span of a trace that is read decides it. The agent of a span is the one the nearest
//! span above it names (`gen_ai.agent.name`, `agent.name`; the agent span of the run),
//! else the first one its trace names, else its service: a trace viewer shows a tool call
//! under the agent that made it, whatever service it ran in. Spans read in an earlier
//! batch than the agent span above them keep their service's name.

pub mod events;
pub mod messages;
pub mod proto;
pub mod span;

// Keys are hashes already, of spans and traces that clients choose: a fast hash seeded per
// process, not SipHash.
use foldhash::{HashMap, HashSet};

pub use events::{Candidate, span_events};
pub use span::{Span, is_traces, spans_from_json};

use super::{sequence_in_line, time};
use crate::model::Event;

/// Refuses spans of which one starts at a time that is not plausible (before 2000, more
/// than a day ahead, or missing), saying which.
pub fn check_times(spans: &[Span], now_ms: i64) -> Result<(), String> {
    match spans.iter().find(|s| !time::is_plausible(s.start_ms, now_ms)) {
        Some(span) => Err(format!(
            "span `{}` ({}) starts at {}: before 2000 or more than a day ahead (startTimeUnixNano counts nanoseconds)",
            span.name,
            span.span_id,
            time::display(span.start_ms)
        )),
        None => Ok(()),
    }
}

/// How many traces and event keys are remembered, per generation: a long-running receiver
/// forgets the older generation past this (traces still under way are far fewer).
const REMEMBERED: usize = 1 << 17;

/// A span's parent (by its key) and the agent it names, if it names one.
type SpanAgent = (Option<u64>, Option<String>);

/// Gives span events their session and drops repeats, across the batches spans arrive in.
/// Batches must be added in the order they were received.
#[derive(Default)]
pub struct Assembler {
    /// The session of each trace, by the trace's key.
    sessions: Generations<HashMap<u64, String>>,
    seen: Generations<HashSet<(u64, u64)>>,
    spans: Generations<HashMap<u64, SpanAgent>>,
    /// The first agent each trace names, by the trace's key.
    agents: Generations<HashMap<u64, String>>,
}

impl Assembler {
    /// The events of `candidates` (of the line or request at `position`) not seen before,
    /// with their sessions and their sequences in the line.
    pub fn add(&mut self, position: u64, candidates: Vec<Candidate>) -> Vec<Event<'static>> {
        // Children often end, and so arrive, before the agent span above them: every span
        // of the batch is known before any takes its agent.
        for c in &candidates {
            let named = c.names_agent.then(|| c.event.agent.clone().into_owned());
            let span = c.event.span_id.as_deref().map(events::key_of);
            let parent = c.event.parent_span_id.as_deref().map(events::key_of);
            if let Some(span) = span {
                let entry = self.spans.current.entry(span).or_insert((parent, None));
                if named.is_some() {
                    entry.1.clone_from(&named);
                }
            }
            if let Some(agent) = named {
                let trace = events::key_of(c.event.trace_id.as_deref().unwrap_or_default());
                if self.agents.find(|m| m.get(&trace).map(drop)).is_none() {
                    self.agents.current.insert(trace, agent);
                }
            }
        }
        self.spans.age(HashMap::len);
        self.agents.age(HashMap::len);
        let mut events = Vec::with_capacity(candidates.len());
        for (n, Candidate { mut event, once, conversation, names_agent }) in candidates.into_iter().enumerate() {
            if !names_agent && let Some(agent) = self.agent_above(&event) {
                event.agent = agent.into();
            }
            event.stream_seq = sequence_in_line(position, n as u64);
            let trace = event.trace_id.as_deref().unwrap_or_default().to_owned();
            let trace_key = events::key_of(&trace);
            let session = match self.sessions.find(|m| m.get(&trace_key).cloned()) {
                Some(session) => session,
                None => {
                    let session = conversation.unwrap_or(trace);
                    self.sessions.current.insert(trace_key, session.clone());
                    self.sessions.age(HashMap::len);
                    session
                }
            };
            if let Some(key) = once {
                let key = (events::key_of(&session), key);
                if self.seen.find(|s| s.contains(&key).then_some(())).is_some() {
                    continue;
                }
                self.seen.current.insert(key);
                self.seen.age(HashSet::len);
            }
            event.session = session.into();
            events.push(event);
        }
        events
    }

    /// The agent the nearest span above `event`'s names, else the first its trace names.
    fn agent_above(&self, event: &Event) -> Option<String> {
        let mut parent = event.parent_span_id.as_deref().map(events::key_of);
        // Bounded: span ids come from the input, and a cycle is possible.
        for _ in 0..64 {
            let Some((above, agent)) = parent.and_then(|p| self.spans.find(|m| m.get(&p).cloned())) else { break };
            if agent.is_some() {
                return agent;
            }
            parent = above;
        }
        let trace = events::key_of(event.trace_id.as_deref().unwrap_or_default());
        self.agents.find(|m| m.get(&trace).cloned())
    }
}

/// A memory in two generations: lookups see both, and when the current one is full it
/// becomes the previous one, whose entries are forgotten.
#[derive(Default)]
struct Generations<T> {
    current: T,
    previous: T,
}

impl<T: Default> Generations<T> {
    fn find<R>(&self, f: impl Fn(&T) -> Option<R>) -> Option<R> {
        f(&self.current).or_else(|| f(&self.previous))
    }

    fn age(&mut self, len: impl Fn(&T) -> usize) {
        if len(&self.current) >= REMEMBERED {
            self.previous = std::mem::take(&mut self.current);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// A chat span of `trace` whose history is `history` (user texts) answered by `answer`.
    fn chat(trace: &str, span: &str, conversation: Option<&str>, history: &[&str], answer: &str) -> serde_json::Value {
        let input: Vec<_> =
            history.iter().map(|t| serde_json::json!({"role": "user", "parts": [{"type": "text", "content": t}]})).collect();
        let output = serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]);
        let mut attributes = vec![
            serde_json::json!({"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}),
            serde_json::json!({"key": "gen_ai.input.messages", "value": {"stringValue": serde_json::Value::Array(input).to_string()}}),
            serde_json::json!({"key": "gen_ai.output.messages", "value": {"stringValue": output.to_string()}}),
        ];
        if let Some(c) = conversation {
            attributes.push(serde_json::json!({"key": "gen_ai.conversation.id", "value": {"stringValue": c}}));
        }
        serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": trace, "spanId": span, "name": "chat m",
            "startTimeUnixNano": "1000000000", "endTimeUnixNano": "2000000000", "attributes": attributes}]}]}]})
    }

    fn events(assembler: &mut Assembler, batch: serde_json::Value) -> Vec<Event<'static>> {
        let candidates = spans_from_json(&batch).unwrap().iter().flat_map(span_events).collect();
        assembler.add(1, candidates)
    }

    #[test]
    fn a_repeated_history_yields_each_message_once() {
        let t = "0af7651916cd43dd8448eb211c80319c";
        let mut a = Assembler::default();
        let first = events(&mut a, chat(t, "00f067aa0ba902b7", Some("conv-1"), &["hi"], "hello"));
        let second = events(&mut a, chat(t, "00f067aa0ba902b8", None, &["hi", "hi"], "bye"));
        let texts =
            |e: &[Event<'static>]| e.iter().map(|e| (e.event_type.clone(), e.content.clone().unwrap_or_default())).collect::<Vec<_>>();
        assert_eq!(texts(&first), [("msg.in".into(), "hi".into()), ("msg.out".into(), "hello".into())]);
        // The same "hi" a second time is a new message; the first is not.
        assert_eq!(texts(&second), [("msg.in".into(), "hi".into()), ("msg.out".into(), "bye".into())]);
        assert!(first.iter().chain(&second).all(|e| e.session == "conv-1"), "the trace keeps the session its first span named");
        let other = events(&mut a, chat("1af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b9", None, &["hi"], "hello"));
        assert_eq!(other.len(), 2, "another trace is another session");
        assert_eq!(other[0].session, "1af7651916cd43dd8448eb211c80319c");
    }

    fn span(trace: &str, id: &str, parent: Option<&str>, attributes: &[(&str, &str)]) -> serde_json::Value {
        let attributes: Vec<_> = attributes.iter().map(|(k, v)| serde_json::json!({"key": k, "value": {"stringValue": v}})).collect();
        serde_json::json!({"traceId": trace, "spanId": id, "parentSpanId": parent.unwrap_or(""), "name": id,
            "startTimeUnixNano": "1767225600000000000", "endTimeUnixNano": "1767225601000000000", "attributes": attributes})
    }

    #[test]
    fn spans_take_the_agent_of_the_agent_span_above_them() {
        let (t, other) = ("0af7651916cd43dd8448eb211c80319c", "2af7651916cd43dd8448eb211c80319c");
        let tool = [("gen_ai.operation.name", "execute_tool"), ("gen_ai.tool.name", "refund")];
        // The tool call ends, and is exported, before the agent span above it.
        let spans = [
            span(t, "00f067aa0ba902b2", Some("00f067aa0ba902b1"), &tool),
            span(t, "00f067aa0ba902b1", None, &[("gen_ai.operation.name", "invoke_agent"), ("gen_ai.agent.name", "billing")]),
            span(other, "00f067aa0ba902b3", None, &tool),
        ];
        let batch = serde_json::json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "billing-agent"}}]},
            "scopeSpans": [{"spans": spans}]}]});
        let mut a = Assembler::default();
        let all = events(&mut a, batch);
        let agents = |trace: &str| all.iter().filter(|e| e.trace_id.as_deref() == Some(trace)).map(|e| &*e.agent).collect::<HashSet<_>>();
        assert_eq!(agents(t), HashSet::from(["billing"]), "one trace, one agent: {all:?}");
        assert_eq!(agents(other), HashSet::from(["billing-agent"]), "a trace that names no agent keeps its service");
        let later = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [span(t, "00f067aa0ba902b4", Some("00f067aa0ba902b2"), &tool)]}]}]});
        assert!(events(&mut a, later).iter().all(|e| e.agent == "billing"), "a later batch of the trace too");
    }
}
