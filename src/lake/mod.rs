//! The Parquet lake: layout, schemas, atomic writers, commits and their state, the Delta
//! logs, maintenance (compaction, repair) and time travel.

pub mod commit;
pub mod compact;
pub mod delta;
pub mod event_sink;
pub mod history;
pub mod holder;
pub mod layout;
pub mod live_writers;
pub mod objects;
pub mod parquet_files;
pub mod remote;
pub mod repair;
pub mod risk;
pub mod schema;
pub mod secret;
pub mod sizes;
pub mod state;
pub mod state_log;

use std::path::{Path, PathBuf};

pub use layout::{Lake, PartitionDate, Table, WriterId};

#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error(transparent)]
    TempDir(#[from] crate::temp_dirs::TempDirError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing Parquet: {0}")]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    #[error("building record batch: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error("state file {path} is not valid ({source}); restore it from a backup or remove the lake and import again")]
    CorruptState {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("another tracelake {run} is running on {lake}{}; wait for it to finish", holder::process_of(holder))]
    Locked { lake: PathBuf, run: &'static str, holder: Option<holder::LockHolder> },
    #[error("the lake at {lake} is damaged: {problem}")]
    Damaged { lake: PathBuf, problem: Damage },
    #[error("{lake} is not a local path")]
    NotALocalPath { lake: String },
    #[error("{lake}: tracelake keeps lakes in a directory or on {}, not on {scheme}://", remote::schemes_named())]
    UnknownScheme { lake: String, scheme: String },
    #[error("storage.options has {option}, which is not an option of {scheme}:// stores")]
    UnknownStorageOption { option: String, scheme: String },
    #[error(
        "the store of {lake} does not support conditional writes, without which two writers could both think they committed; \
         for an S3-compatible store set storage.options.aws_conditional_put to \"etag\" where it supports If-Match"
    )]
    NoConditionalWrites { lake: String },
    #[error("the lake at {lake}: {file} is committed but not on the object store")]
    MissingObject { lake: String, file: String },
    #[error("the lake at {lake}: {file} is not a hex key")]
    NotAKey { lake: String, file: String },
    #[error("the lake at {lake}: {key}")]
    ObjectStore {
        lake: String,
        key: String,
        #[source]
        source: Box<object_store::Error>,
    },
    #[error("opening the object store of {lake}")]
    OpenStore {
        lake: String,
        #[source]
        source: Box<object_store::Error>,
    },
    #[error("{location} is not a URL")]
    NotAUrl {
        location: String,
        #[source]
        source: url::ParseError,
    },
    #[error("the lake at {lake}: {path} is not a path of the object store")]
    ObjectPath {
        lake: String,
        path: String,
        #[source]
        source: Box<object_store::path::Error>,
    },
    #[error("making a key for the lake at {lake}")]
    NoRandomKey {
        lake: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the lake at {lake} is on object storage, where {what} does not work: {why}")]
    NotOnObjectStorage { lake: String, what: &'static str, why: &'static str },
    #[error(
        "another tracelake {run} committed to {lake} while this one ran, and the two cannot both count; \
         nothing of this run was committed: run it again"
    )]
    Concurrent { lake: String, run: &'static str },
    #[error(
        "the Delta log of table {table} is behind the lake's manifest ({source}); the next import, export or analyze, \
         or `tracelake upgrade`, brings it in step"
    )]
    Delta {
        table: &'static str,
        #[source]
        source: Box<deltalake_core::DeltaTableError>,
    },
    #[error(
        "the lake at {lake} was made before its tables had Delta logs ({}), and its readers read those logs: \
         run `tracelake upgrade --lake {lake}` once (nothing is copied)",
        .tables.join(", ")
    )]
    NoDeltaLog { lake: String, tables: Vec<&'static str> },
    #[error(
        "the lake at {lake} keeps its state in _state/manifest.json, as lakes made by earlier releases did, where this \
         release reads it from the events table's Delta log: run `tracelake upgrade --lake {lake}` once (nothing is copied)"
    )]
    LegacyManifest { lake: String },
    #[error("reading the Delta log of table {table}: {source}")]
    DeltaRead {
        table: &'static str,
        #[source]
        source: Box<deltalake_core::DeltaTableError>,
    },
    #[error("the lake as of {as_of} cannot be read: {problem}")]
    AsOf { as_of: String, problem: String },
}

/// What is wrong with a damaged lake.
#[derive(Debug, Clone, PartialEq)]
pub enum Damage {
    /// Data files, but no state in the events table's Delta log.
    NoManifest,
    /// Files the manifest names that are not there (relative paths).
    MissingFiles(Vec<String>),
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::NoManifest => f.write_str(
                "it holds data files but no Delta log of its events table (events/_delta_log), which holds what is \
                 committed. Nothing was read or changed; `tracelake repair` rebuilds the lake's state from the files it can read",
            ),
            Damage::MissingFiles(files) => {
                let shown: Vec<&str> = files.iter().take(5).map(String::as_str).collect();
                let more = if files.len() > 5 { format!(" and {} more", files.len() - 5) } else { String::new() };
                write!(
                    f,
                    "it has committed {} file(s) that are missing ({}{more}). Restore them from a backup, \
                     or run `tracelake repair` to drop them from the lake",
                    files.len(),
                    shown.join(", ")
                )
            }
        }
    }
}

impl LakeError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        LakeError::Io { path: path.to_path_buf(), source }
    }
}
