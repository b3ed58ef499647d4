//! Rendering a session plan as raw JSONL events in schema A, A with the v1 envelope, B, or both.

use rand::Rng;
use serde_json::{Value, json};

use super::scenario::{Publish, SessionPlan, Step};

/// One rendered event line.
#[derive(Debug, Clone)]
pub struct Line {
    pub ts: i64,
    pub event_type: String,
    pub schema: &'static str,
    pub json: String,
}

/// A canonical event before it is given a schema.
struct Canonical {
    ts: i64,
    kind: &'static str,
    payload: Value,
    /// Schema B's shape of the same event, when schema B has one.
    b: Option<(&'static str, Value)>,
}

pub fn render(rng: &mut impl Rng, plan: &SessionPlan) -> Vec<Line> {
    let session = uuid(rng);
    let run_id = format!("run-{}", hex(rng, 8));
    let mut clock = plan.start_ms;
    let mut events = Vec::new();
    let mut tick = |rng: &mut dyn rand::RngCore| {
        clock += rng.random_range(2_000..7_000);
        clock
    };
    if plan.framed {
        events.push(Canonical { ts: tick(rng), kind: "session.start", payload: json!({"sessionId": session}), b: None });
    }
    for step in &plan.steps {
        match step {
            Step::User(text) => {
                let ts = tick(rng);
                events.push(Canonical {
                ts,
                kind: "msg.in",
                payload: json!({"from": "matrix:@user:example.org", "content": text, "channel": "matrix", "timestamp": ts}),
                b: Some(("conversation.message.in", json!({"role": "user", "text_preview": [{"type": "text", "text": text}], "content_length": text.len(), "sessionId": session}))),
                });
            }
            Step::Agent(text) => events.push(Canonical {
                ts: tick(rng),
                kind: "msg.out",
                payload: json!({"to": "room:!abc:example.org", "content": text, "success": true, "channel": "matrix"}),
                b: Some(("conversation.message.out", json!({"role": "assistant", "text_preview": [{"type": "text", "text": text}], "content_length": text.len(), "sessionId": session}))),
            }),
            Step::ToolOk { name, params, result } => {
                let call_id = format!("call_{}", hex(rng, 6));
                events.push(tool_call(tick(rng), name, params, &call_id, &run_id));
                let duration = rng.random_range(5..900);
                events.push(Canonical {
                    ts: tick(rng),
                    kind: "tool.result",
                    payload: json!({"toolName": name, "params": params, "result": result, "durationMs": duration}),
                    b: Some(("conversation.tool_result", json!({"runId": run_id, "stream": "tool", "data": {"phase": "result", "name": name, "toolCallId": call_id, "meta": name, "isError": false, "result": {"content": [{"type": "text", "text": result.to_string()}], "details": {}}}}))),
                });
            }
            Step::ToolFail { name, params, error } => {
                let call_id = format!("call_{}", hex(rng, 6));
                events.push(tool_call(tick(rng), name, params, &call_id, &run_id));
                events.push(Canonical {
                    ts: tick(rng),
                    kind: "tool.result",
                    payload: json!({"toolName": name, "params": params, "error": error, "durationMs": 12}),
                    b: Some(("conversation.tool_result", json!({"runId": run_id, "stream": "tool", "data": {"phase": "result", "name": name, "toolCallId": call_id, "meta": name, "isError": true, "result": {"content": [{"type": "text", "text": error}], "details": {"status": "error"}}}}))),
                });
            }
            Step::Lifecycle(kind) => {
                let (payload, b) = lifecycle(kind, &session, &run_id);
                events.push(Canonical { ts: tick(rng), kind, payload, b });
            }
        }
    }
    if plan.framed {
        let count = plan.steps.iter().filter(|s| matches!(s, Step::User(_) | Step::Agent(_))).count();
        events.push(Canonical {
            ts: tick(rng),
            kind: "session.end",
            payload: json!({"sessionId": session, "messageCount": count}),
            b: None,
        });
    }

    let mut lines = Vec::new();
    let mut seq = 0u64;
    for event in events {
        let a = matches!(plan.publish, Publish::A | Publish::AEnvelope | Publish::Both);
        let b = matches!(plan.publish, Publish::B | Publish::Both);
        if a {
            let mut raw = json!({"id": uuid(rng), "ts": event.ts, "agent": plan.agent, "session": session, "type": event.kind, "payload": event.payload});
            if plan.publish == Publish::AEnvelope {
                add_envelope(rng, &mut raw, &session, &run_id);
            }
            lines.push(Line { ts: event.ts, event_type: event.kind.into(), schema: "A", json: raw.to_string() });
        }
        if b && let Some((b_type, b_payload)) = event.b {
            seq += 1;
            // The second publisher sees messages and tool events a little later, sometimes in
            // the next second; lifecycle events carry the same time (that is how they pair up).
            let jitter = if event.kind.starts_with("msg.") || event.kind.starts_with("tool.") { rng.random_range(20..950) } else { 0 };
            let ts = event.ts + jitter;
            let id = format!("{}-{}", to_base36(ts as u64), hex(rng, 4));
            let raw = json!({"id": id, "timestamp": ts, "agent": plan.agent, "session": format!("agent:{}:{session}", plan.agent), "type": b_type, "visibility": "internal", "payload": b_payload, "meta": {"source": "session-sync", "runId": run_id, "seq": seq, "stream": "conversation"}});
            lines.push(Line { ts, event_type: b_type.into(), schema: "B", json: raw.to_string() });
        }
    }
    lines
}

fn tool_call(ts: i64, name: &str, params: &Value, call_id: &str, run_id: &str) -> Canonical {
    Canonical {
        ts,
        kind: "tool.call",
        payload: json!({"toolName": name, "params": params}),
        b: Some((
            "conversation.tool_call",
            json!({"runId": run_id, "stream": "tool", "data": {"phase": "start", "name": name, "toolCallId": call_id, "args": params}, "seq": 1}),
        )),
    }
}

fn lifecycle(kind: &str, session_id: &str, run_id: &str) -> (Value, Option<(&'static str, Value)>) {
    match kind {
        "run.start" => (json!({"prompt": "(system) be helpful"}), Some(("lifecycle.start", json!({"runId": run_id})))),
        "run.end" => (
            json!({"success": true, "durationMs": 4200, "messageCount": 4}),
            Some(("lifecycle.end", json!({"runId": run_id, "durationMs": 4200}))),
        ),
        "llm.input" => (
            json!({"runId": run_id, "sessionId": session_id, "provider": "anthropic", "model": "claude-sonnet-4", "prompt": "summarize"}),
            None,
        ),
        "llm.output" => (
            json!({"runId": run_id, "sessionId": session_id, "provider": "anthropic", "model": "claude-sonnet-4", "assistantTexts": ["Let me check."], "usage": {"input": 1200, "output": 85, "cacheRead": 900, "cacheWrite": 0, "total": 1285}}),
            None,
        ),
        _ => (json!({"sessionId": session_id}), None),
    }
}

fn add_envelope(rng: &mut impl Rng, raw: &mut Value, session: &str, run_id: &str) {
    let legacy = raw["type"].as_str().unwrap_or_default().to_owned();
    let obj = raw.as_object_mut().expect("event object");
    obj.insert("id".into(), json!(format!("evt-{}", hex(rng, 8))));
    obj.insert("schemaVersion".into(), json!(1));
    obj.insert("canonicalType".into(), json!(legacy.replace('.', "_")));
    obj.insert("legacyType".into(), json!(legacy));
    obj.insert("source".into(), json!("openclaw-nats-eventstore"));
    obj.insert("scope".into(), json!({"sessionKey": session, "sessionId": session, "runId": run_id}));
    obj.insert("trace".into(), json!({"traceId": hex(rng, 16), "spanId": hex(rng, 8), "parentSpanId": hex(rng, 8)}));
}

fn hex(rng: &mut impl Rng, bytes: usize) -> String {
    (0..bytes).map(|_| format!("{:02x}", rng.random::<u8>())).collect()
}

fn uuid(rng: &mut impl Rng) -> String {
    let h = hex(rng, 16);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

fn to_base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}
