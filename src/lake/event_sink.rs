//! The partitioned, size-bounded buffer of events (and quarantined lines) that import,
//! export and collect write through: rows sorted per date partition, files written on
//! background threads.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::interleave_record_batch;
use datafusion::arrow::datatypes::{TimestampMillisecondType, UInt64Type};
use datafusion::arrow::error::ArrowError;

use super::LakeError;
use super::layout::{Lake, PartitionDate, Table, WriterId, part_file_name};
use super::parquet_files::{BATCH_ROWS, WrittenFile, write_parquet_atomic};
use super::schema::quarantine_batch;
use crate::ingest::QuarantinedLine;
use crate::model::Event;
use crate::model::event::{COLUMN_AGENT, COLUMN_SESSION, COLUMN_STREAM_SEQ, COLUMN_TS, EVENTS_SCHEMA, events_batch};

/// Buffers events per date partition and writes each partition's rows sorted by
/// (agent, session, ts) once the buffer grows past its limit. Files are written on a
/// background thread, so buffering goes on while a file is compressed.
pub struct EventSink {
    lake: Lake,
    writer_id: WriterId,
    max_buffer_bytes: usize,
    buffered_bytes: usize,
    /// Keyed by days since the epoch.
    partitions: HashMap<i64, Partition>,
    quarantined: Vec<QuarantinedLine>,
    quarantined_bytes: usize,
    /// Quarantine files written before the last `flush_all`.
    quarantine_files: Vec<WrittenFile>,
    files_written: usize,
    /// How many partition files are written at once while buffering goes on.
    writer_threads: usize,
    /// …and when a commit waits for them: every core.
    commit_threads: usize,
    writes: Option<BackgroundWriter>,
}

const DAY_MS: i64 = 86_400_000;

/// Events of one day, as a record batch in the `events` schema.
pub struct DayBatch {
    /// Days since the epoch.
    pub day: i64,
    pub batch: RecordBatch,
}

/// `events` as a record batch per day, in input order within each.
pub fn day_batches(events: &[Event<'_>]) -> Result<Vec<DayBatch>, ArrowError> {
    let mut by_day: BTreeMap<i64, Vec<&Event>> = BTreeMap::new();
    for event in events {
        by_day.entry(event.ts.div_euclid(DAY_MS)).or_default().push(event);
    }
    by_day.into_iter().map(|(day, events)| Ok(DayBatch { day, batch: events_batch(&events)? })).collect()
}

/// What is buffered of one partition: record batches, and events pushed one by one.
/// Events are boxed: an event is large, and the buffer grows and is handed to the writer
/// thread without moving the events themselves.
#[derive(Default)]
struct Partition {
    batches: Vec<RecordBatch>,
    #[allow(clippy::vec_box)]
    events: Vec<Box<Event<'static>>>,
    bytes: usize,
}

/// Rows below which a partition is not split into several files.
const MIN_SPLIT_ROWS: usize = 16 * 1024;

impl Partition {
    fn rows(&self) -> usize {
        self.events.len() + self.batches.iter().map(RecordBatch::num_rows).sum::<usize>()
    }

    /// The partition as up to `parts` partitions of at least [`MIN_SPLIT_ROWS`] rows each;
    /// none when it is empty.
    fn split(mut self, parts: usize) -> Vec<Partition> {
        let rows = self.rows();
        if rows == 0 {
            return Vec::new();
        }
        let parts = parts.min(rows / MIN_SPLIT_ROWS).max(1);
        let mut split: Vec<Partition> = (1..parts).map(|_| Partition::default()).collect();
        for (i, batch) in std::mem::take(&mut self.batches).into_iter().enumerate() {
            match split.get_mut(i % parts) {
                Some(part) => part.batches.push(batch),
                None => self.batches.push(batch),
            }
        }
        let per_part = self.events.len().div_ceil(parts);
        for part in &mut split {
            let rest = self.events.split_off(self.events.len().saturating_sub(per_part));
            part.events = rest;
        }
        split.push(self);
        split.retain(|part| part.rows() > 0);
        split
    }
}

/// Threads that write partition files as they are handed over, each file on one thread.
struct BackgroundWriter {
    tx: SyncSender<(PathBuf, String, Partition)>,
    rx: Arc<Mutex<Receiver<(PathBuf, String, Partition)>>>,
    handles: Vec<thread::JoinHandle<Result<Vec<WrittenFile>, LakeError>>>,
}

impl BackgroundWriter {
    fn start(threads: usize) -> Self {
        // One partition waits while the others are written: at most `threads + 1` buffers
        // handed over at once.
        let (tx, rx) = sync_channel::<(PathBuf, String, Partition)>(1);
        let mut writer = Self { tx, rx: Arc::new(Mutex::new(rx)), handles: Vec::new() };
        writer.widen(threads.max(1));
        writer
    }

    /// Writes on `threads` threads from now on (never fewer than so far).
    fn widen(&mut self, threads: usize) {
        while self.handles.len() < threads {
            let rx = Arc::clone(&self.rx);
            let write = move || {
                let mut written = Vec::new();
                loop {
                    // A poisoned queue means another writer panicked: its join says so.
                    let next = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return Ok(written),
                    };
                    let Ok((dir, name, partition)) = next else { return Ok(written) };
                    written.push(write_sorted_events(&dir, &name, partition)?);
                }
            };
            let handle = thread::Builder::new()
                .name("tracelake-write".into())
                .spawn(write)
                .unwrap_or_else(|e| panic!("starting thread tracelake-write: {e}"));
            self.handles.push(handle);
        }
    }

    fn finish(self) -> Result<Vec<WrittenFile>, LakeError> {
        drop(self.tx);
        let mut written = Vec::new();
        let mut failed = None;
        for handle in self.handles {
            match handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)) {
                Ok(files) => written.extend(files),
                Err(e) => failed = failed.or(Some(e)),
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(written),
        }
    }
}

/// Writes a partition's events sorted by (agent, session, ts) as one Parquet file.
fn write_sorted_events(dir: &Path, name: &str, partition: Partition) -> Result<WrittenFile, LakeError> {
    let mut batches = partition.batches;
    if !partition.events.is_empty() {
        let events: Vec<&Event> = partition.events.iter().map(Box::as_ref).collect();
        batches.push(events_batch(&events)?);
    }
    let order = sorted_order(&batches);
    let batch_refs: Vec<&RecordBatch> = batches.iter().collect();
    let sorted = order.chunks(BATCH_ROWS).map(|rows| interleave_record_batch(&batch_refs, rows).map_err(LakeError::from));
    write_parquet_atomic(dir, name, EVENTS_SCHEMA.clone(), sorted)
}

/// The (batch, row) positions of the events in `batches` in (agent, session, ts,
/// stream_seq) order. The few distinct (agent, session) pairs are ranked once, so the sort
/// compares numbers, not strings.
fn sorted_order(batches: &[RecordBatch]) -> Vec<(usize, usize)> {
    let mut ids: foldhash::HashMap<(&str, &str), u32> = foldhash::HashMap::default();
    let mut keys: Vec<(u32, i64, u64, u32, u32)> = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
    for (b, batch) in batches.iter().enumerate() {
        let (agent, session) = (batch.column(COLUMN_AGENT).as_string::<i32>(), batch.column(COLUMN_SESSION).as_string::<i32>());
        let ts = batch.column(COLUMN_TS).as_primitive::<TimestampMillisecondType>().values();
        let seq = batch.column(COLUMN_STREAM_SEQ).as_primitive::<UInt64Type>().values();
        for row in 0..batch.num_rows() {
            let next = ids.len() as u32;
            let id = *ids.entry((agent.value(row), session.value(row))).or_insert(next);
            keys.push((id, ts[row], seq[row], b as u32, row as u32));
        }
    }
    let mut pairs: Vec<((&str, &str), u32)> = ids.into_iter().collect();
    pairs.sort_unstable();
    let mut rank = vec![0u32; pairs.len()];
    for (r, (_, id)) in pairs.iter().enumerate() {
        rank[*id as usize] = r as u32;
    }
    for key in &mut keys {
        key.0 = rank[key.0 as usize];
    }
    keys.sort_unstable();
    keys.into_iter().map(|(.., b, row)| (b as usize, row as usize)).collect()
}

impl EventSink {
    /// A sink that buffers up to `max_buffer_bytes` of events and writes full partitions
    /// on `writer_threads` threads, each holding one more buffer while it writes; what
    /// [`Self::flush_all`] writes, on every core.
    pub fn new(lake: Lake, writer_id: WriterId, max_buffer_bytes: usize, writer_threads: usize) -> Self {
        Self {
            lake,
            writer_id,
            max_buffer_bytes,
            buffered_bytes: 0,
            partitions: HashMap::new(),
            quarantined: Vec::new(),
            quarantined_bytes: 0,
            quarantine_files: Vec::new(),
            files_written: 0,
            writer_threads,
            commit_threads: writer_threads.max(std::thread::available_parallelism().map_or(1, std::num::NonZero::get)),
            writes: None,
        }
    }

    pub fn push(&mut self, event: Event<'static>) -> Result<(), LakeError> {
        let size = event.approx_bytes();
        let partition = self.partitions.entry(event.ts.div_euclid(DAY_MS)).or_default();
        partition.events.push(Box::new(event));
        partition.bytes += size;
        self.grew(size)
    }

    /// Buffers events already made a record batch.
    pub fn push_batch(&mut self, events: DayBatch) -> Result<(), LakeError> {
        let size = events.batch.get_array_memory_size();
        let partition = self.partitions.entry(events.day).or_default();
        partition.batches.push(events.batch);
        partition.bytes += size;
        self.grew(size)
    }

    /// Counts `size` more bytes buffered (in a partition that counted them already), and
    /// writes partitions out while over the limit.
    fn grew(&mut self, size: usize) -> Result<(), LakeError> {
        self.buffered_bytes += size;
        while self.buffered_bytes > self.max_buffer_bytes {
            self.flush_largest()?;
        }
        Ok(())
    }

    /// Buffers a quarantined line. Quarantined lines have a buffer of the events' size of
    /// their own, written out as a file when full: input that is mostly bad is not held in
    /// memory.
    pub fn push_quarantined(&mut self, line: QuarantinedLine) -> Result<(), LakeError> {
        self.quarantined_bytes += line.approx_bytes();
        self.quarantined.push(line);
        if self.quarantined_bytes > self.max_buffer_bytes {
            let file = self.flush_quarantine()?;
            self.quarantine_files.extend(file);
        }
        Ok(())
    }

    /// Writes everything still buffered and returns every file written since the last call.
    pub fn flush_all(&mut self) -> Result<Vec<WrittenFile>, LakeError> {
        let mut days: Vec<i64> = self.partitions.keys().copied().collect();
        days.sort_unstable();
        // What is written now is waited for, and nothing is buffered meanwhile: every core
        // writes, a large partition as several files at once.
        let parts = self.commit_threads;
        if let Some(writes) = self.writes.as_mut() {
            writes.widen(parts);
        }
        for day in days {
            self.flush(day, parts)?;
        }
        let mut written = match self.writes.take() {
            Some(writes) => writes.finish()?,
            None => Vec::new(),
        };
        written.append(&mut self.quarantine_files);
        written.extend(self.flush_quarantine()?);
        Ok(written)
    }

    fn flush_largest(&mut self) -> Result<(), LakeError> {
        let largest = self.partitions.iter().max_by_key(|(_, partition)| partition.bytes).map(|(d, _)| *d);
        match largest {
            Some(day) => self.flush(day, 1),
            None => Ok(()),
        }
    }

    /// Hands the partition of `day` to the writer threads, as up to `parts` files.
    fn flush(&mut self, day: i64, parts: usize) -> Result<(), LakeError> {
        let Some(partition) = self.partitions.remove(&day) else {
            return Ok(());
        };
        self.buffered_bytes -= partition.bytes;
        let dir = self.lake.partition_dir(Table::Events, &PartitionDate::from_millis(day * DAY_MS));
        for part in partition.split(parts) {
            let name = self.next_name();
            let threads = self.writer_threads.max(parts);
            let writes = self.writes.get_or_insert_with(|| BackgroundWriter::start(threads));
            if writes.tx.send((dir.clone(), name, part)).is_err() {
                // The writer stopped on an error: report it.
                let stopped = self.writes.take().map(BackgroundWriter::finish);
                return Err(stopped
                    .and_then(Result::err)
                    .unwrap_or_else(|| LakeError::io(self.lake.root(), std::io::Error::other("the file writer stopped"))));
            }
        }
        Ok(())
    }

    fn flush_quarantine(&mut self) -> Result<Option<WrittenFile>, LakeError> {
        if self.quarantined.is_empty() {
            return Ok(None);
        }
        let lines = std::mem::take(&mut self.quarantined);
        self.quarantined_bytes = 0;
        let date = PartitionDate::from_millis(lines[0].quarantined_at);
        let dir = self.lake.partition_dir(Table::Quarantine, &date);
        let name = self.next_name();
        let batch = quarantine_batch(&lines).map_err(LakeError::from);
        write_parquet_atomic(&dir, &name, Arc::clone(&super::schema::QUARANTINE_SCHEMA), [batch]).map(Some)
    }

    fn next_name(&mut self) -> String {
        self.files_written += 1;
        part_file_name(&self.writer_id, self.files_written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::QuarantineReason;
    use crate::model::event::Schema;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::TimestampMillisecondType;

    fn bad_line(position: u64) -> QuarantinedLine {
        QuarantinedLine {
            source: "input.jsonl".into(),
            position,
            reason: QuarantineReason::InvalidJson,
            detail: "expected value".into(),
            raw: "x".repeat(1000),
            raw_bytes: 1000,
            quarantined_at: 1_700_000_000_000,
        }
    }

    /// Several partition files written at once: each event in exactly one file, of its
    /// day, sorted by (agent, session, ts).
    #[test]
    fn files_written_side_by_side_hold_every_event_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = EventSink::new(Lake::new(dir.path()), WriterId::random(), 20_000, 4);
        let day = |n: i64| 1_767_571_200_000 + (n % 3) * DAY_MS;
        for n in 0..3000i64 {
            let event = Event::new(n as u64, format!("e{n}"), day(n) + (3000 - n), format!("a{}", n % 5), "s", "msg.in", Schema::A);
            sink.push(event).unwrap();
        }
        let written = sink.flush_all().unwrap();
        assert!(written.len() >= 8, "the small buffer makes many files: {}", written.len());
        let mut ids = Vec::new();
        for file in &written {
            let batches: Vec<RecordBatch> =
                datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(std::fs::File::open(&file.path).unwrap(), 8192)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
            let rows: Vec<(String, i64, String)> = batches
                .iter()
                .flat_map(|b| {
                    let agent = b.column_by_name("agent").unwrap().as_string::<i32>().clone();
                    let ts = b.column_by_name("ts").unwrap().as_primitive::<TimestampMillisecondType>().clone();
                    let id = b.column_by_name("id").unwrap().as_string::<i32>().clone();
                    (0..b.num_rows()).map(move |i| (agent.value(i).to_owned(), ts.value(i), id.value(i).to_owned())).collect::<Vec<_>>()
                })
                .collect();
            assert!(rows.windows(2).all(|w| (&w[0].0, w[0].1) <= (&w[1].0, w[1].1)), "{} is sorted", file.path.display());
            let partition = file.path.parent().unwrap().file_name().unwrap().to_str().unwrap().to_owned();
            assert!(rows.iter().all(|r| partition == format!("date={}", PartitionDate::from_millis(r.1).as_str())));
            ids.extend(rows.into_iter().map(|r| r.2));
        }
        ids.sort();
        let mut expected: Vec<String> = (0..3000).map(|n| format!("e{n}")).collect();
        expected.sort();
        assert_eq!(ids, expected);
    }

    #[test]
    fn a_large_partition_is_written_as_several_files_when_waited_for_and_a_small_one_as_one() {
        let partition = |events: usize| Partition {
            events: (0..events as u64).map(|n| Box::new(Event::new(n, format!("e{n}"), 0, "a", "s", "msg.in", Schema::A))).collect(),
            ..Partition::default()
        };
        let parts = partition(3 * MIN_SPLIT_ROWS).split(4);
        assert_eq!(parts.iter().map(Partition::rows).collect::<Vec<_>>(), vec![MIN_SPLIT_ROWS; 3]);
        let mut ids: Vec<u64> = parts.iter().flat_map(|p| p.events.iter().map(|e| e.stream_seq)).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..3 * MIN_SPLIT_ROWS as u64).collect::<Vec<_>>());
        assert_eq!(partition(MIN_SPLIT_ROWS + 5).split(4).len(), 1);
        assert!(partition(0).split(4).is_empty());
    }

    #[test]
    fn quarantined_lines_are_written_out_when_their_buffer_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = EventSink::new(Lake::new(dir.path()), WriterId::random(), 10_000, 2);
        for position in 1..=100 {
            sink.push_quarantined(bad_line(position)).unwrap();
            assert!(sink.quarantined_bytes <= 10_000 + bad_line(0).approx_bytes());
        }
        let written = sink.flush_all().unwrap();
        assert!(written.len() >= 9, "{} files", written.len());
        assert_eq!(written.iter().map(|f| f.rows).sum::<usize>(), 100);
        assert!(written.iter().all(|f| f.path.exists()));
    }
}
