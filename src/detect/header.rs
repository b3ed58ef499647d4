//! A detector file's header: the settings a detector declares, built-in or the user's,
//! in the file's first lines:
//!
//! ```sql
//! -- signal: SIG-REPEAT-FAIL
//! -- severity: high
//! -- scope: lake
//! ```
//!
//! The header is the file's first lines of the form `-- key: value`; the first other line
//! ends it.

use crate::model::Severity;

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

#[cfg(test)]
mod tests {
    use super::*;

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
