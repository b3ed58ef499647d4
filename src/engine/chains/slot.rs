//! Tables whose rows come with each execution of a plan, not with the plan: the chain build
//! and the detectors are planned once per analysis and executed once per bucket of
//! sessions, each execution with that bucket's rows.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionState;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, reset_plan_states};
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties, SendableRecordBatchStream};

/// The rows of the slot tables for one execution of a plan, by table name.
#[derive(Default)]
pub(crate) struct SlotRows {
    tables: HashMap<&'static str, Rows>,
}

enum Rows {
    /// Scanned once: the scan takes them, so they are freed as the plan consumes them.
    Once(Mutex<Option<Vec<RecordBatch>>>),
    /// Scanned any number of times.
    Shared(Arc<Vec<RecordBatch>>),
}

impl SlotRows {
    /// `batches` as the rows of `table`, for one scan.
    pub fn once(mut self, table: &'static str, batches: Vec<RecordBatch>) -> Self {
        self.tables.insert(table, Rows::Once(Mutex::new(Some(batches))));
        self
    }

    /// `batches` as the rows of `table`, for every scan.
    pub fn shared(mut self, table: &'static str, batches: Arc<Vec<RecordBatch>>) -> Self {
        self.tables.insert(table, Rows::Shared(batches));
        self
    }

    fn take(&self, table: &str) -> Result<Vec<RecordBatch>> {
        match self.tables.get(table) {
            Some(Rows::Shared(batches)) => Ok(batches.as_ref().clone()),
            Some(Rows::Once(batches)) => batches
                .lock()
                .expect("no scan panics holding it")
                .take()
                .ok_or_else(|| DataFusionError::Internal(format!("the rows of {table} were scanned twice"))),
            None => Err(DataFusionError::Internal(format!("no rows were given for {table}"))),
        }
    }
}

impl fmt::Debug for SlotRows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.tables.keys()).finish()
    }
}

/// Executes `plan` (planned in `state`) with `rows` as the rows of its slot tables, collecting
/// its output.
pub(crate) async fn execute(plan: &Arc<dyn ExecutionPlan>, state: &SessionState, rows: SlotRows) -> Result<Vec<RecordBatch>> {
    // Operators that keep state across their partitions (a join's build side) start afresh.
    let plan = reset_plan_states(Arc::clone(plan))?;
    let config = state.config().clone().with_extension(Arc::new(rows));
    let task = Arc::new(TaskContext::from(state).with_session_config(config));
    datafusion::physical_plan::collect(plan, task).await
}

/// The slot tables `plan` scans.
pub(crate) fn slot_tables(plan: &Arc<dyn ExecutionPlan>) -> Vec<&'static str> {
    let mut names = Vec::new();
    let mut pending = vec![Arc::clone(plan)];
    while let Some(node) = pending.pop() {
        if let Some(slot) = node.downcast_ref::<SlotExec>() {
            names.push(slot.name);
        }
        pending.extend(node.children().into_iter().cloned());
    }
    names
}

/// A table named `name` whose rows are given by each execution ([`SlotRows`]), in one
/// partition, sorted by `order` (column names, ascending) if given. Every column is
/// nullable, whatever the rows' own schema says.
#[derive(Debug)]
pub(crate) struct SlotTable {
    name: &'static str,
    schema: SchemaRef,
    order: Vec<String>,
}

impl SlotTable {
    pub fn new(name: &'static str, schema: &Schema, order: &[&str]) -> Self {
        let fields: Vec<_> = schema.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect();
        Self { name, schema: Arc::new(Schema::new(fields)), order: order.iter().map(|c| (*c).to_owned()).collect() }
    }
}

#[async_trait]
impl TableProvider for SlotTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = projection.cloned().unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let schema = Arc::new(self.schema.project(&columns)?);
        // The order holds for as long a prefix of its columns as the scan keeps.
        let sorted: Vec<PhysicalSortExpr> = self
            .order
            .iter()
            .map_while(|name| schema.index_of(name).ok().map(|i| (name, i)))
            .map(|(name, i)| PhysicalSortExpr::new(Arc::new(Column::new(name, i)), SortOptions { descending: false, nulls_first: false }))
            .collect();
        let equivalences = EquivalenceProperties::new_with_orderings(Arc::clone(&schema), LexOrdering::new(sorted));
        let properties =
            PlanProperties::new(equivalences, Partitioning::UnknownPartitioning(1), EmissionType::Incremental, Boundedness::Bounded);
        Ok(Arc::new(SlotExec { name: self.name, schema, columns, properties: Arc::new(properties) }))
    }
}

/// The scan of a [`SlotTable`].
#[derive(Debug)]
struct SlotExec {
    name: &'static str,
    schema: SchemaRef,
    /// The table's columns it yields.
    columns: Vec<usize>,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for SlotExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "SlotExec: {}", self.name)
    }
}

impl ExecutionPlan for SlotExec {
    fn name(&self) -> &str {
        "SlotExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(&self, _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(self: Arc<Self>, _children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, _partition: usize, context: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        let rows = context
            .session_config()
            .get_extension::<SlotRows>()
            .ok_or_else(|| DataFusionError::Internal(format!("{} was scanned without its rows", self.name)))?;
        let batches = rows
            .take(self.name)?
            .into_iter()
            .map(|b| RecordBatch::try_new(Arc::clone(&self.schema), b.project(&self.columns)?.columns().to_vec()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Box::pin(MemoryStream::try_new(batches, Arc::clone(&self.schema), None)?))
    }
}
