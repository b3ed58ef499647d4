//! sqllogictest files (`tests/sql/*.slt`): the SQL behaviour of tracelake, its chain
//! views and its detectors, as tables in and tables out.
//!
//! Each file runs in a session with every tracelake UDF. A file describes events as a
//! table `trace` with the columns it needs (`n` numbers the events in time; `session`,
//! `agent`, `schema` (default `A`), `content`, `tool_name`, `tool_params`, `tool_error`, `tool_is_error` are
//! optional); whenever `trace` is created, `events` is rebuilt from it, and the chain
//! views and a view per built-in detector (`sig_correction`, `sig_tool_fail`, …) are
//! defined over it anew. Whenever one of the tables behind `rule_effectiveness` and
//! `signal_scores` (and `session_factors`) is created (`runs`, `outputs`, `findings`, `outcomes`; with `CREATE OR
//! REPLACE TABLE`, as the session has them, empty), those views are defined anew.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::SessionContext;
use sqllogictest::harness::{Arguments, Failed, Trial};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use tracelake::detect::builtin_detectors;
use tracelake::engine::cortex::cortex_messages_sql;
use tracelake::engine::run_statements;
use tracelake::engine::session::{EngineOptions, memory_session};
use tracelake::engine::sql::{
    CHAIN_VIEWS, CHAINS, CORTEX, INFERRED_OUTCOMES, RULE_EFFECTIVENESS, SESSION_FACTORS, SESSION_OUTCOMES, SIGNAL_SCORES,
};

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/sql exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .slt file in {}", dir.display());
    let tests = files
        .into_iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            Trial::test(name, move || run_file(&path))
        })
        .collect();
    sqllogictest::harness::run(&Arguments::from_args(), tests).exit();
}

fn run_file(path: &Path) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let ctx = memory_session(Vec::new(), tracelake::redact::Redactor::builtin(), &EngineOptions::default()).await?;
        let mut runner = sqllogictest::Runner::new(move || {
            let ctx = ctx.clone();
            async move { Ok(Tracelake { ctx }) }
        });
        runner.run_file_async(path).await?;
        Ok::<_, Failed>(())
    })
}

struct Tracelake {
    ctx: SessionContext,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct SqlError(String);

fn err(e: impl std::fmt::Display) -> SqlError {
    SqlError(e.to_string())
}

/// The columns `events` needs from `trace`, with what stands in for a missing one.
const EVENT_COLUMNS: [(&str, &str); 18] = [
    ("stream_seq", "CAST(n AS BIGINT UNSIGNED)"),
    ("id", "'e' || CAST(n AS VARCHAR)"),
    ("ts", "to_timestamp_millis(CAST(1767225600000 + n * 1000 AS BIGINT))"),
    ("agent", "'agent'"),
    ("session", "'s1'"),
    ("type", "NULL"),
    ("schema", "'A'"),
    ("content", "CAST(NULL AS VARCHAR)"),
    ("tool_name", "CAST(NULL AS VARCHAR)"),
    ("tool_params", "CAST(NULL AS VARCHAR)"),
    ("tool_result", "CAST(NULL AS VARCHAR)"),
    ("tool_error", "CAST(NULL AS VARCHAR)"),
    ("tool_is_error", "CAST(NULL AS BOOLEAN)"),
    ("model", "CAST(NULL AS VARCHAR)"),
    ("provider", "CAST(NULL AS VARCHAR)"),
    ("channel", "CAST(NULL AS VARCHAR)"),
    ("from", "CAST(NULL AS VARCHAR)"),
    ("n", "n"),
];

impl Tracelake {
    /// `events` from `trace`, then the chain views and one view per built-in detector.
    async fn define_over_trace(&self) -> Result<(), SqlError> {
        let trace = self.ctx.table("trace").await.map_err(err)?;
        let has = |c: &str| trace.schema().has_column_with_unqualified_name(c);
        let columns: Vec<String> = EVENT_COLUMNS
            .iter()
            .map(|(name, default)| match *name {
                "ts" if has("ts") => "ts".to_owned(),
                name if has(name) && name != "stream_seq" && name != "id" => format!("\"{name}\""),
                _ => format!("{default} AS \"{name}\""),
            })
            .collect();
        let params = EngineOptions::default().sql_params;
        let mut sql = format!(
            "CREATE OR REPLACE VIEW events AS SELECT {} FROM trace;\nCREATE OR REPLACE VIEW analysis_events AS SELECT * FROM events;\n",
            columns.join(", ")
        );
        sql.push_str(&params.fill(CHAINS));
        sql.push_str(&params.fill(CHAIN_VIEWS));
        self.ctx.deregister_table("events").map_err(err)?;
        run_statements(&self.ctx, &sql, |_, _| Ok(())).await.map_err(err)?;
        for detector in builtin_detectors() {
            let view = detector.name.to_lowercase().replace('-', "_");
            let sql = format!("CREATE OR REPLACE VIEW {view} AS {}", params.fill(&detector.sql));
            run_statements(&self.ctx, &sql, |_, _| Ok(())).await.map_err(err)?;
        }
        self.define_output_views().await
    }

    /// `rule_effectiveness` and `signal_scores` over the tables as they are now.
    async fn define_output_views(&self) -> Result<(), SqlError> {
        let params = EngineOptions::default().sql_params;
        let cortex_messages = format!("CREATE OR REPLACE VIEW cortex_messages AS {}", cortex_messages_sql(false));
        for sql in [RULE_EFFECTIVENESS, SESSION_OUTCOMES, INFERRED_OUTCOMES, SIGNAL_SCORES, SESSION_FACTORS, &cortex_messages, CORTEX] {
            run_statements(&self.ctx, &params.fill(sql), |_, _| Ok(())).await.map_err(err)?;
        }
        Ok(())
    }
}

/// The table a statement creates, if it is a `CREATE [OR REPLACE] TABLE`.
fn created_table(words: &[String]) -> Option<&str> {
    if words.first()? != "create" {
        return None;
    }
    words.iter().skip_while(|w| *w != "table").nth(1)?.split('(').next()
}

#[async_trait]
impl AsyncDB for Tracelake {
    type Error = SqlError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlError> {
        let mut results: Option<(Arc<datafusion::arrow::datatypes::Schema>, Vec<RecordBatch>)> = None;
        run_statements(&self.ctx, sql, |schema, batches| {
            results = Some((schema, batches));
            Ok(())
        })
        .await
        .map_err(err)?;
        let words: Vec<String> = sql.split_whitespace().take(6).map(str::to_lowercase).collect();
        match created_table(&words) {
            Some("trace") => self.define_over_trace().await?,
            Some("runs" | "outputs" | "findings" | "outcomes") => self.define_output_views().await?,
            _ => {}
        }
        let Some((schema, batches)) = results.filter(|(schema, _)| !schema.fields().is_empty()) else {
            return Ok(DBOutput::StatementComplete(0));
        };
        let types = schema.fields().iter().map(|f| column_type(f.data_type())).collect();
        Ok(DBOutput::Rows { types, rows: rows_as_text(&batches)? })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "tracelake"
    }
}

fn column_type(data_type: &DataType) -> DefaultColumnType {
    match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => DefaultColumnType::Integer,
        DataType::Float32 | DataType::Float64 | DataType::Decimal128(_, _) => DefaultColumnType::FloatingPoint,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
    }
}

/// Values as sqllogictest files write them: `NULL`, `(empty)` for an empty string.
fn rows_as_text(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, SqlError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let formatters: Vec<ArrayFormatter> =
            batch.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &options)).collect::<Result<_, _>>().map_err(err)?;
        for row in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| {
                        let text = f.value(row).to_string();
                        if text.is_empty() { "(empty)".to_owned() } else { text }
                    })
                    .collect(),
            );
        }
    }
    Ok(rows)
}
