//! The Parquet lake: layout, schemas, atomic writers, state, and JSONL import.

pub mod export;
pub mod import;
pub mod pipeline;
pub mod layout;
pub mod outcomes;
pub mod schema;
pub mod state;
pub mod writer;

use std::path::{Path, PathBuf};

pub use layout::{Lake, PartitionDate, Table, WriterId};

#[derive(Debug, thiserror::Error)]
pub enum LakeError {
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
    #[error("another tracelake process is writing to {0}; wait for it to finish")]
    Locked(PathBuf),
    #[error("reading {source_name}: {error}")]
    Read {
        source_name: String,
        #[source]
        error: std::io::Error,
    },
}

impl LakeError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        LakeError::Io { path: path.to_path_buf(), source }
    }
}
