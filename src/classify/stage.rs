//! Classification as a stage of an analysis run: the chains of the findings read from the
//! session, triage verdicts applied to the findings, verdicts as `classifications` rows.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::SessionContext;

use super::classifier::{FindingVerdict, TranscriptEvent};
use crate::lake::schema::CLASSIFICATIONS_SCHEMA;
use crate::model::Finding;

/// The events of the chains of `findings` (by chain id), in chain order, with tool results.
pub async fn chain_transcripts(
    ctx: &SessionContext,
    findings: &[Finding],
) -> Result<HashMap<String, Vec<TranscriptEvent>>, datafusion::error::DataFusionError> {
    let chain_ids: Vec<&str> = findings.iter().map(|f| f.chain_id.as_str()).collect();
    let Some(list) = sql_list(&chain_ids) else {
        return Ok(HashMap::new());
    };
    let sql = format!(
        "SELECT c.chain_id AS key, c.ts_ms, c.type, c.content, c.tool_name, c.tool_params, c.tool_error, r.tool_result \
         FROM chain_events c \
         LEFT JOIN (SELECT id, stream_seq, tool_result FROM analysis_events WHERE type = 'tool.result') r \
           ON c.type = 'tool.result' AND r.id = c.id AND r.stream_seq = c.stream_seq \
         WHERE c.chain_id IN ({list}) ORDER BY c.chain_id, c.idx"
    );
    transcripts(ctx, &sql).await
}

/// The first `max_events` events of each of `sessions` (by session), in time order.
pub async fn session_transcripts(
    ctx: &SessionContext,
    sessions: &[&str],
    max_events: usize,
) -> Result<HashMap<String, Vec<TranscriptEvent>>, datafusion::error::DataFusionError> {
    let Some(list) = sql_list(sessions) else {
        return Ok(HashMap::new());
    };
    let sql = format!(
        "SELECT key, ts_ms, type, content, tool_name, tool_params, tool_error, tool_result FROM \
         (SELECT session AS key, CAST(ts AS BIGINT) AS ts_ms, type, content, tool_name, tool_params, tool_error, tool_result, \
            row_number() OVER (PARTITION BY session ORDER BY ts, stream_seq) AS n \
          FROM events WHERE session IN ({list})) \
         WHERE n <= {max_events} ORDER BY key, n"
    );
    transcripts(ctx, &sql).await
}

/// `'a', 'b'`: the distinct `values` as a SQL list, `None` when there are none.
fn sql_list(values: &[&str]) -> Option<String> {
    let mut values = values.to_vec();
    values.sort_unstable();
    values.dedup();
    let quoted: Vec<String> = values.iter().map(|v| crate::engine::sql::string_literal(v)).collect();
    (!quoted.is_empty()).then(|| quoted.join(", "))
}

/// The rows of `sql` (`key`, `ts_ms`, then the event's columns) as transcripts by key.
async fn transcripts(ctx: &SessionContext, sql: &str) -> Result<HashMap<String, Vec<TranscriptEvent>>, datafusion::error::DataFusionError> {
    let mut by_key: HashMap<String, Vec<TranscriptEvent>> = HashMap::new();
    for batch in ctx.sql(sql).await?.collect().await? {
        let column = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| datafusion::error::DataFusionError::Internal(format!("a transcript has no {name}")))
        };
        let text: Vec<ArrayRef> = ["key", "type", "content", "tool_name", "tool_params", "tool_error", "tool_result"]
            .iter()
            .map(|name| Ok(cast(column(name)?, &DataType::Utf8)?))
            .collect::<Result<_, datafusion::error::DataFusionError>>()?;
        let t: Vec<&StringArray> = text.iter().map(AsArray::as_string::<i32>).collect();
        let ts = cast(column("ts_ms")?, &DataType::Int64)?;
        let ts = ts.as_primitive::<Int64Type>();
        let opt = |a: &StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_owned());
        for i in 0..batch.num_rows() {
            by_key.entry(t[0].value(i).to_owned()).or_default().push(TranscriptEvent {
                ts_ms: ts.value(i),
                event_type: t[1].value(i).to_owned(),
                content: opt(t[2], i),
                tool_name: opt(t[3], i),
                tool_params: opt(t[4], i),
                tool_error: opt(t[5], i),
                tool_result: opt(t[6], i),
            });
        }
    }
    Ok(by_key)
}

/// Applies triage: severities adjusted, false positives removed from `findings`.
pub fn apply_triage(findings: &mut Vec<Finding>, verdicts: &[FindingVerdict]) {
    let by_id: HashMap<&str, &FindingVerdict> = verdicts.iter().map(|v| (v.finding_id.as_str(), v)).collect();
    findings.retain_mut(|f| match by_id.get(f.finding_id.as_str()).and_then(|v| v.triage.as_ref()) {
        Some(t) if !t.keep => false,
        Some(t) => {
            if let Some(severity) = &t.severity {
                f.severity = *severity;
            }
            true
        }
        None => true,
    });
}

/// Verdicts as rows of `classifications`.
pub fn classifications_batch(
    verdicts: &[FindingVerdict],
    signals: &HashMap<String, String>,
    run_id: &str,
    at_ms: i64,
) -> Result<RecordBatch, datafusion::arrow::error::ArrowError> {
    let text = |f: &dyn Fn(&FindingVerdict) -> Option<String>| -> ArrayRef { Arc::new(verdicts.iter().map(f).collect::<StringArray>()) };
    let triage = |f: &dyn Fn(&super::TriageVerdict) -> Option<String>| text(&|v| v.triage.as_ref().and_then(f));
    let class = |f: &dyn Fn(&super::Classification) -> String| text(&|v| v.classification.as_ref().map(f));
    RecordBatch::try_new(
        CLASSIFICATIONS_SCHEMA.clone(),
        vec![
            text(&|v| Some(v.finding_id.clone())),
            text(&|_| Some(run_id.to_owned())),
            text(&|v| signals.get(&v.finding_id).cloned()),
            triage(&|t| Some(t.model.clone())),
            Arc::new(verdicts.iter().map(|v| v.triage.as_ref().map(|t| t.keep)).collect::<BooleanArray>()),
            triage(&|t| t.severity.map(|s| s.as_str().to_owned())),
            triage(&|t| Some(t.reason.clone())),
            class(&|c| c.model.clone()),
            class(&|c| c.root_cause.clone()),
            class(&|c| c.action_type.as_str().to_owned()),
            class(&|c| c.action_text.clone()),
            Arc::new(verdicts.iter().map(|v| v.classification.as_ref().map(|c| c.confidence)).collect::<Float64Array>()),
            text(&|v| v.error.clone()),
            Arc::new(TimestampMillisecondArray::from_iter_values(verdicts.iter().map(|_| at_ms)).with_timezone("UTC")),
        ],
    )
}
