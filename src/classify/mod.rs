//! LLM classification of findings (spec §8–§9): an optional triage tier that drops false
//! positives and adjusts severity, then a deep analysis of the redacted chain that names
//! a root cause and a fix. Any failure leaves a finding unclassified; the run goes on.

pub mod cache;
pub mod classifier;
pub mod llm;
pub mod parse;
pub mod prompts;
pub mod stage;

pub use cache::LlmCache;
pub use classifier::{ClassifyOptions, ClassifyOutcome, FindingVerdict, Tiers, TranscriptEvent, classify};
pub use llm::{LlmClient, LlmEndpoint, LlmError};
pub use parse::{ActionType, Classification, TriageVerdict};

/// Bumped whenever a prompt changes, so cached answers to older prompts are not reused.
pub const PROMPT_VERSION: &str = "1";
