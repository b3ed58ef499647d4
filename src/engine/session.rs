//! The session builder: explicit settings, the lake's tables, every UDF.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::common::SchemaError;
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::DataFusionError;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::{FairSpillPool, MemoryLimit};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};
use datafusion::sql::parser::Statement;

use super::EngineError;
use super::chains::shared::{ChainViewsSql, build_once_if_read_often};
use super::committed::CommittedFiles;
use super::cortex::cortex_messages_sql;
use super::distributed::{distribute, explain_distributed, worker_urls};
use super::duckdb_forms::parse_statements;
use super::print::{PrintFormat, PrintOptions};
use super::select_aliases::plan_statement;
use super::session_job::{SessionFunctions, SessionJobDecoder, with_physical_rules};
use super::sql::{
    CHAIN_VIEWS, CHAINS, CORTEX, INFERRED_OUTCOMES, RULE_EFFECTIVENESS, SESSION_FACTORS, SESSION_OUTCOMES, SIGNAL_SCORES, SqlParams,
};
use super::summarize::{summarize, summarize_target};
use crate::lake::history::LakeAsOf;
use crate::lake::schema::{PARTITION_COLUMN, file_schema};
use crate::lake::state::AnalysisRecord;
use crate::lake::state_log;
use crate::lake::{Lake, LakeError, Table};
use crate::model::event::EVENTS_SCHEMA;
use crate::redact::Redactor;
use crate::temp_dirs::ProcessTempDir;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{DdlStatement, LogicalPlan, Statement as PlanStatement};
use futures::StreamExt;
use object_store::local::LocalFileSystem;
use tracelake_udfs::Patterns;

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
    /// `tracelake worker`s that run the plans; none: this process runs them.
    pub workers: Vec<url::Url>,
    /// Bytes of Parquet a worker's task of a scan reads.
    pub worker_scan_bytes: usize,
    /// The jobs over whole sessions that plans may send to workers.
    pub session_jobs: Option<Arc<dyn SessionJobDecoder>>,
    /// Read the lake as it was then (time travel), not as it is.
    pub as_of: Option<Arc<LakeAsOf>>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self::with(Patterns::default_languages(), SqlParams::default())
    }
}

impl EngineOptions {
    /// The settings `config` chooses: its languages and chain parameters.
    pub fn from_config(config: &crate::config::Config) -> Result<Self, EngineError> {
        let patterns = Patterns::with_tool_patterns(&config.languages, &config.tool_patterns)?;
        let workers = worker_urls(&config.workers)?;
        let worker_scan_bytes = usize::try_from(config.worker_scan_bytes).unwrap_or(usize::MAX);
        Ok(Self { workers, worker_scan_bytes, ..Self::with(patterns, SqlParams::from_config(config)) })
    }

    fn with(patterns: Patterns, sql_params: SqlParams) -> Self {
        Self {
            memory_limit_bytes: DEFAULT_MEMORY_LIMIT_BYTES,
            target_partitions: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
            patterns: Arc::new(patterns),
            sql_params,
            workers: Vec::new(),
            worker_scan_bytes: DEFAULT_WORKER_SCAN_BYTES,
            session_jobs: None,
            as_of: None,
        }
    }
}

/// Bytes of Parquet a worker's task of a scan reads, unless `workerScanBytes` says.
pub const DEFAULT_WORKER_SCAN_BYTES: usize = 16 << 20;

/// The memory pool of a query session, unless the caller says.
const DEFAULT_MEMORY_LIMIT_BYTES: usize = 1 << 30;

/// A session over `lake`: every table of the lake, `runs`, the chain views, all UDFs.
pub async fn open_session(lake: &Lake, redactor: Redactor, opts: &EngineOptions) -> Result<SessionContext, EngineError> {
    let ctx = new_context(redactor, opts)?;
    let (manifest, committed, url) = match lake.remote() {
        Some(remote) => {
            let manifest = state_log::load_async(lake).await?;
            if !manifest.exists {
                return Err(EngineError::NoLake(remote.url().into()));
            }
            let committed = CommittedFiles::new(remote.store(), lake.clone(), remote.prefix().clone());
            (manifest, committed, ObjectStoreUrl::parse(remote.store_url())?)
        }
        None => {
            if !lake.root().is_dir() {
                return Err(EngineError::NoLake(lake.root().to_path_buf()));
            }
            let manifest = state_log::load(lake)?;
            let root = lake.resolved_root()?;
            let root_path = object_store::path::Path::from_absolute_path(&root).map_err(|e| EngineError::LakePath(root.clone(), e))?;
            (
                manifest,
                CommittedFiles::new(Arc::new(LocalFileSystem::new()), Lake::new(&root), root_path),
                ObjectStoreUrl::local_filesystem(),
            )
        }
    };
    let committed = match &opts.as_of {
        Some(then) => committed.pinned_to(then.tables.iter().flat_map(|t| t.files.iter().map(String::as_str))),
        None => committed,
    };
    if opts.as_of.is_none() {
        let with_files: Vec<Table> = Table::ALL.into_iter().filter(|t| !manifest.table_files(*t).is_empty()).collect();
        let missing = crate::lake::delta::without_log(lake, &with_files).await?;
        if !missing.is_empty() {
            let tables = missing.iter().map(|t| t.dir_name()).collect();
            return Err(LakeError::NoDeltaLog { lake: lake.location(), tables }.into());
        }
    }
    ctx.register_object_store(url.as_ref(), Arc::new(committed));
    for table in Table::ALL {
        register_table(&ctx, lake, table, file_schema(table))?;
    }
    register_runs(&ctx, opts.as_of.as_ref().map_or(&manifest.analyses, |then| &then.analyses))?;
    define_chain_views(&ctx, &opts.sql_params, CortexMessages::Table).await?;
    // The workers cannot read a file of this process.
    if opts.workers.is_empty() {
        let views = ChainViewsSql(opts.sql_params.over_lake().fill(CHAIN_VIEWS));
        ctx.state_ref().write().config_mut().set_extension(Arc::new(views));
    }
    Ok(ctx)
}

/// A session over events held in memory, no lake: `events` from `batches` (in the
/// columns of [`EVENTS_SCHEMA`]), every other table empty.
pub async fn memory_session(batches: Vec<RecordBatch>, redactor: Redactor, opts: &EngineOptions) -> Result<SessionContext, EngineError> {
    let ctx = new_context(redactor, opts)?;
    for table in Table::ALL {
        let provider = match table {
            Table::Events => MemTable::try_new(EVENTS_SCHEMA.clone(), vec![batches.clone()])?,
            // A view over the events (defined below), as `analyze` writes it into a lake.
            Table::CortexMessages => continue,
            other => empty_table(&file_schema(other))?,
        };
        ctx.register_table(table.dir_name(), Arc::new(provider))?;
    }
    register_runs(&ctx, &[])?;
    define_chain_views(&ctx, &opts.sql_params, CortexMessages::FromEvents).await?;
    Ok(ctx)
}

/// A session with no lake: tracelake's functions, for files queried by path.
pub fn lakeless_session(redactor: Redactor, opts: &EngineOptions) -> Result<SessionContext, EngineError> {
    new_context(redactor, opts)
}

fn new_context(redactor: Redactor, opts: &EngineOptions) -> Result<SessionContext, EngineError> {
    let (runtime, spill_dir) = runtime_builder(opts.memory_limit_bytes);
    let mut config = SessionConfig::new()
        .with_target_partitions(opts.target_partitions)
        .with_information_schema(true)
        .set_bool("datafusion.execution.parquet.pruning", true)
        .set_bool("datafusion.execution.parquet.pushdown_filters", true)
        .set_bool("datafusion.execution.parquet.reorder_filters", true)
        .set_bool("datafusion.execution.collect_statistics", true);
    if let Some(dir) = spill_dir {
        // Kept as long as the session and its running plans (which hold its config).
        config.set_extension(dir);
    }
    let runtime = runtime.build_arc()?;
    let mut builder = with_physical_rules(SessionStateBuilder::new().with_config(config).with_runtime_env(runtime).with_default_features());
    if !opts.workers.is_empty() {
        builder = distribute(builder, opts.workers.clone(), opts.worker_scan_bytes, opts.session_jobs.clone())?;
    }
    Ok(SessionFunctions { redactor, patterns: Arc::clone(&opts.patterns) }.context(builder)?)
}

/// The runtime of a session or a worker: a memory pool of `memory_limit_bytes`, beyond
/// which operators spill into the directory returned, which must be kept while it runs.
/// That is a directory of this process that a later run removes if this one is killed
/// ([`ProcessTempDir`]), not DataFusion's own, which would stay behind. Where none can be
/// made (a read-only `TMPDIR`), DataFusion's: a query that needs no spill still runs, and
/// one that does says why it cannot.
pub fn runtime_builder(memory_limit_bytes: usize) -> (RuntimeEnvBuilder, Option<Arc<ProcessTempDir>>) {
    let runtime = RuntimeEnvBuilder::new().with_memory_pool(Arc::new(FairSpillPool::new(memory_limit_bytes)));
    match ProcessTempDir::new("spill") {
        Ok(dir) => {
            let disk = DiskManagerBuilder::default().with_mode(DiskManagerMode::Directories(vec![dir.path().to_owned()]));
            (runtime.with_disk_manager_builder(disk), Some(Arc::new(dir)))
        }
        Err(_) => (runtime, None),
    }
}

/// tracelake's functions, in this process and in every worker's, and DataFusion's that
/// can make results far larger than their arguments capped at the memory limit.
pub fn register_functions(ctx: &SessionContext, redactor: Redactor, patterns: Arc<Patterns>) {
    tracelake_udfs::register_all(ctx, redactor, patterns);
    let limit = match ctx.runtime_env().memory_pool.memory_limit() {
        MemoryLimit::Finite(bytes) => bytes,
        MemoryLimit::Infinite | MemoryLimit::Unknown => DEFAULT_MEMORY_LIMIT_BYTES,
    };
    tracelake_udfs::size_capped::register(ctx, limit as u64);
}

/// An empty table with the columns of a stored table, partition column included.
fn empty_table(file_schema: &SchemaRef) -> Result<MemTable, EngineError> {
    let mut fields: Vec<Field> = file_schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(PARTITION_COLUMN, DataType::Utf8, false));
    Ok(MemTable::try_new(Arc::new(Schema::new(fields)), vec![vec![]])?)
}

/// Registers a hive-partitioned table; a table with no directory yet is an empty table
/// of the same columns.
fn register_table(ctx: &SessionContext, lake: &Lake, table: Table, file_schema: SchemaRef) -> Result<(), EngineError> {
    let dir = lake.table_dir(table);
    let name = table.dir_name();
    let url = match lake.remote() {
        Some(remote) => ListingTableUrl::parse(remote.table_url(table))?,
        None if !dir.is_dir() => {
            ctx.register_table(name, Arc::new(empty_table(&file_schema)?))?;
            return Ok(());
        }
        None => ListingTableUrl::parse(format!("{}/", dir.canonicalize()?.display()))?,
    };
    let options = parquet_listing().with_table_partition_cols(vec![(PARTITION_COLUMN.to_owned(), DataType::Utf8)]);
    let config = ListingTableConfig::new(url).with_listing_options(options).with_schema(file_schema);
    ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
    Ok(())
}

/// Registers `name` as a table over some committed `events` files (paths relative to the
/// lake), in the columns the files hold.
pub async fn register_event_files(ctx: &SessionContext, lake: &Lake, name: &str, files: &[String]) -> Result<(), EngineError> {
    let schema = file_schema(Table::Events);
    ctx.deregister_table(name)?;
    if files.is_empty() {
        ctx.register_table(name, Arc::new(MemTable::try_new(schema, vec![vec![]])?))?;
        return Ok(());
    }
    let root = match lake.remote() {
        Some(remote) => remote.url(),
        None => lake.root().canonicalize()?.display().to_string(),
    };
    let urls = files.iter().map(|f| ListingTableUrl::parse(format!("{root}/{f}"))).collect::<Result<Vec<_>, _>>()?;
    let config = ListingTableConfig::new_with_multi_paths(urls).with_listing_options(parquet_listing()).with_schema(schema);
    ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
    Ok(())
}

/// How the lake's tables are listed: their Parquet files.
fn parquet_listing() -> ListingOptions {
    ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet")
}

/// `runs`: the committed analysis runs in order (`run_no` from 1), from the manifest.
fn register_runs(ctx: &SessionContext, runs: &[AnalysisRecord]) -> Result<(), EngineError> {
    let finished = runs.iter().map(|r| chrono::DateTime::parse_from_rfc3339(&r.finished_at).map_or(0, |t| t.timestamp_millis()));
    let batch = RecordBatch::try_new(
        RUNS_SCHEMA.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(1..=runs.len() as i64)),
            Arc::new(StringArray::from_iter_values(runs.iter().map(|r| r.run_id.as_str()))),
            Arc::new(TimestampMillisecondArray::from_iter_values(finished).with_timezone("UTC")),
            Arc::new(Int64Array::from_iter_values(runs.iter().map(|r| r.findings as i64))),
        ],
    )?;
    ctx.register_table("runs", Arc::new(MemTable::try_new(RUNS_SCHEMA.clone(), vec![vec![batch]])?))?;
    Ok(())
}

static RUNS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        Field::new("run_no", DataType::Int64, false),
        Field::new("run_id", DataType::Utf8, false),
        Field::new("finished_at", DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())), false),
        Field::new("findings", DataType::Int64, false),
    ]))
});

/// The columns of `failures` without its partition column.
pub const FAILURE_COLUMNS: &str =
    "fingerprint, session, agent, first_ts, chain_id, start_idx, start_event_id, end_event_id, tool_name, error";

/// Views for ad-hoc queries: `analysis_events` (all events), `deduped_events`,
/// `chain_events`, `chains`, `tool_attempts`. Views cost nothing until queried.
async fn define_chain_views(ctx: &SessionContext, params: &SqlParams, cortex: CortexMessages) -> Result<(), EngineError> {
    ctx.sql("CREATE VIEW analysis_events AS SELECT * FROM events").await?.collect().await?;
    ctx.sql(&format!("CREATE VIEW failure_history AS SELECT {FAILURE_COLUMNS} FROM failures")).await?.collect().await?;
    for sql in [CHAINS, CHAIN_VIEWS, RULE_EFFECTIVENESS, SESSION_OUTCOMES, INFERRED_OUTCOMES, SIGNAL_SCORES, SESSION_FACTORS] {
        run_statements(ctx, &params.over_lake().fill(sql), |_, _| Ok(())).await?;
    }
    if cortex == CortexMessages::FromEvents {
        ctx.sql(&format!("CREATE VIEW cortex_messages AS {}", cortex_messages_sql(false))).await?.collect().await?;
    }
    run_statements(ctx, &params.fill(CORTEX), |_, _| Ok(())).await
}

/// Where `cortex_messages` comes from: the lake's table, or a view over the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CortexMessages {
    Table,
    FromEvents,
}

/// A statement's planning error, said in terms of what went wrong for the user where
/// DataFusion's words mislead: ours, carried through DataFusion whole (a read function's
/// call, `read_csv('x.csv', delim = 1)`, in its own words), a missing file, a misspelt
/// table (with the name nearest to it), a window function called without `OVER`
/// (DataFusion then reports an unknown function and suggests another), or a function of
/// DuckDB's that DataFusion names otherwise.
fn planning_error(ctx: &SessionContext, error: DataFusionError, statement: Option<&Statement>) -> EngineError {
    let error = match error {
        DataFusionError::External(inner) => match inner.downcast::<EngineError>() {
            Ok(ours) => return *ours,
            Err(inner) => DataFusionError::External(inner),
        },
        other => other,
    };
    if let Some(name) = super::files::unknown_table(&error) {
        if super::files::is_missing_file(name) {
            return EngineError::NoSuchFile(name.to_owned());
        }
        return EngineError::NoSuchTable { name: name.to_owned(), nearest: nearest_table(ctx, name) };
    }
    if let DataFusionError::SchemaError(schema_error, _) = error.find_root()
        && let SchemaError::FieldNotFound { field, valid_fields } = schema_error.as_ref()
    {
        let mut named = std::collections::HashSet::new();
        let columns: Vec<String> = valid_fields.iter().map(|c| c.name().to_owned()).filter(|c| named.insert(c.clone())).collect();
        let known: Vec<&str> = columns.iter().map(String::as_str).collect();
        let nearest = nearest_columns(field.name(), &known);
        let columns = if nearest.is_empty() { columns } else { Vec::new() };
        return EngineError::NoSuchColumn { name: field.name().to_owned(), nearest, columns };
    }
    if let DataFusionError::Plan(message) = error.find_root()
        && let Some(name) = message.strip_prefix("Invalid function '").and_then(|rest| rest.split('\'').next())
    {
        if ctx.state().window_functions().contains_key(name) {
            return EngineError::WindowWithoutOver(name.to_owned());
        }
        if let Some(instead) = super::duckdb_names::written_here(name, statement) {
            return EngineError::DuckDbFunction { name: name.to_owned(), instead };
        }
    }
    error.into()
}

/// The session's table or view that `name` most likely misspells, if one is close.
pub fn nearest_table(ctx: &SessionContext, name: &str) -> Option<String> {
    let state = ctx.state();
    let defaults = &state.config().options().catalog;
    let schema = ctx.catalog(&defaults.default_catalog).and_then(|c| c.schema(&defaults.default_schema));
    let tables = schema.map(|s| s.table_names()).unwrap_or_default();
    let known: Vec<&str> = tables.iter().map(String::as_str).collect();
    // Two edits at most: further, the nearest name is another table (sessions → decisions).
    crate::config::nearest_within(name, &known, 2).map(str::to_owned)
}

/// The columns a misspelt `name` most likely meant: the nearest by two edits at most, or
/// else up to eight that start with it (`tool` → `tool_name`, `tool_params`, …).
fn nearest_columns(name: &str, columns: &[&str]) -> Vec<String> {
    if let Some(nearest) = crate::config::nearest_within(name, columns, 2) {
        return vec![nearest.to_owned()];
    }
    let lower = name.to_lowercase();
    let starting: Vec<String> = columns.iter().filter(|c| c.to_lowercase().starts_with(&lower)).map(|c| (*c).to_owned()).collect();
    if starting.len() <= 8 { starting } else { Vec::new() }
}

/// How an error names the nearest name: ` (did you mean NAME?)`, or nothing.
pub fn did_you_mean(nearest: Option<&str>) -> String {
    nearest.map(|n| format!(" (did you mean {n}?)")).unwrap_or_default()
}

/// Runs every statement in `sql` in order and prints each result to `out` as it comes;
/// a `SUMMARIZE` of its own prints the summary. Statements that would write into `lake`
/// are refused.
pub async fn print_statements(
    ctx: &SessionContext,
    lake: Option<&Lake>,
    sql: &str,
    options: &PrintOptions,
    out: &mut dyn std::io::Write,
) -> Result<(), EngineError> {
    if let Some(target) = summarize_target(sql) {
        let started = std::time::Instant::now();
        let summary = summarize(ctx, target).await.map_err(|e| planning_error(ctx, e, None))?;
        return print_rows(summary, options, out, started).await;
    }
    for mut statement in parse_statements(sql)? {
        let started = std::time::Instant::now();
        let mut plan = plan_statement(ctx, &mut statement).await.map_err(|e| planning_error(ctx, e, Some(&statement)))?;
        if let Some(lake) = lake {
            refuse_lake_writes(&plan, lake)?;
        }
        // EXPLAIN shows the chains built as the statement reads them; a view reads nothing yet.
        let reads_now = !matches!(plan, LogicalPlan::Explain(_) | LogicalPlan::Analyze(_) | LogicalPlan::Ddl(DdlStatement::CreateView(_)));
        if reads_now && build_once_if_read_often(ctx, &plan).await? {
            plan = plan_statement(ctx, &mut statement).await.map_err(|e| planning_error(ctx, e, Some(&statement)))?;
        }
        let done = confirmation(&plan);
        let distributed_explain = match &plan {
            LogicalPlan::Explain(explain) => explain_distributed(ctx, explain).await?,
            _ => None,
        };
        let df = match distributed_explain {
            Some(batch) => ctx.read_batch(batch)?,
            None => ctx.execute_logical_plan(plan).await?,
        };
        if let Some(done) = done {
            df.collect().await?;
            if options.format == PrintFormat::Table {
                writeln!(out, "{done}")?;
            }
            continue;
        }
        print_rows(df, options, out, started).await?;
    }
    Ok(())
}

/// Prints the rows of `df` to `out` as they come.
async fn print_rows(
    df: DataFrame,
    options: &PrintOptions,
    out: &mut dyn std::io::Write,
    started: std::time::Instant,
) -> Result<(), EngineError> {
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let mut batches = df.execute_stream().await?;
    let mut printer = options.printer(out, &schema, started);
    while let Some(batch) = batches.next().await {
        printer.write(&batch?)?;
    }
    printer.finish()?;
    Ok(())
}

/// What a statement that returns no rows prints once it has run, as psql's command tags
/// do (`CREATE VIEW v`); `None` for a query.
fn confirmation(plan: &LogicalPlan) -> Option<String> {
    Some(match plan {
        LogicalPlan::Ddl(ddl) => match ddl {
            DdlStatement::CreateExternalTable(t) => format!("CREATE EXTERNAL TABLE {}", t.name),
            DdlStatement::CreateMemoryTable(t) => format!("CREATE TABLE {}", t.name),
            DdlStatement::CreateView(v) => format!("CREATE VIEW {}", v.name),
            DdlStatement::DropTable(t) => format!("DROP TABLE {}", t.name),
            DdlStatement::DropView(v) => format!("DROP VIEW {}", v.name),
            DdlStatement::CreateCatalogSchema(c) => format!("CREATE SCHEMA {}", c.schema_name),
            DdlStatement::DropCatalogSchema(c) => format!("DROP SCHEMA {}", c.name),
            other => other.name().to_owned(),
        },
        LogicalPlan::Statement(PlanStatement::SetVariable(set)) => format!("SET {}", set.variable),
        LogicalPlan::Statement(PlanStatement::ResetVariable(reset)) => format!("RESET {}", reset.variable),
        LogicalPlan::Statement(other) => other.name().to_owned(),
        _ => return None,
    })
}

/// The lake's tables are written only by the commands that commit: an `INSERT` into one
/// of them, or a `COPY … TO` a path inside the lake, is refused before it runs. (The
/// object store of [`super::committed`] refuses such writes too, whatever the path.)
fn refuse_lake_writes(plan: &LogicalPlan, lake: &Lake) -> Result<(), EngineError> {
    let target = match plan {
        LogicalPlan::Dml(dml) if Table::ALL.iter().any(|t| t.dir_name() == dml.table_name.table()) => {
            format!("table {}", dml.table_name)
        }
        LogicalPlan::Copy(copy) => {
            let path = std::path::Path::new(copy.output_url.strip_prefix("file://").unwrap_or(&copy.output_url));
            let path = std::path::absolute(path)?;
            let root = std::path::absolute(lake.root())?;
            let canonical_root = lake.root().canonicalize().unwrap_or_else(|_| root.clone());
            if !path.starts_with(&root) && !path.starts_with(&canonical_root) {
                return Ok(());
            }
            copy.output_url.clone()
        }
        _ => return Ok(()),
    };
    Err(EngineError::ReadOnlyLake(target))
}

/// Runs every statement in `sql` in order, calling `each` with each statement's results.
pub async fn run_statements(
    ctx: &SessionContext,
    sql: &str,
    mut each: impl FnMut(SchemaRef, Vec<RecordBatch>) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    for mut statement in parse_statements(sql)? {
        let plan = plan_statement(ctx, &mut statement).await.map_err(|e| planning_error(ctx, e, Some(&statement)))?;
        let df = ctx.execute_logical_plan(plan).await?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        each(schema, batches)?;
    }
    Ok(())
}
