//! One chain builder: `sql/chains.sql` and `sql/chain_views.sql` over a set of events, in
//! three modes that share that SQL. The views of `tracelake sql` build chains lazily on
//! every query; [`build_chains`] materializes a session's chains in memory (watch,
//! transcripts); [`Buckets`] and [`BucketPlans`] plan the build once and run it per bucket
//! of sessions (analyze); [`shared`] builds them once for a statement of `tracelake sql`
//! that reads them three times or more.

pub mod bucket_plans;
pub mod buckets;
pub mod shared;
mod slot;

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::compute::max;
use datafusion::arrow::datatypes::{Int64Type, TimestampMillisecondType};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionContext, col};

pub use bucket_plans::BucketPlans;
use bucket_plans::{CHAIN_BUILD_SETTINGS, CHAIN_ORDER, KEEP_TABLE_ORDER};
pub use buckets::{BucketEvents, Buckets, CHAIN_COLUMNS, DEFAULT_BUCKET_EVENTS, count_analysis_events, nullable};

use super::EngineError;
use super::sql::{CHAIN_VIEWS, CHAINS, SqlParams, time_literal};

/// Which sessions `analysis_events` holds.
pub enum Slice<'a> {
    All,
    Sessions(&'a [String]),
}

/// The tables over the `events` files new to an analysis and those it read before, for
/// [`Increment::Files`] (registered with `engine::session::register_event_files`).
pub const NEW_EVENTS: &str = "new_events";
pub const OLD_EVENTS: &str = "old_events";

/// What an analysis reads: the events new to it (`fresh`), and those it reads again as
/// their context.
pub enum Increment {
    /// Every event, all fresh.
    All,
    /// The sessions active after `from` (ms), from the context window before it on; the
    /// events after `fresh_after` are fresh (`None`: none is).
    After { from: i64, fresh_after: Option<i64> },
    /// The sessions with events in [`NEW_EVENTS`], however old (a backfill, a late
    /// collector), from the context window before each one's first new event on; the
    /// new events are fresh.
    Files,
}

/// `analysis_events`: the events of `increment` (with a `fresh` column), of the sessions
/// in `slice`. The context before what is new keeps chains that span it whole.
pub async fn define_analysis_events(
    ctx: &SessionContext,
    increment: &Increment,
    context_ms: i64,
    slice: &Slice<'_>,
) -> Result<(), EngineError> {
    let events = match increment {
        Increment::All => "SELECT *, true AS fresh FROM events".to_owned(),
        Increment::After { from, fresh_after } => format!(
            "SELECT *, {fresh} AS fresh FROM events e WHERE e.ts >= {context} \
             AND EXISTS (SELECT 1 FROM events n WHERE n.ts > {after} AND n.agent = e.agent AND n.session = e.session)",
            fresh = fresh_after.map_or("false".to_owned(), |t| format!("ts > {}", time_literal(t))),
            after = time_literal(*from),
            context = time_literal(from - context_ms),
        ),
        Increment::Files => format!(
            "WITH touched AS (SELECT agent, session, min(CAST(ts AS BIGINT)) AS first_new FROM {NEW_EVENTS} GROUP BY agent, session) \
             SELECT *, true AS fresh FROM {NEW_EVENTS} \
             UNION ALL \
             SELECT o.*, false AS fresh FROM {OLD_EVENTS} o JOIN touched t ON o.agent = t.agent AND o.session = t.session \
             WHERE CAST(o.ts AS BIGINT) >= t.first_new - {context_ms}"
        ),
    };
    let filter = match slice {
        Slice::All => String::new(),
        Slice::Sessions(sessions) => {
            let list: Vec<String> = sessions.iter().map(|s| crate::engine::sql::string_literal(s)).collect();
            format!(" WHERE session IN ({})", if list.is_empty() { "NULL".to_owned() } else { list.join(", ") })
        }
    };
    ctx.sql(&format!("CREATE OR REPLACE VIEW analysis_events AS SELECT * FROM ({events}) e{filter}")).await?.collect().await?;
    Ok(())
}

/// Runs the chain SQL over the session's `analysis_events`, keeping `chain_events` in
/// memory in chain order: every detector reads it, and windows over (chain_no, idx) per shard then
/// need no sort. Chain order is the order `chain_position` ran in, so it costs no sort.
/// (An analysis builds its buckets' chains with [`BucketPlans`].)
pub async fn build_chains(ctx: &SessionContext, params: &SqlParams) -> Result<(), EngineError> {
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
    let schema = partitions.iter().flatten().next().map_or(planned, RecordBatch::schema);
    let order = vec![CHAIN_ORDER.iter().map(|c| col(*c).sort(true, false)).collect()];
    let cached = MemTable::try_new(schema, partitions)?.with_sort_order(order);
    ctx.sql(KEEP_TABLE_ORDER).await?.collect().await?;
    ctx.deregister_table("chain_events")?;
    ctx.register_table("chain_events", Arc::new(cached))?;
    crate::engine::run_statements(ctx, &params.fill(CHAIN_VIEWS), |_, _| Ok(())).await?;
    Ok(())
}

/// Forgets `chain_events` and the views over it (`sql/chain_views.sql`), which hold it.
fn drop_chains(ctx: &SessionContext) -> Result<(), EngineError> {
    for table in ["chain_endings", "failure_occurrences", "tool_attempts", "chains", "chain_events"] {
        ctx.deregister_table(table)?;
    }
    Ok(())
}

/// Chains, the events in them, and the time they span (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChainStats {
    pub chains: u64,
    pub events: u64,
    pub first: i64,
    pub last: i64,
}

impl ChainStats {
    pub fn add(&mut self, other: ChainStats) {
        if other.chains > 0 {
            self.first = if self.chains == 0 { other.first } else { self.first.min(other.first) };
            self.last = self.last.max(other.last);
        }
        self.chains += other.chains;
        self.events += other.events;
    }
}

/// The [`ChainStats`] of `chain_events`.
pub const CHAIN_STATS_QUERY: &str =
    "SELECT count(*) FILTER (WHERE idx = 0) AS chains, count(*) AS events, min(ts) AS first, max(ts) AS last FROM chain_events";

/// The time (ms) of the newest of `events` (a bucket's, in the lake's columns): a message
/// alone in its chain is in no chain but was read all the same.
pub fn newest_event_ms(events: &[RecordBatch]) -> Option<i64> {
    let newest = |b: &RecordBatch| b.column_by_name("ts").and_then(|ts| max(ts.as_primitive_opt::<TimestampMillisecondType>()?));
    events.iter().filter_map(newest).max()
}

/// The result of [`CHAIN_STATS_QUERY`].
pub fn chain_stats_of(batches: &[RecordBatch]) -> Result<ChainStats, EngineError> {
    let Some(b) = batches.iter().find(|b| b.num_rows() > 0) else {
        return Ok(ChainStats::default());
    };
    let column = |name: &str| {
        b.column_by_name(name).ok_or_else(|| datafusion::common::internal_datafusion_err!("the chain statistics have no column {name}"))
    };
    let (first, last) =
        (column("first")?.as_primitive::<TimestampMillisecondType>(), column("last")?.as_primitive::<TimestampMillisecondType>());
    let (first, last) = if first.is_null(0) { (0, 0) } else { (first.value(0), last.value(0)) };
    let count = |name: &str| Ok::<_, datafusion::error::DataFusionError>(column(name)?.as_primitive::<Int64Type>().value(0) as u64);
    Ok(ChainStats { chains: count("chains")?, events: count("events")?, first, last })
}
