//! The contract between the stages: the normalized [`Event`] that ingest produces and
//! every later stage reads, the [`Finding`] that detectors produce and classification,
//! outputs and reports read, and their [`Severity`].
//! It imports from no other module of the crate.

pub mod event;
mod event_columns;
pub mod finding;
pub mod severity;

pub use event::{Event, Schema};
pub use finding::Finding;
pub use severity::Severity;
