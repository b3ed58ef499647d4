//! The detection stage: chains and detectors over every bucket of sessions (here or on
//! the workers), then the detectors across sessions. Findings are merged as buckets end:
//! every new finding goes to the run's findings file, the most severe are kept for the
//! report and the LLM; failure occurrences and cortex messages go to their files.

use std::cmp::Reverse;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::datasource::MemTable;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::TryStreamExt;

use super::plan::Planned;
use super::stages::{SharesWork, StageTimes};
use super::{AnalyzeOptions, PipelineError};
use crate::config::Config;
use crate::detect::run::{BucketFindings, SkippedDetectors, severities};
use crate::detect::run_detectors;
use crate::detect::sessions::{AnalysisJob, analyze_by_session};
use crate::engine::EngineError;
use crate::engine::chains::ChainStats;
use crate::lake::layout::{PartitionDate, part_file_name};
use crate::lake::parquet_files::{BatchFileWriter, WrittenFile};
use crate::lake::schema::{CORTEX_MESSAGES_SCHEMA, FAILURES_SCHEMA};
use crate::lake::{Lake, LakeError, Table, WriterId};
use crate::model::Finding;
use crate::model::finding::{FINDINGS_SCHEMA, findings_batch};
use crate::report::analysis::FindingCounts;
use crate::temp_dirs::ProcessTempDir;

/// Findings per batch written to the lake.
const FINDINGS_BATCH_ROWS: usize = 8192;

/// The part numbers of a run's files, one file per table it writes.
pub const FINDINGS_PART: usize = 1;
pub const FAILURES_PART: usize = 2;
pub const CLASSIFICATIONS_PART: usize = 3;
pub const OUTPUTS_PART: usize = 4;
pub const CORTEX_PART: usize = 5;

/// The files an analysis writes as it goes, before its commit.
pub struct RunFiles {
    pub writer: WriterId,
    pub date: PartitionDate,
    /// Every new finding, in the lake's findings partition.
    pub findings: BatchFileWriter,
    /// What the cortex patterns found in the messages no analysis saw before (`fresh`).
    pub cortex: BatchFileWriter,
    /// The failure occurrences, outside the lake's tables (queries see them there only once
    /// committed) for the detectors across sessions to read; the lake gets a copy.
    pub failures: Option<WrittenFile>,
    /// Holds `failures` until the commit has copied it.
    pub _failures_dir: ProcessTempDir,
}

/// What the detectors found.
pub struct Detected {
    /// The most severe new findings (`output.maxFindings`), most severe first; the
    /// others are in the findings file already.
    pub findings: Vec<Finding>,
    /// Every new finding written so far.
    pub counts: FindingCounts,
    /// Findings found again that an earlier run reported.
    pub reported_before: usize,
    pub stats: ChainStats,
    /// The newest event read, also one alone in its chain.
    pub newest_event_ms: Option<i64>,
    pub skipped_detectors: SkippedDetectors,
    /// With workers: the plan they ran, with what each node did.
    pub worker_plan: Option<Arc<dyn ExecutionPlan>>,
    pub files: RunFiles,
}

pub async fn detect(
    lake: &Lake,
    config: &Config,
    opts: &AnalyzeOptions,
    planned: &Planned,
    ctx: &SessionContext,
    writer: WriterId,
    times: &mut StageTimes,
) -> Result<Detected, PipelineError> {
    let date = PartitionDate::from_millis(planned.detected_at);
    let failures_dir = ProcessTempDir::new("failures").map_err(EngineError::from)?;
    let reported = if opts.full { HashSet::new() } else { reported_ids(ctx).await? };
    let mut merged = Merged::start(lake, config, planned, reported, &writer, &date, &failures_dir);
    times.end("plan");
    let params = &planned.engine.sql_params;
    // Chains never cross sessions: the sessions are spread over shares of bounded size,
    // analyzed side by side (here, or on the workers), each with the same plans.
    let workers = planned.engine.workers.len();
    let job = AnalysisJob::new(&planned.per_bucket, severities(config), params, true);
    let stage_began = Instant::now();
    let (found, worker_plan) = analyze_by_session(ctx, workers, opts.bucket_events, job).await?;
    found.map_err(PipelineError::from).try_for_each(|bucket| std::future::ready(merged.add(bucket))).await?;
    times.end(if workers == 0 { "scan to findings" } else { "workers: scan to findings" });
    merged.work.describe(stage_began, workers > 0, times);
    crate::memory::release_freed();
    // The same failure in other sessions: over every bucket's failures at once, read back.
    let Merged { mut kept, findings_file, failures_file, cortex_file, stats, newest_event_ms, skipped_detectors, .. } = merged;
    let failures = failures_file.finish()?;
    register_failure_occurrences(ctx, !planned.engine.workers.is_empty(), failures.as_ref()).await?;
    kept.add(run_detectors(ctx, &planned.across_sessions, config, params).await?.0, &findings_file)?;
    times.end("across sessions");
    let MostSevere { mut findings, counts, reported_before, .. } = kept;
    sort_most_severe_first(&mut findings);
    Ok(Detected {
        findings,
        counts,
        reported_before,
        stats,
        newest_event_ms,
        skipped_detectors,
        worker_plan,
        files: RunFiles { writer, date, findings: findings_file, cortex: cortex_file, failures, _failures_dir: failures_dir },
    })
}

/// The findings earlier runs reported: an incremental run does not report them again.
async fn reported_ids(ctx: &SessionContext) -> Result<HashSet<String>, PipelineError> {
    // Findings triage dropped count as reported: they were looked at.
    let sql = "SELECT finding_id FROM findings UNION SELECT finding_id FROM classifications WHERE triage_keep = false";
    let mut ids = HashSet::new();
    for batch in ctx.sql(sql).await?.collect().await? {
        let column = cast(batch.column(0), &DataType::Utf8)?;
        ids.extend(column.as_string::<i32>().iter().flatten().map(str::to_owned));
    }
    Ok(ids)
}

/// `failure_occurrences`: the failures every bucket wrote, for the detectors across sessions.
async fn register_failure_occurrences(ctx: &SessionContext, on_workers: bool, failures: Option<&WrittenFile>) -> Result<(), PipelineError> {
    ctx.deregister_table("failure_occurrences")?;
    match failures {
        Some(file) if !on_workers => {
            let options = ParquetReadOptions::default().schema(&FAILURES_SCHEMA);
            ctx.register_parquet("failure_occurrences", file.path.to_string_lossy(), options).await?;
        }
        // Workers cannot read this process's temporary file: the rows go with the plan.
        Some(file) => {
            let batches = read_parquet_file(&file.path)?;
            ctx.register_table("failure_occurrences", Arc::new(MemTable::try_new(FAILURES_SCHEMA.clone(), vec![batches])?))?;
        }
        None => {
            ctx.register_table("failure_occurrences", Arc::new(MemTable::try_new(FAILURES_SCHEMA.clone(), vec![Vec::new()])?))?;
        }
    }
    Ok(())
}

/// What the buckets found so far, merged as each ends.
struct Merged {
    kept: MostSevere,
    findings_file: BatchFileWriter,
    failures_file: BatchFileWriter,
    cortex_file: BatchFileWriter,
    stats: ChainStats,
    newest_event_ms: Option<i64>,
    skipped_detectors: SkippedDetectors,
    work: SharesWork,
}

impl Merged {
    /// Nothing merged yet: the run's files started.
    fn start(
        lake: &Lake,
        config: &Config,
        planned: &Planned,
        reported: HashSet<String>,
        writer: &WriterId,
        date: &PartitionDate,
        failures_dir: &ProcessTempDir,
    ) -> Self {
        Merged {
            kept: MostSevere {
                reported,
                max: usize::try_from(config.output.max_findings.max(0)).unwrap_or(usize::MAX),
                run_id: planned.run_id.clone(),
                detected_at: planned.detected_at,
                findings: Vec::new(),
                counts: FindingCounts::default(),
                reported_before: 0,
            },
            findings_file: BatchFileWriter::start(
                lake.partition_dir(Table::Findings, date),
                part_file_name(writer, FINDINGS_PART),
                FINDINGS_SCHEMA.clone(),
            ),
            failures_file: BatchFileWriter::start(failures_dir.path().to_owned(), "failures.parquet".into(), FAILURES_SCHEMA.clone()),
            cortex_file: BatchFileWriter::start(
                lake.partition_dir(Table::CortexMessages, date),
                part_file_name(writer, CORTEX_PART),
                CORTEX_MESSAGES_SCHEMA.clone(),
            ),
            stats: ChainStats::default(),
            newest_event_ms: None,
            skipped_detectors: Vec::new(),
            work: SharesWork::default(),
        }
    }

    fn add(&mut self, bucket: BucketFindings) -> Result<(), PipelineError> {
        let began = Instant::now();
        let times = bucket.times;
        self.stats.add(bucket.stats);
        self.newest_event_ms = self.newest_event_ms.max(bucket.newest_event_ms);
        for (name, why) in bucket.skipped {
            if !self.skipped_detectors.iter().any(|(skipped, _)| *skipped == name) {
                self.skipped_detectors.push((name, why));
            }
        }
        bucket.failures.into_iter().try_for_each(|batch| self.failures_file.write(batch))?;
        bucket.cortex.into_iter().try_for_each(|batch| self.cortex_file.write(batch))?;
        self.kept.add(bucket.findings, &self.findings_file)?;
        self.work.add(times, began.elapsed());
        Ok(())
    }
}

/// The findings of a run: new ones (not reported by an earlier run), each once. The most
/// severe `max` are kept for the report; the others go to the lake's findings file as
/// soon as they fall out of the most severe, so at most `max` (and one bucket's findings)
/// are held at once.
struct MostSevere {
    reported: HashSet<String>,
    max: usize,
    run_id: String,
    detected_at: i64,
    /// The most severe so far, unsorted.
    findings: Vec<Finding>,
    /// The findings written to the lake so far.
    counts: FindingCounts,
    /// Findings found again that an earlier run reported.
    reported_before: usize,
}

impl MostSevere {
    /// Adds `new` (one bucket's findings, or the cross-session ones). A finding's id names
    /// its session, and buckets never share a session, so the same finding can only come
    /// twice within one `new`.
    fn add(&mut self, new: Vec<Finding>, lake_file: &BatchFileWriter) -> Result<(), PipelineError> {
        let mut seen = HashSet::new();
        for mut f in new {
            if self.reported.contains(&f.finding_id) {
                self.reported_before += 1;
            } else if seen.insert(f.finding_id.clone()) {
                f.run_id.clone_from(&self.run_id);
                f.detected_at = self.detected_at;
                self.findings.push(f);
            }
        }
        // Sorting only when over the cap: with a large cap, not every bucket re-sorts all.
        if self.findings.len() > self.max {
            sort_most_severe_first(&mut self.findings);
            let others = self.findings.split_off(self.max);
            store_findings(&others, &mut self.counts, lake_file)?;
        }
        Ok(())
    }
}

/// Counts `findings` and hands them to the run's findings file, a batch at a time.
pub fn store_findings(findings: &[Finding], counts: &mut FindingCounts, file: &BatchFileWriter) -> Result<(), PipelineError> {
    counts.add_findings(findings);
    for chunk in findings.chunks(FINDINGS_BATCH_ROWS) {
        file.write(findings_batch(chunk)?)?;
    }
    Ok(())
}

fn sort_most_severe_first(findings: &mut [Finding]) {
    // Keys made once per finding, not per comparison.
    findings.sort_by_cached_key(|f| (Reverse(f.severity), f.occurred_at, f.finding_id.clone()));
}

/// Every row of a (small) Parquet file this process wrote.
fn read_parquet_file(path: &std::path::Path) -> Result<Vec<RecordBatch>, LakeError> {
    let file = std::fs::File::open(path).map_err(|e| LakeError::io(path, e))?;
    let reader = datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    Ok(reader.collect::<Result<_, _>>()?)
}
