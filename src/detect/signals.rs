//! The registry of built-in signals: each built-in detector's id, SQL and settings, read
//! from the header of its file in `sql/detectors/` ([`super::header`]), and the settings
//! of the config checked against them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use super::header::{DetectorHeader, Scope};
use crate::config::{Config, ConfigError, SignalSetting};
use crate::engine::sql::DETECTORS;
use crate::model::Severity;

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

static SIGNALS: LazyLock<Vec<Signal>> = LazyLock::new(|| {
    DETECTORS
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

impl Signal {
    /// Whether `config` leaves it on.
    pub fn enabled_in(&self, config: &Config) -> bool {
        config.signals.get(&self.id).and_then(|s| s.enabled).unwrap_or(self.enabled_by_default)
    }
}

/// Checks that each signal `config` sets is a built-in one.
pub fn check_settings(config: &Config) -> Result<(), ConfigError> {
    let ids: Vec<&str> = signals().iter().map(|s| s.id.as_str()).collect();
    match config.signals.keys().find(|id| !ids.contains(&id.as_str())) {
        Some(unknown) => Err(config.unknown_signal(unknown, &ids)),
        None => Ok(()),
    }
}

/// Every built-in signal's setting in effect under `config`: the signal's own where
/// `config` leaves it out.
pub fn settings_in_effect(config: &Config) -> BTreeMap<String, SignalSetting> {
    signals()
        .iter()
        .map(|signal| {
            let set = config.signals.get(&signal.id).copied().unwrap_or_default();
            let enabled = set.enabled.unwrap_or(signal.enabled_by_default);
            (signal.id.clone(), SignalSetting { enabled: Some(enabled), severity: Some(set.severity.unwrap_or(signal.severity)) })
        })
        .collect()
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
    fn a_setting_of_a_signal_that_is_none_is_named_with_the_nearest() {
        let config = Config::resolve(&serde_json::json!({"traceAnalyzer": {"signals": {"SIG-CORECTION": {"enabled": false}}}})).unwrap();
        assert_eq!(
            check_settings(&config).unwrap_err().to_string(),
            "`traceAnalyzer.signals.SIG-CORECTION` is not a setting; did you mean `traceAnalyzer.signals.SIG-CORRECTION`?"
        );
        let bare = Config::resolve(&serde_json::json!({"signals": {"SIG-NONE": {}}})).unwrap();
        assert_eq!(check_settings(&bare).unwrap_err().to_string(), "`signals.SIG-NONE` is not a setting");
    }

    #[test]
    fn settings_left_out_are_the_signals_own() {
        let config = Config::resolve(&serde_json::json!({"traceAnalyzer": {"signals": {"SIG-DOOM-LOOP": {"severity": "low"}}}})).unwrap();
        check_settings(&config).unwrap();
        let in_effect = settings_in_effect(&config);
        assert_eq!(in_effect["SIG-DOOM-LOOP"], SignalSetting { enabled: Some(true), severity: Some(Severity::Low) });
        let tool_fail = signal("SIG-TOOL-FAIL").unwrap();
        assert_eq!(in_effect["SIG-TOOL-FAIL"], SignalSetting { enabled: Some(false), severity: Some(tool_fail.severity) });
        assert!(!tool_fail.enabled_in(&config) && signal("SIG-DOOM-LOOP").unwrap().enabled_in(&config));
    }
}
