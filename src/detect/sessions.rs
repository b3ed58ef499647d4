//! The per-session part of an analysis, as one plan: the events are scanned, spread by
//! session over shares of about a bucket's size, and each share's chains are built and
//! its detectors run ([`AnalysisJob`], a [`SessionJob`]). Embedded, the shares run on this
//! process's cores and hand what they found straight to the merge; with `tracelake
//! worker`s, the workers scan, shuffle, build and detect, and this process only merges
//! what comes back over the wire.

use std::fmt;
use std::io::Cursor;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use datafusion::arrow::array::{AsArray, BinaryArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::catalog::memory::DataSourceExec;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::{DataFusionError, Result, internal_err};
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use datafusion::prelude::SessionContext;
use datafusion_distributed::{
    DesiredTaskCountEvent, DesiredTaskCountEventResponse, DistributedExt, DistributedMetricsFormat, explain_analyze,
};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use tokio::sync::{OnceCell, mpsc};

use super::Scope;
use super::detectors::Detector;
use super::run::{BucketFindings, BucketWork, Severities, ShareTimes, analyze_bucket};
use super::{DetectError, DetectorFailure};
use crate::engine::EngineError;
use crate::engine::chains::{BucketEvents, CHAIN_COLUMNS, ChainStats, count_analysis_events, nullable};
use crate::engine::session_job::{SessionJob, SessionJobDecoder, SessionJobExec, SessionJobTable, local_plan};
use crate::engine::sql::SqlParams;
use crate::model::Finding;

/// The kind of [`AnalysisJob`] on the wire.
const KIND: &str = "analysis";

/// What a worker needs to analyze its sessions as this process would.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Spec {
    /// (name, SQL, built in) of each detector that runs per session.
    detectors: Vec<(String, String, bool)>,
    severities: Severities,
    params: SqlParams,
    cortex_fresh_only: bool,
}

/// Chains and detectors over the sessions of a partition, planned once per process.
pub struct AnalysisJob {
    spec: Spec,
    work: OnceCell<Arc<BucketWork>>,
    /// Embedded: where each share's findings go, as they are (nothing crosses a wire).
    merge: Option<mpsc::Sender<BucketFindings>>,
}

impl fmt::Debug for AnalysisJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnalysisJob").field("detectors", &self.spec.detectors.len()).finish()
    }
}

impl AnalysisJob {
    pub fn new(detectors: &[Detector], severities: Severities, params: &SqlParams, cortex_fresh_only: bool) -> Self {
        let detectors = detectors.iter().map(|d| (d.name.clone(), d.sql.clone(), d.builtin)).collect();
        Self::from(Spec { detectors, severities, params: params.clone(), cortex_fresh_only })
    }

    async fn analyze(&self, ctx: &SessionContext, events: Vec<RecordBatch>) -> Result<Vec<RecordBatch>, DetectError> {
        let rows_in = Instant::now();
        let Some(first) = events.first() else {
            return Ok(Vec::new());
        };
        let schema = nullable(&first.schema());
        let spec = &self.spec;
        let mut planning = Duration::ZERO;
        let work = self
            .work
            .get_or_try_init(|| async {
                let detectors = spec
                    .detectors
                    .iter()
                    .map(|(name, sql, builtin)| Detector { name: name.clone(), sql: sql.clone(), builtin: *builtin, scope: Scope::Chain })
                    .collect();
                let work = BucketWork::plan(ctx, &schema, detectors, spec.severities.clone(), &spec.params, spec.cortex_fresh_only).await?;
                planning = rows_in.elapsed();
                Ok::<_, DetectError>(Arc::new(work))
            })
            .await?;
        let events = events
            .into_iter()
            .map(|b| RecordBatch::try_new(Arc::clone(&schema), b.columns().to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(EngineError::from)?;
        let mut found = analyze_bucket(Arc::clone(work), BucketEvents::InMemory(events)).await?;
        // Its part of the scan and the spread ended when its rows were in, before the
        // first share planned the work.
        found.times.began = Some(rows_in);
        found.times.planning = planning;
        match &self.merge {
            Some(merge) => {
                // A merge that is gone has stopped the analysis: nothing waits for this.
                merge.send(found).await.ok();
                Ok(Vec::new())
            }
            None => Ok(vec![encode(found)?]),
        }
    }
}

impl From<Spec> for AnalysisJob {
    fn from(spec: Spec) -> Self {
        Self { spec, work: OnceCell::new(), merge: None }
    }
}

impl SessionJob for AnalysisJob {
    fn kind(&self) -> &str {
        KIND
    }

    fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&self.spec).expect("a spec is JSON")
    }

    fn schema(&self) -> SchemaRef {
        RESULTS_SCHEMA.clone()
    }

    fn run(self: Arc<Self>, ctx: SessionContext, events: Vec<RecordBatch>) -> BoxFuture<'static, Result<Vec<RecordBatch>>> {
        Box::pin(async move { self.analyze(&ctx, events).await.map_err(|e| DataFusionError::External(Box::new(e))) })
    }
}

/// The jobs of analyses, for `tracelake worker` and for the process that sends them.
#[derive(Debug)]
pub struct AnalysisJobs;

impl SessionJobDecoder for AnalysisJobs {
    fn decode(&self, kind: &str, bytes: &[u8]) -> Result<Arc<dyn SessionJob>> {
        if kind != KIND {
            return internal_err!("a job over sessions of a kind this tracelake does not know: {kind}");
        }
        let spec: Spec = serde_json::from_slice(bytes).map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(Arc::new(AnalysisJob::from(spec)))
    }
}

/// What each share of sessions found, as it comes.
pub type SharesFound = BoxStream<'static, Result<BucketFindings, DetectError>>;

/// Runs `job` over the sessions of `analysis_events` in shares (the buckets of
/// [`count_analysis_events`]), as many at a time as there are cores: on this process's cores
/// when `workers` is 0, else where `ctx` plans (its `workers` workers). What each share
/// found, as it comes, and with workers the plan that yields it.
pub async fn analyze_by_session(
    ctx: &SessionContext,
    workers: usize,
    bucket_events: u64,
    mut job: AnalysisJob,
) -> Result<(SharesFound, Option<Arc<dyn ExecutionPlan>>), DetectError> {
    let (_, shares) = count_analysis_events(ctx, bucket_events).await?;
    let shares = usize::try_from(shares).unwrap_or(usize::MAX);
    let state = ctx.state();
    // The shuffle's partitions: the shares, and with workers at least a core's worth for
    // each worker's task.
    let partitions = if workers == 0 { shares } else { shares.div_ceil(workers).max(state.config().target_partitions()) };
    let events =
        ctx.sql(&format!("SELECT {CHAIN_COLUMNS} FROM analysis_events")).await?.into_optimized_plan().map_err(EngineError::from)?;
    // The scan as the session plans it; the shuffle by session into `partitions`, which
    // the scan's planning must not see.
    let events = local_plan(&state, &events).await.map_err(EngineError::from)?;
    let mut config = state
        .config()
        .clone()
        .with_target_partitions(partitions)
        .with_repartition_file_scans(false)
        .with_round_robin_repartition(false)
        // The same tables: the catalog as it is, not a new default one.
        .with_create_default_catalog_and_schema(false);
    // The scan and the shares on every worker that gets a share, whatever the bytes the
    // scan reads: the shares are the work, and a worker left out leaves its cores idle.
    let spread = workers.min(shares);
    if spread > 1 {
        config.set_distributed_desired_task_count_handler(move |ev: DesiredTaskCountEvent<'_>| {
            let ours = ev.plan.downcast_ref::<SessionJobExec>().is_some() || ev.plan.downcast_ref::<DataSourceExec>().is_some();
            ours.then(|| Ok(DesiredTaskCountEventResponse::desired(spread)))
        });
    }
    let merge = (workers == 0).then(|| {
        let (sender, receiver) = mpsc::channel(state.config().target_partitions().max(1));
        job.merge = Some(sender);
        receiver
    });
    let ctx = SessionContext::new_with_state(SessionStateBuilder::new_from_existing(state).with_config(config).build());
    let table = SessionJobTable::new(events, Arc::new(job));
    let plan = ctx.read_table(Arc::new(table)).map_err(EngineError::from)?.create_physical_plan().await.map_err(EngineError::from)?;
    let results = execute_stream(Arc::clone(&plan), ctx.task_ctx()).map_err(EngineError::from)?;
    let Some(merge) = merge else {
        let found = results.map_err(DetectError::OnWorkers).and_then(|batch| std::future::ready(decode(&batch)));
        return Ok((found.boxed(), Some(plan)));
    };
    // The plan yields no rows here: the shares send what they found to `merge`, which
    // ends once the plan, and the job in it, is dropped at the end of the run.
    drop(plan);
    // Dropped before it ends (the merge failed), the run stops.
    let run = SpawnedTask::spawn(results.try_for_each(|_| std::future::ready(Ok(()))));
    let ended = futures::stream::once(async move {
        match run.join().await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(Err(embedded_error(e))),
            Err(e) => Some(Err(DetectError::Engine(EngineError::Worker(e)))),
        }
    });
    let found = futures::stream::unfold(merge, |mut merge| async move { merge.recv().await.map(|found| (Ok(found), merge)) });
    Ok((found.chain(ended.filter_map(std::future::ready)).boxed(), None))
}

/// An embedded run's error as the job raised it (a job's error crosses DataFusion wrapped).
fn embedded_error(e: DataFusionError) -> DetectError {
    match e {
        DataFusionError::External(inner) => match inner.downcast::<DetectError>() {
            Ok(detect) => *detect,
            Err(other) => DetectError::Engine(EngineError::from(DataFusionError::External(other))),
        },
        other => DetectError::Engine(EngineError::from(other)),
    }
}

/// The stages of a plan of [`analyze_by_session`] on workers once run, with what each
/// node did on the workers (rows, bytes, time), for `analyze --verbose`.
pub async fn plan_with_metrics(plan: Arc<dyn ExecutionPlan>) -> Result<String, DetectError> {
    Ok(explain_analyze(plan, DistributedMetricsFormat::Aggregated).await.map_err(EngineError::from)?)
}

/// What a share of sessions yields, on the wire: one row per part.
static RESULTS_SCHEMA: LazyLock<SchemaRef> =
    LazyLock::new(|| Arc::new(Schema::new(vec![Field::new("part", DataType::Utf8, false), Field::new("body", DataType::Binary, false)])));

/// The findings, chain statistics and the detectors skipped (JSON).
const SUMMARY: &str = "summary";
/// The failure occurrences (Arrow IPC).
const FAILURES: &str = "failures";
/// The `cortex_messages` rows (Arrow IPC).
const CORTEX: &str = "cortex";

#[derive(Serialize, Deserialize)]
struct Summary {
    chains: u64,
    events: u64,
    first: i64,
    last: i64,
    newest_event_ms: Option<i64>,
    findings: Vec<Finding>,
    /// (detector, why it failed)
    skipped: Vec<(String, String)>,
    /// The share's [`ShareTimes`], in seconds (none from a worker of an earlier release).
    #[serde(default)]
    chains_s: f64,
    #[serde(default)]
    detectors_s: f64,
    #[serde(default)]
    planning_s: f64,
}

fn encode(found: BucketFindings) -> Result<RecordBatch, DetectError> {
    let ChainStats { chains, events, first, last } = found.stats;
    let skipped = found.skipped.iter().map(|(name, why)| (name.clone(), why.to_string())).collect();
    let summary = Summary {
        chains,
        events,
        first,
        last,
        newest_event_ms: found.newest_event_ms,
        findings: found.findings,
        skipped,
        chains_s: found.times.chains.as_secs_f64(),
        detectors_s: found.times.detectors.as_secs_f64(),
        planning_s: found.times.planning.as_secs_f64(),
    };
    let bodies = [serde_json::to_vec(&summary).expect("a summary is JSON"), ipc_bytes(&found.failures)?, ipc_bytes(&found.cortex)?];
    let parts = StringArray::from(vec![SUMMARY, FAILURES, CORTEX]);
    let bodies = BinaryArray::from_iter_values(bodies.iter());
    Ok(RecordBatch::try_new(RESULTS_SCHEMA.clone(), vec![Arc::new(parts), Arc::new(bodies)]).map_err(EngineError::from)?)
}

/// What the rows of `batch` hold, together: a share's summary, failures or cortex rows.
fn decode(batch: &RecordBatch) -> Result<BucketFindings, DetectError> {
    let parts = batch.column(0).as_string::<i32>();
    let bodies = batch.column(1).as_binary::<i32>();
    let mut found = BucketFindings::default();
    for row in 0..batch.num_rows() {
        let body = bodies.value(row);
        match parts.value(row) {
            SUMMARY => {
                let s: Summary = serde_json::from_slice(body)
                    .map_err(|e| DetectError::Engine(EngineError::Row { query: "a worker's findings", source: e }))?;
                found.stats = ChainStats { chains: s.chains, events: s.events, first: s.first, last: s.last };
                found.newest_event_ms = s.newest_event_ms;
                found.findings = s.findings;
                found.skipped = s.skipped.into_iter().map(|(name, why)| (name, Arc::new(DetectorFailure::OnWorker(why)))).collect();
                let seconds = |s: f64| Duration::try_from_secs_f64(s).unwrap_or_default();
                found.times = ShareTimes {
                    began: None,
                    planning: seconds(s.planning_s),
                    chains: seconds(s.chains_s),
                    detectors: seconds(s.detectors_s),
                };
            }
            FAILURES => found.failures = ipc_batches(body)?,
            CORTEX => found.cortex = ipc_batches(body)?,
            other => {
                return Err(DetectError::UnknownWorkerPart(other.to_owned()));
            }
        }
    }
    Ok(found)
}

fn ipc_bytes(batches: &[RecordBatch]) -> Result<Vec<u8>, EngineError> {
    let mut bytes = Vec::new();
    if let Some(first) = batches.first() {
        let mut writer = StreamWriter::try_new(&mut bytes, &first.schema())?;
        for batch in batches {
            writer.write(batch)?;
        }
        writer.finish()?;
    }
    Ok(bytes)
}

fn ipc_batches(bytes: &[u8]) -> Result<Vec<RecordBatch>, EngineError> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    Ok(StreamReader::try_new(Cursor::new(bytes), None)?.collect::<Result<Vec<_>, _>>()?)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};

    use super::*;
    use crate::model::Severity;

    fn finding(n: i64) -> Finding {
        Finding {
            finding_id: format!("f{n}"),
            run_id: String::new(),
            signal: "SIG-X".into(),
            severity: Severity::High,
            chain_id: "c".into(),
            agent: "a".into(),
            session: "s".into(),
            start_idx: n,
            end_idx: n + 1,
            start_event_id: "e1".into(),
            end_event_id: "e2".into(),
            occurred_at: 1_700_000_000_000 + n,
            detected_at: 0,
            summary: "it failed".into(),
            evidence: r#"{"k": "v"}"#.into(),
            fingerprint: None,
        }
    }

    fn rows(n: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false), Field::new("t", DataType::Utf8, true)]));
        let texts: Vec<Option<String>> = (0..n).map(|i| (i % 2 == 0).then(|| format!("row {i}"))).collect();
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(0..n)), Arc::new(StringArray::from(texts))]).unwrap()
    }

    #[test]
    fn what_a_worker_found_arrives_whole() {
        let sent = BucketFindings {
            stats: ChainStats { chains: 3, events: 40, first: 5, last: 9 },
            findings: vec![finding(1), finding(2)],
            skipped: vec![("mine.sql".into(), Arc::new(DetectorFailure::OnWorker("no such table".into())))],
            failures: vec![rows(3), rows(2)],
            cortex: Vec::new(),
            newest_event_ms: Some(11),
            times: ShareTimes {
                began: Some(Instant::now()),
                planning: Duration::from_millis(120),
                chains: Duration::from_millis(1500),
                detectors: Duration::from_millis(250),
            },
        };
        let got = decode(&encode(sent).unwrap()).unwrap();
        assert_eq!(got.stats, ChainStats { chains: 3, events: 40, first: 5, last: 9 });
        assert_eq!(got.findings, vec![finding(1), finding(2)]);
        assert_eq!(got.skipped.len(), 1);
        assert_eq!(got.skipped[0].0, "mine.sql");
        assert!(got.skipped[0].1.to_string().starts_with("no such table (on a worker"), "{}", got.skipped[0].1);
        assert_eq!(got.failures, vec![rows(3), rows(2)]);
        assert!(got.cortex.is_empty());
        assert_eq!(got.newest_event_ms, Some(11));
        let times = ShareTimes {
            began: None,
            planning: Duration::from_millis(120),
            chains: Duration::from_millis(1500),
            detectors: Duration::from_millis(250),
        };
        assert_eq!(got.times, times, "a worker's times cross the wire, not when it began");
    }

    #[test]
    fn a_job_crosses_the_wire_with_its_detectors_and_settings() {
        let detectors = vec![Detector { name: "mine.sql".into(), sql: "SELECT 1".into(), builtin: false, scope: Scope::Chain }];
        let params = SqlParams { chain_gap_ms: 42, ..SqlParams::default() };
        let severities = Severities::from([("SIG-X".to_owned(), Severity::Low)]);
        let job = AnalysisJob::new(&detectors, severities.clone(), &params, false);
        let decoded = AnalysisJobs.decode(job.kind(), &job.encode()).unwrap();
        assert_eq!(decoded.encode(), job.encode());
        let spec: Spec = serde_json::from_slice(&decoded.encode()).unwrap();
        assert_eq!(spec.detectors, vec![("mine.sql".to_owned(), "SELECT 1".to_owned(), false)]);
        assert_eq!((spec.params.chain_gap_ms, spec.severities, spec.cortex_fresh_only), (42, severities, false));
        assert!(AnalysisJobs.decode("something else", b"{}").is_err());
    }
}
