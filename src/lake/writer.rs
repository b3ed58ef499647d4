//! Writing Parquet files into the lake: settings in one place, atomic appearance
//! (temp name, fsync, rename), and a partitioned, size-bounded event buffer.

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};

use super::LakeError;
use super::layout::{Lake, PartitionDate, Table, WriterId, part_file_name};
use super::schema::{events_batch, quarantine_batch};
use crate::ingest::{Event, QuarantinedLine};

/// Rows per record batch handed to the Parquet writer (and per row group at most).
const BATCH_ROWS: usize = 64 * 1024;

/// The settings of every Parquet file the lake writes.
pub fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("valid zstd level")))
        .set_max_row_group_row_count(Some(BATCH_ROWS * 2))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_created_by(concat!("tracelake ", env!("CARGO_PKG_VERSION")).into())
        .build()
}

/// A data file that is complete and visible in the lake.
#[derive(Debug, Clone)]
pub struct WrittenFile {
    pub path: PathBuf,
    pub rows: usize,
    pub bytes: u64,
}

/// Writes `batches` to `dir/name` so that the file appears only when complete and durable.
pub fn write_parquet_atomic(
    dir: &Path,
    name: &str,
    schema: SchemaRef,
    batches: impl IntoIterator<Item = Result<RecordBatch, LakeError>>,
) -> Result<WrittenFile, LakeError> {
    fs::create_dir_all(dir).map_err(|e| LakeError::io(dir, e))?;
    let final_path = dir.join(name);
    // Not ending in .parquet: readers never list a half-written file.
    let tmp_path = dir.join(format!(".{name}.tmp"));
    let file = File::create(&tmp_path).map_err(|e| LakeError::io(&tmp_path, e))?;
    let mut writer = ArrowWriter::try_new(file, schema, Some(writer_properties()))?;
    let mut rows = 0;
    for batch in batches {
        let batch = batch?;
        rows += batch.num_rows();
        writer.write(&batch)?;
    }
    let file = writer.into_inner()?;
    file.sync_all().map_err(|e| LakeError::io(&tmp_path, e))?;
    let bytes = file.metadata().map_err(|e| LakeError::io(&tmp_path, e))?.len();
    drop(file);
    fs::rename(&tmp_path, &final_path).map_err(|e| LakeError::io(&final_path, e))?;
    sync_dir(dir)?;
    Ok(WrittenFile { path: final_path, rows, bytes })
}

/// Makes a rename in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), LakeError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| LakeError::io(dir, e))
}

/// Buffers events per date partition and writes each partition's rows sorted by
/// (agent, session, ts) once the buffer grows past its limit.
pub struct EventSink {
    lake: Lake,
    writer_id: WriterId,
    max_buffer_bytes: usize,
    buffered_bytes: usize,
    partitions: HashMap<PartitionDate, (Vec<Event>, usize)>,
    quarantined: Vec<QuarantinedLine>,
    files_written: usize,
    written: Vec<WrittenFile>,
}

impl EventSink {
    pub fn new(lake: Lake, writer_id: WriterId, max_buffer_bytes: usize) -> Self {
        Self {
            lake,
            writer_id,
            max_buffer_bytes,
            buffered_bytes: 0,
            partitions: HashMap::new(),
            quarantined: Vec::new(),
            files_written: 0,
            written: Vec::new(),
        }
    }

    pub fn push(&mut self, event: Event) -> Result<(), LakeError> {
        let size = event.approx_bytes();
        let (events, bytes) = self.partitions.entry(PartitionDate::from_millis(event.ts)).or_default();
        events.push(event);
        *bytes += size;
        self.buffered_bytes += size;
        while self.buffered_bytes > self.max_buffer_bytes {
            self.flush_largest()?;
        }
        Ok(())
    }

    pub fn push_quarantined(&mut self, line: QuarantinedLine) {
        self.quarantined.push(line);
    }

    /// Writes everything still buffered and returns every file written since the last call.
    pub fn flush_all(&mut self) -> Result<Vec<WrittenFile>, LakeError> {
        let mut dates: Vec<PartitionDate> = self.partitions.keys().cloned().collect();
        dates.sort();
        for date in dates {
            self.flush(&date)?;
        }
        self.flush_quarantine()?;
        Ok(std::mem::take(&mut self.written))
    }

    fn flush_largest(&mut self) -> Result<(), LakeError> {
        let largest = self.partitions.iter().max_by_key(|(_, (_, bytes))| *bytes).map(|(d, _)| d.clone());
        match largest {
            Some(date) => self.flush(&date),
            None => Ok(()),
        }
    }

    fn flush(&mut self, date: &PartitionDate) -> Result<(), LakeError> {
        let Some((mut events, bytes)) = self.partitions.remove(date) else {
            return Ok(());
        };
        self.buffered_bytes -= bytes;
        if events.is_empty() {
            return Ok(());
        }
        events.sort_unstable_by(|a, b| {
            (&a.agent, &a.session, a.ts, a.stream_seq).cmp(&(&b.agent, &b.session, b.ts, b.stream_seq))
        });
        let dir = self.lake.partition_dir(Table::Events, date);
        let name = self.next_name();
        let batches = events.chunks(BATCH_ROWS).map(|chunk| events_batch(chunk).map_err(LakeError::from));
        let file = write_parquet_atomic(&dir, &name, super::schema::EVENTS_SCHEMA.clone(), batches)?;
        self.written.push(file);
        Ok(())
    }

    fn flush_quarantine(&mut self) -> Result<(), LakeError> {
        if self.quarantined.is_empty() {
            return Ok(());
        }
        let lines = std::mem::take(&mut self.quarantined);
        let date = PartitionDate::from_millis(lines[0].quarantined_at);
        let dir = self.lake.partition_dir(Table::Quarantine, &date);
        let name = self.next_name();
        let batch = quarantine_batch(&lines).map_err(LakeError::from);
        let file = write_parquet_atomic(&dir, &name, Arc::clone(&super::schema::QUARANTINE_SCHEMA), [batch])?;
        self.written.push(file);
        Ok(())
    }

    fn next_name(&mut self) -> String {
        self.files_written += 1;
        part_file_name(&self.writer_id, self.files_written)
    }
}
