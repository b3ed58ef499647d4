//! The catalogue of the SQL tracelake embeds from `sql/` (the chains, the views over them,
//! the outputs, the built-in detectors), and the settings filled into it.

/// Chain reconstruction: `deduped_events`, `chain_events`.
pub const CHAINS: &str = include_str!("../../sql/chains.sql");
/// Views over the chain events: `chains`, `tool_attempts`, `failure_occurrences`, `chain_endings`.
pub const CHAIN_VIEWS: &str = include_str!("../../sql/chain_views.sql");

/// The built-in detectors' files, each with its header ([`crate::detect::header`]): the
/// seven of spec §7 in its order, then tracelake's own.
pub const DETECTORS: [&str; 15] = [
    include_str!("../../sql/detectors/sig_correction.sql"),
    include_str!("../../sql/detectors/sig_tool_fail.sql"),
    include_str!("../../sql/detectors/sig_doom_loop.sql"),
    include_str!("../../sql/detectors/sig_dissatisfied.sql"),
    include_str!("../../sql/detectors/sig_repeat_fail.sql"),
    include_str!("../../sql/detectors/sig_hallucination.sql"),
    include_str!("../../sql/detectors/sig_unverified_claim.sql"),
    include_str!("../../sql/detectors/sig_unconfirmed_action.sql"),
    include_str!("../../sql/detectors/sig_unconfirmed_attempt.sql"),
    include_str!("../../sql/detectors/sig_ungrounded_value.sql"),
    include_str!("../../sql/detectors/sig_unstated_action.sql"),
    include_str!("../../sql/detectors/sig_left_unfinished.sql"),
    include_str!("../../sql/detectors/sig_terms_changed.sql"),
    include_str!("../../sql/detectors/sig_unanswered.sql"),
    include_str!("../../sql/detectors/sig_error_ending.sql"),
];

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

    /// `sql` with these settings in its `${…}` slots.
    pub fn fill(&self, sql: &str) -> String {
        fill_template(sql, &self.values())
    }

    /// The value of each slot, as SQL.
    fn values(&self) -> Vec<(String, String)> {
        // One shard is a constant, which the windows' sorts then leave out.
        let chain_shard = match self.chain_shards {
            0 | 1 => "CAST(0 AS BIGINT)".to_owned(),
            n => format!("CAST(key_hash(agent, session) % CAST({n} AS BIGINT UNSIGNED) AS BIGINT)"),
        };
        let cortex = &self.cortex;
        let keywords: Vec<String> = cortex.high_impact_keywords.iter().map(|k| regex::escape(k)).collect();
        // Without keywords, a pattern that matches nothing (a boundary that is none).
        let high_impact = if keywords.is_empty() { "\\b\\B".to_owned() } else { format!("\\b(?:{})", keywords.join("|")) };
        let mut values = vec![
            ("chain_shard".to_owned(), chain_shard),
            ("chain_gap_ms".to_owned(), self.chain_gap_ms.to_string()),
            ("max_chain_events".to_owned(), self.max_chain_events.to_string()),
            ("prune_days".to_owned(), cortex.prune_days.to_string()),
            ("max_threads".to_owned(), cortex.max_threads.to_string()),
            ("dedupe_window_ms".to_owned(), (i64::from(cortex.dedupe_window_hours) * 3_600_000).to_string()),
            ("high_impact".to_owned(), string_literal(&high_impact)),
        ];
        for (key, [small, medium]) in self.factor_buckets.sizes() {
            values.push((format!("{key}.small"), small.to_string()));
            values.push((format!("{key}.medium"), medium.to_string()));
        }
        values
    }
}

/// `sql` with each `${name}` that `values` names replaced by its value (SQL: a number, a
/// quoted literal, an expression), in one pass over `sql`, so that a value is never read as
/// a slot. A `${…}` that `values` does not name is left as it is: a user's detector may
/// hold one in a string.
pub fn fill_template<N: AsRef<str>, V: AsRef<str>>(sql: &str, values: &[(N, V)]) -> String {
    let mut filled = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(start) = rest.find("${") {
        filled.push_str(&rest[..start]);
        let slot = &rest[start + 2..];
        let named = slot.find('}').and_then(|end| values.iter().find(|(n, _)| n.as_ref() == &slot[..end]).map(|(_, v)| (end, v)));
        match named {
            Some((end, value)) => {
                filled.push_str(value.as_ref());
                rest = &slot[end + 1..];
            }
            None => {
                filled.push_str("${");
                rest = slot;
            }
        }
    }
    filled.push_str(rest);
    filled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_filled_in_one_pass_and_unknown_ones_left() {
        let values = [("a", "${b}"), ("b", "2")];
        assert_eq!(fill_template("x ${a} ${b} '${c}' ${", &values), "x ${b} 2 '${c}' ${");
    }

    #[test]
    fn every_slot_of_the_embedded_sql_is_filled() {
        let params = SqlParams::default();
        for sql in [CHAINS, CHAIN_VIEWS, CORTEX, SESSION_FACTORS, RULE_EFFECTIVENESS, SESSION_OUTCOMES, INFERRED_OUTCOMES, SIGNAL_SCORES]
            .into_iter()
            .chain(DETECTORS)
        {
            let filled = params.fill(sql);
            assert!(
                !filled.contains("${"),
                "{}",
                &filled[filled.find("${").unwrap()..][..40.min(filled.len() - filled.find("${").unwrap())]
            );
        }
    }
}
