//! Sessions in buckets of bounded size, so that memory stays bounded on large lakes and
//! the cores share the work.
//!
//! Chains never cross sessions, so the sessions of `analysis_events` can be analyzed a
//! bucket at a time, and buckets side by side. With more than one bucket, the events the
//! chains need are read from the lake once and written to temporary Arrow files, per
//! bucket (by a hash of the session) one per scan partition; each bucket then reads only
//! its own files, in a session of its own.

use std::fs::File;
use std::future::Future;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::BatchCoalescer;
use datafusion::arrow::datatypes::{Int64Type, Schema, SchemaRef};
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::catalog::MemoryCatalogProviderList;
use datafusion::datasource::file_format::options::ArrowReadOptions;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::SessionContext;
use futures::{Stream, StreamExt, TryStreamExt};
use tempfile::TempDir;

use super::DetectError;

/// Sessions are analyzed in buckets of about this many events, one per core at a time: an
/// analysis of 10M events then peaks at ≈ 490 MB on 2 cores (≈ 570 MB with buckets of
/// 250k, no faster there; BENCHMARKS.md).
pub const DEFAULT_BUCKET_EVENTS: u64 = 125_000;

/// With fewer events one bucket is analyzed in less time than it takes to split them.
const SHARED_MIN_EVENTS: u64 = 100_000;

/// The columns of `events` that `sql/chains.sql` reads.
const CHAIN_COLUMNS: &str = "stream_seq, id, ts, agent, session, type, content, tool_name, tool_params, tool_error, tool_is_error";

/// The buckets of one analysis.
pub(crate) struct Buckets {
    count: u64,
    /// Holds a `bucket-N/` directory of Arrow files per bucket with events; none for a
    /// single bucket.
    spilled: Option<TempDir>,
}

impl Buckets {
    /// Splits the sessions of `analysis_events` into buckets of about `bucket_events`
    /// events (0: the default), and into one per core (of `ctx`) when there are enough
    /// events to share.
    pub async fn split(ctx: &SessionContext, bucket_events: u64) -> Result<Self, DetectError> {
        let batches = ctx.sql("SELECT count(*) FROM analysis_events").await?.collect().await?;
        let events = batches.first().map_or(0, |b| b.column(0).as_primitive::<Int64Type>().value(0)) as u64;
        let size = if bucket_events == 0 { DEFAULT_BUCKET_EVENTS } else { bucket_events };
        let cores = ctx.state().config().target_partitions() as u64;
        let count = events.div_ceil(size).max(if events >= SHARED_MIN_EVENTS { cores } else { 1 });
        if count == 1 {
            return Ok(Self { count, spilled: None });
        }
        let temp = std::env::temp_dir();
        remove_abandoned(&temp);
        let prefix = format!("{DIR_PREFIX}{}-", std::process::id());
        let dir = tempfile::Builder::new().prefix(&prefix).tempdir_in(&temp).map_err(DetectError::Spill)?;
        let query = format!("SELECT {CHAIN_COLUMNS}, CAST(key_hash(session) % CAST({count} AS BIGINT UNSIGNED) AS BIGINT) AS bucket FROM analysis_events");
        let df = ctx.sql(&query).await?;
        // The bucket column is last; the files hold the others, every one nullable (how
        // execution marks them need not match the plan).
        let planned = df.schema().as_arrow();
        let fields = planned.fields().iter().take(planned.fields().len() - 1);
        let schema: SchemaRef = Arc::new(Schema::new(fields.map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>()));
        // Each partition of the scan is split on its own thread, into its own file per
        // bucket: a bucket is then read back in as many partitions.
        let tasks: Vec<_> = df
            .execute_stream_partitioned()
            .await?
            .into_iter()
            .enumerate()
            .map(|(part, mut stream)| {
                let mut files = BucketFiles::new(dir.path(), part, count as usize, Arc::clone(&schema));
                tokio::spawn(async move {
                    while let Some(batch) = stream.next().await {
                        files.write(&batch?)?;
                    }
                    files.finish()
                })
            })
            .collect();
        for task in futures::future::join_all(tasks).await {
            task??;
        }
        // What the split freed is not kept while the buckets run.
        crate::memory::release_freed();
        Ok(Self { count, spilled: Some(dir) })
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Removes the bucket files on a blocking thread (freeing their pages takes a while),
    /// done when the returned task is.
    pub fn remove(self) -> tokio::task::JoinHandle<()> {
        tokio::task::spawn_blocking(move || drop(self.spilled))
    }

    /// Runs `work` on the session of each bucket with events, as many buckets at a time as
    /// `ctx` has cores, each query of a bucket in a share of them: the results in bucket
    /// order. With one bucket the session is `ctx` itself.
    pub fn run<'a, T, W, F>(&'a self, ctx: &'a SessionContext, work: W) -> impl Stream<Item = Result<T, DetectError>> + 'a
    where
        W: Fn(SessionContext) -> F + 'a,
        F: Future<Output = Result<T, DetectError>> + Send + 'static,
        T: Send + 'static,
    {
        let cores = ctx.state().config().target_partitions();
        let workers = cores.min(self.count as usize).max(1);
        futures::stream::iter(0..self.count)
            .then(move |bucket| self.session(ctx, bucket, (cores / workers).max(1)))
            .try_filter_map(|session| std::future::ready(Ok(session)))
            .map_ok(move |session| {
                let task = tokio::spawn(work(session));
                async move { task.await? }
            })
            .try_buffered(workers)
    }

    /// A session whose `analysis_events` are the events of bucket `bucket` (none when it has
    /// no events), running each query in `partitions`: `ctx` itself with one bucket, else a
    /// session of its own.
    async fn session(&self, ctx: &SessionContext, bucket: u64, partitions: usize) -> Result<Option<SessionContext>, DetectError> {
        let Some(dir) = &self.spilled else { return Ok(Some(ctx.clone())) };
        let path = bucket_dir(dir.path(), bucket as usize);
        if !path.is_dir() {
            return Ok(None);
        }
        let session = separate_session(ctx, partitions).await?;
        session.register_arrow("analysis_bucket", &format!("{}/", path.display()), ArrowReadOptions::default()).await?;
        session.sql("CREATE OR REPLACE VIEW analysis_events AS SELECT * FROM analysis_bucket").await?.collect().await?;
        Ok(Some(session))
    }
}

/// A session with the functions, settings and tables of `ctx` but a catalog of its own:
/// what it registers is not seen by `ctx`.
async fn separate_session(ctx: &SessionContext, partitions: usize) -> Result<SessionContext, DetectError> {
    let state = ctx.state();
    let config = state.config().clone().with_create_default_catalog_and_schema(true).with_target_partitions(partitions);
    let separate = SessionStateBuilder::new_from_existing(state.clone())
        .with_catalog_list(Arc::new(MemoryCatalogProviderList::new()))
        .with_config(config)
        .build();
    let session = SessionContext::new_with_state(separate);
    let catalog = &state.config().options().catalog;
    let tables = state.catalog_list().catalog(&catalog.default_catalog).and_then(|c| c.schema(&catalog.default_schema));
    if let Some(tables) = tables {
        for name in tables.table_names() {
            if let Some(table) = tables.table(&name).await? {
                session.register_table(name.as_str(), table)?;
            }
        }
    }
    Ok(session)
}

/// Bucket directories are named `tracelake-buckets-PID-…`, after the process that made them.
const DIR_PREFIX: &str = "tracelake-buckets-";

/// Removes the bucket directories in `temp` of analyses that could not remove them (killed):
/// those whose process is gone. Only where processes can be looked up in `/proc`.
fn remove_abandoned(temp: &Path) {
    let processes = Path::new("/proc");
    let (true, Ok(entries)) = (processes.join("self").exists(), std::fs::read_dir(temp)) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)).and_then(|rest| rest.split('-').next());
        if let Some(pid) = pid.filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            && !processes.join(pid).exists()
        {
            // Another analysis may remove it at the same time: failing is fine.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The directory of a bucket's files (one per scan partition with rows of the bucket).
fn bucket_dir(dir: &Path, bucket: usize) -> PathBuf {
    dir.join(format!("bucket-{bucket}"))
}

/// The Arrow file of each bucket written by one scan partition, created with its first
/// rows. A scan batch holds a few rows of each bucket: they are gathered into batches of
/// [`FILE_BATCH_ROWS`] before they are written, so that a bucket is read back in batches
/// of the usual size, not in thousands of slivers.
struct BucketFiles {
    dir: PathBuf,
    part: usize,
    schema: SchemaRef,
    buckets: Vec<BucketFile>,
}

/// Rows per batch in the bucket files (DataFusion's default batch size).
const FILE_BATCH_ROWS: usize = 8192;

struct BucketFile {
    writer: Option<FileWriter<BufWriter<File>>>,
    pending: BatchCoalescer,
}

impl BucketFiles {
    fn new(dir: &Path, part: usize, count: usize, schema: SchemaRef) -> Self {
        let bucket = || BucketFile { writer: None, pending: BatchCoalescer::new(Arc::clone(&schema), FILE_BATCH_ROWS) };
        Self { dir: dir.to_owned(), part, buckets: (0..count).map(|_| bucket()).collect(), schema }
    }

    /// Appends each row of `batch` (the chain columns, then the bucket) to its bucket's file.
    fn write(&mut self, batch: &RecordBatch) -> Result<(), DetectError> {
        let buckets = batch.column(batch.num_columns() - 1).as_primitive::<Int64Type>();
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.buckets.len()];
        for (row, bucket) in buckets.values().iter().enumerate() {
            rows[*bucket as usize].push(row as u32);
        }
        let columns = RecordBatch::try_new(Arc::clone(&self.schema), batch.columns()[..batch.num_columns() - 1].to_vec())?;
        for (bucket, rows) in rows.into_iter().enumerate().filter(|(_, rows)| !rows.is_empty()) {
            self.buckets[bucket].pending.push_batch_with_indices(columns.clone(), &UInt32Array::from(rows))?;
            self.write_completed(bucket)?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), DetectError> {
        for bucket in 0..self.buckets.len() {
            self.buckets[bucket].pending.finish_buffered_batch()?;
            self.write_completed(bucket)?;
            if let Some(writer) = self.buckets[bucket].writer.as_mut() {
                writer.finish()?;
            }
        }
        Ok(())
    }

    fn write_completed(&mut self, bucket: usize) -> Result<(), DetectError> {
        let file = &mut self.buckets[bucket];
        while let Some(part) = file.pending.next_completed_batch() {
            if file.writer.is_none() {
                let dir = bucket_dir(&self.dir, bucket);
                std::fs::create_dir_all(&dir).map_err(DetectError::Spill)?;
                let created = File::create(dir.join(format!("part-{}.arrow", self.part))).map_err(DetectError::Spill)?;
                file.writer = Some(FileWriter::try_new(BufWriter::new(created), &self.schema)?);
            }
            file.writer.as_mut().expect("just created").write(&part)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_directories_of_ended_processes_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let make = |name: &str| {
            let dir = temp.path().join(name);
            std::fs::create_dir_all(dir.join("bucket-0")).unwrap();
            std::fs::write(dir.join("bucket-0/part-0.arrow"), b"rows").unwrap();
            dir
        };
        // No process has a number this high (Linux allows at most 2^22).
        let ended = make(&format!("{DIR_PREFIX}99999999-abc"));
        let running = make(&format!("{DIR_PREFIX}{}-abc", std::process::id()));
        let older_naming = make(&format!("{DIR_PREFIX}abc123"));
        let other = make("something-else-99999999");
        remove_abandoned(temp.path());
        assert!(!ended.exists());
        assert!(running.exists() && older_naming.exists() && other.exists());
    }
}
