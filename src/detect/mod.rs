//! Failure detection: chains rebuilt in SQL, the detectors run over them, findings kept
//! in the lake, and the analysis report.

pub mod analyze;
pub(crate) mod bucket_plans;
pub(crate) mod buckets;
pub mod finding;
pub mod json_report;
pub mod report;
mod slot;
pub mod sql;

pub use analyze::{Analysis, AnalyzeOptions, analyze};
pub use buckets::DEFAULT_BUCKET_EVENTS;
pub use finding::Finding;

#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error(transparent)]
    Lake(#[from] crate::lake::LakeError),
    #[error("building record batch: {0}")]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error(transparent)]
    Patterns(#[from] tracelake_udfs::PatternError),
    #[error(transparent)]
    Llm(#[from] crate::classify::LlmError),
    #[error("a row of the findings table is not a finding ({0}); was the lake written by another version?")]
    FindingRow(String),
    #[error("built-in detector {name} failed: {message}")]
    Builtin { name: String, message: String },
    #[error("cannot write the session buckets to a temporary directory: {0}")]
    Spill(#[source] std::io::Error),
    #[error("a worker of the analysis stopped: {0}")]
    Worker(#[from] tokio::task::JoinError),
    #[error("cannot read detector directory {path}: {source}")]
    DetectorDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
