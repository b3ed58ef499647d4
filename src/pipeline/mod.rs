//! The order of the stages: the only module that knows it. An analysis prepares the
//! events, builds chains and runs the detectors (`detect`), asks the LLM (`classify`),
//! generates the fixes (`output`), commits everything to the lake, and measures the
//! rules (`output::effectiveness`).

pub mod analyze;
mod classification;
mod commit;
mod detection;
mod plan;
pub mod stages;

pub use analyze::{Analysis, AnalyzeOptions, LlmStats, analyze};
pub use stages::StageTimes;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Detect(#[from] crate::detect::DetectError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Lake(#[from] crate::lake::LakeError),
    #[error(transparent)]
    Llm(#[from] crate::classify::LlmError),
}

/// A query's failure is the engine's.
impl From<datafusion::error::DataFusionError> for PipelineError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        PipelineError::Engine(e.into())
    }
}

/// Patterns are compiled for the engine's functions.
impl From<tracelake_udfs::PatternError> for PipelineError {
    fn from(e: tracelake_udfs::PatternError) -> Self {
        PipelineError::Engine(e.into())
    }
}

/// The record batches a run builds are those it writes to the lake.
impl From<datafusion::arrow::error::ArrowError> for PipelineError {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        PipelineError::Lake(e.into())
    }
}
