//! Arrow schemas of the lake's tables and conversion of rows into record batches (those
//! of `events` and `findings` are the model's, next to their types).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, StringArray, TimestampMillisecondArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::error::ArrowError;

use super::layout::Table;
use super::risk::SessionRisk;
use crate::ingest::QuarantinedLine;
use crate::ingest::outcomes::Outcome;
use crate::model::event::EVENTS_SCHEMA;
use crate::model::finding::FINDINGS_SCHEMA;

/// The hive partition column of every table: `YYYY-MM-DD`.
pub const PARTITION_COLUMN: &str = "date";

fn ts_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// Columns of `quarantine`.
pub static QUARANTINE_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("source", DataType::Utf8, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("reason", DataType::Utf8, false),
        Field::new("detail", DataType::Utf8, false),
        Field::new("raw", DataType::Utf8, false),
        Field::new("raw_bytes", DataType::UInt64, false),
        Field::new("quarantined_at", ts_type(), false),
    ]))
});

/// Columns of `failures`: the first occurrence of each failure fingerprint per session.
pub static FAILURES_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        text("fingerprint"),
        text("session"),
        text("agent"),
        Field::new("first_ts", ts_type(), true),
        text("chain_id"),
        Field::new("start_idx", DataType::Int64, true),
        text("start_event_id"),
        text("end_event_id"),
        text("tool_name"),
        text("error"),
    ]))
});

/// Columns of `classifications`: what the LLM said about each finding of a run.
pub static CLASSIFICATIONS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        Field::new("finding_id", DataType::Utf8, false),
        Field::new("run_id", DataType::Utf8, false),
        text("signal"),
        text("triage_model"),
        Field::new("triage_keep", DataType::Boolean, true),
        text("triage_severity"),
        text("triage_reason"),
        text("model"),
        text("root_cause"),
        text("action_type"),
        text("action_text"),
        Field::new("confidence", DataType::Float64, true),
        text("error"),
        Field::new("classified_at", ts_type(), false),
    ]))
});

/// Columns of `outputs`: the artifacts each run generated.
pub static OUTPUTS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("output_id"),
        text("run_id"),
        text("type"),
        text("content"),
        text("signal"),
        text("agents"),
        text("source_findings"),
        Field::new("observation_count", DataType::Int64, false),
        Field::new("confidence", DataType::Float64, false),
        Field::new("created_at", ts_type(), false),
    ]))
});

/// Columns of `outcomes`: what is known of how sessions went (imported).
pub static OUTCOMES_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("session", DataType::Utf8, false),
        Field::new("outcome", DataType::Utf8, false),
        Field::new("score", DataType::Float64, true),
        Field::new("source", DataType::Utf8, false),
        Field::new("imported_at", ts_type(), false),
    ]))
});

/// Columns of `session_risk`: each session's risk of failure, from the latest fit of
/// `tracelake risk`.
pub static SESSION_RISK_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("session", DataType::Utf8, false),
        Field::new("risk", DataType::Float64, false),
        Field::new("failed", DataType::Boolean, true),
        Field::new("flagged", DataType::Boolean, false),
        Field::new("outcomes", DataType::Utf8, false),
        Field::new("fitted_at", ts_type(), false),
    ]))
});

/// Columns of `cortex_messages`: the messages in which a cortex pattern found something
/// (sql/outputs/cortex_messages.sql).
pub static CORTEX_MESSAGES_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let text = |name: &str| Field::new(name, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        text("agent"),
        text("session"),
        text("event_id"),
        Field::new("ts", ts_type(), true),
        Field::new("stream_seq", DataType::UInt64, true),
        text("who"),
        text("content"),
        text("decision"),
        text("waiting_for"),
        text("topic"),
        Field::new("closes", DataType::Boolean, true),
        text("mood"),
    ]))
});

/// The columns of `table` as stored in its files.
pub fn file_schema(table: Table) -> SchemaRef {
    match table {
        Table::Events => EVENTS_SCHEMA.clone(),
        Table::Quarantine => QUARANTINE_SCHEMA.clone(),
        Table::Findings => FINDINGS_SCHEMA.clone(),
        Table::Failures => FAILURES_SCHEMA.clone(),
        Table::Classifications => CLASSIFICATIONS_SCHEMA.clone(),
        Table::Outputs => OUTPUTS_SCHEMA.clone(),
        Table::Outcomes => OUTCOMES_SCHEMA.clone(),
        Table::SessionRisk => SESSION_RISK_SCHEMA.clone(),
        Table::CortexMessages => CORTEX_MESSAGES_SCHEMA.clone(),
    }
}

/// Outcomes imported at `imported_at` (ms) as one record batch.
pub fn outcomes_batch(outcomes: &[Outcome], imported_at: i64) -> Result<RecordBatch, ArrowError> {
    let text = |f: &dyn Fn(&Outcome) -> &str| -> ArrayRef { Arc::new(outcomes.iter().map(|o| Some(f(o))).collect::<StringArray>()) };
    RecordBatch::try_new(
        OUTCOMES_SCHEMA.clone(),
        vec![
            text(&|o| &o.session),
            text(&|o| o.outcome()),
            Arc::new(outcomes.iter().map(|o| o.score).collect::<Float64Array>()),
            text(&|o| &o.source),
            Arc::new(TimestampMillisecondArray::from_iter_values(outcomes.iter().map(|_| imported_at)).with_timezone("UTC")),
        ],
    )
}

/// Session risks fitted against `outcomes` at `fitted_at` (ms) as one record batch.
pub fn session_risk_batch(risks: &[SessionRisk], outcomes: &str, fitted_at: i64) -> Result<RecordBatch, ArrowError> {
    RecordBatch::try_new(
        SESSION_RISK_SCHEMA.clone(),
        vec![
            Arc::new(risks.iter().map(|r| Some(r.session.as_str())).collect::<StringArray>()),
            Arc::new(risks.iter().map(|r| r.risk).collect::<Float64Array>()),
            Arc::new(risks.iter().map(|r| r.failed).collect::<BooleanArray>()),
            Arc::new(risks.iter().map(|r| Some(r.flagged)).collect::<BooleanArray>()),
            Arc::new(StringArray::from_iter_values(risks.iter().map(|_| outcomes))),
            Arc::new(TimestampMillisecondArray::from_iter_values(risks.iter().map(|_| fitted_at)).with_timezone("UTC")),
        ],
    )
}

/// Quarantined lines as one record batch.
pub fn quarantine_batch(lines: &[QuarantinedLine]) -> Result<RecordBatch, ArrowError> {
    let text = |f: &dyn Fn(&QuarantinedLine) -> &str| -> ArrayRef { Arc::new(lines.iter().map(|l| Some(f(l))).collect::<StringArray>()) };
    RecordBatch::try_new(
        QUARANTINE_SCHEMA.clone(),
        vec![
            text(&|l| &l.source),
            Arc::new(UInt64Array::from_iter_values(lines.iter().map(|l| l.position))),
            text(&|l| l.reason.as_str()),
            text(&|l| &l.detail),
            text(&|l| &l.raw),
            Arc::new(UInt64Array::from_iter_values(lines.iter().map(|l| l.raw_bytes))),
            Arc::new(TimestampMillisecondArray::from_iter_values(lines.iter().map(|l| l.quarantined_at)).with_timezone("UTC")),
        ],
    )
}
