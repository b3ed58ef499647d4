//! The SQL behind the analysis: chain reconstruction and the detectors, embedded from
//! `sql/`, plus the user's detector files.

use std::path::{Path, PathBuf};

/// Chain reconstruction: `deduped_events`, `chain_events`.
pub const CHAINS: &str = include_str!("../../sql/chains.sql");
/// Views over the chain events: `chains`, `tool_attempts`.
pub const CHAIN_VIEWS: &str = include_str!("../../sql/chain_views.sql");

/// `rule_effectiveness`: each generated rule's failures before and after it.
pub const RULE_EFFECTIVENESS: &str = include_str!("../../sql/outputs/rule_effectiveness.sql");

/// `session_outcomes`, `signal_scores`: how well each signal separates failed sessions
/// from successful ones.
pub const SIGNAL_SCORES: &str = include_str!("../../sql/outputs/signal_scores.sql");

/// A detector: a SELECT that yields the finding columns.
/// What a detector file may do: read. No DDL, no writes (`INSERT`, `COPY … TO`), no `SET`.
pub fn query_only() -> datafusion::execution::context::SQLOptions {
    datafusion::execution::context::SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false)
}

#[derive(Debug, Clone)]
pub struct Detector {
    /// The signal id for built-ins; the file name for user detectors.
    pub name: String,
    pub sql: String,
    pub builtin: bool,
}

/// The built-in detectors: the seven of spec §7 in its order, then tracelake's own.
pub fn builtin_detectors() -> Vec<Detector> {
    [
        ("SIG-CORRECTION", include_str!("../../sql/detectors/sig_correction.sql")),
        ("SIG-TOOL-FAIL", include_str!("../../sql/detectors/sig_tool_fail.sql")),
        ("SIG-DOOM-LOOP", include_str!("../../sql/detectors/sig_doom_loop.sql")),
        ("SIG-DISSATISFIED", include_str!("../../sql/detectors/sig_dissatisfied.sql")),
        ("SIG-REPEAT-FAIL", include_str!("../../sql/detectors/sig_repeat_fail.sql")),
        ("SIG-HALLUCINATION", include_str!("../../sql/detectors/sig_hallucination.sql")),
        ("SIG-UNVERIFIED-CLAIM", include_str!("../../sql/detectors/sig_unverified_claim.sql")),
        ("SIG-UNCONFIRMED-ACTION", include_str!("../../sql/detectors/sig_unconfirmed_action.sql")),
        ("SIG-UNANSWERED", include_str!("../../sql/detectors/sig_unanswered.sql")),
        ("SIG-ERROR-ENDING", include_str!("../../sql/detectors/sig_error_ending.sql")),
    ]
    .into_iter()
    .map(|(name, sql)| Detector { name: name.into(), sql: sql.into(), builtin: true })
    .collect()
}

/// The built-in detectors `config` leaves enabled.
pub fn enabled_builtin_detectors(config: &crate::config::Config) -> Vec<Detector> {
    builtin_detectors().into_iter().filter(|d| config.signals.get(&d.name).is_none_or(|s| s.enabled)).collect()
}

/// Every `.sql` file in `dir`, sorted by name.
pub fn user_detectors(dir: &Path) -> std::io::Result<Vec<Detector>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "sql") && p.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let sql = std::fs::read_to_string(&path)?;
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            Ok(Detector { name, sql, builtin: false })
        })
        .collect()
}

/// Settings filled into the SQL templates.
#[derive(Debug, Clone, Copy)]
pub struct SqlParams {
    pub chain_gap_ms: i64,
    pub max_chain_events: i64,
}

impl Default for SqlParams {
    fn default() -> Self {
        Self { chain_gap_ms: 30 * 60_000, max_chain_events: 1000 }
    }
}

impl SqlParams {
    /// The settings of `config` (`chainGapMinutes`).
    pub fn from_config(config: &crate::config::Config) -> Self {
        Self { chain_gap_ms: config.chain_gap_minutes.max(0) * 60_000, ..Self::default() }
    }

    pub fn fill(&self, sql: &str) -> String {
        sql.replace("${chain_gap_ms}", &self.chain_gap_ms.to_string()).replace("${max_chain_events}", &self.max_chain_events.to_string())
    }
}
