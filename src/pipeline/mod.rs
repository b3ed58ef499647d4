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
}
