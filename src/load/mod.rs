//! Loading sources into the lake: files of events (`import`), a JetStream stream
//! (`export`), the groups of OTLP requests `collect` receives, and files of session
//! outcomes. Each decodes its source ([`crate::ingest`]), writes the lake's files and
//! commits them ([`crate::lake`]) exactly once.

pub mod collect;
pub mod decode;
pub mod export;
pub mod import;
pub mod outcomes;

use crate::ingest::nats::NatsError;
use crate::lake::LakeError;

/// Why a source could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(
        "{source_name} has changed since it was imported at {imported_at}, and not only by lines added at its end; \
         import it again with --force (rows of the earlier import stay), or import the new content as a file of its own"
    )]
    SourceChanged { source_name: String, imported_at: String },
    #[error(transparent)]
    Nats(#[from] NatsError),
    #[error(
        "the lake was exported from stream {stream:?} with filters {old:?}, not {new:?}; \
         use the same filters, or --full to rebuild the lake's exported events with the new ones"
    )]
    FilterChanged { stream: String, old: Vec<String>, new: Vec<String> },
    #[error("{source}; events up to sequence {cursor} are safely in the lake: run export again to continue")]
    ExportInterrupted {
        cursor: u64,
        #[source]
        source: NatsError,
    },
    #[error("receiving from the stream stopped unexpectedly")]
    ExportReceiver(#[source] tokio::task::JoinError),
    #[error("reading {source_name}: {error}")]
    Read {
        source_name: String,
        #[source]
        error: std::io::Error,
    },
}
