//! Work that runs on whole sessions, wherever the plan runs: [`SessionJobExec`] takes its
//! input partitioned by session (a hash repartition, which the distributed planner turns
//! into a shuffle between workers) and hands each partition's rows, every event of its
//! sessions, to a [`SessionJob`]. What the job does is defined above the engine (the
//! analysis: chains and detectors); the engine only moves its rows and, across the wire,
//! its bytes ([`SessionJobDecoder`]).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::TableType;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_expr::{Distribution, EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, ReplaceChildrenOptions};
use datafusion::physical_plan::expressions::col;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, RecordOutput, SpillMetrics};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::spill::SpillManager;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties};
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::TryStreamExt;
use futures::future::BoxFuture;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::session::register_functions;
use super::text_tests_last::TextTestsLast;
use super::window_memory::{AccountWindowInputs, recompute};
use crate::redact::Redactor;
use tracelake_udfs::Patterns;

/// The column whose values keep rows together.
const SESSION: &str = "session";

/// What runs on every event of some sessions at once.
pub trait SessionJob: fmt::Debug + Send + Sync {
    /// Names the job's kind to its [`SessionJobDecoder`].
    fn kind(&self) -> &str;
    /// The job, for [`SessionJobDecoder::decode`] on a worker.
    fn encode(&self) -> Vec<u8>;
    /// The columns of what [`Self::run`] yields.
    fn schema(&self) -> SchemaRef;
    /// Runs over `events`: every row of the sessions they hold. `ctx` has tracelake's
    /// functions and the settings of the process that runs it.
    fn run(self: Arc<Self>, ctx: SessionContext, events: Vec<RecordBatch>) -> BoxFuture<'static, Result<Vec<RecordBatch>>>;
}

/// Makes jobs out of the bytes of [`SessionJob::encode`].
pub trait SessionJobDecoder: fmt::Debug + Send + Sync {
    fn decode(&self, kind: &str, bytes: &[u8]) -> Result<Arc<dyn SessionJob>>;
}

/// `builder` with tracelake's physical optimizer rules: windows' inputs accounted to the
/// memory pool, text tests run last.
pub fn with_physical_rules(builder: SessionStateBuilder) -> SessionStateBuilder {
    builder.with_physical_optimizer_rule(Arc::new(AccountWindowInputs)).with_physical_optimizer_rule(Arc::new(TextTestsLast))
}

/// Settings a task needs to make a session of its own with tracelake's functions: kept in
/// every session's config (here and on workers), so that a plan node can find it.
#[derive(Debug, Clone)]
pub struct SessionFunctions {
    pub redactor: Redactor,
    pub patterns: Arc<Patterns>,
}

impl SessionFunctions {
    /// A session with DataFusion's, the JSON and tracelake's functions, `config` and
    /// `runtime`.
    pub fn session(&self, config: SessionConfig, runtime: Arc<datafusion::execution::runtime_env::RuntimeEnv>) -> Result<SessionContext> {
        let builder = SessionStateBuilder::new().with_config(config).with_runtime_env(runtime).with_default_features();
        self.context(with_physical_rules(builder))
    }

    /// The session `builder` makes, with the JSON and tracelake's functions, and `self` in
    /// its config.
    pub fn context(&self, builder: SessionStateBuilder) -> Result<SessionContext> {
        let mut state = builder.build();
        state.config_mut().set_extension(Arc::new(self.clone()));
        // `->`, `->>`, `json_get*` over the JSON text columns (payload, params, result, …).
        datafusion_functions_json::register_all(&mut state)?;
        let ctx = SessionContext::new_with_state(state);
        register_functions(&ctx, self.redactor.clone(), Arc::clone(&self.patterns));
        Ok(ctx)
    }
}

/// Runs its job on each partition of its input, which is partitioned by session.
#[derive(Debug)]
pub struct SessionJobExec {
    input: Arc<dyn ExecutionPlan>,
    /// The input's session column.
    session: Arc<dyn PhysicalExpr>,
    job: Arc<dyn SessionJob>,
    properties: Arc<PlanProperties>,
    /// Partitions worked on at once: one per core, so that memory holds the rows and the
    /// work of a few partitions (the others wait with their rows on disk).
    running: Arc<Semaphore>,
    metrics: ExecutionPlanMetricsSet,
}

impl SessionJobExec {
    /// `job` over `input`, whose rows are first spread over `partitions` by session.
    pub fn over(input: Arc<dyn ExecutionPlan>, partitions: usize, job: Arc<dyn SessionJob>) -> Result<Self> {
        let by_session = Partitioning::Hash(vec![col(SESSION, &input.schema())?], partitions.max(1));
        Self::new(Arc::new(RepartitionExec::try_new(input, by_session)?), job)
    }

    /// `job` over `input`, already partitioned by session.
    pub fn new(input: Arc<dyn ExecutionPlan>, job: Arc<dyn SessionJob>) -> Result<Self> {
        let session = col(SESSION, &input.schema())?;
        let partitions = input.output_partitioning().partition_count();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(job.schema()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let running = Arc::new(Semaphore::new(cores));
        Ok(Self { input, session, job, properties: Arc::new(properties), running, metrics: ExecutionPlanMetricsSet::new() })
    }

    pub fn job(&self) -> &Arc<dyn SessionJob> {
        &self.job
    }
}

impl DisplayAs for SessionJobExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "SessionJobExec: {}", self.job.kind())
    }
}

impl ExecutionPlan for SessionJobExec {
    fn name(&self) -> &str {
        "SessionJobExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }
    fn required_input_distribution(&self) -> Vec<Distribution> {
        // What the optimizer must keep (or put) under it: rows together by session.
        vec![Distribution::KeyPartitioned(vec![Arc::clone(&self.session)])]
    }
    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }
    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self::new(children.swap_remove(0), Arc::clone(&self.job))?))
    }
    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(children, recompute())
    }
    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let functions = context.session_config().get_extension::<SessionFunctions>().ok_or_else(|| {
            DataFusionError::Configuration("this process's sessions do not know tracelake's functions (SessionFunctions)".into())
        })?;
        let (input, job, running) = (Arc::clone(&self.input), Arc::clone(&self.job), Arc::clone(&self.running));
        // `elapsed_compute`: the job's time; `input_rows`: the rows it was given; the spill
        // metrics: the rows that waited for a core on disk.
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let input_rows = MetricBuilder::new(&self.metrics).counter("input_rows", partition);
        let spill = SpillManager::new(context.runtime_env(), SpillMetrics::new(&self.metrics, partition), input.schema());
        let results = async move {
            let rows = input.execute(partition, Arc::clone(&context))?;
            let (events, _running) = read_rows(rows, &running, &spill).await?;
            input_rows.add(events.iter().map(RecordBatch::num_rows).sum());
            let ctx = functions.session(context.session_config().clone(), context.runtime_env())?;
            let timer = baseline.elapsed_compute().timer();
            let batches = job.run(ctx, events).await?;
            timer.done();
            for batch in &batches {
                batch.record_output(&baseline);
            }
            baseline.done();
            Ok::<_, DataFusionError>(futures::stream::iter(batches.into_iter().map(Ok)))
        };
        let stream = futures::stream::once(results).try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(self.job.schema(), stream)))
    }
}

/// A partition's rows, and its turn to work on them. Every partition reads its rows at
/// once: a shuffle sends them to all partitions together, and one left unread would stall
/// the others. A partition that finds every core taken writes them to a spill file while
/// it waits, so that memory holds only the rows of partitions being worked on.
async fn read_rows(
    mut rows: SendableRecordBatchStream,
    running: &Arc<Semaphore>,
    spill: &SpillManager,
) -> Result<(Vec<RecordBatch>, OwnedSemaphorePermit)> {
    if let Ok(turn) = Arc::clone(running).try_acquire_owned() {
        return Ok((rows.try_collect().await?, turn));
    }
    let mut file = spill.create_in_progress_file("rows of sessions waiting for a core")?;
    while let Some(batch) = rows.try_next().await? {
        file.append_batch(&batch)?;
    }
    let file = file.finish()?;
    let turn = Arc::clone(running).acquire_owned().await.map_err(|e| DataFusionError::External(Box::new(e)))?;
    let events = match file {
        Some(file) => spill.read_spill_as_stream(file, None)?.try_collect().await?,
        None => Vec::new(),
    };
    Ok((events, turn))
}

/// A table whose scan is a [`SessionJobExec`] over a plan: selected from, it runs the job
/// where the session plans it (on workers, when it distributes).
#[derive(Debug)]
pub struct SessionJobTable {
    input: Arc<dyn ExecutionPlan>,
    job: Arc<dyn SessionJob>,
}

impl SessionJobTable {
    /// `job` over the rows of `input` (which has a `session` column), planned as one
    /// process would (see [`local_plan`]), spread by session over the target partitions
    /// of the session that selects from it.
    pub fn new(input: Arc<dyn ExecutionPlan>, job: Arc<dyn SessionJob>) -> Self {
        Self { input, job }
    }
}

/// `plan` as one process would run it: a session that distributes does so once the whole
/// plan is made, the shuffle by session included.
pub async fn local_plan(state: &SessionState, plan: &LogicalPlan) -> Result<Arc<dyn ExecutionPlan>> {
    DefaultPhysicalPlanner::default().create_physical_plan(plan, state).await
}

#[async_trait]
impl TableProvider for SessionJobTable {
    fn schema(&self) -> SchemaRef {
        self.job.schema()
    }
    fn table_type(&self) -> TableType {
        TableType::Temporary
    }
    async fn scan(
        &self,
        state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let partitions = state.config().target_partitions();
        Ok(Arc::new(SessionJobExec::over(Arc::clone(&self.input), partitions, Arc::clone(&self.job))?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
    use datafusion::datasource::memory::MemorySourceConfig;

    /// Counts the rows it is given, after letting the other partitions run.
    #[derive(Debug)]
    struct CountRows;

    impl SessionJob for CountRows {
        fn kind(&self) -> &str {
            "count"
        }
        fn encode(&self) -> Vec<u8> {
            Vec::new()
        }
        fn schema(&self) -> SchemaRef {
            Arc::new(Schema::new(vec![Field::new("rows", DataType::Int64, false)]))
        }
        fn run(self: Arc<Self>, _ctx: SessionContext, events: Vec<RecordBatch>) -> BoxFuture<'static, Result<Vec<RecordBatch>>> {
            Box::pin(async move {
                tokio::task::yield_now().await;
                let rows = events.iter().map(|b| b.num_rows() as i64).sum::<i64>();
                Ok(vec![RecordBatch::try_new(self.schema(), vec![Arc::new(Int64Array::from(vec![rows]))])?])
            })
        }
    }

    #[tokio::test]
    async fn partitions_that_wait_for_a_core_keep_their_rows_on_disk() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let partitions = cores + 2;
        let schema = Arc::new(Schema::new(vec![Field::new("session", DataType::Utf8, false)]));
        let rows_of = |p: usize| 100 + p;
        let batches: Vec<Vec<RecordBatch>> = (0..partitions)
            .map(|p| {
                let sessions = StringArray::from(vec![format!("s{p}"); rows_of(p)]);
                vec![RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(sessions)]).unwrap()]
            })
            .collect();
        let input = MemorySourceConfig::try_new_exec(&batches, schema, None).unwrap();
        let exec = SessionJobExec::new(input, Arc::new(CountRows)).unwrap();
        let functions = SessionFunctions { redactor: Redactor::builtin(), patterns: Arc::new(Patterns::default_languages()) };
        let config = SessionConfig::new().with_extension(Arc::new(functions));
        let task = Arc::new(TaskContext::default().with_session_config(config));

        // All partitions at once, as a shuffle's consumer reads them.
        let streams = (0..partitions).map(|p| exec.execute(p, Arc::clone(&task)).unwrap().try_collect::<Vec<_>>());
        let results = futures::future::try_join_all(streams).await.unwrap();
        let counted: Vec<usize> = results.iter().map(|b| b[0].column(0).as_primitive::<Int64Type>().value(0) as usize).collect();
        assert_eq!(counted, (0..partitions).map(rows_of).collect::<Vec<_>>());
        // The two partitions that found every core at work waited on disk.
        let metrics = exec.metrics().unwrap();
        assert_eq!(metrics.spilled_rows(), Some(rows_of(cores) + rows_of(cores + 1)));
        assert_eq!(metrics.sum_by_name("input_rows").map(|m| m.as_usize()), Some((0..partitions).map(rows_of).sum()));
    }
}
