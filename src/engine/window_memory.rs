//! The memory a window holds, accounted to the pool.
//!
//! DataFusion's `WindowAggExec` (a window whose function cannot be evaluated row by row, as
//! this crate's window UDFs and every unbounded frame) keeps its whole input, then a
//! concatenated copy of it, without asking the memory pool: a window over a large table
//! grew the process far past the pool. [`AccountWindowInputs`] puts a
//! [`ReservedInput`] under each such operator; it reserves every batch that passes,
//! twice (the batch and its copy), for as long as the window holds its input, so a window
//! that needs more than the pool fails with "Resources exhausted" instead.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::utils::memory::get_record_batch_memory_size;
use datafusion::common::{Result, config::ConfigOptions};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::ReplaceChildrenOptions;
use datafusion::physical_plan::windows::WindowAggExec;
use datafusion::physical_plan::{ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::{Stream, StreamExt};

/// Puts a [`ReservedInput`] under every `WindowAggExec` of a plan.
#[derive(Debug, Default)]
pub struct AccountWindowInputs;

impl PhysicalOptimizerRule for AccountWindowInputs {
    fn optimize(&self, plan: Arc<dyn ExecutionPlan>, _config: &ConfigOptions) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if !node.is::<WindowAggExec>() {
                return Ok(Transformed::no(node));
            }
            let inputs = node.children().into_iter().map(|input| Arc::new(ReservedInput::new(Arc::clone(input))) as _).collect();
            Ok(Transformed::yes(node.replace_children(inputs, recompute())?))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "account_window_inputs"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Its input unchanged, each batch reserved in the memory pool until the stream is dropped.
#[derive(Debug)]
pub struct ReservedInput {
    input: Arc<dyn ExecutionPlan>,
}

impl ReservedInput {
    pub fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        Self { input }
    }
}

impl DisplayAs for ReservedInput {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ReservedInput")
    }
}

impl ExecutionPlan for ReservedInput {
    fn name(&self) -> &str {
        "ReservedInput"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }
    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }
    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }
    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(Self::new(children.swap_remove(0))))
    }
    fn with_new_children(self: Arc<Self>, children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(children, recompute())
    }
    fn execute(&self, partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let reservation = MemoryConsumer::new(format!("WindowInput[{partition}]")).register(context.memory_pool());
        let input = self.input.execute(partition, context)?;
        Ok(Box::pin(ReservedStream { input, reservation }))
    }
}

/// Options that have a node work out its properties again from its new children.
pub(super) fn recompute() -> ReplaceChildrenOptions {
    ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute)
}

struct ReservedStream {
    input: SendableRecordBatchStream,
    reservation: MemoryReservation,
}

impl Stream for ReservedStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.input.poll_next_unpin(cx);
        if let Poll::Ready(Some(Ok(batch))) = &polled
            && let Err(e) = self.reservation.try_grow(2 * get_record_batch_memory_size(batch))
        {
            return Poll::Ready(Some(Err(e)));
        }
        polled
    }
}

impl RecordBatchStream for ReservedStream {
    fn schema(&self) -> SchemaRef {
        self.input.schema()
    }
}
