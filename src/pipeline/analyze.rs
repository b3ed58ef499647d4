//! One analysis run: choose the events (all, or the sessions touched since the last run),
//! rebuild chains, run every enabled detector, keep the new findings in the lake.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::MemTable;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::TryStreamExt;

use super::PipelineError;
use super::stages::StageTimes;
use crate::classify::stage::{apply_triage, chain_transcripts, classifications_batch};
use crate::classify::{ClassifyOptions, FindingVerdict, LlmCache, Tiers, classify};
use crate::config::Config;
use crate::detect::on_workers::{AnalysisJob, AnalysisJobs, analyze_on_workers};
use crate::detect::run::{BucketFindings, BucketWork, SkippedDetectors, analyze_bucket, severities};
use crate::detect::{Detector, enabled_builtin_detectors, run_detectors, user_detectors};
use crate::engine::chains::{Buckets, ChainStats, Increment, NEW_EVENTS, OLD_EVENTS, Slice, build_chains, define_analysis_events};
use crate::engine::session::{FAILURE_COLUMNS, register_event_files};
use crate::engine::{EngineError, EngineOptions, open_session};
use crate::lake::commit::{Run, RunLock, begin, commit};
use crate::lake::layout::{PartitionDate, part_file_name};
use crate::lake::remote::block_on;
use crate::lake::schema::{CLASSIFICATIONS_SCHEMA, CORTEX_MESSAGES_SCHEMA, FAILURES_SCHEMA, OUTPUTS_SCHEMA};
use crate::lake::state::{AnalysisRecord, ProcessingState};
use crate::lake::writer::{BatchFileWriter, copy_atomic, write_parquet_atomic};
use crate::lake::writers::RegisteredWriter;
use crate::lake::{Lake, LakeError, Table, WriterId};
use crate::model::finding::{FINDINGS_SCHEMA, findings_batch};
use crate::model::{Finding, Scope};
use crate::output::effectiveness::rule_effectiveness;
use crate::output::files::write_artifacts;
use crate::output::table::outputs_batch;
use crate::output::{Classified, generate_outputs};
use crate::redact::Redactor;
use crate::report::analysis::{AnalysisReport, FindingCounts, ReportParts};

#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// Analyze every event and replace all earlier findings.
    pub full: bool,
    /// Analyze the sessions active since this time (ms), instead of since the last run.
    pub since_ms: Option<i64>,
    /// More detector files (besides config `detectorsDir`).
    pub detectors_dir: Option<PathBuf>,
    /// LLM requests in this run at most.
    pub max_llm_calls: Option<usize>,
    /// LLM requests in flight at once (0: the default).
    pub llm_concurrency: usize,
    /// How long the LLM stage may take (`None`: the default, 10 minutes).
    pub llm_deadline: Option<std::time::Duration>,
    /// Where the artifact files go (default `LAKE/artifacts`).
    pub artifacts_dir: Option<PathBuf>,
    /// Events per bucket of sessions analyzed together (0: the default, [`super::DEFAULT_BUCKET_EVENTS`]).
    pub bucket_events: u64,
}

/// What the LLM stage cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmStats {
    pub calls: usize,
    pub cache_hits: usize,
    pub over_budget: usize,
    pub unclassified: usize,
}

/// What an analysis run found.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// What its report shows: the most severe new findings (`output.maxFindings`, most
    /// severe first), every new finding counted (the lake keeps them all), what the LLM
    /// said of each finding it was asked about (dropped ones included), the outputs and
    /// rule effectiveness.
    pub results: ReportParts,
    /// Events before this time (ms) were left out as analyzed already (none with `full`).
    pub resumed_from: Option<i64>,
    /// Earlier runs whose findings, failures, classifications and outputs a full run replaced.
    pub replaced_runs: usize,
    /// Findings this run found again that earlier runs reported (and the lake keeps).
    pub reported_before: usize,
    /// User detectors that could not run: (file, reason).
    pub skipped_detectors: SkippedDetectors,
    pub llm: Option<LlmStats>,
    /// Artifact files written.
    pub artifact_files: Vec<PathBuf>,
    /// Things dropped on the way (invalid patterns …).
    pub warnings: Vec<String>,
    /// Where the time went (`analyze --verbose`).
    pub stage_times: StageTimes,
    /// With workers, the plan they ran, with what each node did (`analyze --verbose`
    /// prints it: `detect::on_workers::plan_with_metrics`).
    pub worker_plan: Option<Arc<dyn ExecutionPlan>>,
}

impl Analysis {
    /// The run as an AnalysisReport (spec §10.4).
    pub fn into_report(self) -> AnalysisReport {
        AnalysisReport::assemble(self.results)
    }
}

/// Findings per batch written to the lake.
const FINDINGS_BATCH_ROWS: usize = 8192;

pub async fn analyze(lake: &Lake, config: &Config, redactor: Redactor, opts: &AnalyzeOptions) -> Result<Analysis, PipelineError> {
    let started_at = chrono::Utc::now().timestamp_millis();
    let mut stage_times = StageTimes::start();
    let engine = EngineOptions { session_jobs: Some(Arc::new(AnalysisJobs)), ..EngineOptions::from_config(config)? };
    let params = &engine.sql_params;
    let tiers = Tiers::from_config(&config.llm)?;
    let ctx = open_session(lake, redactor.clone(), &engine).await?;
    // Only analyses change the analysis history and the processing state, and no other
    // analysis runs: they stay as read here while imports and exports commit beside it.
    let run_lock = RunLock::acquire(lake, Run::Analyze)?;
    let (committed, _) = begin(lake)?;
    let previous_state = committed.processing_state.clone();

    // What is new: the events files committed since the last analysis (older events too),
    // or, after an analysis that kept no such list, the events after its newest.
    let event_files: Vec<String> = committed.table_files(Table::Events).into_iter().map(str::to_owned).collect();
    let last_ts = (previous_state.last_processed_ts > 0).then_some(previous_state.last_processed_ts);
    let increment = match (opts.full, opts.since_ms, committed.event_files_by_analysis(), last_ts) {
        (true, ..) | (false, None, None, None) => Increment::All,
        // A window: the cortex reads what no run saw, or leaves the files no run read to
        // the next incremental run, which reads them whole.
        (false, Some(since), by_analysis, last) => {
            Increment::After { from: since, fresh_after: if by_analysis.is_some() { None } else { Some(last.unwrap_or(0)) } }
        }
        (false, None, None, Some(last)) => Increment::After { from: last, fresh_after: Some(last) },
        (false, None, Some((new, old)), _) => {
            register_event_files(&ctx, lake, NEW_EVENTS, &new).await?;
            register_event_files(&ctx, lake, OLD_EVENTS, &old).await?;
            Increment::Files
        }
    };
    let resume = match increment {
        Increment::All => None,
        Increment::After { from, .. } => Some(from),
        Increment::Files => last_ts,
    };
    let context_ms = config.incremental_context_window.max(0) * 60_000;
    define_analysis_events(&ctx, &increment, context_ms, &Slice::All).await?;
    if opts.full {
        // A full run rebuilds the failure history from scratch.
        let empty = format!("CREATE OR REPLACE VIEW failure_history AS SELECT {FAILURE_COLUMNS} FROM failures WHERE false");
        ctx.sql(&empty).await?.collect().await?;
    }

    let run_id = format!("run-{}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), &WriterId::random().as_str()[..6]);
    let mut detectors = enabled_builtin_detectors(config);
    for dir in config.detectors_dir.iter().map(PathBuf::from).chain(opts.detectors_dir.clone()) {
        detectors.extend(user_detectors(&dir).map_err(crate::detect::DetectError::from)?);
    }
    let (across_sessions, per_bucket): (Vec<Detector>, Vec<Detector>) = detectors.into_iter().partition(|d| d.scope == Scope::Lake);
    let detected_at = chrono::Utc::now().timestamp_millis();

    let reported: HashSet<String> = if opts.full { HashSet::new() } else { reported_ids(&ctx).await? };
    // Every new finding goes to the lake; the most severe `maxFindings` are also kept for
    // the report (and the LLM), and written once the LLM has seen them.
    let registered = RegisteredWriter::start(lake)?;
    let writer = registered.id().clone();
    let date = PartitionDate::from_millis(detected_at);
    let findings_file =
        BatchFileWriter::start(lake.partition_dir(Table::Findings, &date), part_file_name(&writer, 1), FINDINGS_SCHEMA.clone());
    // Each bucket's failure occurrences are written as they come, not held in memory: to a
    // file outside the lake's tables, which queries see only once committed, for the
    // detectors across sessions to read; the lake gets a copy.
    let failures_dir = tempfile::Builder::new().prefix("tracelake-failures-").tempdir().map_err(EngineError::Spill)?;
    let failures_file = BatchFileWriter::start(failures_dir.path().to_owned(), "failures.parquet".into(), FAILURES_SCHEMA.clone());
    let mut kept = MostSevere {
        reported,
        max: usize::try_from(config.output.max_findings.max(0)).unwrap_or(usize::MAX),
        run_id: run_id.clone(),
        detected_at,
        findings: Vec::new(),
        counts: FindingCounts::default(),
        reported_before: 0,
    };

    // What the cortex patterns find in the messages no analysis saw before (`fresh`).
    let cortex_file = BatchFileWriter::start(
        lake.partition_dir(Table::CortexMessages, &date),
        part_file_name(&writer, 5),
        CORTEX_MESSAGES_SCHEMA.clone(),
    );
    let mut skipped_detectors: SkippedDetectors = Vec::new();
    let mut stats = ChainStats::default();
    let mut newest_event_ms = None;
    // With workers: the plan they ran.
    let mut worker_plan = None;
    let mut merge = |bucket: BucketFindings| {
        stats.add(bucket.stats);
        newest_event_ms = newest_event_ms.max(bucket.newest_event_ms);
        for (name, why) in bucket.skipped {
            if !skipped_detectors.iter().any(|(skipped, _)| *skipped == name) {
                skipped_detectors.push((name, why));
            }
        }
        let written = bucket
            .failures
            .into_iter()
            .try_for_each(|batch| failures_file.write(batch))
            .and_then(|()| bucket.cortex.into_iter().try_for_each(|batch| cortex_file.write(batch)))
            .map_err(PipelineError::from);
        std::future::ready(written.and_then(|()| kept.add(bucket.findings, &findings_file)))
    };
    stage_times.end("plan");
    let buckets_removed = if engine.workers.is_empty() {
        // Chains never cross sessions, so sessions are analyzed in buckets of bounded size,
        // side by side, each with the same plans.
        let buckets = Buckets::split(&ctx, opts.bucket_events).await?;
        stage_times.end("scan and split by session");
        let work = Arc::new(BucketWork::plan(&ctx, buckets.schema(), per_bucket, severities(config), params, true).await?);
        buckets
            .run(&ctx, |events| {
                let work = Arc::clone(&work);
                async move { Ok::<_, PipelineError>(analyze_bucket(work, events).await?) }
            })
            .try_for_each(&mut merge)
            .await?;
        stage_times.end("chains and detectors");
        Some(buckets.remove())
    } else {
        // The workers scan, shuffle by session, build the chains and detect; this process
        // merges what they found.
        let job = AnalysisJob::new(&per_bucket, severities(config), params, true);
        let (found, plan) = analyze_on_workers(&ctx, engine.workers.len(), opts.bucket_events, job).await?;
        found.map_err(PipelineError::from).try_for_each(&mut merge).await?;
        stage_times.end("workers: scan to findings");
        worker_plan = Some(plan);
        None
    };
    crate::memory::release_freed();
    // The same failure in other sessions: over every bucket's failures at once, read back.
    let failures_written = failures_file.finish()?;
    ctx.deregister_table("failure_occurrences")?;
    match &failures_written {
        Some(file) if engine.workers.is_empty() => {
            let options = ParquetReadOptions::default().schema(&FAILURES_SCHEMA);
            ctx.register_parquet("failure_occurrences", file.path.to_string_lossy(), options).await?
        }
        // Workers cannot read this process's temporary file: the rows go with the plan.
        Some(file) => {
            let batches = read_parquet_file(&file.path)?;
            ctx.register_table("failure_occurrences", Arc::new(MemTable::try_new(FAILURES_SCHEMA.clone(), vec![batches])?)).map(drop)?
        }
        None => {
            ctx.register_table("failure_occurrences", Arc::new(MemTable::try_new(FAILURES_SCHEMA.clone(), vec![Vec::new()])?)).map(drop)?
        }
    }
    kept.add(run_detectors(&ctx, &across_sessions, config, params).await?.0, &findings_file)?;
    stage_times.end("across sessions");
    let MostSevere { mut findings, mut counts, reported_before, .. } = kept;
    sort_most_severe_first(&mut findings);
    let ChainStats { chains, events: events_processed, first, last } = stats;
    let time_range = if chains == 0 { (0, 0) } else { (first, last) };
    let all_signals: HashMap<String, String> = findings.iter().map(|f| (f.finding_id.clone(), f.signal.clone())).collect();

    let mut verdicts = Vec::new();
    let mut llm = None;
    if let Some(tiers) = &tiers {
        // The chains of the findings' sessions, for their transcripts.
        let sessions: Vec<String> = findings.iter().map(|f| f.session.clone()).collect();
        define_analysis_events(&ctx, &increment, context_ms, &Slice::Sessions(&sessions)).await?;
        build_chains(&ctx, params).await?;
        let chains = chain_transcripts(&ctx, &findings).await?;
        let cache = LlmCache::open(lake);
        let defaults = ClassifyOptions::default();
        let concurrency = if opts.llm_concurrency > 0 { opts.llm_concurrency } else { defaults.concurrency };
        let deadline = opts.llm_deadline.unwrap_or(defaults.deadline);
        let classify_opts = ClassifyOptions { concurrency, max_calls: opts.max_llm_calls, deadline };
        let outcome = classify(&findings, &chains, tiers, &redactor, &cache, &classify_opts).await;
        cache.save()?;
        apply_triage(&mut findings, &outcome.verdicts);
        llm = Some(LlmStats {
            calls: outcome.llm_calls,
            cache_hits: outcome.cache_hits,
            over_budget: outcome.over_budget,
            unclassified: outcome.verdicts.iter().filter(|v| !v.dropped() && v.classification.is_none()).count(),
        });
        verdicts = outcome.verdicts;
        stage_times.end("llm classification");
    }
    // The last bucket's chains are not needed any more, nor held while the results are written.
    drop(ctx);
    let by_id: HashMap<&str, &FindingVerdict> = verdicts.iter().map(|v| (v.finding_id.as_str(), v)).collect();
    let classified: Vec<Classified> =
        findings.iter().filter_map(|f| by_id.get(f.finding_id.as_str()).and_then(|v| v.classification.as_ref()).map(|c| (f, c))).collect();
    let (outputs, warnings) = generate_outputs(&classified);

    // A full run starts the totals afresh.
    let earlier = if opts.full { ProcessingState::default() } else { previous_state };
    // The findings the report lists, as the LLM left them (triage drops false positives).
    store_findings(&findings, &mut counts, &findings_file)?;
    let processing_state = ProcessingState {
        // The newest event read, also one alone in its chain: the cortex read it, and a
        // later run must not read it again.
        last_processed_ts: time_range.1.max(newest_event_ms.unwrap_or(0)).max(earlier.last_processed_ts),
        last_processed_seq: 0,
        total_events_processed: earlier.total_events_processed + events_processed,
        total_findings: earlier.total_findings + counts.total() as u64,
        updated_at: chrono::Utc::now().to_rfc3339(),
        // A window (`--since`) leaves the files outside it to the next incremental run.
        analyzed_event_files: if opts.since_ms.is_some() && !opts.full { earlier.analyzed_event_files.clone() } else { Some(event_files) },
    };
    let write = |table: Table, part: usize, schema: SchemaRef, batches: Vec<RecordBatch>| -> Result<Option<String>, LakeError> {
        if !batches.iter().any(|b| b.num_rows() > 0) {
            return Ok(None);
        }
        let dir = lake.partition_dir(table, &date);
        write_parquet_atomic(&dir, &part_file_name(&writer, part), schema, batches.into_iter().map(Ok))
            .map(|file| Some(lake.relative(&file.path)))
    };
    let classifications = classifications_batch(&verdicts, &all_signals, &run_id, detected_at)?;
    let outputs_rows = outputs_batch(&outputs, &run_id, detected_at)?;
    let written = [
        failures_written
            .map(|f| copy_atomic(&f, &lake.partition_dir(Table::Failures, &date), &part_file_name(&writer, 2)))
            .transpose()
            .map(|file| file.map(|f| lake.relative(&f.path))),
        write(Table::Classifications, 3, CLASSIFICATIONS_SCHEMA.clone(), vec![classifications]),
        write(Table::Outputs, 4, OUTPUTS_SCHEMA.clone(), vec![outputs_rows]),
        findings_file.finish().map(|file| file.map(|f| lake.relative(&f.path))),
        cortex_file.finish().map(|file| file.map(|f| lake.relative(&f.path))),
    ];
    let files: Vec<String> = written.into_iter().filter_map(Result::transpose).collect::<Result<_, _>>()?;
    let record = AnalysisRecord {
        run_id: run_id.clone(),
        finished_at: chrono::Utc::now().to_rfc3339(),
        findings: counts.total() as u64,
        files,
        state_after: Some(ProcessingState { analyzed_event_files: None, ..processing_state.clone() }),
        ..AnalysisRecord::default()
    };
    let replaced_runs = commit::<_, LakeError>(lake, |manifest| {
        // Analyses of a lake on object storage do not exclude each other.
        if manifest.processing_state != committed.processing_state {
            return Err(LakeError::Concurrent { lake: lake.location(), run: "analyze" });
        }
        let revision = manifest.revision + 1;
        let replaced_runs = if opts.full { manifest.replace_analyses(revision) } else { 0 };
        manifest.analyses.push(AnalysisRecord { revision, ..record.clone() });
        manifest.processing_state = processing_state.clone();
        Ok(replaced_runs)
    })?;
    registered.finish()?;
    stage_times.end("write and commit");
    let artifact_files = match &tiers {
        Some(_) => write_artifacts(&opts.artifacts_dir.clone().unwrap_or_else(|| lake.root().join("artifacts")), &outputs)?,
        None => Vec::new(),
    };
    if let (Some(remote), None) = (lake.remote(), &opts.artifacts_dir) {
        // The staging directory goes with this process: the lake keeps the artifacts.
        for file in &artifact_files {
            block_on(remote.upload(&lake.relative(file)))?;
        }
    }
    drop(run_lock);
    if let Some(removed) = buckets_removed {
        removed.await.map_err(EngineError::Worker)?;
    }
    // Rules are generated outputs: a lake that never had one has nothing to measure.
    let rule_effectiveness = if lake.remote().is_some() || lake.table_dir(Table::Outputs).is_dir() {
        rule_effectiveness(&open_session(lake, redactor, &engine).await?).await?
    } else {
        Vec::new()
    };
    stage_times.end("rule effectiveness");
    let results = ReportParts {
        run_id,
        started_at,
        completed_at: chrono::Utc::now().timestamp_millis(),
        events_processed,
        chains,
        time_range,
        findings,
        counts,
        processing_state,
        verdicts,
        outputs,
        rule_effectiveness,
    };
    Ok(Analysis {
        results,
        resumed_from: resume,
        replaced_runs,
        reported_before,
        skipped_detectors,
        llm,
        artifact_files,
        warnings,
        stage_times,
        worker_plan,
    })
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
fn store_findings(findings: &[Finding], counts: &mut FindingCounts, file: &BatchFileWriter) -> Result<(), PipelineError> {
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

async fn reported_ids(ctx: &SessionContext) -> Result<HashSet<String>, PipelineError> {
    // Findings triage dropped count as reported: they were looked at.
    let sql = "SELECT finding_id FROM findings UNION SELECT finding_id FROM classifications WHERE triage_keep = false";
    let batches = ctx.sql(sql).await?.collect().await?;
    Ok(batches
        .iter()
        .flat_map(|b| {
            let ids = datafusion::arrow::compute::cast(b.column(0), &datafusion::arrow::datatypes::DataType::Utf8).expect("text");
            ids.as_string::<i32>().iter().flatten().map(str::to_owned).collect::<Vec<_>>()
        })
        .collect())
}

/// Every row of a (small) Parquet file this process wrote.
fn read_parquet_file(path: &std::path::Path) -> Result<Vec<RecordBatch>, LakeError> {
    let file = std::fs::File::open(path).map_err(|e| LakeError::io(path, e))?;
    let reader = datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?.build()?;
    Ok(reader.collect::<Result<_, _>>()?)
}
