//! Findings: what a detector reports, as rows of the `findings` table.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit, TimestampMillisecondType};
use sha2::{Digest, Sha256};

use super::severity::{Severity, UnknownSeverity};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    pub finding_id: String,
    pub run_id: String,
    pub signal: String,
    pub severity: Severity,
    pub chain_id: String,
    pub agent: String,
    pub session: String,
    pub start_idx: i64,
    pub end_idx: i64,
    pub start_event_id: String,
    pub end_event_id: String,
    pub occurred_at: i64,
    pub detected_at: i64,
    pub summary: String,
    /// JSON text.
    pub evidence: String,
    pub fingerprint: Option<String>,
}

/// Columns of `findings`.
pub static FINDINGS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("finding_id"),
        text("run_id"),
        text("signal"),
        text("severity"),
        text("chain_id"),
        text("agent"),
        text("session"),
        Field::new("start_idx", DataType::Int64, false),
        Field::new("end_idx", DataType::Int64, false),
        text("start_event_id"),
        text("end_event_id"),
        Field::new("occurred_at", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), false),
        Field::new("detected_at", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), false),
        text("summary"),
        text("evidence"),
        Field::new("fingerprint", DataType::Utf8, true),
    ]))
});

/// The same finding gets the same id in every run: signal, place and events.
pub fn finding_id(signal: &str, agent: &str, session: &str, start_event_id: &str, end_event_id: &str) -> String {
    let digest = Sha256::digest(format!("{signal}|{agent}|{session}|{start_event_id}|{end_event_id}"));
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The columns a detector must yield.
pub const DETECTOR_COLUMNS: [&str; 13] = [
    "signal",
    "severity",
    "chain_id",
    "agent",
    "session",
    "start_idx",
    "end_idx",
    "start_event_id",
    "end_event_id",
    "occurred_at",
    "summary",
    "evidence",
    "fingerprint",
];

/// Why a detector's result does not read as findings.
#[derive(Debug, thiserror::Error)]
pub enum FindingRowError {
    #[error("its result has no column `{0}` (a detector yields {columns})", columns = DETECTOR_COLUMNS.join(", "))]
    MissingColumn(&'static str),
    #[error("column `{name}`: {source}")]
    Column {
        name: &'static str,
        #[source]
        source: datafusion::arrow::error::ArrowError,
    },
    #[error(transparent)]
    Severity(#[from] UnknownSeverity),
}

/// Reads a detector's result batch into findings (ids and times filled in by the caller).
pub fn from_detector_batch(batch: &RecordBatch) -> Result<Vec<Finding>, FindingRowError> {
    let cast_to = |name: &'static str, to: &DataType| -> Result<ArrayRef, FindingRowError> {
        let column = batch.column_by_name(name).ok_or(FindingRowError::MissingColumn(name))?;
        cast(column, to).map_err(|source| FindingRowError::Column { name, source })
    };
    let occurred = cast_to("occurred_at", &DataType::Timestamp(TimeUnit::Millisecond, None))?;
    let occurred = occurred.as_primitive::<TimestampMillisecondType>();
    let texts: Vec<ArrayRef> =
        ["signal", "severity", "chain_id", "agent", "session", "start_event_id", "end_event_id", "summary", "evidence", "fingerprint"]
            .into_iter()
            .map(|n| cast_to(n, &DataType::Utf8))
            .collect::<Result<_, _>>()?;
    let t: Vec<&StringArray> = texts.iter().map(AsArray::as_string::<i32>).collect();
    let (start, end) = (cast_to("start_idx", &DataType::Int64)?, cast_to("end_idx", &DataType::Int64)?);
    let (start, end) = (start.as_primitive::<Int64Type>(), end.as_primitive::<Int64Type>());
    let get = |a: &StringArray, i: usize| {
        if a.is_null(i) { String::new() } else { a.value(i).to_owned() }
    };
    (0..batch.num_rows())
        .map(|i| {
            let severity = get(t[1], i).parse::<Severity>()?;
            Ok(Finding {
                finding_id: String::new(),
                run_id: String::new(),
                signal: get(t[0], i),
                severity,
                chain_id: get(t[2], i),
                agent: get(t[3], i),
                session: get(t[4], i),
                start_idx: start.value(i),
                end_idx: end.value(i),
                start_event_id: get(t[5], i),
                end_event_id: get(t[6], i),
                occurred_at: if occurred.is_null(i) { 0 } else { occurred.value(i) },
                detected_at: 0,
                summary: get(t[7], i),
                evidence: if t[8].is_null(i) { "{}".into() } else { t[8].value(i).to_owned() },
                fingerprint: (!t[9].is_null(i)).then(|| t[9].value(i).to_owned()),
            })
        })
        .collect()
}

/// Findings as a batch of the `findings` table.
pub fn findings_batch(findings: &[Finding]) -> Result<RecordBatch, datafusion::arrow::error::ArrowError> {
    let text = |f: &dyn Fn(&Finding) -> Option<&str>| -> ArrayRef { Arc::new(findings.iter().map(f).collect::<StringArray>()) };
    let int = |f: &dyn Fn(&Finding) -> i64| -> ArrayRef { Arc::new(Int64Array::from_iter_values(findings.iter().map(f))) };
    let time = |f: &dyn Fn(&Finding) -> i64| -> ArrayRef {
        Arc::new(TimestampMillisecondArray::from_iter_values(findings.iter().map(f)).with_timezone("UTC"))
    };
    RecordBatch::try_new(
        FINDINGS_SCHEMA.clone(),
        vec![
            text(&|f| Some(&f.finding_id)),
            text(&|f| Some(&f.run_id)),
            text(&|f| Some(&f.signal)),
            text(&|f| Some(f.severity.as_str())),
            text(&|f| Some(&f.chain_id)),
            text(&|f| Some(&f.agent)),
            text(&|f| Some(&f.session)),
            int(&|f| f.start_idx),
            int(&|f| f.end_idx),
            text(&|f| Some(&f.start_event_id)),
            text(&|f| Some(&f.end_event_id)),
            time(&|f| f.occurred_at),
            time(&|f| f.detected_at),
            text(&|f| Some(&f.summary)),
            text(&|f| Some(&f.evidence)),
            text(&|f| f.fingerprint.as_deref()),
        ],
    )
}
