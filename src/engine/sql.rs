//! The SQL that defines the lake's views, embedded from `sql/`, and the settings filled
//! into it.

/// Chain reconstruction: `deduped_events`, `chain_events`.
pub const CHAINS: &str = include_str!("../../sql/chains.sql");
/// Views over the chain events: `chains`, `tool_attempts`, `failure_occurrences`, `chain_endings`.
pub const CHAIN_VIEWS: &str = include_str!("../../sql/chain_views.sql");

/// `rule_effectiveness`: each generated rule's failures before and after it.
pub const RULE_EFFECTIVENESS: &str = include_str!("../../sql/outputs/rule_effectiveness.sql");

/// `imported_outcomes`, `session_outcomes`: the outcome of each session.
pub const SESSION_OUTCOMES: &str = include_str!("../../sql/outputs/session_outcomes.sql");

/// `inferred_outcomes`, `inferred_session_outcomes`: outcomes read from the users' words.
pub const INFERRED_OUTCOMES: &str = include_str!("../../sql/outputs/inferred_outcomes.sql");

/// `session_outcomes` with the inferred outcomes of the sessions that have no imported one.
pub const OUTCOMES_WITH_INFERRED: &str = "CREATE OR REPLACE VIEW session_outcomes AS \
    SELECT session, outcome, score, source, imported_at FROM imported_outcomes \
    UNION ALL SELECT session, outcome, CAST(NULL AS DOUBLE), 'inferred', NULL FROM inferred_session_outcomes \
    WHERE session NOT IN (SELECT session FROM imported_outcomes)";

/// `signal_scores`: how well each signal separates failed sessions from successful ones.
pub const SIGNAL_SCORES: &str = include_str!("../../sql/outputs/signal_scores.sql");

/// `session_features`, `session_factors`: the conditions each session ran under, for
/// `tracelake factors`.
pub const SESSION_FACTORS: &str = include_str!("../../sql/outputs/session_factors.sql");

/// `moods`, `decisions`, `cortex_signals`, `threads`: what the conversations decide, wait
/// for and turn to, and their mood, over `cortex_messages`.
pub const CORTEX: &str = include_str!("../../sql/outputs/cortex.sql");

/// The rows of `cortex_messages` (a query over `events`): the messages in which a cortex
/// pattern found something, which `analyze` writes for the messages it sees first.
pub const CORTEX_MESSAGES: &str = include_str!("../../sql/outputs/cortex_messages.sql");

/// The scored sessions dealt into folds by task (a query with `${group}` and `${folds}`
/// to fill in), for `score --folds` and `risk`.
pub const TASK_FOLDS: &str = include_str!("../../sql/outputs/task_folds.sql");

/// `tracelake score --folds K`: per signal and fold of tasks, the sessions flagged (a query
/// with the folds, [`TASK_FOLDS`] filled in, as `${task_folds}`).
pub const FOLD_SCORES: &str = include_str!("../../sql/outputs/fold_scores.sql");

use crate::config::{CortexConfig, FactorsConfig};

/// `value` as a SQL string literal: quoted, its quotes doubled.
pub fn string_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// A time (ms since the epoch) as a quoted RFC 3339 literal that compares with `ts`.
pub fn time_literal(ms: i64) -> String {
    format!("'{}'", chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339())
}

/// What a detector may do: read. No DDL, no writes (`INSERT`, `COPY … TO`), no `SET`.
pub fn query_only() -> datafusion::execution::context::SQLOptions {
    datafusion::execution::context::SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false)
}

/// The shards of sessions whose chains the views over the whole lake build side by side
/// (`chain_shard` in `sql/chains.sql`). Chains are numbered from 2²⁴ · shard on, and
/// `unconfirmed_calls` counts positions as `chain_no` · 2³²: at most 128 shards keep
/// those under 2⁶³.
pub const LAKE_CHAIN_SHARDS: u64 = 128;

/// Settings filled into the SQL templates.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SqlParams {
    pub chain_gap_ms: i64,
    pub max_chain_events: i64,
    /// Shards of sessions the chain windows are partitioned into: 1 where chains are built
    /// a bucket of sessions at a time, [`LAKE_CHAIN_SHARDS`] for the views over the lake.
    pub chain_shards: u64,
    /// The size factors' bucket edges (`factors`).
    pub factor_buckets: FactorsConfig,
    /// Threads' and decisions' settings (`cortex`).
    pub cortex: CortexConfig,
}

impl Default for SqlParams {
    fn default() -> Self {
        Self {
            chain_gap_ms: 30 * 60_000,
            max_chain_events: 1000,
            chain_shards: 1,
            factor_buckets: FactorsConfig::default(),
            cortex: CortexConfig::default(),
        }
    }
}

impl SqlParams {
    /// The settings of `config` (`chainGapMinutes`, `factors`, `cortex`).
    pub fn from_config(config: &crate::config::Config) -> Self {
        Self {
            chain_gap_ms: config.chain_gap_minutes.max(0) * 60_000,
            factor_buckets: config.factors,
            cortex: config.cortex.clone(),
            ..Self::default()
        }
    }

    /// These settings for the chain views over the whole lake, built in shards side by side.
    pub fn over_lake(&self) -> Self {
        Self { chain_shards: LAKE_CHAIN_SHARDS, ..self.clone() }
    }

    pub fn fill(&self, sql: &str) -> String {
        // One shard is a constant, which the windows' sorts then leave out.
        let chain_shard = match self.chain_shards {
            0 | 1 => "CAST(0 AS BIGINT)".to_owned(),
            n => format!("CAST(key_hash(agent, session) % CAST({n} AS BIGINT UNSIGNED) AS BIGINT)"),
        };
        let mut sql = sql
            .replace("${chain_shard}", &chain_shard)
            .replace("${chain_gap_ms}", &self.chain_gap_ms.to_string())
            .replace("${max_chain_events}", &self.max_chain_events.to_string());
        for (key, [small, medium]) in self.factor_buckets.sizes() {
            sql = sql.replace(&format!("${{{key}.small}}"), &small.to_string()).replace(&format!("${{{key}.medium}}"), &medium.to_string());
        }
        let cortex = &self.cortex;
        let keywords: Vec<String> = cortex.high_impact_keywords.iter().map(|k| regex::escape(k)).collect();
        // Without keywords, a pattern that matches nothing (a boundary that is none).
        let high_impact = if keywords.is_empty() { "\\b\\B".to_owned() } else { format!("\\b(?:{})", keywords.join("|")) };
        sql.replace("${prune_days}", &cortex.prune_days.to_string())
            .replace("${max_threads}", &cortex.max_threads.to_string())
            .replace("${dedupe_window_ms}", &(i64::from(cortex.dedupe_window_hours) * 3_600_000).to_string())
            .replace("'${high_impact}'", &string_literal(&high_impact))
    }
}
