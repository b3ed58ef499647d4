//! The SQL engine: one DataFusion session over the lake, with the lake's tables and
//! tracelake's UDFs registered.

pub mod chains;
pub mod committed;
pub mod computed_once;
pub mod copy_options;
pub mod cortex;
pub mod distributed;
pub mod duckdb_forms;
pub mod duckdb_functions;
pub mod duckdb_names;
pub mod files;
pub mod fit_table;
pub mod from_first;
pub mod functions;
pub mod order_by_all;
pub mod pragmas;
pub mod print;
pub mod read_calls;
pub mod read_functions;
pub mod samples;
pub mod select_aliases;
pub mod session;
pub mod session_job;
pub mod sql;
pub mod sql_text;
pub mod summarize;
pub mod text_tests_last;
pub mod window_memory;

pub use print::{PrintFormat, PrintOptions};
pub use session::{EngineOptions, did_you_mean, nearest_table, open_session, print_statements, run_statements};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    /// SQL that does not parse: the parser's words, with the line and column.
    #[error("SQL syntax error: {0}")]
    Syntax(String),
    #[error("no lake at {0}: import events first (`tracelake import --lake DIR FILE.jsonl`) or run `tracelake demo`")]
    NoLake(std::path::PathBuf),
    #[error("no table, view or file named {0}: a quoted name with an extension is read as a file path (Parquet, CSV, TSV, JSON)")]
    NoSuchFile(String),
    /// A read function's call that cannot be read, in its own words.
    #[error("{0}")]
    ReadCall(String),
    /// A sample clause that cannot be taken, with what to write instead.
    #[error("{0}")]
    Sample(String),
    /// DuckDB's options of `COPY … TO` that cannot be taken, with those that can.
    #[error("{0}")]
    Copy(String),
    /// DuckDB's pragmas that are not taken, with those that are.
    #[error("{0}")]
    Pragma(String),
    #[error("no table or view named {name}{}; `SHOW TABLES` lists them", did_you_mean(nearest.as_deref()))]
    NoSuchTable { name: String, nearest: Option<String> },
    #[error("no column named {name}{}", column_hint(nearest, columns))]
    NoSuchColumn { name: String, nearest: Vec<String>, columns: Vec<String> },
    #[error(
        "{name} is a window function's value, which WHERE cannot test (it is computed after the WHERE): test it in QUALIFY, as in `… QUALIFY {filter}`"
    )]
    WindowAliasInWhere { name: String, filter: String },
    #[error("{0} is a window function: call it with OVER (…) (`tracelake functions {0}` shows how)")]
    WindowWithoutOver(String),
    #[error("{name} is DuckDB's; here write {}", .instead.join(" or "))]
    DuckDbFunction { name: String, instead: Vec<String> },
    #[error("writing results: {0}")]
    Output(#[from] std::io::Error),
    #[error(transparent)]
    Lake(#[from] crate::lake::LakeError),
    #[error(
        "{0} is in the lake, which is written only by tracelake import, export and analyze; write query results elsewhere (`COPY (SELECT …) TO '/tmp/x.parquet'`)"
    )]
    ReadOnlyLake(String),
    #[error("the lake path {0} cannot be read as a file URL: {1}")]
    LakePath(std::path::PathBuf, #[source] object_store::path::Error),
    #[error("{0}")]
    Patterns(#[from] tracelake_udfs::PatternError),
    #[error("{worker} is not a worker URL: write host:port or http://host:port")]
    NotAWorkerUrl {
        worker: String,
        #[source]
        source: url::ParseError,
    },
    #[error(transparent)]
    WorkerUnreachable(#[from] distributed::WorkerUnreachable),
    #[error("listening for the coordinator on {listen}")]
    Listen {
        listen: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving the coordinator on {listen}")]
    Serve {
        listen: std::net::SocketAddr,
        #[source]
        source: tonic::transport::Error,
    },
    #[error("formatting results: {0}")]
    Format(#[from] datafusion::arrow::error::ArrowError),
    #[error("cannot write the session buckets to a temporary directory: {0}")]
    Spill(#[source] std::io::Error),
    #[error(transparent)]
    TempDir(#[from] crate::temp_dirs::TempDirError),
    #[error("a worker of the analysis stopped: {0}")]
    Worker(#[source] tokio::task::JoinError),
    #[error("a row of {query} does not read as expected: {source}")]
    Row {
        query: &'static str,
        #[source]
        source: serde_json::Error,
    },
}

/// What follows an unknown column's name: the columns it likely meant (` (did you mean a
/// or b?)`), or else every column there is.
fn column_hint(nearest: &[String], columns: &[String]) -> String {
    match nearest {
        [] if columns.is_empty() => String::new(),
        [] => format!("; the columns here are {}", columns.join(", ")),
        [one] => did_you_mean(Some(one)),
        [some @ .., last] => format!(" (did you mean {} or {last}?)", some.join(", ")),
    }
}

/// Whether `error`, under whatever context, is the memory pool's refusal.
pub fn pool_exhausted(error: &datafusion::error::DataFusionError) -> bool {
    matches!(error.find_root(), datafusion::error::DataFusionError::ResourcesExhausted(_))
}

/// The rows of a (small) query result as JSON objects.
pub async fn query_json(ctx: &datafusion::prelude::SessionContext, sql: &str) -> Result<Vec<serde_json::Value>, EngineError> {
    batches_json(&ctx.sql(sql).await?.collect().await?)
}

/// The rows of (small) `batches` as JSON objects.
pub fn batches_json(batches: &[datafusion::arrow::array::RecordBatch]) -> Result<Vec<serde_json::Value>, EngineError> {
    let mut buffer = Vec::new();
    let mut writer = datafusion::arrow::json::ArrayWriter::new(&mut buffer);
    for batch in batches {
        writer.write(batch)?;
    }
    writer.finish()?;
    if buffer.is_empty() {
        return Ok(Vec::new());
    }
    Ok(serde_json::from_slice(&buffer).expect("the Arrow JSON writer writes JSON"))
}
