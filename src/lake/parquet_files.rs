//! Writing Parquet files into the lake: settings in one place, and atomic appearance
//! (temp name, fsync, rename).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, ZstdLevel};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::schema::types::ColumnPath;

use super::LakeError;

/// Rows per record batch handed to the Parquet writer (and per row group at most).
pub const BATCH_ROWS: usize = 64 * 1024;

/// Columns whose values are mostly unique: a dictionary would only cost time.
const NO_DICTIONARY: &[&str] = &[
    "id",
    "content",
    "tool_params",
    "tool_result",
    "tool_error",
    "error",
    "payload",
    "extra",
    "trace_id",
    "span_id",
    "parent_span_id",
    "tool_call_id",
    "raw",
    "detail",
    "summary",
    "evidence",
    "finding_id",
    "start_event_id",
    "end_event_id",
];

/// The settings of every Parquet file the lake writes.
pub fn writer_properties() -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("valid zstd level")))
        .set_max_row_group_row_count(Some(BATCH_ROWS * 2))
        .set_dictionary_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_created_by(concat!("tracelake ", env!("CARGO_PKG_VERSION")).into());
    for column in NO_DICTIONARY {
        builder = builder
            .set_column_dictionary_enabled(ColumnPath::from(*column), false)
            .set_column_statistics_enabled(ColumnPath::from(*column), EnabledStatistics::None);
    }
    builder.build()
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
    let bytes = publish(file, &tmp_path, &final_path)?;
    Ok(WrittenFile { path: final_path, rows, bytes })
}

/// Copies the data file `from` (written elsewhere) to `dir/name`, so that it appears only
/// when complete and durable, as [`write_parquet_atomic`] writes.
pub fn copy_atomic(from: &WrittenFile, dir: &Path, name: &str) -> Result<WrittenFile, LakeError> {
    fs::create_dir_all(dir).map_err(|e| LakeError::io(dir, e))?;
    let final_path = dir.join(name);
    let tmp_path = dir.join(format!(".{name}.tmp"));
    fs::copy(&from.path, &tmp_path).map_err(|e| LakeError::io(&tmp_path, e))?;
    let file = File::open(&tmp_path).map_err(|e| LakeError::io(&tmp_path, e))?;
    let bytes = publish(file, &tmp_path, &final_path)?;
    Ok(WrittenFile { path: final_path, rows: from.rows, bytes })
}

/// Makes the complete `file` at `tmp_path` durable and renames it to `final_path`: its size.
fn publish(file: File, tmp_path: &Path, final_path: &Path) -> Result<u64, LakeError> {
    file.sync_all().map_err(|e| LakeError::io(tmp_path, e))?;
    let bytes = file.metadata().map_err(|e| LakeError::io(tmp_path, e))?.len();
    drop(file);
    fs::rename(tmp_path, final_path).map_err(|e| LakeError::io(final_path, e))?;
    sync_dir(final_path.parent().expect("a data file is in a directory"))?;
    Ok(bytes)
}

/// One Parquet file written on its own thread from batches handed to it as they are
/// made, so that they need not all be in memory at once. The file appears (atomically,
/// as [`write_parquet_atomic`] writes it) when finished, and only if it has rows.
pub struct BatchFileWriter {
    tx: SyncSender<RecordBatch>,
    handle: thread::JoinHandle<Result<WrittenFile, LakeError>>,
}

impl BatchFileWriter {
    pub fn start(dir: PathBuf, name: String, schema: SchemaRef) -> Self {
        let (tx, rx) = sync_channel::<RecordBatch>(4);
        let handle = thread::spawn(move || write_parquet_atomic(&dir, &name, schema, rx.into_iter().map(Ok)));
        Self { tx, handle }
    }

    pub fn write(&self, batch: RecordBatch) -> Result<(), LakeError> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        // The thread stops receiving only when it failed; its error comes with `finish`.
        let _ = self.tx.send(batch);
        Ok(())
    }

    /// The file written, or none when no row was.
    pub fn finish(self) -> Result<Option<WrittenFile>, LakeError> {
        drop(self.tx);
        let file = self.handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        if file.rows > 0 {
            return Ok(Some(file));
        }
        fs::remove_file(&file.path).map_err(|e| LakeError::io(&file.path, e))?;
        Ok(None)
    }
}

/// Makes a rename in `dir` durable.
pub fn sync_dir(dir: &Path) -> Result<(), LakeError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| LakeError::io(dir, e))
}
