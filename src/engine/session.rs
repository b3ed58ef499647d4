//! The session builder: explicit settings, the lake's tables, every UDF.

use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::{DFParser, Statement};

use super::EngineError;
use crate::lake::schema::{EVENTS_SCHEMA, FAILURES_SCHEMA, FINDINGS_SCHEMA, PARTITION_COLUMN, QUARANTINE_SCHEMA};
use crate::lake::{Lake, Table};
use crate::redact::Redactor;
use tracelake_udfs::Patterns;
use crate::detect::sql::{CHAIN_VIEWS, CHAINS, SqlParams};

/// Settings of a query session.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Memory for query execution; operators spill to disk beyond it.
    pub memory_limit_bytes: usize,
    pub target_partitions: usize,
    /// Language packs for the text-category UDFs.
    pub patterns: Arc<Patterns>,
    /// Settings of the chain views.
    pub sql_params: SqlParams,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            memory_limit_bytes: 1 << 30,
            target_partitions: std::thread::available_parallelism().map_or(2, |n| n.get()),
            patterns: Arc::new(Patterns::default_languages()),
            sql_params: SqlParams::default(),
        }
    }
}

/// A session over `lake` with tables `events` and `quarantine` and all UDFs.
pub async fn open_session(lake: &Lake, redactor: Redactor, opts: &EngineOptions) -> Result<SessionContext, EngineError> {
    if !lake.root().is_dir() {
        return Err(EngineError::NoLake(lake.root().to_path_buf()));
    }
    let config = SessionConfig::new()
        .with_target_partitions(opts.target_partitions)
        .with_information_schema(true)
        .set_bool("datafusion.execution.parquet.pruning", true)
        .set_bool("datafusion.execution.parquet.pushdown_filters", true)
        .set_bool("datafusion.execution.parquet.reorder_filters", true)
        .set_bool("datafusion.execution.collect_statistics", true);
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(FairSpillPool::new(opts.memory_limit_bytes)))
        .build_arc()?;
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    register_table(&ctx, lake, Table::Events, EVENTS_SCHEMA.clone()).await?;
    register_table(&ctx, lake, Table::Quarantine, QUARANTINE_SCHEMA.clone()).await?;
    register_table(&ctx, lake, Table::Findings, FINDINGS_SCHEMA.clone()).await?;
    register_table(&ctx, lake, Table::Failures, FAILURES_SCHEMA.clone()).await?;
    tracelake_udfs::register_all(&ctx, redactor, Arc::clone(&opts.patterns));
    define_chain_views(&ctx, &opts.sql_params).await?;
    Ok(ctx)
}

/// Registers a hive-partitioned table; a table with no directory yet is an empty table
/// of the same columns.
async fn register_table(ctx: &SessionContext, lake: &Lake, table: Table, file_schema: SchemaRef) -> Result<(), EngineError> {
    let dir = lake.table_dir(table);
    let name = table.dir_name();
    if !dir.is_dir() {
        let mut fields: Vec<Field> = file_schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(PARTITION_COLUMN, DataType::Utf8, false));
        let schema = Arc::new(Schema::new(fields));
        ctx.register_table(name, Arc::new(MemTable::try_new(schema, vec![vec![]])?))?;
        return Ok(());
    }
    let url = ListingTableUrl::parse(format!("{}/", dir.canonicalize()?.display()))?;
    let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
        .with_file_extension(".parquet")
        .with_table_partition_cols(vec![(PARTITION_COLUMN.to_owned(), DataType::Utf8)]);
    let config = ListingTableConfig::new(url).with_listing_options(options).with_schema(file_schema);
    ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
    Ok(())
}

/// The columns of `failures` without its partition column.
pub const FAILURE_COLUMNS: &str = "fingerprint, session, agent, first_ts, chain_id, start_idx, start_event_id, end_event_id, tool_name, error";

/// Views for ad-hoc queries: `analysis_events` (all events), `deduped_events`,
/// `chain_events`, `chains`, `tool_attempts`. Views cost nothing until queried.
async fn define_chain_views(ctx: &SessionContext, params: &SqlParams) -> Result<(), EngineError> {
    ctx.sql("CREATE VIEW analysis_events AS SELECT * FROM events").await?.collect().await?;
    ctx.sql(&format!("CREATE VIEW failure_history AS SELECT {FAILURE_COLUMNS} FROM failures")).await?.collect().await?;
    for sql in [CHAINS, CHAIN_VIEWS] {
        run_statements(ctx, &params.fill(sql), |_, _| Ok(())).await?;
    }
    Ok(())
}

/// Parses `sql` (one or more `;`-separated statements).
pub fn parse_statements(sql: &str) -> Result<VecDeque<Statement>, EngineError> {
    Ok(DFParser::parse_sql(sql)?)
}

/// Runs every statement in `sql` in order, calling `each` with each statement's results.
pub async fn run_statements(
    ctx: &SessionContext,
    sql: &str,
    mut each: impl FnMut(SchemaRef, Vec<RecordBatch>) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    for statement in parse_statements(sql)? {
        let plan = ctx.state().statement_to_plan(statement).await?;
        let df = ctx.execute_logical_plan(plan).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        each(schema, batches)?;
    }
    Ok(())
}
