//! The last stage of an analysis that changes the lake: its tables' files written, then
//! one commit that names them with the run's record and the processing state it leaves.

use std::collections::HashMap;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;

use super::detection::{CLASSIFICATIONS_PART, FAILURES_PART, OUTPUTS_PART, RunFiles, store_findings};
use super::plan::Planned;
use super::{AnalyzeOptions, PipelineError};
use crate::classify::FindingVerdict;
use crate::classify::stage::classifications_batch;
use crate::engine::chains::ChainStats;
use crate::lake::commit::commit;
use crate::lake::layout::part_file_name;
use crate::lake::parquet_files::{copy_atomic, write_parquet_atomic};
use crate::lake::schema::{CLASSIFICATIONS_SCHEMA, OUTPUTS_SCHEMA};
use crate::lake::state::{AnalysisRecord, ProcessingState};
use crate::lake::{Lake, LakeError, Table};
use crate::model::Finding;
use crate::output::GeneratedOutput;
use crate::output::table::outputs_batch;
use crate::report::analysis::FindingCounts;

/// What an analysis hands to the lake.
pub struct RunResults<'a> {
    /// The findings the report lists, as the LLM left them (triage drops false positives).
    pub findings: &'a [Finding],
    /// The signal of each finding as detected, those triage dropped included.
    pub signals: &'a HashMap<String, String>,
    /// The findings written before (those not listed), counted.
    pub counts: &'a mut FindingCounts,
    pub stats: ChainStats,
    pub newest_event_ms: Option<i64>,
    pub verdicts: &'a [FindingVerdict],
    pub outputs: &'a [GeneratedOutput],
}

/// What the commit left.
pub struct Committed {
    pub processing_state: ProcessingState,
    /// Earlier runs a full run replaced.
    pub replaced_runs: usize,
}

pub fn write_and_commit(
    lake: &Lake,
    opts: &AnalyzeOptions,
    planned: &Planned,
    files: RunFiles,
    results: RunResults<'_>,
) -> Result<Committed, PipelineError> {
    store_findings(results.findings, results.counts, &files.findings)?;
    let processing_state = processing_state(opts, planned, &results);
    let (run_id, detected_at) = (&planned.run_id, planned.detected_at);
    let classifications = classifications_batch(results.verdicts, results.signals, run_id, detected_at)?;
    let outputs = outputs_batch(results.outputs, run_id, detected_at)?;
    let table_file = |table: Table, part: usize, schema: SchemaRef, batch: RecordBatch| -> Result<Option<String>, LakeError> {
        if batch.num_rows() == 0 {
            return Ok(None);
        }
        let dir = lake.partition_dir(table, &files.date);
        write_parquet_atomic(&dir, &part_file_name(&files.writer, part), schema, std::iter::once(Ok(batch)))
            .map(|file| Some(lake.relative(&file.path)))
    };
    let failures_dir = lake.partition_dir(Table::Failures, &files.date);
    let written = [
        files
            .failures
            .map(|f| copy_atomic(&f, &failures_dir, &part_file_name(&files.writer, FAILURES_PART)).map(|f| lake.relative(&f.path)))
            .transpose(),
        table_file(Table::Classifications, CLASSIFICATIONS_PART, CLASSIFICATIONS_SCHEMA.clone(), classifications),
        table_file(Table::Outputs, OUTPUTS_PART, OUTPUTS_SCHEMA.clone(), outputs),
        files.findings.finish().map(|file| file.map(|f| lake.relative(&f.path))),
        files.cortex.finish().map(|file| file.map(|f| lake.relative(&f.path))),
    ];
    let record = AnalysisRecord {
        run_id: run_id.clone(),
        finished_at: chrono::Utc::now().to_rfc3339(),
        findings: results.counts.total() as u64,
        files: written.into_iter().filter_map(Result::transpose).collect::<Result<_, _>>()?,
        state_after: Some(ProcessingState { analyzed_event_files: None, ..processing_state.clone() }),
        ..AnalysisRecord::default()
    };
    let replaced_runs = commit::<_, LakeError>(lake, |manifest| {
        // Analyses of a lake on object storage do not exclude each other.
        if manifest.processing_state != planned.committed.processing_state {
            return Err(LakeError::Concurrent { lake: lake.location(), run: "analyze" });
        }
        let revision = manifest.revision + 1;
        let replaced_runs = if opts.full { manifest.replace_analyses(revision) } else { 0 };
        manifest.analyses.push(AnalysisRecord { revision, ..record.clone() });
        manifest.processing_state = processing_state.clone();
        Ok(replaced_runs)
    })?;
    Ok(Committed { processing_state, replaced_runs })
}

/// The processing state after this run: the totals grown by it (a full run starts them
/// afresh), and where the next run resumes.
fn processing_state(opts: &AnalyzeOptions, planned: &Planned, results: &RunResults<'_>) -> ProcessingState {
    let earlier = if opts.full { ProcessingState::default() } else { planned.committed.processing_state.clone() };
    let stats = &results.stats;
    let last_in_chains = if stats.chains == 0 { 0 } else { stats.last };
    ProcessingState {
        // The newest event read, also one alone in its chain: the cortex read it, and a
        // later run must not read it again.
        last_processed_ts: last_in_chains.max(results.newest_event_ms.unwrap_or(0)).max(earlier.last_processed_ts),
        last_processed_seq: 0,
        total_events_processed: earlier.total_events_processed + stats.events,
        total_findings: earlier.total_findings + results.counts.total() as u64,
        updated_at: chrono::Utc::now().to_rfc3339(),
        // A window (`--since`) leaves the files outside it to the next incremental run.
        analyzed_event_files: if opts.since_ms.is_some() && !opts.full {
            earlier.analyzed_event_files.clone()
        } else {
            Some(planned.event_files.clone())
        },
    }
}
