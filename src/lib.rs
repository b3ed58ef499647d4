//! tracelake: an embedded analytical engine for AI-agent traces.
//!
//! Raw events (JSONL files or a NATS JetStream stream) are normalized and redacted
//! ([`ingest`]), kept as a hive-partitioned Parquet lake ([`lake`]), and queried with
//! DataFusion ([`engine`]).

pub mod classify;
pub mod config;
pub mod detect;
pub mod engine;
pub mod generate;
pub mod ingest;
pub mod lake;
pub mod memory;
pub mod output;
pub mod redact;
pub mod report;
pub mod watch;

pub use tracelake_udfs as udfs;
