//! Sessions in buckets of bounded size, so that memory stays bounded on large lakes.
//!
//! Chains never cross sessions, so the sessions of `analysis_events` can be analyzed a
//! bucket at a time. When one bucket is not enough, the events the chains need are read
//! from the lake once and written to temporary Arrow files, one directory per bucket (by a
//! hash of the session); each bucket then reads only its own file instead of the whole lake.

use std::path::PathBuf;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::datasource::file_format::options::ArrowReadOptions;
use datafusion::prelude::SessionContext;
use tempfile::TempDir;

use super::DetectError;

/// Sessions are analyzed in buckets of about this many events.
pub(crate) const DEFAULT_BUCKET_EVENTS: u64 = 1_000_000;

/// The columns of `events` that `sql/chains.sql` reads.
const CHAIN_COLUMNS: &str = "stream_seq, id, ts, agent, session, type, content, tool_name, tool_params, tool_error, tool_is_error";

/// The buckets of one analysis.
pub(crate) struct Buckets {
    count: u64,
    /// Holds `bucket=N/` directories of Arrow files; none for a single bucket.
    spilled: Option<TempDir>,
}

impl Buckets {
    /// Splits the sessions of `analysis_events` into buckets of about `bucket_events`
    /// events (0: the default).
    pub async fn split(ctx: &SessionContext, bucket_events: u64) -> Result<Self, DetectError> {
        let batches = ctx.sql("SELECT count(*) FROM analysis_events").await?.collect().await?;
        let events = batches.first().map_or(0, |b| b.column(0).as_primitive::<Int64Type>().value(0)) as u64;
        let size = if bucket_events == 0 { DEFAULT_BUCKET_EVENTS } else { bucket_events };
        let count = events.div_ceil(size).max(1);
        if count == 1 {
            return Ok(Self { count, spilled: None });
        }
        let dir = tempfile::Builder::new().prefix("tracelake-buckets-").tempdir().map_err(DetectError::Spill)?;
        let path = format!("{}/", dir.path().display()).replace('\'', "''");
        let copy = format!(
            "COPY (SELECT {CHAIN_COLUMNS}, CAST(key_hash(session) % {count} AS BIGINT) AS bucket FROM analysis_events) \
             TO '{path}' STORED AS ARROW PARTITIONED BY (bucket)"
        );
        ctx.sql(&copy).await?.collect().await?;
        Ok(Self { count, spilled: Some(dir) })
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Makes `analysis_events` the events of bucket `bucket`; false when it has none.
    pub async fn select(&self, ctx: &SessionContext, bucket: u64) -> Result<bool, DetectError> {
        let Some(dir) = &self.spilled else { return Ok(true) };
        let path: PathBuf = dir.path().join(format!("bucket={bucket}"));
        if !path.is_dir() {
            return Ok(false);
        }
        ctx.deregister_table("analysis_bucket")?;
        ctx.register_arrow("analysis_bucket", format!("{}/", path.display()), ArrowReadOptions::default()).await?;
        ctx.sql("CREATE OR REPLACE VIEW analysis_events AS SELECT * FROM analysis_bucket").await?.collect().await?;
        Ok(true)
    }
}
