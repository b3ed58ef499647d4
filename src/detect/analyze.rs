//! One analysis run: choose the events (all, or the sessions touched since the last run),
//! rebuild chains, run every enabled detector, keep the new findings in the lake.

use std::cmp::Reverse;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Int64Type, Schema, SchemaRef, TimestampMillisecondType};
use datafusion::datasource::MemTable;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionContext, col};
use futures::TryStreamExt;

use super::DetectError;
use super::bucket_plans::{BucketPlans, CHAIN_BUILD_SETTINGS, KEEP_TABLE_ORDER};
use super::buckets::{BucketEvents, Buckets};
use super::finding::{Finding, finding_id, findings_batch, from_detector_batch, severity_rank};
use super::report::FindingCounts;
use super::sql::{CHAIN_VIEWS, CHAINS, Detector, SqlParams, enabled_builtin_detectors, query_only, user_detectors};
use crate::classify::stage::{apply_triage, chain_transcripts, classifications_batch};
use crate::classify::{ClassifyOptions, FindingVerdict, LlmCache, Tiers, classify};
use crate::config::Config;
use crate::engine::session::FAILURE_COLUMNS;
use crate::engine::{EngineOptions, open_session};
use crate::lake::layout::{PartitionDate, part_file_name};
use crate::lake::schema::{CLASSIFICATIONS_SCHEMA, FAILURES_SCHEMA, FINDINGS_SCHEMA, OUTPUTS_SCHEMA};
use crate::lake::state::{AnalysisRecord, Manifest, ProcessingState, WriteLock};
use crate::lake::writer::{BatchFileWriter, write_parquet_atomic};
use crate::lake::writers::{RegisteredWriter, retire, sweep_uncommitted};
use crate::lake::{Lake, LakeError, Table, WriterId};
use crate::output::effectiveness::{RuleEffectiveness, rule_effectiveness};
use crate::output::files::write_artifacts;
use crate::output::table::outputs_batch;
use crate::output::{Classified, GeneratedOutput, generate_outputs};
use crate::redact::Redactor;

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
    pub run_id: String,
    pub started_at: i64,
    pub completed_at: i64,
    pub events_processed: u64,
    pub chains: u64,
    pub time_range: (i64, i64),
    /// Events before this time (ms) were left out as analyzed already (none with `full`).
    pub resumed_from: Option<i64>,
    /// Earlier runs whose findings, failures, classifications and outputs a full run replaced.
    pub replaced_runs: usize,
    /// The most severe new findings of this run (`output.maxFindings`), most severe first.
    pub findings: Vec<Finding>,
    /// Every new finding of this run, counted (the lake keeps them all).
    pub counts: FindingCounts,
    /// User detectors that could not run: (file, reason).
    pub skipped_detectors: Vec<(String, String)>,
    pub processing_state: ProcessingState,
    /// What the LLM said, one per finding it was asked about (dropped ones included).
    pub verdicts: Vec<FindingVerdict>,
    pub llm: Option<LlmStats>,
    pub outputs: Vec<GeneratedOutput>,
    /// Artifact files written.
    pub artifact_files: Vec<PathBuf>,
    pub rule_effectiveness: Vec<RuleEffectiveness>,
    /// Things dropped on the way (invalid patterns …).
    pub warnings: Vec<String>,
}

/// Findings per batch written to the lake.
const FINDINGS_BATCH_ROWS: usize = 8192;

pub async fn analyze(lake: &Lake, config: &Config, redactor: Redactor, opts: &AnalyzeOptions) -> Result<Analysis, DetectError> {
    let started_at = chrono::Utc::now().timestamp_millis();
    let engine = EngineOptions::from_config(config)?;
    let params = &engine.sql_params;
    let tiers = Tiers::from_config(&config.llm)?;
    let ctx = open_session(lake, redactor.clone(), &engine).await?;
    let lock = WriteLock::acquire(lake)?;
    let mut manifest = Manifest::load(lake)?;
    sweep_uncommitted(lake, &manifest, &lock)?;
    let previous_state = manifest.processing_state.clone();

    let resume = match (opts.full, opts.since_ms) {
        (true, _) => None,
        (false, Some(since)) => Some(since),
        (false, None) => (previous_state.last_processed_ts > 0).then_some(previous_state.last_processed_ts),
    };
    let context_ms = config.incremental_context_window.max(0) * 60_000;
    define_analysis_events(&ctx, resume, context_ms, &Slice::All).await?;
    if opts.full {
        // A full run rebuilds the failure history from scratch.
        let empty = format!("CREATE OR REPLACE VIEW failure_history AS SELECT {FAILURE_COLUMNS} FROM failures WHERE false");
        ctx.sql(&empty).await?.collect().await?;
    }

    let run_id = format!("run-{}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), &WriterId::random().as_str()[..6]);
    let mut detectors = enabled_builtin_detectors(config);
    for dir in config.detectors_dir.iter().map(PathBuf::from).chain(opts.detectors_dir.clone()) {
        detectors.extend(user_detectors(&dir).map_err(|source| DetectError::DetectorDir { path: dir.display().to_string(), source })?);
    }
    let (across_sessions, per_bucket): (Vec<Detector>, Vec<Detector>) =
        detectors.into_iter().partition(|d| d.builtin && d.name == "SIG-REPEAT-FAIL");
    let detected_at = chrono::Utc::now().timestamp_millis();

    let reported: HashSet<String> = if opts.full { HashSet::new() } else { reported_ids(&ctx).await? };
    // Every new finding goes to the lake; the most severe `maxFindings` are also kept for
    // the report (and the LLM), and written once the LLM has seen them.
    let registered = RegisteredWriter::start(lake)?;
    let writer = registered.id().clone();
    let date = PartitionDate::from_millis(detected_at);
    let findings_file =
        BatchFileWriter::start(lake.partition_dir(Table::Findings, &date), part_file_name(&writer, 1), FINDINGS_SCHEMA.clone());
    let mut kept = MostSevere {
        reported,
        max: usize::try_from(config.output.max_findings.max(0)).unwrap_or(usize::MAX),
        run_id: run_id.clone(),
        detected_at,
        findings: Vec::new(),
        counts: FindingCounts::default(),
    };

    // Chains never cross sessions, so sessions are analyzed in buckets of bounded size,
    // side by side, each with the same plans.
    let buckets = Buckets::split(&ctx, opts.bucket_events).await?;
    let work = Arc::new(BucketWork::plan(&ctx, buckets.schema(), per_bucket, config, params).await?);
    let mut skipped_detectors = None;
    let mut stats = ChainStats::default();
    let mut occurrences = Vec::new();
    buckets
        .run(&ctx, |events| analyze_bucket(Arc::clone(&work), events))
        .try_for_each(|bucket| {
            stats.add(bucket.stats);
            skipped_detectors.get_or_insert(bucket.skipped);
            occurrences.extend(bucket.failures);
            std::future::ready(kept.add(bucket.findings, &findings_file))
        })
        .await?;
    let buckets_removed = buckets.remove();
    crate::memory::release_freed();
    let skipped_detectors = skipped_detectors.unwrap_or_default();
    // The same failure in other sessions: over every bucket's failures at once.
    let schema = occurrences.first().map_or_else(|| FAILURES_SCHEMA.clone(), |b| b.schema());
    ctx.deregister_table("failure_occurrences")?;
    ctx.register_table("failure_occurrences", Arc::new(MemTable::try_new(schema, vec![occurrences.clone()])?))?;
    kept.add(run_detectors(&ctx, &across_sessions, config, params).await?.0, &findings_file)?;
    let MostSevere { mut findings, mut counts, .. } = kept;
    sort_most_severe_first(&mut findings);
    let ChainStats { chains, events: events_processed, first, last } = stats;
    let time_range = if chains == 0 { (0, 0) } else { (first, last) };
    let all_signals: HashMap<String, String> = findings.iter().map(|f| (f.finding_id.clone(), f.signal.clone())).collect();

    let mut verdicts = Vec::new();
    let mut llm = None;
    if let Some(tiers) = &tiers {
        // The chains of the findings' sessions, for their transcripts.
        let sessions: Vec<String> = findings.iter().map(|f| f.session.clone()).collect();
        define_analysis_events(&ctx, resume, context_ms, &Slice::Sessions(&sessions)).await?;
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
        last_processed_ts: time_range.1.max(earlier.last_processed_ts),
        last_processed_seq: 0,
        total_events_processed: earlier.total_events_processed + events_processed,
        total_findings: earlier.total_findings + counts.total() as u64,
        updated_at: chrono::Utc::now().to_rfc3339(),
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
        write(Table::Failures, 2, FAILURES_SCHEMA.clone(), occurrences),
        write(Table::Classifications, 3, CLASSIFICATIONS_SCHEMA.clone(), vec![classifications]),
        write(Table::Outputs, 4, OUTPUTS_SCHEMA.clone(), vec![outputs_rows]),
        findings_file.finish().map(|file| file.map(|f| lake.relative(&f.path))),
    ];
    let files: Vec<String> = written.into_iter().filter_map(Result::transpose).collect::<Result<_, _>>()?;
    let replaced_runs = if opts.full { manifest.analyses.len() } else { 0 };
    if opts.full {
        let earlier: Vec<String> = manifest.analyses.iter().flat_map(|a| a.files.clone()).collect();
        retire(lake, &earlier)?;
        manifest.analyses.clear();
    }
    manifest.analyses.push(AnalysisRecord {
        run_id: run_id.clone(),
        finished_at: chrono::Utc::now().to_rfc3339(),
        findings: counts.total() as u64,
        files,
    });
    manifest.processing_state = processing_state.clone();
    manifest.save(lake)?;
    registered.finish()?;
    sweep_uncommitted(lake, &manifest, &lock)?;
    let artifact_files = match &tiers {
        Some(_) => write_artifacts(&opts.artifacts_dir.clone().unwrap_or_else(|| lake.root().join("artifacts")), &outputs)?,
        None => Vec::new(),
    };
    drop(lock);
    buckets_removed.await?;
    // Rules are generated outputs: a lake that never had one has nothing to measure.
    let rule_effectiveness = if lake.table_dir(Table::Outputs).is_dir() {
        rule_effectiveness(&open_session(lake, redactor, &engine).await?).await?
    } else {
        Vec::new()
    };
    Ok(Analysis {
        run_id,
        started_at,
        completed_at: chrono::Utc::now().timestamp_millis(),
        events_processed,
        chains,
        time_range,
        resumed_from: resume,
        replaced_runs,
        findings,
        counts,
        skipped_detectors,
        processing_state,
        verdicts,
        llm,
        outputs,
        artifact_files,
        rule_effectiveness,
        warnings,
    })
}

/// A detector's plan, or why it has none.
type DetectorPlan = Result<Arc<dyn ExecutionPlan>, String>;

/// User detectors that could not run: (file, reason).
type SkippedDetectors = Vec<(String, String)>;

/// What every bucket is analyzed with: the chain build and the queries over its chains,
/// planned once.
struct BucketWork {
    plans: BucketPlans,
    /// Each detector with its plan, or why it has none.
    detectors: Vec<(Detector, DetectorPlan)>,
    stats: Arc<dyn ExecutionPlan>,
    failures: Arc<dyn ExecutionPlan>,
    config: Config,
}

impl BucketWork {
    async fn plan(
        ctx: &SessionContext,
        events: &Schema,
        detectors: Vec<Detector>,
        config: &Config,
        params: &SqlParams,
    ) -> Result<Self, DetectError> {
        let plans = BucketPlans::new(ctx, params, events).await?;
        let mut planned = Vec::new();
        // One that cannot be planned fails in every bucket: a built-in one fails the run.
        for detector in detectors {
            let plan = plans.plan(&params.fill(&detector.sql)).await.map_err(|e| e.to_string());
            planned.push((detector, plan));
        }
        Ok(Self {
            stats: plans.plan(CHAIN_STATS_QUERY).await?,
            failures: plans.plan(FAILURES_QUERY).await?,
            plans,
            detectors: planned,
            config: config.clone(),
        })
    }
}

/// What one bucket of sessions yields.
struct BucketFindings {
    stats: (u64, u64, (i64, i64)),
    findings: Vec<Finding>,
    /// User detectors that failed.
    skipped: SkippedDetectors,
    /// Its failure occurrences, in the columns of the `failures` table.
    failures: Vec<RecordBatch>,
}

/// Builds the chains of a bucket's `events` and runs the detectors over them.
async fn analyze_bucket(work: Arc<BucketWork>, events: BucketEvents) -> Result<BucketFindings, DetectError> {
    let plans = &work.plans;
    let chains = &plans.chains(events.read()?).await?;
    // Together, so that one query's single-threaded steps overlap another's work.
    let detected = work.detectors.iter().map(|(detector, plan)| async move {
        let found = match plan {
            Ok(plan) => plans.query(plan, chains).await.map_err(|e| e.to_string()).and_then(|batches| findings_of(&batches)),
            Err(message) => Err(message.clone()),
        };
        (detector, found)
    });
    let (stats, detected, failures) =
        futures::join!(plans.query(&work.stats, chains), futures::future::join_all(detected), plans.query(&work.failures, chains));
    let (findings, skipped) = gather_findings(detected, &work.config)?;
    Ok(BucketFindings { stats: chain_stats_of(&stats?), findings, skipped, failures: failures? })
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
}

impl MostSevere {
    /// Adds `new` (one bucket's findings, or the cross-session ones). A finding's id names
    /// its session, and buckets never share a session, so the same finding can only come
    /// twice within one `new`.
    fn add(&mut self, new: Vec<Finding>, lake_file: &BatchFileWriter) -> Result<(), DetectError> {
        let mut seen = HashSet::new();
        for mut f in new {
            if !self.reported.contains(&f.finding_id) && seen.insert(f.finding_id.clone()) {
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
fn store_findings(findings: &[Finding], counts: &mut FindingCounts, file: &BatchFileWriter) -> Result<(), DetectError> {
    counts.add_findings(findings);
    for chunk in findings.chunks(FINDINGS_BATCH_ROWS) {
        file.write(findings_batch(chunk)?)?;
    }
    Ok(())
}

fn sort_most_severe_first(findings: &mut [Finding]) {
    // Keys made once per finding, not per comparison.
    findings.sort_by_cached_key(|f| (Reverse(severity_rank(&f.severity)), f.occurred_at, f.finding_id.clone()));
}

/// The failure occurrences of this run, in the columns of the `failures` table.
const FAILURES_QUERY: &str = "SELECT fingerprint, session, agent, first_ts, chain_id, CAST(start_idx AS BIGINT) AS start_idx, \
     start_event_id, end_event_id, tool_name, error FROM failure_occurrences";

/// Which sessions `analysis_events` holds.
pub(crate) enum Slice<'a> {
    All,
    Sessions(&'a [String]),
}

/// `analysis_events`: every event, or those of the sessions active after `resume`, from
/// the context window before it on, so that chains spanning the resume point are whole;
/// of the sessions in `slice`.
pub(crate) async fn define_analysis_events(
    ctx: &SessionContext,
    resume: Option<i64>,
    context_ms: i64,
    slice: &Slice<'_>,
) -> Result<(), DetectError> {
    let mut conditions = Vec::new();
    if let Some(t) = resume {
        let iso = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339();
        conditions.push(format!(
            "e.ts >= '{}' AND EXISTS (SELECT 1 FROM events n WHERE n.ts > '{}' AND n.agent = e.agent AND n.session = e.session)",
            iso(t - context_ms),
            iso(t)
        ));
    }
    match slice {
        Slice::All => {}
        Slice::Sessions(sessions) => {
            let list: Vec<String> = sessions.iter().map(|s| format!("'{}'", s.replace('\'', "''"))).collect();
            conditions.push(format!("e.session IN ({})", if list.is_empty() { "NULL".to_owned() } else { list.join(", ") }));
        }
    }
    let filter = if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
    ctx.sql(&format!("CREATE OR REPLACE VIEW analysis_events AS SELECT e.* FROM events e{filter}")).await?.collect().await?;
    Ok(())
}

/// Runs the chain SQL over the session's `analysis_events`, keeping `chain_events` in
/// memory in chain order: every detector reads it, and windows over (chain_no, idx) then
/// need no sort. Chain order is the order `chain_position` ran in, so it costs no sort.
/// (An analysis builds its buckets' chains with [`BucketPlans`].)
pub async fn build_chains(ctx: &SessionContext, params: &SqlParams) -> Result<(), DetectError> {
    // Chains built before go first, which reuses their memory.
    drop_chains(ctx)?;
    crate::memory::reuse_freed();
    for setting in CHAIN_BUILD_SETTINGS {
        ctx.sql(setting).await?.collect().await?;
    }
    crate::engine::run_statements(ctx, &params.fill(CHAINS), |_, _| Ok(())).await?;
    let chains = ctx.sql("SELECT * FROM chain_events").await?;
    let planned = Arc::new(chains.schema().as_arrow().clone());
    let partitions = chains.collect_partitioned().await?;
    // Execution may mark columns nullable where planning did not; the batches decide.
    let schema = partitions.iter().flatten().next().map_or(planned, |b| b.schema());
    let order = vec![vec![col("chain_no").sort(true, false), col("idx").sort(true, false)]];
    let cached = MemTable::try_new(schema, partitions)?.with_sort_order(order);
    ctx.sql(KEEP_TABLE_ORDER).await?.collect().await?;
    ctx.deregister_table("chain_events")?;
    ctx.register_table("chain_events", Arc::new(cached))?;
    crate::engine::run_statements(ctx, &params.fill(CHAIN_VIEWS), |_, _| Ok(())).await?;
    Ok(())
}

/// Forgets `chain_events` and the views over it (`sql/chain_views.sql`), which hold it.
fn drop_chains(ctx: &SessionContext) -> Result<(), DetectError> {
    for table in ["chain_endings", "failure_occurrences", "tool_attempts", "chains", "chain_events"] {
        ctx.deregister_table(table)?;
    }
    Ok(())
}

/// Chains, the events in them, and the time they span (ms).
#[derive(Debug, Default)]
pub(crate) struct ChainStats {
    pub chains: u64,
    pub events: u64,
    pub first: i64,
    pub last: i64,
}

impl ChainStats {
    pub fn add(&mut self, (chains, events, (first, last)): (u64, u64, (i64, i64))) {
        if chains > 0 {
            self.first = if self.chains == 0 { first } else { self.first.min(first) };
            self.last = self.last.max(last);
        }
        self.chains += chains;
        self.events += events;
    }
}

/// (chains, events in chains, (first, last) event time in ms) of `chain_events`.
pub(crate) const CHAIN_STATS_QUERY: &str =
    "SELECT count(*) FILTER (WHERE idx = 0) AS chains, count(*) AS events, min(ts) AS first, max(ts) AS last FROM chain_events";

/// The result of [`CHAIN_STATS_QUERY`].
pub(crate) fn chain_stats_of(batches: &[RecordBatch]) -> (u64, u64, (i64, i64)) {
    let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
        return (0, 0, (0, 0));
    };
    let first = b.column(2).as_primitive::<TimestampMillisecondType>();
    let last = b.column(3).as_primitive::<TimestampMillisecondType>();
    let range = if first.is_null(0) { (0, 0) } else { (first.value(0), last.value(0)) };
    (b.column(0).as_primitive::<Int64Type>().value(0) as u64, b.column(1).as_primitive::<Int64Type>().value(0) as u64, range)
}

/// Runs `detectors` over the session's chains: findings with config severities and their
/// ids, and the user detectors that failed (a failing built-in one is an error).
pub async fn run_detectors(
    ctx: &SessionContext,
    detectors: &[Detector],
    config: &Config,
    params: &SqlParams,
) -> Result<(Vec<Finding>, SkippedDetectors), DetectError> {
    // Together, so that one detector's single-threaded steps overlap another's work.
    let results = futures::future::join_all(detectors.iter().map(|d| async move { (d, run_detector(ctx, d, params).await) })).await;
    gather_findings(results, config)
}

async fn run_detector(ctx: &SessionContext, detector: &Detector, params: &SqlParams) -> Result<Vec<Finding>, String> {
    let df = ctx.sql_with_options(&params.fill(&detector.sql), query_only()).await.map_err(|e| e.to_string())?;
    findings_of(&df.collect().await.map_err(|e| e.to_string())?)
}

fn findings_of(batches: &[RecordBatch]) -> Result<Vec<Finding>, String> {
    let mut findings = Vec::new();
    for batch in batches {
        findings.extend(from_detector_batch(batch)?);
    }
    Ok(findings)
}

/// The findings of each detector's result, with config severities and their ids, and the
/// user detectors that failed (a failed built-in one is an error).
fn gather_findings<'a>(
    results: impl IntoIterator<Item = (&'a Detector, Result<Vec<Finding>, String>)>,
    config: &Config,
) -> Result<(Vec<Finding>, SkippedDetectors), DetectError> {
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    for (detector, result) in results {
        match result {
            Ok(found) => findings.extend(found),
            Err(message) if detector.builtin => {
                return Err(DetectError::Builtin { name: detector.name.clone(), message });
            }
            Err(message) => skipped.push((detector.name.clone(), message)),
        }
    }
    for f in &mut findings {
        if let Some(severity) = config.signals.get(&f.signal).and_then(|s| s.severity.clone()) {
            f.severity = severity;
        }
        f.finding_id = finding_id(&f.signal, &f.agent, &f.session, &f.start_event_id, &f.end_event_id);
    }
    Ok((findings, skipped))
}

async fn reported_ids(ctx: &SessionContext) -> Result<HashSet<String>, DetectError> {
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
