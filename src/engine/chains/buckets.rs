//! Sessions in buckets of bounded size, so that memory stays bounded on large lakes and
//! the cores share the work.
//!
//! Chains never cross sessions, so the sessions of `analysis_events` can be analyzed a
//! bucket at a time, and buckets side by side. The events the chains need are read from
//! the lake once and split by a hash of the session: kept in memory for smaller lakes,
//! else written to temporary Arrow files, per bucket one per scan partition. Each bucket is
//! then analyzed with the same plans ([`super::bucket_plans`]).

use std::fs::File;
use std::future::Future;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::BatchCoalescer;
use datafusion::arrow::datatypes::{Int64Type, Schema, SchemaRef};
use datafusion::arrow::ipc::reader::FileReader;
use datafusion::arrow::ipc::writer::FileWriter;
use datafusion::prelude::SessionContext;
use futures::{Stream, StreamExt};

use crate::engine::{EngineError, query_json};
use crate::temp_dirs::ProcessTempDir;

/// Sessions are analyzed in buckets (an analysis's shares) of about this many events, one
/// per core at a time: an analysis of 10M events then peaks at ≈ 550 MiB on 2 cores.
/// (Smaller buckets take more memory while the lake is spread, larger ones while they are
/// analyzed; none is clearly faster: BENCHMARKS.md.)
pub const DEFAULT_BUCKET_EVENTS: u64 = 80_000;

/// Below this many events a lake is one bucket: splitting it for the cores does not pay.
const SHARED_MIN_EVENTS: u64 = 100_000;

/// The columns of `events` that `sql/chains.sql` reads, and whether the event is new to
/// the analysis (`fresh`: the cortex reads those).
pub const CHAIN_COLUMNS: &str = "stream_seq, id, ts, agent, session, type, schema, content, tool_name, tool_params, tool_result, \
                             tool_error, tool_is_error, \"from\", fresh";

/// `schema` with every column nullable: how execution marks columns need not match the
/// plan, and the plans of a bucket's rows are made once for all buckets.
pub fn nullable(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new(schema.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>()))
}

/// Lakes of up to this many events keep their buckets in memory; larger ones write them
/// to temporary files, so that memory stays bounded.
const IN_MEMORY_MAX_EVENTS: u64 = 2_000_000;

/// The buckets of one analysis: the events of `analysis_events` that chains need (the
/// [`CHAIN_COLUMNS`]), split by session.
pub struct Buckets {
    count: u64,
    schema: SchemaRef,
    events: Events,
}

enum Events {
    /// Each bucket's batches, taken when it runs.
    InMemory(Mutex<Vec<Vec<RecordBatch>>>),
    /// A `bucket-N/` directory of Arrow files per bucket with events.
    Spilled(ProcessTempDir),
}

/// The events of `analysis_events`, and how many buckets their sessions go in: about
/// `bucket_events` events each (0: the default), and at least one per core of `ctx` when
/// there are enough events to share.
pub async fn count_analysis_events(ctx: &SessionContext, bucket_events: u64) -> Result<(u64, u64), EngineError> {
    let counted = query_json(ctx, "SELECT count(*) AS n FROM analysis_events").await?;
    let events = counted.first().and_then(|r| r["n"].as_u64()).unwrap_or(0);
    let size = if bucket_events == 0 { DEFAULT_BUCKET_EVENTS } else { bucket_events };
    let cores = ctx.state().config().target_partitions() as u64;
    Ok((events, events.div_ceil(size).max(if events >= SHARED_MIN_EVENTS { cores } else { 1 }).max(1)))
}

impl Buckets {
    /// Splits the sessions of `analysis_events` into buckets ([`count_analysis_events`]).
    pub async fn split(ctx: &SessionContext, bucket_events: u64) -> Result<Self, EngineError> {
        Self::split_keeping(ctx, bucket_events, IN_MEMORY_MAX_EVENTS).await
    }

    /// [`Self::split`], keeping the buckets in memory up to `in_memory_max` events.
    async fn split_keeping(ctx: &SessionContext, bucket_events: u64, in_memory_max: u64) -> Result<Self, EngineError> {
        let (events, count) = count_analysis_events(ctx, bucket_events).await?;
        let dir = if events > in_memory_max { Some(ProcessTempDir::new("buckets")?) } else { None };
        let query = format!(
            "SELECT {CHAIN_COLUMNS}, CAST(key_hash(session) % CAST({count} AS BIGINT UNSIGNED) AS BIGINT) AS bucket FROM analysis_events"
        );
        let df = ctx.sql(&query).await?;
        // The bucket column is last; the buckets hold the others, every one nullable (how
        // execution marks them need not match the plan).
        let planned = df.schema().as_arrow();
        let schema = nullable(&planned.project(&(0..planned.fields().len() - 1).collect::<Vec<_>>())?);
        // Each partition of the scan is split on its own thread, into its own file per
        // bucket when they are spilled.
        let tasks: Vec<_> = df
            .execute_stream_partitioned()
            .await?
            .into_iter()
            .enumerate()
            .map(|(part, mut stream)| {
                let mut split = BucketSplit::new(dir.as_ref().map(ProcessTempDir::path), part, count as usize, Arc::clone(&schema));
                tokio::spawn(async move {
                    while let Some(batch) = stream.next().await {
                        split.write(&batch?)?;
                    }
                    split.finish()
                })
            })
            .collect();
        let mut in_memory: Vec<Vec<RecordBatch>> = vec![Vec::new(); count as usize];
        for task in futures::future::join_all(tasks).await {
            for (bucket, batches) in in_memory.iter_mut().zip(task.map_err(EngineError::Worker)??) {
                bucket.extend(batches);
            }
        }
        // What the split freed is not kept while the buckets run.
        crate::memory::release_freed();
        let events = match dir {
            Some(dir) => Events::Spilled(dir),
            None => Events::InMemory(Mutex::new(in_memory)),
        };
        Ok(Self { count, schema, events })
    }

    /// The columns of the buckets' events.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Runs `work` on the events of each bucket, as many buckets at a time as `ctx` has
    /// cores: the results in bucket order.
    pub fn run<'a, T, E, W, F>(&'a self, ctx: &SessionContext, work: W) -> impl Stream<Item = Result<T, E>> + 'a
    where
        W: Fn(BucketEvents) -> F + 'a,
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: From<EngineError> + Send + 'static,
    {
        let workers = ctx.state().config().target_partitions().min(self.count as usize).max(1);
        futures::stream::iter(0..self.count)
            .map(move |bucket| {
                let task = tokio::spawn(work(self.events(bucket as usize)));
                async move { task.await.map_err(|e| E::from(EngineError::Worker(e)))? }
            })
            .buffered(workers)
    }

    fn events(&self, bucket: usize) -> BucketEvents {
        match &self.events {
            Events::InMemory(buckets) => {
                BucketEvents::InMemory(std::mem::take(&mut buckets.lock().expect("no bucket panics holding it")[bucket]))
            }
            Events::Spilled(dir) => BucketEvents::Spilled(bucket_dir(dir.path(), bucket)),
        }
    }
}

/// The events of one bucket.
pub enum BucketEvents {
    InMemory(Vec<RecordBatch>),
    /// The directory of its Arrow files (none if it has no events).
    Spilled(PathBuf),
}

impl BucketEvents {
    /// The batches, read from the files if spilled: on the thread that goes on to analyze
    /// them, which then frees what it allocated.
    pub fn read(self) -> Result<Vec<RecordBatch>, EngineError> {
        let dir = match self {
            Self::InMemory(batches) => return Ok(batches),
            Self::Spilled(dir) => dir,
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(Vec::new());
        };
        // In the order of the scan partitions that wrote them, whatever the directory's.
        let mut files = entries.map(|e| e.map(|e| e.path())).collect::<Result<Vec<_>, _>>().map_err(EngineError::Spill)?;
        files.sort();
        let mut batches = Vec::new();
        for path in files {
            let file = File::open(path).map_err(EngineError::Spill)?;
            for batch in FileReader::try_new(BufReader::new(file), None)? {
                batches.push(batch?);
            }
        }
        Ok(batches)
    }
}

/// The directory of a bucket's files (one per scan partition with rows of the bucket).
fn bucket_dir(dir: &Path, bucket: usize) -> PathBuf {
    dir.join(format!("bucket-{bucket}"))
}

/// One scan partition's events split into buckets: in memory, or into an Arrow file per
/// bucket (created with its first rows). A scan batch holds a few rows of each bucket:
/// they are gathered into batches of [`BUCKET_BATCH_ROWS`], so that a bucket is read in
/// batches of the usual size, not in thousands of slivers.
struct BucketSplit {
    /// Where the files go; `None` keeps the batches in memory.
    dir: Option<PathBuf>,
    part: usize,
    schema: SchemaRef,
    buckets: Vec<BucketPart>,
}

/// Rows per batch of a bucket. Each scan partition gathers a batch per bucket at once, so
/// this bounds the memory of the split (DataFusion's 8192 took 400 MiB at 10M events);
/// the plans over a bucket run as fast on batches this size.
const BUCKET_BATCH_ROWS: usize = 2048;

struct BucketPart {
    pending: BatchCoalescer,
    writer: Option<FileWriter<BufWriter<File>>>,
    kept: Vec<RecordBatch>,
}

impl BucketSplit {
    fn new(dir: Option<&Path>, part: usize, count: usize, schema: SchemaRef) -> Self {
        let bucket = || BucketPart { pending: BatchCoalescer::new(Arc::clone(&schema), BUCKET_BATCH_ROWS), writer: None, kept: Vec::new() };
        Self { dir: dir.map(Path::to_owned), part, buckets: (0..count).map(|_| bucket()).collect(), schema }
    }

    /// Appends each row of `batch` (the chain columns, then the bucket) to its bucket.
    fn write(&mut self, batch: &RecordBatch) -> Result<(), EngineError> {
        let buckets = batch.column(batch.num_columns() - 1).as_primitive::<Int64Type>();
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.buckets.len()];
        for (row, bucket) in buckets.values().iter().enumerate() {
            rows[*bucket as usize].push(row as u32);
        }
        // Taken bucket by bucket: the coalescer keeps text columns as the arrays it is given
        // until a batch is complete, and a slice would keep the whole batch.
        let columns = RecordBatch::try_new(Arc::clone(&self.schema), batch.columns()[..batch.num_columns() - 1].to_vec())?;
        for (bucket, rows) in rows.into_iter().enumerate().filter(|(_, rows)| !rows.is_empty()) {
            self.buckets[bucket].pending.push_batch_with_indices(columns.clone(), &UInt32Array::from(rows))?;
            self.move_completed(bucket)?;
        }
        Ok(())
    }

    /// The batches of each bucket kept in memory (none when written to files).
    fn finish(mut self) -> Result<Vec<Vec<RecordBatch>>, EngineError> {
        for bucket in 0..self.buckets.len() {
            self.buckets[bucket].pending.finish_buffered_batch()?;
            self.move_completed(bucket)?;
            if let Some(writer) = self.buckets[bucket].writer.as_mut() {
                writer.finish()?;
            }
        }
        Ok(self.buckets.into_iter().map(|b| b.kept).collect())
    }

    /// Moves the completed batches of `bucket` to its file or its kept batches.
    fn move_completed(&mut self, bucket: usize) -> Result<(), EngineError> {
        let part = &mut self.buckets[bucket];
        while let Some(batch) = part.pending.next_completed_batch() {
            let Some(dir) = &self.dir else {
                part.kept.push(batch);
                continue;
            };
            if part.writer.is_none() {
                let dir = bucket_dir(dir, bucket);
                std::fs::create_dir_all(&dir).map_err(EngineError::Spill)?;
                let created = File::create(dir.join(format!("part-{}.arrow", self.part))).map_err(EngineError::Spill)?;
                part.writer = Some(FileWriter::try_new(BufWriter::new(created), &self.schema)?);
            }
            part.writer.as_mut().expect("just created").write(&batch)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray, new_null_array};
    use datafusion::arrow::compute::cast;
    use futures::TryStreamExt;

    use super::super::{Increment, Slice, define_analysis_events};
    use super::*;
    use crate::engine::EngineOptions;
    use crate::engine::session::memory_session;
    use crate::model::event::EVENTS_SCHEMA;
    use crate::redact::Redactor;

    /// `n` events of 37 sessions, ids `e0`, `e1`, …
    fn events(n: usize) -> RecordBatch {
        let text = |f: &dyn Fn(usize) -> String| Arc::new(StringArray::from((0..n).map(f).collect::<Vec<_>>())) as ArrayRef;
        let columns = EVENTS_SCHEMA.fields().iter().map(|field| match field.name().as_str() {
            "stream_seq" => cast(&Int64Array::from_iter_values(0..n as i64), field.data_type()).unwrap(),
            "ts" => cast(&Int64Array::from_iter_values((0..n as i64).map(|i| 1_700_000_000_000 + i * 1000)), field.data_type()).unwrap(),
            "id" => text(&|i| format!("e{i}")),
            "session" => text(&|i| format!("s{}", i % 37)),
            "type" => text(&|_| "msg.in".to_owned()),
            _ if field.is_nullable() => new_null_array(field.data_type(), n),
            _ => text(&|_| "x".to_owned()),
        });
        RecordBatch::try_new(EVENTS_SCHEMA.clone(), columns.collect()).unwrap()
    }

    /// The ids of each bucket's events, sorted.
    async fn bucket_ids(ctx: &SessionContext, buckets: &Buckets) -> Vec<Vec<String>> {
        let ids = |events: BucketEvents| async move {
            let events = events.read()?;
            let mut ids: Vec<String> = events
                .iter()
                .flat_map(|b| b.column_by_name("id").unwrap().as_string::<i32>().iter().flatten().map(str::to_owned).collect::<Vec<_>>())
                .collect();
            ids.sort();
            Ok::<_, EngineError>(ids)
        };
        buckets.run(ctx, ids).try_collect().await.unwrap()
    }

    #[tokio::test]
    async fn buckets_written_to_files_hold_what_buckets_kept_in_memory_do() {
        let ctx = memory_session(vec![events(500)], Redactor::builtin(), &EngineOptions::default()).await.unwrap();
        define_analysis_events(&ctx, &Increment::All, 0, &Slice::All).await.unwrap();
        let in_memory = Buckets::split_keeping(&ctx, 100, u64::MAX).await.unwrap();
        let spilled = Buckets::split_keeping(&ctx, 100, 0).await.unwrap();
        assert!(matches!(in_memory.events, Events::InMemory(_)) && matches!(spilled.events, Events::Spilled(_)));
        assert_eq!((in_memory.count, spilled.count), (5, 5));
        let kept = bucket_ids(&ctx, &in_memory).await;
        assert_eq!(kept, bucket_ids(&ctx, &spilled).await);
        assert_eq!(kept.iter().map(Vec::len).sum::<usize>(), 500);
        assert!(kept.iter().filter(|ids| !ids.is_empty()).count() > 1, "the sessions are spread over the buckets");
    }
}
