//! The per-session part of an analysis on `tracelake worker`s: the workers scan the
//! events, shuffle them by session, build the chains and run the detectors over each
//! share of sessions ([`AnalysisJob`], a [`SessionJob`]); this process only merges what
//! they found.

use std::fmt;
use std::io::Cursor;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{AsArray, BinaryArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::common::{DataFusionError, Result, internal_err};
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::{ExecutionPlan, execute_stream};
use datafusion::prelude::SessionContext;
use datafusion_distributed::{DistributedConfig, DistributedExt, DistributedMetricsFormat, explain_analyze};
use futures::future::BoxFuture;
use futures::{Stream, TryStreamExt};
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use super::Scope;
use super::detectors::Detector;
use super::run::{BucketFindings, BucketWork, Severities, analyze_bucket};
use super::{DetectError, DetectorFailure};
use crate::engine::EngineError;
use crate::engine::chains::{BucketEvents, CHAIN_COLUMNS, ChainStats, count_analysis_events, nullable};
use crate::engine::session_job::{SessionJob, SessionJobDecoder, SessionJobTable, local_plan};
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
        let Some(first) = events.first() else {
            return Ok(Vec::new());
        };
        let schema = nullable(&first.schema());
        let spec = &self.spec;
        let work = self
            .work
            .get_or_try_init(|| async {
                let detectors = spec
                    .detectors
                    .iter()
                    .map(|(name, sql, builtin)| Detector { name: name.clone(), sql: sql.clone(), builtin: *builtin, scope: Scope::Chain })
                    .collect();
                let work = BucketWork::plan(ctx, &schema, detectors, spec.severities.clone(), &spec.params, spec.cortex_fresh_only).await?;
                Ok::<_, DetectError>(Arc::new(work))
            })
            .await?;
        let events = events
            .into_iter()
            .map(|b| RecordBatch::try_new(Arc::clone(&schema), b.columns().to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(EngineError::from)?;
        let found = analyze_bucket(Arc::clone(work), BucketEvents::InMemory(events)).await?;
        Ok(vec![encode(found)?])
    }
}

impl From<Spec> for AnalysisJob {
    fn from(spec: Spec) -> Self {
        Self { spec, work: OnceCell::new() }
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

/// Runs `job` over the sessions of `analysis_events` where `ctx` plans (on `workers`
/// workers), in shares of about `bucket_events` events (0: the default) as embedded
/// buckets are: what each share yields, as it comes, and the plan that yields it.
pub async fn analyze_on_workers(
    ctx: &SessionContext,
    workers: usize,
    bucket_events: u64,
    job: AnalysisJob,
) -> Result<(impl Stream<Item = Result<BucketFindings, DetectError>>, Arc<dyn ExecutionPlan>), DetectError> {
    let (_, shares) = count_analysis_events(ctx, bucket_events).await?;
    // Each worker's task gets this many of the shares (the shuffle's partitions).
    let per_task = usize::try_from(shares).unwrap_or(usize::MAX).div_ceil(workers.max(1));
    let state = ctx.state();
    let partitions = per_task.max(state.config().target_partitions());
    let events =
        ctx.sql(&format!("SELECT {CHAIN_COLUMNS} FROM analysis_events")).await?.into_optimized_plan().map_err(EngineError::from)?;
    // The scan as the session plans it (its tasks by the bytes they read); the shuffle by
    // session into `partitions`, which the scan's planning must not see.
    let events = local_plan(&state, &events).await.map_err(EngineError::from)?;
    let mut config = state
        .config()
        .clone()
        .with_target_partitions(partitions)
        .with_repartition_file_scans(false)
        .with_round_robin_repartition(false)
        // The same tables: the catalog as it is, not a new default one.
        .with_create_default_catalog_and_schema(false);
    // The distributed planner gives a scan a task per this many bytes per partition: as
    // many tasks as with the session's own partitions.
    let scan_bytes =
        DistributedConfig::from_config_options(state.config().options()).map_err(EngineError::from)?.file_scan_config_bytes_per_partition;
    let scaled = (scan_bytes.saturating_mul(state.config().target_partitions()) / partitions).max(1);
    config.set_distributed_file_scan_config_bytes_per_partition(scaled).map_err(EngineError::from)?;
    let ctx = SessionContext::new_with_state(SessionStateBuilder::new_from_existing(state).with_config(config).build());
    let table = SessionJobTable::new(events, Arc::new(job));
    let plan = ctx.read_table(Arc::new(table)).map_err(EngineError::from)?.create_physical_plan().await.map_err(EngineError::from)?;
    let results = execute_stream(Arc::clone(&plan), ctx.task_ctx()).map_err(EngineError::from)?;
    let found = results.map_err(DetectError::OnWorkers).and_then(|batch| std::future::ready(decode(&batch)));
    Ok((found, plan))
}

/// The stages of a plan of [`analyze_on_workers`] once run, with what each node did on
/// the workers (rows, bytes, time), for `analyze --verbose`.
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
}

fn encode(found: BucketFindings) -> Result<RecordBatch, DetectError> {
    let ChainStats { chains, events, first, last } = found.stats;
    let skipped = found.skipped.iter().map(|(name, why)| (name.clone(), why.to_string())).collect();
    let summary = Summary { chains, events, first, last, newest_event_ms: found.newest_event_ms, findings: found.findings, skipped };
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
