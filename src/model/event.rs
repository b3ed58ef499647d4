//! The normalized event: one row of the `events` table, and that table's columns.

pub use super::event_columns::{COLUMN_AGENT, COLUMN_SESSION, COLUMN_STREAM_SEQ, COLUMN_TS, EVENTS_SCHEMA, events_batch};

/// Which publisher shape an event arrived in (spec §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// Hook events of the nats-eventstore plugin (`ts`, `msg.in`, …), with or without the v1 envelope.
    A,
    /// Gateway/session-sync events (`timestamp`, `conversation.*`, `lifecycle.*`).
    B,
    /// OpenTelemetry spans (GenAI conventions, OpenInference, OpenLLMetry).
    Otlp,
    /// OpenAI-style chat transcripts.
    Chat,
}

impl Schema {
    pub fn as_str(self) -> &'static str {
        match self {
            Schema::A => "A",
            Schema::B => "B",
            Schema::Otlp => "otlp",
            Schema::Chat => "chat",
        }
    }
}

/// A normalized event. Field names follow the `events` table contract in DESIGN.md.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub stream_seq: u64,
    pub id: String,
    /// Milliseconds since the Unix epoch, UTC.
    pub ts: i64,
    pub agent: String,
    pub session: String,
    /// Canonical type (`msg.in`, `tool.result`, …), or the raw type when it is unknown.
    pub event_type: String,
    /// The type exactly as published (`conversation.tool_call`, `msg.in`, …).
    pub raw_type: String,
    pub schema: Schema,
    pub content: Option<String>,
    pub role: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub channel: Option<String>,
    pub success: Option<bool>,
    pub tool_name: Option<String>,
    /// JSON text.
    pub tool_params: Option<String>,
    /// JSON text.
    pub tool_result: Option<String>,
    pub tool_error: Option<String>,
    pub tool_is_error: Option<bool>,
    pub tool_duration_ms: Option<i64>,
    /// Error text of run.end / run.error / msg.out.
    pub error: Option<String>,
    /// Duration of a run or session (run.end, session.end).
    pub duration_ms: Option<i64>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub usage_input: Option<i64>,
    pub usage_output: Option<i64>,
    pub usage_cache_read: Option<i64>,
    pub usage_cache_write: Option<i64>,
    pub usage_total: Option<i64>,
    pub run_id: Option<String>,
    pub tool_call_id: Option<String>,
    pub canonical_type: Option<String>,
    pub trace_id: Option<String>,
    pub span_id: Option<String>,
    pub parent_span_id: Option<String>,
    pub subject: Option<String>,
    /// The original `payload` object as JSON text (redacted).
    pub payload: String,
    /// Every other top-level field of the original event (meta, visibility, envelope, …) as
    /// JSON text, so that nothing of the input is lost; `None` when there were none.
    pub extra: Option<String>,
}

impl Event {
    /// An event with only its identity set: every optional column empty, no payload.
    pub fn new(stream_seq: u64, id: String, ts: i64, agent: String, session: String, event_type: &str, schema: Schema) -> Self {
        Self {
            stream_seq,
            id,
            ts,
            agent,
            session,
            event_type: event_type.to_owned(),
            raw_type: event_type.to_owned(),
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
            run_id: None,
            tool_call_id: None,
            canonical_type: None,
            trace_id: None,
            span_id: None,
            parent_span_id: None,
            subject: None,
            payload: "null".to_owned(),
            extra: None,
        }
    }

    /// Sets the type, as published and canonical alike (sources whose types are ours).
    pub fn set_type(&mut self, event_type: &str) {
        event_type.clone_into(&mut self.event_type);
        event_type.clone_into(&mut self.raw_type);
    }

    /// A rough in-memory size, used to bound write buffers.
    pub fn approx_bytes(&self) -> usize {
        fn s(o: &Option<String>) -> usize {
            o.as_ref().map_or(0, String::len)
        }
        256 + self.id.len()
            + self.agent.len()
            + self.session.len()
            + self.event_type.len()
            + self.raw_type.len()
            + s(&self.content)
            + s(&self.from)
            + s(&self.to)
            + s(&self.tool_name)
            + s(&self.tool_params)
            + s(&self.tool_result)
            + s(&self.tool_error)
            + s(&self.error)
            + s(&self.subject)
            + self.payload.len()
            + s(&self.extra)
    }
}
