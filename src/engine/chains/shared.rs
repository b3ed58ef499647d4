//! `chain_events` built once for `tracelake sql`: the views over it rebuild the chains of
//! the whole lake at every reading, and a detector's SQL reads them several times
//! (SIG-TERMS-CHANGED thirteen times, `consequential_calls` three). The first statement
//! that reads them [`READINGS_WORTH_A_FILE`] times or more has their rows written to a
//! Parquet file of this process, which the session reads from then on (the lake it reads
//! does not change), with the views over it made again over that file. A file rather than
//! memory, so that the rows stay out of the heap and the queries over them still spill
//! under the pool. Where the file cannot be written (the temporary directory is full or
//! too small for it), the session says so once and reads the chains as before.

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;

use crate::engine::EngineError;
use crate::engine::computed_once::write_rows;
use crate::temp_dirs::ProcessTempDir;

const CHAIN_EVENTS: &str = "chain_events";

/// From how many readings in one statement writing the chains to a file pays: at 1M
/// events, writing them costs about a build, so two readings run as fast each (BENCHMARKS,
/// "Chains built once for `tracelake sql`").
const READINGS_WORTH_A_FILE: usize = 3;

/// The statements that make the views over `chain_events` (`sql/chain_views.sql`, filled
/// in), kept in a session whose chains may be built once: one over a lake, run here.
pub struct ChainViewsSql(pub String);

/// Where the session's `chain_events` come from once a statement read them often: the
/// file in this directory, kept as long as the session, or (`None`: writing it failed)
/// the lake, as each statement reads them.
struct ChainsFile {
    _dir: Option<ProcessTempDir>,
}

/// Builds `chain_events` once if `plan` reads it [`READINGS_WORTH_A_FILE`] times or more
/// and the session has not tried yet; says whether it did, after which the statement must be
/// planned again.
pub async fn build_once_if_read_often(ctx: &SessionContext, plan: &LogicalPlan) -> Result<bool, EngineError> {
    let (views, settled) = {
        let state = ctx.state_ref();
        let state = state.read();
        (state.config().get_extension::<ChainViewsSql>(), state.config().get_extension::<ChainsFile>().is_some())
    };
    let Some(views) = views else {
        return Ok(false);
    };
    if settled || chain_event_reads(plan) < READINGS_WORTH_A_FILE {
        return Ok(false);
    }
    let keep = |file: ChainsFile| ctx.state_ref().write().config_mut().set_extension(Arc::new(file));
    let (dir, chains) = match write_chains(ctx).await {
        Ok(written) => written,
        Err(error) => {
            eprintln!(
                "warning: the chains could not be kept in a file in {} ({error}); this session builds them as each statement reads them",
                std::env::temp_dir().display()
            );
            keep(ChainsFile { _dir: None });
            return Ok(false);
        }
    };
    // Swapped with no await between, so that a statement cancelled here (Ctrl-C at the
    // prompt) leaves the session whole; views not yet made again still read the lake.
    ctx.deregister_table(CHAIN_EVENTS)?;
    ctx.register_table(CHAIN_EVENTS, chains)?;
    keep(ChainsFile { _dir: Some(dir) });
    crate::engine::run_statements(ctx, &views.0, |_, _| Ok(())).await?;
    Ok(true)
}

async fn write_chains(ctx: &SessionContext) -> Result<(ProcessTempDir, Arc<dyn TableProvider>), EngineError> {
    let dir = ProcessTempDir::new("chains")?;
    let (chains, _) = write_rows(ctx, CHAIN_EVENTS, &dir).await?;
    Ok((dir, chains))
}

/// How many times `plan` reads `chain_events`, through the views it reads as well (the
/// planner puts a view's plan in its place, under an alias of the view's name).
fn chain_event_reads(plan: &LogicalPlan) -> usize {
    let mut reads = 0;
    let _ = plan.apply_with_subqueries(|node| {
        match node {
            LogicalPlan::SubqueryAlias(view) if view.alias.table() == CHAIN_EVENTS => reads += 1,
            LogicalPlan::TableScan(scan) if scan.table_name.table() == CHAIN_EVENTS => reads += 1,
            LogicalPlan::TableScan(scan) => reads += scan.source.get_logical_plan().map_or(0, |view| chain_event_reads(&view)),
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
    reads
}
