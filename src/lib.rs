//! tracelake: an embedded analytical engine for AI-agent traces.
//!
//! The modules follow the data flow, each importing only from those before it:
//! [`model`] (the types the stages share) → [`ingest`] (raw events normalized and
//! redacted) → [`lake`] (the hive-partitioned Parquet lake and its commits) → [`load`] (import, export,
//! collect's commits, outcomes: sources into the lake) → [`receiver`] (the OTLP receiver of `tracelake collect`) → [`engine`]
//! (DataFusion over the lake, chain building) → [`detect`] (detectors over chains →
//! findings) → [`classify`] (the LLM's verdicts) → [`output`] (rules, policies, patterns)
//! → [`report`] (the analysis report in its forms) → [`pipeline`] (the order of the
//! stages) and [`watch`] (live alerts). [`config`], [`redact`], [`privacy`], [`memory`] and [`temp_dirs`] serve all.

pub mod classify;
pub mod config;
pub mod detect;
pub mod engine;
pub mod generate;
pub mod ingest;
pub mod lake;
pub mod load;
pub mod memory;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod privacy;
pub mod receiver;
pub mod redact;
pub mod report;
pub mod temp_dirs;
pub mod watch;

pub use tracelake_udfs as udfs;
