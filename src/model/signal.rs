//! The signals: each built-in detector's id, SQL and settings. The settings are read from
//! the header of the detector's file in `sql/detectors/`, the form a user detector uses
//! too:
//!
//! ```sql
//! -- signal: SIG-REPEAT-FAIL
//! -- severity: high
//! -- scope: lake
//! ```
//!
//! The header is the file's first lines of the form `-- key: value`; the first other line
//! ends it.

use std::sync::LazyLock;

use super::severity::Severity;

/// What a detector reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// One chain at a time (`chain_events`, `tool_attempts`, …): runs per bucket of sessions,
    /// and live.
    Chain,
    /// The whole lake's history (`failure_occurrences`, `failure_history`): runs once per
    /// analysis, after every bucket, and never live.
    Lake,
}

/// A detector file's header.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorHeader {
    /// The signal it reports (built-in detectors).
    pub signal: Option<String>,
    /// The severity of most of its findings; a finding may be more severe.
    pub severity: Option<Severity>,
    pub scope: Scope,
    /// Whether `tracelake watch` runs it (only chain detectors can).
    pub live: bool,
    /// Whether it runs when the config does not say.
    pub enabled: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HeaderError {
    #[error("line {line}: unknown header key `{key}` (known: signal, severity, scope, live, enabled)")]
    UnknownKey { line: usize, key: String },
    #[error("line {line}: `{key}: {value}` must be {expected}")]
    BadValue { line: usize, key: String, value: String, expected: &'static str },
}

const HEADER_KEYS: [&str; 5] = ["signal", "severity", "scope", "live", "enabled"];

impl DetectorHeader {
    pub fn parse(sql: &str) -> Result<Self, HeaderError> {
        let mut header = DetectorHeader { signal: None, severity: None, scope: Scope::Chain, live: true, enabled: true };
        let mut live = None;
        for (n, line) in sql.lines().enumerate() {
            let Some((key, value)) = header_line(line) else { break };
            let line = n + 1;
            let bad = |expected| HeaderError::BadValue { line, key: key.to_owned(), value: value.to_owned(), expected };
            let yes_no = |v: &str| match v {
                "yes" | "true" => Ok(true),
                "no" | "false" => Ok(false),
                _ => Err(bad("yes or no")),
            };
            match key {
                "signal" => header.signal = Some(value.to_owned()),
                "severity" => header.severity = Some(value.parse().map_err(|_| bad("low, medium, high or critical"))?),
                "scope" => {
                    header.scope = match value {
                        "chain" => Scope::Chain,
                        "lake" => Scope::Lake,
                        _ => return Err(bad("chain or lake")),
                    }
                }
                "live" => live = Some(yes_no(value)?),
                "enabled" => header.enabled = yes_no(value)?,
                _ => return Err(HeaderError::UnknownKey { line, key: key.to_owned() }),
            }
        }
        header.live = header.scope == Scope::Chain && live.unwrap_or(true);
        Ok(header)
    }
}

/// `-- key: value` with a lowercase one-word key.
fn header_line(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.strip_prefix("--")?.split_once(':')?;
    let key = key.trim();
    let known_shape = !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '-');
    // A misspelt key still has the shape, so it is reported, not taken for prose.
    (known_shape && (HEADER_KEYS.contains(&key) || key.len() <= 12)).then(|| (key, value.trim()))
}

/// A built-in signal.
#[derive(Debug, Clone)]
pub struct Signal {
    pub id: String,
    /// Its detector.
    pub sql: &'static str,
    pub severity: Severity,
    pub scope: Scope,
    pub live: bool,
    pub enabled_by_default: bool,
}

/// The built-in detectors: the seven of spec §7 in its order, then tracelake's own.
const BUILTIN_SQL: [&str; 15] = [
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

static SIGNALS: LazyLock<Vec<Signal>> = LazyLock::new(|| {
    BUILTIN_SQL
        .iter()
        .map(|sql| {
            let header = DetectorHeader::parse(sql).expect("a built-in detector's header is valid");
            Signal {
                id: header.signal.expect("a built-in detector names its signal"),
                sql,
                severity: header.severity.expect("a built-in detector names its severity"),
                scope: header.scope,
                live: header.live,
                enabled_by_default: header.enabled,
            }
        })
        .collect()
});

/// Every built-in signal, in the spec's order.
pub fn signals() -> &'static [Signal] {
    &SIGNALS
}

pub fn signal(id: &str) -> Option<&'static Signal> {
    signals().iter().find(|s| s.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_header_reads() {
        let ids: Vec<&str> = signals().iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids.len(), 15);
        assert_eq!(ids[..2], ["SIG-CORRECTION", "SIG-TOOL-FAIL"]);
        let lake: Vec<&str> = signals().iter().filter(|s| s.scope == Scope::Lake).map(|s| s.id.as_str()).collect();
        assert_eq!(lake, ["SIG-REPEAT-FAIL"]);
        assert!(signals().iter().all(|s| s.live == (s.scope == Scope::Chain)));
        let off: Vec<&str> = signals().iter().filter(|s| !s.enabled_by_default).map(|s| s.id.as_str()).collect();
        assert_eq!(off, ["SIG-TOOL-FAIL", "SIG-REPEAT-FAIL", "SIG-UNVERIFIED-CLAIM", "SIG-UNANSWERED", "SIG-ERROR-ENDING"]);
        // Each names in its SELECT the signal its header names.
        assert!(signals().iter().all(|s| s.sql.contains(&format!("'{}' AS signal", s.id))), "{ids:?}");
    }

    #[test]
    fn headers_end_at_the_first_other_line_and_say_what_is_wrong() {
        let h = DetectorHeader::parse("-- scope: lake\n-- live: yes\nSELECT 1\n-- enabled: no").unwrap();
        assert_eq!((h.scope, h.live, h.enabled), (Scope::Lake, false, true));
        let prose = DetectorHeader::parse("-- SIG-X (spec §7.1): a comment\n-- scope: lake").unwrap();
        assert_eq!(prose.scope, Scope::Chain, "the header ended at the prose line");
        assert_eq!(DetectorHeader::parse("-- scop: lake"), Err(HeaderError::UnknownKey { line: 1, key: "scop".into() }));
        let bad = DetectorHeader::parse("-- severity: urgent").unwrap_err().to_string();
        assert!(bad.contains("low, medium, high or critical"), "{bad}");
        assert!(DetectorHeader::parse("-- scope: session").unwrap_err().to_string().contains("chain or lake"));
    }
}
