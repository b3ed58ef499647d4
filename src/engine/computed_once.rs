//! A view that several queries read, computed once: its rows written to a Parquet file of
//! this process ([`write_rows`]), which the session reads in the view's place until the
//! value is dropped.
//! A file rather than memory, so that what the view holds stays out of the heap and the
//! queries over it still spill under the memory pool.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Field, Schema, UInt64Type};
use datafusion::catalog::TableProvider;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use super::EngineError;
use crate::temp_dirs::ProcessTempDir;

/// One view computed once, read in its place while this lives.
pub struct ComputedOnce {
    ctx: SessionContext,
    view: String,
    /// The view itself, registered again on drop.
    original: Arc<dyn TableProvider>,
    /// The rows computed.
    pub rows: u64,
    _dir: ProcessTempDir,
}

impl ComputedOnce {
    /// Computes `view` now; `ctx` reads the rows computed until the value is dropped.
    pub async fn new(ctx: &SessionContext, view: &str) -> Result<Self, EngineError> {
        let original = ctx.table_provider(view).await?;
        let dir = ProcessTempDir::new("view")?;
        let (computed, rows) = write_rows(ctx, view, &dir).await?;
        ctx.deregister_table(view)?;
        ctx.register_table(view, computed)?;
        Ok(Self { ctx: ctx.clone(), view: view.to_owned(), original, rows, _dir: dir })
    }
}

/// `view`'s rows written to a Parquet file in `dir`: a table that reads them, and how many
/// there are. The table has the view's column types (a Parquet file's strings would
/// otherwise be read as string views, which not every function takes), every column
/// nullable, as execution may make any. Nothing is registered, so that the caller can put
/// the table in the view's place with no await between.
pub async fn write_rows(ctx: &SessionContext, view: &str, dir: &ProcessTempDir) -> Result<(Arc<dyn TableProvider>, u64), EngineError> {
    let rows = ctx.table(view).await?;
    let schema = Schema::new(rows.schema().as_arrow().fields().iter().map(|f| Field::clone(f).with_nullable(true)).collect::<Vec<_>>());
    let path = dir.path().join(format!("{view}.parquet"));
    let path = path.to_string_lossy();
    let written = rows.write_parquet(&path, DataFrameWriteOptions::new().with_single_file_output(true), None).await?;
    let table = ctx.read_parquet(&*path, ParquetReadOptions::default().schema(&schema)).await?.into_view();
    Ok((table, written_rows(&written)))
}

impl Drop for ComputedOnce {
    fn drop(&mut self) {
        // Neither call fails on the session's own catalog, which holds the name.
        let _ = self.ctx.deregister_table(&self.view);
        let _ = self.ctx.register_table(&self.view, Arc::clone(&self.original));
    }
}

/// The row count a write reports (one row, one `count` column).
fn written_rows(batches: &[RecordBatch]) -> u64 {
    batches.iter().filter_map(|b| b.column(0).as_primitive_opt::<UInt64Type>()).flat_map(|c| c.iter().flatten()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::query_json;

    #[tokio::test]
    async fn reads_the_rows_computed_once_and_the_view_again_once_dropped() {
        let ctx = SessionContext::new();
        ctx.sql("CREATE TABLE t AS VALUES (1), (2), (3)").await.unwrap().collect().await.unwrap();
        ctx.sql("CREATE VIEW v AS SELECT column1 AS n FROM t WHERE column1 > 1").await.unwrap().collect().await.unwrap();
        let count = |ctx: SessionContext| async move { query_json(&ctx, "SELECT count(*) AS n FROM v").await.unwrap()[0]["n"].clone() };

        let once = ComputedOnce::new(&ctx, "v").await.unwrap();
        assert_eq!(once.rows, 2);
        ctx.sql("INSERT INTO t VALUES (4)").await.unwrap().collect().await.unwrap();
        assert_eq!(count(ctx.clone()).await, 2, "the rows as computed, not the view over the changed table");
        drop(once);
        assert_eq!(count(ctx.clone()).await, 3, "the view again");
    }
}
