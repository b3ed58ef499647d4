//! The queries run over every bucket of sessions, planned once per analysis instead of once
//! per bucket: the chain build over the bucket's events, and any query over its chains.
//! Each execution is given its bucket's rows ([`slot`](super::slot)). A chain view that
//! several detectors read is computed once per bucket, by the first query that reads it.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Schema;
use datafusion::catalog::MemoryCatalogProviderList;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use tokio::sync::OnceCell;

use super::slot::{SlotRows, SlotTable, execute, slot_tables};
use crate::engine::EngineError;
use crate::engine::distributed::local_only;
use crate::engine::sql::{CHAIN_VIEWS, CHAINS, SqlParams, query_only};

/// The table the chain build reads a bucket's events from.
const EVENTS: &str = "analysis_events";
/// The table queries read a bucket's chain events from.
const CHAIN_EVENTS: &str = "chain_events";

/// The chain views (`sql/chain_views.sql`) that more than one built-in detector reads
/// (SIG-UNCONFIRMED-ACTION, SIG-UNCONFIRMED-ATTEMPT and SIG-TERMS-CHANGED): kept in
/// memory per bucket, so that their joins, sorts and windows run once.
const SHARED_VIEWS: [&str; 1] = ["consequential_calls"];

/// Settings of a session that builds chains. The chain windows run in one partition
/// (buckets of sessions give the parallelism): spreading their sorted rows round-robin
/// would only make them to be merged again. The events are sorted in one piece (not batch
/// by batch and merged), which copies less.
pub(super) const CHAIN_BUILD_SETTINGS: [&str; 2] = [
    "SET datafusion.optimizer.enable_round_robin_repartition = false",
    "SET datafusion.execution.sort_in_place_threshold_bytes = 1073741824",
];

/// The order chain events come out of the chain build in.
pub(super) const CHAIN_ORDER: [&str; 3] = ["chain_shard", "chain_no", "idx"];

/// Splitting an in-memory table into partitions forgets its order (DataFusion 55), and a
/// window over (chain_no, idx) would sort it again.
pub(super) const KEEP_TABLE_ORDER: &str = "SET datafusion.optimizer.repartition_file_scans = false";

/// A plan executed more than once must not push filters between its operators at run time.
const NO_RUNTIME_FILTERS: &str = "SET datafusion.optimizer.enable_dynamic_filter_pushdown = false";

/// A session whose `analysis_events` and `chain_events` are a bucket's, given with each
/// execution, with the chain build planned.
pub struct BucketPlans {
    session: SessionContext,
    state: SessionState,
    chain_build: Arc<dyn ExecutionPlan>,
    /// Each of [`SHARED_VIEWS`] with the plan that computes it from the chain events.
    shared: Vec<(&'static str, Arc<dyn ExecutionPlan>)>,
}

/// A bucket's chain events, and the shared views over them once a query has read them.
pub struct BucketChains {
    events: Arc<Vec<RecordBatch>>,
    shared: Vec<OnceCell<Arc<Vec<RecordBatch>>>>,
}

impl BucketPlans {
    /// Plans the chain build over events in the columns of `events` (with the functions,
    /// settings and tables of `ctx`), each query in one partition.
    pub async fn new(ctx: &SessionContext, params: &SqlParams, events: &Schema) -> Result<Self, EngineError> {
        let session = separate_session(ctx).await?;
        for setting in CHAIN_BUILD_SETTINGS.into_iter().chain([KEEP_TABLE_ORDER, NO_RUNTIME_FILTERS]) {
            session.sql(setting).await?.collect().await?;
        }
        session.deregister_table(EVENTS)?;
        session.register_table(EVENTS, Arc::new(SlotTable::new(EVENTS, events, &[])))?;
        crate::engine::run_statements(&session, &params.fill(CHAINS), |_, _| Ok(())).await?;
        let chain_build = session.sql(&format!("SELECT * FROM {CHAIN_EVENTS}")).await?.create_physical_plan().await?;
        // Chain events come out of the build in chain order: windows over (chain_no, idx)
        // in each shard need no sort.
        session.deregister_table(CHAIN_EVENTS)?;
        let chains = SlotTable::new(CHAIN_EVENTS, &chain_build.schema(), &CHAIN_ORDER);
        session.register_table(CHAIN_EVENTS, Arc::new(chains))?;
        crate::engine::run_statements(&session, &params.fill(CHAIN_VIEWS), |_, _| Ok(())).await?;
        let mut shared = Vec::with_capacity(SHARED_VIEWS.len());
        for view in SHARED_VIEWS {
            let plan = session.sql(&format!("SELECT * FROM {view}")).await?.create_physical_plan().await?;
            session.deregister_table(view)?;
            session.register_table(view, Arc::new(SlotTable::new(view, &plan.schema(), &[])))?;
            shared.push((view, plan));
        }
        Ok(Self { state: session.state(), session, chain_build, shared })
    }

    /// Plans `sql`, a query (nothing else: see [`query_only`]) over `chain_events` and the
    /// views over it, or over `analysis_events`.
    pub async fn plan(&self, sql: &str) -> Result<Arc<dyn ExecutionPlan>, EngineError> {
        Ok(self.session.sql_with_options(sql, query_only()).await?.create_physical_plan().await?)
    }

    /// The chain events of a bucket's `events`, in chain order.
    pub async fn chains(&self, events: Vec<RecordBatch>) -> Result<BucketChains, EngineError> {
        let events = Arc::new(execute(&self.chain_build, &self.state, SlotRows::default().once(EVENTS, events)).await?);
        Ok(BucketChains { events, shared: self.shared.iter().map(|_| OnceCell::new()).collect() })
    }

    /// Runs `plan` (from [`Self::plan`]) over a bucket's `events` (`analysis_events`).
    pub async fn query_events(&self, plan: &Arc<dyn ExecutionPlan>, events: Vec<RecordBatch>) -> Result<Vec<RecordBatch>, EngineError> {
        Ok(execute(plan, &self.state, SlotRows::default().once(EVENTS, events)).await?)
    }

    /// Runs `plan` (from [`Self::plan`]) over a bucket's `chains`.
    pub async fn query(&self, plan: &Arc<dyn ExecutionPlan>, chains: &BucketChains) -> Result<Vec<RecordBatch>, EngineError> {
        let mut rows = SlotRows::default().shared(CHAIN_EVENTS, Arc::clone(&chains.events));
        let reads = slot_tables(plan);
        for ((view, view_plan), cell) in self.shared.iter().zip(&chains.shared) {
            if reads.contains(view) {
                let computed = cell
                    .get_or_try_init(|| async {
                        let over_chains = SlotRows::default().shared(CHAIN_EVENTS, Arc::clone(&chains.events));
                        Ok::<_, EngineError>(Arc::new(execute(view_plan, &self.state, over_chains).await?))
                    })
                    .await?;
                rows = rows.shared(view, Arc::clone(computed));
            }
        }
        Ok(execute(plan, &self.state, rows).await?)
    }
}

/// A session with the functions, settings and tables of `ctx` but a catalog of its own
/// (what it registers is not seen by `ctx`), running each query in one partition.
async fn separate_session(ctx: &SessionContext) -> Result<SessionContext, EngineError> {
    let state = ctx.state();
    let config = state.config().clone().with_create_default_catalog_and_schema(true).with_target_partitions(1);
    // A bucket's rows are in this process: its plans run here, also for an analysis
    // whose lake scans run on workers.
    let separate = local_only(SessionStateBuilder::new_from_existing(state.clone()))
        .with_catalog_list(Arc::new(MemoryCatalogProviderList::new()))
        .with_config(config)
        .build();
    let session = SessionContext::new_with_state(separate);
    let catalog = &state.config().options().catalog;
    let tables = state.catalog_list().catalog(&catalog.default_catalog).and_then(|c| c.schema(&catalog.default_schema));
    if let Some(tables) = tables {
        for name in tables.table_names() {
            if let Some(table) = tables.table(&name).await? {
                session.register_table(name.as_str(), table)?;
            }
        }
    }
    Ok(session)
}
