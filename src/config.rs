//! Configuration: the `traceAnalyzer` block of the OpenClaw cortex plugin config (spec §12),
//! read leniently as the spec's resolver does (a value of the wrong type falls back to
//! its default), plus the cortex config's top-level `llm` and `patterns.language`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use tracelake_udfs::patterns::LANGUAGES;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path} is not valid JSON: {source}")]
    Parse {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("config file {0} must hold a JSON object (the cortex plugin config, or its `traceAnalyzer` object)")]
    NotAnObject(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct NatsConfig {
    pub url: String,
    pub stream: String,
    pub subject_prefix: String,
    pub credentials: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleConfig {
    pub enabled: bool,
    pub interval_hours: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SignalConfig {
    pub enabled: bool,
    pub severity: Option<crate::model::Severity>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TriageConfig {
    pub endpoint: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LlmConfig {
    pub enabled: bool,
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub timeout_ms: Option<i64>,
    pub triage: Option<TriageConfig>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutputConfig {
    pub max_findings: i64,
    pub report_path: Option<String>,
}

/// The resolved configuration, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub enabled: bool,
    pub nats: NatsConfig,
    pub schedule: ScheduleConfig,
    pub chain_gap_minutes: i64,
    pub signals: BTreeMap<String, SignalConfig>,
    pub llm: LlmConfig,
    pub output: OutputConfig,
    pub redact_patterns: Vec<String>,
    pub incremental_context_window: i64,
    pub fetch_batch_size: i64,
    pub max_events_per_run: i64,
    /// Language packs for the signal patterns (`patterns.language`); default en + de.
    pub languages: Vec<String>,
    /// Extra detector SQL files (`detectorsDir`).
    pub detectors_dir: Option<String>,
    /// Replacements of the built-in tool-name patterns (`toolPatterns`: `consequential`,
    /// `readOnly`, `handoff`, `noop`, each a list of regular expressions).
    pub tool_patterns: BTreeMap<String, Vec<String>>,
}

impl Default for Config {
    fn default() -> Self {
        Config::resolve(&Value::Null)
    }
}

impl Config {
    /// Reads a config file: the cortex plugin config (with a `traceAnalyzer` key) or the
    /// `traceAnalyzer` object alone.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Read { path: name.clone(), source })?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|source| ConfigError::Parse { path: name.clone(), source })?;
        if !value.is_object() {
            return Err(ConfigError::NotAnObject(name));
        }
        Ok(Self::resolve(&value))
    }

    /// Resolves a cortex config object (or a bare `traceAnalyzer` object).
    pub fn resolve(root: &Value) -> Self {
        let ta = root.get("traceAnalyzer").unwrap_or(root);
        let nats = ta.get("nats").unwrap_or(&Value::Null);
        let sched = ta.get("schedule").unwrap_or(&Value::Null);
        let out = ta.get("output").unwrap_or(&Value::Null);
        Config {
            enabled: bool_or(ta.get("enabled"), false),
            nats: NatsConfig {
                url: str_or(nats.get("url"), "nats://localhost:4222"),
                stream: str_or(nats.get("stream"), "openclaw-events"),
                subject_prefix: str_or(nats.get("subjectPrefix"), "openclaw.events"),
                credentials: opt_str(nats.get("credentials")),
                user: opt_str(nats.get("user")),
                password: opt_str(nats.get("password")),
            },
            schedule: ScheduleConfig {
                enabled: bool_or(sched.get("enabled"), false),
                interval_hours: int_or(sched.get("intervalHours"), 24),
            },
            chain_gap_minutes: int_or(ta.get("chainGapMinutes"), 30),
            signals: resolve_signals(ta.get("signals")),
            llm: resolve_llm(ta.get("llm"), root.get("llm").filter(|_| root.get("traceAnalyzer").is_some())),
            output: OutputConfig { max_findings: int_or(out.get("maxFindings"), 200), report_path: opt_str(out.get("reportPath")) },
            redact_patterns: str_array(ta.get("redactPatterns")),
            incremental_context_window: int_or(ta.get("incrementalContextWindow"), 500),
            fetch_batch_size: int_or(ta.get("fetchBatchSize"), 500),
            max_events_per_run: int_or(ta.get("maxEventsPerRun"), 100_000),
            languages: resolve_languages(root.get("patterns").and_then(|p| p.get("language"))),
            detectors_dir: opt_str(ta.get("detectorsDir")),
            tool_patterns: ta
                .get("toolPatterns")
                .and_then(Value::as_object)
                .map(|o| o.iter().map(|(k, v)| (k.clone(), str_array(Some(v)))).collect())
                .unwrap_or_default(),
        }
    }
}

fn resolve_signals(raw: Option<&Value>) -> BTreeMap<String, SignalConfig> {
    crate::model::signal::signals()
        .iter()
        .map(|signal| {
            let id = &signal.id;
            let entry = raw.and_then(|s| s.get(id)).unwrap_or(&Value::Null);
            let default_enabled = signal.enabled_by_default;
            let severity = opt_str(entry.get("severity")).and_then(|s| s.parse().ok());
            (id.clone(), SignalConfig { enabled: bool_or(entry.get("enabled"), default_enabled), severity })
        })
        .collect()
}

/// The analyzer's `llm` block, each field falling back to the cortex top-level `llm`.
fn resolve_llm(analyzer: Option<&Value>, top: Option<&Value>) -> LlmConfig {
    let a = analyzer.unwrap_or(&Value::Null);
    let t = top.unwrap_or(&Value::Null);
    let pick_str = |k: &str| opt_str(a.get(k)).or_else(|| opt_str(t.get(k)));
    let pick_int = |k: &str| opt_int(a.get(k)).or_else(|| opt_int(t.get(k)));
    LlmConfig {
        enabled: bool_or(a.get("enabled"), bool_or(t.get("enabled"), false)),
        endpoint: pick_str("endpoint"),
        model: pick_str("model"),
        api_key: pick_str("apiKey"),
        timeout_ms: pick_int("timeoutMs"),
        triage: a.get("triage").filter(|v| v.is_object()).map(|tr| TriageConfig {
            endpoint: str_or(tr.get("endpoint"), ""),
            model: str_or(tr.get("model"), ""),
            api_key: opt_str(tr.get("apiKey")),
            timeout_ms: opt_int(tr.get("timeoutMs")),
        }),
    }
}

/// `"en" | "de" | "both" | "all" | [codes]`; default en + de.
fn resolve_languages(raw: Option<&Value>) -> Vec<String> {
    let known = |code: &str| LANGUAGES.contains(&code);
    match raw {
        Some(Value::String(s)) if s == "all" => LANGUAGES.iter().map(|s| (*s).to_owned()).collect(),
        Some(Value::String(s)) if s == "both" => vec!["en".into(), "de".into()],
        Some(Value::String(s)) if known(s) => vec![s.clone()],
        Some(Value::Array(items)) => {
            let codes: Vec<String> = items.iter().filter_map(Value::as_str).filter(|c| known(c)).map(str::to_owned).collect();
            if codes.is_empty() { vec!["en".into(), "de".into()] } else { codes }
        }
        _ => vec!["en".into(), "de".into()],
    }
}

fn bool_or(v: Option<&Value>, default: bool) -> bool {
    v.and_then(Value::as_bool).unwrap_or(default)
}
fn str_or(v: Option<&Value>, default: &str) -> String {
    opt_str(v).unwrap_or_else(|| default.to_owned())
}
fn opt_str(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}
fn opt_int(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_f64).filter(|f| f.is_finite()).map(|f| f.round() as i64)
}
fn int_or(v: Option<&Value>, default: i64) -> i64 {
    opt_int(v).unwrap_or(default)
}
fn str_array(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}
