//! Failure detection: the detectors (built-in signals and the user's SQL files) run over
//! chains, yielding findings.

pub mod detectors;
pub mod header;
pub mod run;
pub mod sessions;
pub mod signals;

pub use detectors::{Detector, builtin_detectors, enabled_builtin_detectors, user_detectors};
pub use header::Scope;
pub use run::run_detectors;

/// Why one detector yielded no findings.
#[derive(Debug, thiserror::Error)]
pub enum DetectorFailure {
    #[error(transparent)]
    Query(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Row(#[from] crate::model::finding::FindingRowError),
    /// How it failed on a worker.
    #[error(
        "{0} (on a worker, where a per-session detector reads `chain_events`, the chain views and `analysis_events`, not the lake's other tables)"
    )]
    OnWorker(String),
}

#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Lake(#[from] crate::lake::LakeError),
    #[error("building record batch: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error("a row of the findings table is not a finding ({0}); was the lake written by another version?")]
    FindingRow(#[source] serde_json::Error),
    /// The workers' part of an analysis ended early: a worker stopped, or the work failed
    /// there.
    #[error("the analysis on the workers failed, and nothing was committed (if a worker stopped, start it again and rerun analyze)")]
    OnWorkers(#[source] datafusion::error::DataFusionError),
    #[error("built-in detector {name} failed: {source}")]
    Builtin {
        name: String,
        #[source]
        source: std::sync::Arc<DetectorFailure>,
    },
    #[error("cannot read detector directory {path}")]
    DetectorDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("detector {path}")]
    DetectorHeader {
        path: String,
        #[source]
        source: Box<header::HeaderError>,
    },
    #[error("a worker sent a part of its results this tracelake does not know ({0}): are the workers another version?")]
    UnknownWorkerPart(String),
}

/// A query's failure is the engine's.
impl From<datafusion::error::DataFusionError> for DetectError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        DetectError::Engine(e.into())
    }
}

/// Patterns are compiled for the engine's functions.
impl From<tracelake_udfs::PatternError> for DetectError {
    fn from(e: tracelake_udfs::PatternError) -> Self {
        DetectError::Engine(e.into())
    }
}
