//! The normalized event: one row of the `events` table, and that table's columns.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringBuilder, TimestampMillisecondArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, TimeUnit};
use datafusion::arrow::error::ArrowError;

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

/// Columns of `events` as stored in each Parquet file (the partition column is in the path).
pub static EVENTS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    let int = |name: &str| Field::new(name, DataType::Int64, true);
    let flag = |name: &str| Field::new(name, DataType::Boolean, true);
    Arc::new(ArrowSchema::new(vec![
        Field::new("stream_seq", DataType::UInt64, false),
        Field::new("id", DataType::Utf8, false),
        Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), false),
        Field::new("agent", DataType::Utf8, false),
        Field::new("session", DataType::Utf8, false),
        Field::new("type", DataType::Utf8, false),
        Field::new("raw_type", DataType::Utf8, false),
        Field::new("schema", DataType::Utf8, false),
        text("content"),
        text("role"),
        text("from"),
        text("to"),
        text("channel"),
        flag("success"),
        text("tool_name"),
        text("tool_params"),
        text("tool_result"),
        text("tool_error"),
        flag("tool_is_error"),
        int("tool_duration_ms"),
        text("error"),
        int("duration_ms"),
        text("model"),
        text("provider"),
        int("usage_input"),
        int("usage_output"),
        int("usage_cache_read"),
        int("usage_cache_write"),
        int("usage_total"),
        text("run_id"),
        text("tool_call_id"),
        text("canonical_type"),
        text("trace_id"),
        text("span_id"),
        text("parent_span_id"),
        text("subject"),
        Field::new("payload", DataType::Utf8, false),
        text("extra"),
    ]))
});

/// Events (already in their final order) as one record batch.
pub fn events_batch(events: &[&Event]) -> Result<RecordBatch, ArrowError> {
    fn text<'a>(events: &[&'a Event], f: impl Fn(&'a Event) -> Option<&'a str>) -> ArrayRef {
        // Sized up front: growing the value buffer while appending would copy it again and again.
        let bytes = events.iter().map(|e| f(e).map_or(0, str::len)).sum();
        let mut builder = StringBuilder::with_capacity(events.len(), bytes);
        for e in events {
            builder.append_option(f(e));
        }
        Arc::new(builder.finish())
    }
    fn int(events: &[&Event], f: impl Fn(&Event) -> Option<i64>) -> ArrayRef {
        Arc::new(events.iter().map(|e| f(e)).collect::<Int64Array>())
    }
    fn flag(events: &[&Event], f: impl Fn(&Event) -> Option<bool>) -> ArrayRef {
        Arc::new(events.iter().map(|e| f(e)).collect::<BooleanArray>())
    }
    let e = events;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(e.iter().map(|e| e.stream_seq))),
        text(e, |e| Some(&e.id)),
        Arc::new(TimestampMillisecondArray::from_iter_values(e.iter().map(|e| e.ts)).with_timezone("UTC")),
        text(e, |e| Some(&e.agent)),
        text(e, |e| Some(&e.session)),
        text(e, |e| Some(&e.event_type)),
        text(e, |e| Some(&e.raw_type)),
        text(e, |e| Some(e.schema.as_str())),
        text(e, |e| e.content.as_deref()),
        text(e, |e| e.role.as_deref()),
        text(e, |e| e.from.as_deref()),
        text(e, |e| e.to.as_deref()),
        text(e, |e| e.channel.as_deref()),
        flag(e, |e| e.success),
        text(e, |e| e.tool_name.as_deref()),
        text(e, |e| e.tool_params.as_deref()),
        text(e, |e| e.tool_result.as_deref()),
        text(e, |e| e.tool_error.as_deref()),
        flag(e, |e| e.tool_is_error),
        int(e, |e| e.tool_duration_ms),
        text(e, |e| e.error.as_deref()),
        int(e, |e| e.duration_ms),
        text(e, |e| e.model.as_deref()),
        text(e, |e| e.provider.as_deref()),
        int(e, |e| e.usage_input),
        int(e, |e| e.usage_output),
        int(e, |e| e.usage_cache_read),
        int(e, |e| e.usage_cache_write),
        int(e, |e| e.usage_total),
        text(e, |e| e.run_id.as_deref()),
        text(e, |e| e.tool_call_id.as_deref()),
        text(e, |e| e.canonical_type.as_deref()),
        text(e, |e| e.trace_id.as_deref()),
        text(e, |e| e.span_id.as_deref()),
        text(e, |e| e.parent_span_id.as_deref()),
        text(e, |e| e.subject.as_deref()),
        text(e, |e| Some(&e.payload)),
        text(e, |e| e.extra.as_deref()),
    ];
    RecordBatch::try_new(EVENTS_SCHEMA.clone(), columns)
}
