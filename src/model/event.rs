//! The normalized event: one row of the `events` table, and that table's columns.

use std::borrow::Cow;

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
///
/// Its texts borrow from the input where they are passed on unchanged (`Event<'static>`
/// owns them all): decoding a line allocates only what it has to build.
#[derive(Debug, Clone, PartialEq)]
pub struct Event<'a> {
    pub stream_seq: u64,
    pub id: Cow<'a, str>,
    /// Milliseconds since the Unix epoch, UTC.
    pub ts: i64,
    pub agent: Cow<'a, str>,
    pub session: Cow<'a, str>,
    /// Canonical type (`msg.in`, `tool.result`, …), or the raw type when it is unknown.
    pub event_type: Cow<'a, str>,
    /// The type exactly as published (`conversation.tool_call`, `msg.in`, …).
    pub raw_type: Cow<'a, str>,
    pub schema: Schema,
    pub content: Option<Cow<'a, str>>,
    pub role: Option<Cow<'a, str>>,
    pub from: Option<Cow<'a, str>>,
    pub to: Option<Cow<'a, str>>,
    pub channel: Option<Cow<'a, str>>,
    pub success: Option<bool>,
    pub tool_name: Option<Cow<'a, str>>,
    /// JSON text.
    pub tool_params: Option<Cow<'a, str>>,
    /// JSON text.
    pub tool_result: Option<Cow<'a, str>>,
    pub tool_error: Option<Cow<'a, str>>,
    pub tool_is_error: Option<bool>,
    pub tool_duration_ms: Option<i64>,
    /// Error text of run.end / run.error / msg.out.
    pub error: Option<Cow<'a, str>>,
    /// Duration of a run or session (run.end, session.end).
    pub duration_ms: Option<i64>,
    pub model: Option<Cow<'a, str>>,
    pub provider: Option<Cow<'a, str>>,
    pub usage_input: Option<i64>,
    pub usage_output: Option<i64>,
    pub usage_cache_read: Option<i64>,
    pub usage_cache_write: Option<i64>,
    pub usage_total: Option<i64>,
    pub run_id: Option<Cow<'a, str>>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub canonical_type: Option<Cow<'a, str>>,
    pub trace_id: Option<Cow<'a, str>>,
    pub span_id: Option<Cow<'a, str>>,
    pub parent_span_id: Option<Cow<'a, str>>,
    pub subject: Option<Cow<'a, str>>,
    /// The original `payload` object as JSON text (redacted).
    pub payload: Cow<'a, str>,
    /// Every other top-level field of the original event (meta, visibility, envelope, …) as
    /// JSON text, so that nothing of the input is lost; `None` when there were none.
    pub extra: Option<Cow<'a, str>>,
}

impl<'a> Event<'a> {
    /// An event with only its identity set: every optional column empty, no payload.
    pub fn new(
        stream_seq: u64,
        id: impl Into<Cow<'a, str>>,
        ts: i64,
        agent: impl Into<Cow<'a, str>>,
        session: impl Into<Cow<'a, str>>,
        event_type: impl Into<Cow<'a, str>>,
        schema: Schema,
    ) -> Self {
        let event_type = event_type.into();
        Self {
            stream_seq,
            id: id.into(),
            ts,
            agent: agent.into(),
            session: session.into(),
            raw_type: event_type.clone(),
            event_type,
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
            payload: Cow::Borrowed("null"),
            extra: None,
        }
    }

    /// Sets the type, as published and canonical alike (sources whose types are ours).
    pub fn set_type(&mut self, event_type: &'a str) {
        self.event_type = Cow::Borrowed(event_type);
        self.raw_type = Cow::Borrowed(event_type);
    }

    /// The event owning all its texts, to outlive its input.
    pub fn into_owned(self) -> Event<'static> {
        fn own(text: Cow<str>) -> Cow<'static, str> {
            Cow::Owned(text.into_owned())
        }
        fn own_some(text: Option<Cow<str>>) -> Option<Cow<'static, str>> {
            text.map(own)
        }
        Event {
            stream_seq: self.stream_seq,
            id: own(self.id),
            ts: self.ts,
            agent: own(self.agent),
            session: own(self.session),
            event_type: own(self.event_type),
            raw_type: own(self.raw_type),
            schema: self.schema,
            content: own_some(self.content),
            role: own_some(self.role),
            from: own_some(self.from),
            to: own_some(self.to),
            channel: own_some(self.channel),
            success: self.success,
            tool_name: own_some(self.tool_name),
            tool_params: own_some(self.tool_params),
            tool_result: own_some(self.tool_result),
            tool_error: own_some(self.tool_error),
            tool_is_error: self.tool_is_error,
            tool_duration_ms: self.tool_duration_ms,
            error: own_some(self.error),
            duration_ms: self.duration_ms,
            model: own_some(self.model),
            provider: own_some(self.provider),
            usage_input: self.usage_input,
            usage_output: self.usage_output,
            usage_cache_read: self.usage_cache_read,
            usage_cache_write: self.usage_cache_write,
            usage_total: self.usage_total,
            run_id: own_some(self.run_id),
            tool_call_id: own_some(self.tool_call_id),
            canonical_type: own_some(self.canonical_type),
            trace_id: own_some(self.trace_id),
            span_id: own_some(self.span_id),
            parent_span_id: own_some(self.parent_span_id),
            subject: own_some(self.subject),
            payload: own(self.payload),
            extra: own_some(self.extra),
        }
    }

    /// A rough in-memory size, used to bound write buffers.
    pub fn approx_bytes(&self) -> usize {
        fn s(o: &Option<Cow<str>>) -> usize {
            o.as_deref().map_or(0, str::len)
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
