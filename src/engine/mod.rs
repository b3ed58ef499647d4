//! The SQL engine: one DataFusion session over the lake, with the lake's tables and
//! tracelake's UDFs registered.

pub mod print;
pub mod session;

pub use print::PrintFormat;
pub use session::{EngineOptions, open_session, run_statements};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("no lake at {0}: import events first (`tracelake import --lake DIR FILE.jsonl`) or run `tracelake demo`")]
    NoLake(std::path::PathBuf),
    #[error("writing results: {0}")]
    Output(#[from] std::io::Error),
    #[error("formatting results: {0}")]
    Format(#[from] datafusion::arrow::error::ArrowError),
}
