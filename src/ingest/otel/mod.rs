//! OpenTelemetry traces → events: spans of the GenAI semantic conventions, OpenInference
//! and OpenLLMetry ([`span`], [`messages`], [`events`]), put together across the batches
//! they arrive in ([`Assembler`]).
//!
//! The session of a span is the conversation it names (`gen_ai.conversation.id`,
//! `session.id`), else its trace; the spans of one trace always share a session: the first
//! span of a trace that is read decides it.

pub mod events;
pub mod messages;
pub mod proto;
pub mod span;

use std::collections::{HashMap, HashSet};

pub use events::{Candidate, span_events};
pub use span::{Span, is_traces, spans_from_json};

use super::sequence_in_line;
use crate::model::Event;

/// How many traces and event keys are remembered, per generation: a long-running receiver
/// forgets the older generation past this (traces still under way are far fewer).
const REMEMBERED: usize = 1 << 17;

/// Gives span events their session and drops repeats, across the batches spans arrive in.
/// Batches must be added in the order they were received.
#[derive(Default)]
pub struct Assembler {
    /// The session of each trace, by the trace's key.
    sessions: Generations<HashMap<u64, String>>,
    seen: Generations<HashSet<(u64, u64)>>,
}

impl Assembler {
    /// The events of `candidates` (of the line or request at `position`) not seen before,
    /// with their sessions and their sequences in the line.
    pub fn add(&mut self, position: u64, candidates: Vec<Candidate>) -> Vec<Event> {
        let mut events = Vec::with_capacity(candidates.len());
        for (n, Candidate { mut event, once, conversation }) in candidates.into_iter().enumerate() {
            event.stream_seq = sequence_in_line(position, n as u64);
            let trace = event.trace_id.clone().unwrap_or_default();
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
            event.session = session;
            events.push(event);
        }
        events
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

    fn events(assembler: &mut Assembler, batch: serde_json::Value) -> Vec<Event> {
        let candidates = spans_from_json(&batch).unwrap().iter().flat_map(span_events).collect();
        assembler.add(1, candidates)
    }

    #[test]
    fn a_repeated_history_yields_each_message_once() {
        let t = "0af7651916cd43dd8448eb211c80319c";
        let mut a = Assembler::default();
        let first = events(&mut a, chat(t, "00f067aa0ba902b7", Some("conv-1"), &["hi"], "hello"));
        let second = events(&mut a, chat(t, "00f067aa0ba902b8", None, &["hi", "hi"], "bye"));
        let texts = |e: &[Event]| e.iter().map(|e| (e.event_type.clone(), e.content.clone().unwrap_or_default())).collect::<Vec<_>>();
        assert_eq!(texts(&first), [("msg.in".into(), "hi".into()), ("msg.out".into(), "hello".into())]);
        // The same "hi" a second time is a new message; the first is not.
        assert_eq!(texts(&second), [("msg.in".into(), "hi".into()), ("msg.out".into(), "bye".into())]);
        assert!(first.iter().chain(&second).all(|e| e.session == "conv-1"), "the trace keeps the session its first span named");
        let other = events(&mut a, chat("1af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b9", None, &["hi"], "hello"));
        assert_eq!(other.len(), 2, "another trace is another session");
        assert_eq!(other[0].session, "1af7651916cd43dd8448eb211c80319c");
    }
}
