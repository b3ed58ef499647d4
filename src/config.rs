//! Configuration: the `traceAnalyzer` block of the OpenClaw cortex plugin config (spec
//! §12), plus the cortex config's top-level `llm` and `patterns.language`.
//!
//! Read strictly, unlike the spec's resolver (which takes a value of the wrong type as
//! its default): a mistyped key or a value of the wrong type is an error that names the
//! key and the nearest valid one, since a setting silently ignored is a run with other
//! settings than the user meant. Keys the cortex config holds for other plugins stay
//! allowed beside `traceAnalyzer`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracelake_udfs::patterns::LANGUAGES;

use crate::model::Severity;
use crate::privacy::{PiiAction, PiiKind};

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
    #[error("`{key}` is not a setting{}", suggestion(.nearest))]
    UnknownKey { key: String, nearest: Option<String> },
    #[error("`{key}`: {message}")]
    Invalid { key: String, message: String },
    #[error("`{key}` has no effect in tracelake: {why}; remove it")]
    Unused { key: String, why: &'static str },
    #[error("config file {path}: {source}")]
    InFile {
        path: String,
        #[source]
        source: Box<ConfigError>,
    },
}

fn suggestion(nearest: &Option<String>) -> String {
    nearest.as_ref().map(|n| format!("; did you mean `{n}`?")).unwrap_or_default()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NatsConfig {
    pub url: String,
    pub stream: String,
    pub subject_prefix: String,
    pub credentials: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl Default for NatsConfig {
    fn default() -> Self {
        Self {
            url: "nats://localhost:4222".into(),
            stream: "openclaw-events".into(),
            subject_prefix: "openclaw.events".into(),
            credentials: None,
            user: None,
            password: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ScheduleConfig {
    pub enabled: bool,
    pub interval_hours: i64,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self { enabled: false, interval_hours: 24 }
    }
}

/// A signal's setting as written: either field may be left out, for the signal's own
/// (`crate::detect::signals` knows the signals and their defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SignalSetting {
    pub enabled: Option<bool>,
    pub severity: Option<Severity>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TriageConfig {
    pub endpoint: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmConfig {
    pub enabled: bool,
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub timeout_ms: Option<i64>,
    pub triage: Option<TriageConfig>,
}

/// An `llm` block as written; the analyzer's own falls back field by field to the
/// cortex config's top-level one. Keys that are not ours land in `other`: the
/// cortex block may hold them, the analyzer's may not.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct LlmEntry {
    enabled: Option<bool>,
    endpoint: Option<String>,
    model: Option<String>,
    api_key: Option<String>,
    timeout_ms: Option<i64>,
    triage: Option<TriageConfig>,
    #[serde(flatten)]
    other: BTreeMap<String, Value>,
}

/// How long an LLM request may take when `llm.timeoutMs` is not set.
pub const DEFAULT_LLM_TIMEOUT_MS: i64 = 30_000;

const LLM_KEYS: [&str; 6] = ["enabled", "endpoint", "model", "apiKey", "timeoutMs", "triage"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OutputConfig {
    pub max_findings: i64,
    pub report_path: Option<String>,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self { max_findings: 200, report_path: None }
    }
}

/// `privacy`: what is done to personal data at ingest.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PrivacyConfig {
    pub pii: PiiConfig,
}

/// `privacy.pii`: which kinds of personal data are found in every text field and payload
/// at ingest, and whether they are removed or pseudonymized (`crate::privacy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PiiConfig {
    pub enabled: bool,
    pub kinds: Vec<PiiKind>,
    pub action: PiiAction,
}

impl Default for PiiConfig {
    fn default() -> Self {
        Self { enabled: false, kinds: PiiKind::ALL.to_vec(), action: PiiAction::Pseudonymize }
    }
}

/// `factors`: how `session_factors` buckets session sizes. Each size has two edges
/// `[small, medium]`: a session with at most `small` is `small`, with at most `medium`
/// `medium`, with more `large`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct FactorsConfig {
    pub user_turns: [f64; 2],
    pub tool_calls: [f64; 2],
    pub distinct_tools: [f64; 2],
    pub duration_seconds: [f64; 2],
}

impl Default for FactorsConfig {
    fn default() -> Self {
        Self { user_turns: [2.0, 6.0], tool_calls: [2.0, 10.0], distinct_tools: [1.0, 3.0], duration_seconds: [60.0, 600.0] }
    }
}

impl FactorsConfig {
    /// Each size by its key, with its edges.
    pub fn sizes(&self) -> [(&'static str, [f64; 2]); 4] {
        [
            ("userTurns", self.user_turns),
            ("toolCalls", self.tool_calls),
            ("distinctTools", self.distinct_tools),
            ("durationSeconds", self.duration_seconds),
        ]
    }

    fn check(&self, prefix: &str) -> Result<(), ConfigError> {
        for (key, [small, medium]) in self.sizes() {
            if !(small.is_finite() && medium.is_finite() && 0.0 <= small && small < medium) {
                return Err(ConfigError::Invalid {
                    key: format!("{prefix}factors.{key}"),
                    message: format!("the edges [small, medium] must be two numbers, 0 ≤ small < medium; got [{small}, {medium}]"),
                });
            }
        }
        Ok(())
    }
}

/// `cortex`: threads, decisions and the boot context (`tracelake brief`), as the cortex
/// plugin's `threadTracker`, `decisionTracker` and `bootContext` set them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CortexConfig {
    /// Closed threads whose last activity is more than this many days before the agent's
    /// latest event drop out.
    pub prune_days: u32,
    /// Threads kept per agent at most, the oldest closed ones dropped first.
    pub max_threads: u32,
    /// The same decision within this many hours is kept once.
    pub dedupe_window_hours: u32,
    /// Words that make a decision's impact `high`.
    pub high_impact_keywords: Vec<String>,
    /// The character budget of `tracelake brief`.
    pub max_chars: u32,
}

impl Default for CortexConfig {
    fn default() -> Self {
        let keywords = [
            "architecture",
            "architektur",
            "security",
            "sicherheit",
            "migration",
            "delete",
            "löschen",
            "production",
            "produktion",
            "deploy",
            "breaking",
            "major",
            "critical",
            "kritisch",
            "strategy",
            "strategie",
            "budget",
            "contract",
            "vertrag",
        ];
        Self {
            prune_days: 7,
            max_threads: 50,
            dedupe_window_hours: 24,
            high_impact_keywords: keywords.iter().map(|k| (*k).to_owned()).collect(),
            max_chars: 16_000,
        }
    }
}

/// `storage`: how a lake on object storage (`--lake s3://…`, `gs://…`, `az://…`) is
/// reached, beyond what the environment says (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct StorageConfig {
    /// `object_store` options by name (`aws_endpoint`, `aws_region`, `aws_allow_http`,
    /// `google_service_account`, `azure_storage_account_name`, …); they win over the
    /// environment.
    pub options: BTreeMap<String, String>,
    /// Days each table (`events`, `quarantine`, …) keeps its partitions: `tracelake
    /// vacuum` drops older ones and deletes their files at once. Tables not named keep
    /// everything.
    pub retention_days: BTreeMap<String, u32>,
}

/// The `traceAnalyzer` object as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct AnalyzerEntry {
    enabled: bool,
    nats: NatsConfig,
    schedule: ScheduleConfig,
    chain_gap_minutes: i64,
    signals: BTreeMap<String, SignalSetting>,
    llm: LlmEntry,
    output: OutputConfig,
    redact_patterns: Vec<String>,
    incremental_context_window: i64,
    detectors_dir: Option<String>,
    tool_patterns: BTreeMap<String, Vec<String>>,
    privacy: PrivacyConfig,
    storage: StorageConfig,
    workers: Vec<String>,
    worker_scan_bytes: u64,
    factors: FactorsConfig,
    cortex: CortexConfig,
}

impl Default for AnalyzerEntry {
    fn default() -> Self {
        Self {
            enabled: false,
            nats: NatsConfig::default(),
            schedule: ScheduleConfig::default(),
            chain_gap_minutes: 30,
            signals: BTreeMap::new(),
            llm: LlmEntry::default(),
            output: OutputConfig::default(),
            redact_patterns: Vec::new(),
            incremental_context_window: 500,
            detectors_dir: None,
            tool_patterns: BTreeMap::new(),
            privacy: PrivacyConfig::default(),
            storage: StorageConfig::default(),
            workers: Vec::new(),
            worker_scan_bytes: 16 << 20,
            factors: FactorsConfig::default(),
            cortex: CortexConfig::default(),
        }
    }
}

/// Spec keys tracelake does not read, and why.
const UNUSED_KEYS: [(&str, &str); 2] = [
    ("fetchBatchSize", "exports fetch from JetStream in batches the server sizes"),
    ("maxEventsPerRun", "an analysis reads every new event, within the memory limit, and `export --commit-every` bounds a commit"),
];

/// The top-level keys of the cortex config that tracelake reads.
const CORTEX_KEYS: [&str; 3] = ["traceAnalyzer", "llm", "patterns"];

/// The resolved configuration, defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    pub enabled: bool,
    pub nats: NatsConfig,
    pub schedule: ScheduleConfig,
    pub chain_gap_minutes: i64,
    /// The signals' settings as written, by signal id ([`crate::detect::signals::check_settings`]
    /// checks the ids, which the CLI does where it reads the config).
    pub signals: BTreeMap<String, SignalSetting>,
    pub llm: LlmConfig,
    pub output: OutputConfig,
    pub redact_patterns: Vec<String>,
    pub incremental_context_window: i64,
    /// Language packs for the signal patterns (`patterns.language`); default en + de.
    pub languages: Vec<String>,
    /// Extra detector SQL files (`detectorsDir`).
    pub detectors_dir: Option<String>,
    /// Replacements of the built-in tool-name patterns (`toolPatterns`: `consequential`,
    /// `readOnly`, `handoff`, `noop`, each a list of regular expressions).
    pub tool_patterns: BTreeMap<String, Vec<String>>,
    /// What is done to personal data at ingest (`privacy.pii`).
    pub privacy: PrivacyConfig,
    /// Options of the object store a lake URL names (`storage.options`).
    pub storage: StorageConfig,
    /// `tracelake worker` URLs that run queries and analyses (`workers`); none: this
    /// process runs them.
    pub workers: Vec<String>,
    /// Bytes of Parquet each task of a scan on the workers reads (`workerScanBytes`):
    /// fewer bytes, more tasks.
    pub worker_scan_bytes: u64,
    /// The bucket edges of the size factors (`factors`).
    pub factors: FactorsConfig,
    /// Threads, decisions and the boot context (`cortex`).
    pub cortex: CortexConfig,
    /// Where it was read from, for errors found after it was read.
    #[serde(skip)]
    pub origin: Origin,
}

/// Where a config was read from: its file, and how the analyzer's keys are named in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origin {
    pub file: Option<String>,
    pub prefix: &'static str,
}

impl Default for Config {
    fn default() -> Self {
        Config::resolve(&Value::Object(serde_json::Map::default())).expect("the defaults are valid")
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
        let config = Self::resolve(&value).map_err(|source| ConfigError::InFile { path: name.clone(), source: Box::new(source) })?;
        Ok(Self { origin: Origin { file: Some(name), ..config.origin }, ..config })
    }

    /// Resolves a cortex config object, or a bare `traceAnalyzer` object.
    pub fn resolve(root: &Value) -> Result<Self, ConfigError> {
        let form = Form::of(root)?;
        let written = form.analyzer(root);
        let analyzer: AnalyzerEntry = typed(written.clone(), form.prefix())?;
        for (key, why) in UNUSED_KEYS {
            if written.get(key).is_some() {
                return Err(ConfigError::Unused { key: format!("{}{key}", form.prefix()), why });
            }
        }
        if let Some(key) = analyzer.llm.other.keys().next() {
            let llm = format!("{}llm.", form.prefix());
            return Err(ConfigError::UnknownKey {
                key: format!("{llm}{key}"),
                nearest: nearest(key, &LLM_KEYS).map(|n| format!("{llm}{n}")),
            });
        }
        let top_llm: LlmEntry = match root.get("llm").filter(|_| form == Form::Cortex) {
            Some(llm) => typed(llm.clone(), "llm.")?,
            None => LlmEntry::default(),
        };
        let patterns = root.get("patterns").cloned().unwrap_or(Value::Null);
        analyzer.factors.check(form.prefix())?;
        Ok(Config {
            enabled: analyzer.enabled,
            nats: analyzer.nats,
            schedule: analyzer.schedule,
            chain_gap_minutes: analyzer.chain_gap_minutes,
            signals: analyzer.signals,
            llm: resolve_llm(analyzer.llm, top_llm),
            output: analyzer.output,
            redact_patterns: analyzer.redact_patterns,
            incremental_context_window: analyzer.incremental_context_window,
            languages: resolve_languages(patterns.get("language"))?,
            detectors_dir: analyzer.detectors_dir,
            tool_patterns: analyzer.tool_patterns,
            privacy: analyzer.privacy,
            storage: analyzer.storage,
            workers: analyzer.workers,
            worker_scan_bytes: analyzer.worker_scan_bytes,
            factors: analyzer.factors,
            cortex: analyzer.cortex,
            origin: Origin { file: None, prefix: form.prefix() },
        })
    }

    /// The error for the setting of signal `id`, which is none of `known`.
    pub fn unknown_signal(&self, id: &str, known: &[&str]) -> ConfigError {
        let prefix = self.origin.prefix;
        let error = ConfigError::UnknownKey {
            key: format!("{prefix}signals.{id}"),
            nearest: nearest(id, known).map(|n| format!("{prefix}signals.{n}")),
        };
        match &self.origin.file {
            Some(path) => ConfigError::InFile { path: path.clone(), source: Box::new(error) },
            None => error,
        }
    }
}

/// One effective setting, for `tracelake config`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    /// As written in the cortex config: `traceAnalyzer.output.maxFindings`.
    pub key: String,
    /// Secrets show as `(set)`.
    pub value: Value,
    /// Whether the config file sets it (else it is the default).
    pub from_file: bool,
}

/// Keys whose values are never shown.
const SECRET_KEYS: [&str; 2] = ["apiKey", "password"];

impl Config {
    /// Every setting, in the cortex config's names; `root` is the file's JSON, if any, and
    /// `signals` every signal's setting in effect.
    pub fn settings(&self, root: Option<&Value>, signals: &BTreeMap<String, SignalSetting>) -> Vec<Setting> {
        let empty = Value::Object(serde_json::Map::default());
        let root = root.unwrap_or(&empty);
        let form = Form::of(root).unwrap_or(Form::Cortex);
        let analyzer = form.analyzer(root);
        let mut flat = Vec::new();
        let mut value = serde_json::to_value(Config { signals: signals.clone(), ..self.clone() }).expect("the config serializes");
        let languages = value.as_object_mut().and_then(|o| o.remove("languages")).unwrap_or(Value::Null);
        flatten("", &value, &mut flat);
        let mut settings: Vec<Setting> = flat
            .into_iter()
            .map(|(key, value)| {
                let value = if value.is_null() { default_of(&key).unwrap_or(value) } else { value };
                let in_analyzer = lookup(&analyzer, &key).is_some();
                let in_top_llm = form == Form::Cortex && key.starts_with("llm.") && lookup(root, &key).is_some();
                Setting { key: format!("traceAnalyzer.{key}"), value, from_file: in_analyzer || in_top_llm }
            })
            .collect();
        settings.push(Setting {
            key: "patterns.language".into(),
            value: languages,
            from_file: lookup(root, "patterns.language").is_some(),
        });
        settings
    }
}

/// The value that applies to the setting at `key` when it is left unset, where that is
/// not `null`: the LLM's timeout.
fn default_of(key: &str) -> Option<Value> {
    (key == "llm.timeoutMs" || key == "llm.triage.timeoutMs").then(|| Value::from(DEFAULT_LLM_TIMEOUT_MS))
}

/// Whether the setting at `key` holds a secret: a password, an API key, or a storage
/// credential (`storage.options.aws_secret_access_key`, `…_token`, `…_sas_key`).
fn is_secret(key: &str) -> bool {
    let storage_credential = key
        .strip_prefix("storage.options.")
        .is_some_and(|option| ["secret", "key", "token", "sas", "password"].iter().any(|word| option.to_ascii_lowercase().contains(word)));
    storage_credential || SECRET_KEYS.iter().any(|k| key.ends_with(k))
}

/// `value`'s leaves as (dotted key, value); secrets masked.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() && !prefix.ends_with("toolPatterns") => {
            for (key, v) in map {
                let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                flatten(&path, v, out);
            }
        }
        Value::String(_) if is_secret(prefix) => out.push((prefix.to_owned(), Value::String("(set)".into()))),
        other => out.push((prefix.to_owned(), other.clone())),
    }
}

/// The value at a dotted `key` (signal ids hold dashes, never dots).
fn lookup<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(value, |v, part| v.get(part))
}

/// How a config file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// The cortex plugin config: `traceAnalyzer`, `llm`, `patterns` and other plugins' keys.
    Cortex,
    /// The `traceAnalyzer` object alone (with `patterns` beside its keys).
    Analyzer,
}

impl Form {
    fn of(root: &Value) -> Result<Self, ConfigError> {
        let keys: Vec<&str> = root.as_object().map(|o| o.keys().map(String::as_str).collect()).unwrap_or_default();
        let analyzer_keys = AnalyzerEntry::KEYS;
        if !keys.contains(&"traceAnalyzer") && keys.iter().any(|k| analyzer_keys.contains(k) && *k != "llm") {
            return Ok(Form::Analyzer);
        }
        // Beside other plugins' keys, one that is nearly one of ours is a typo of it.
        for key in keys {
            if let Some(near) = nearest(key, &CORTEX_KEYS).filter(|n| *n != key) {
                return Err(ConfigError::UnknownKey { key: key.to_owned(), nearest: Some(near.to_owned()) });
            }
        }
        Ok(Form::Cortex)
    }

    /// The analyzer's settings, `patterns` (which sits beside them) left out.
    fn analyzer(self, root: &Value) -> Value {
        match self {
            Form::Cortex => root.get("traceAnalyzer").cloned().unwrap_or_else(|| Value::Object(serde_json::Map::default())),
            Form::Analyzer => {
                let mut analyzer = root.clone();
                if let Some(o) = analyzer.as_object_mut() {
                    o.remove("patterns");
                }
                analyzer
            }
        }
    }

    /// How the analyzer's keys are named in messages.
    fn prefix(self) -> &'static str {
        match self {
            Form::Cortex => "traceAnalyzer.",
            Form::Analyzer => "",
        }
    }
}

impl AnalyzerEntry {
    const KEYS: [&str; 19] = [
        "enabled",
        "nats",
        "schedule",
        "chainGapMinutes",
        "signals",
        "llm",
        "output",
        "redactPatterns",
        "incrementalContextWindow",
        "detectorsDir",
        "toolPatterns",
        "privacy",
        "storage",
        "workers",
        "workerScanBytes",
        "factors",
        "cortex",
        "fetchBatchSize",
        "maxEventsPerRun",
    ];
}

/// `value` read as `T`; an error names the key (after `prefix`) it is about.
fn typed<T: DeserializeOwned>(mut value: Value, prefix: &str) -> Result<T, ConfigError> {
    // Spec keys tracelake does not read are told apart from typos (see `UNUSED_KEYS`).
    if let Some(o) = value.as_object_mut() {
        for (key, _) in UNUSED_KEYS {
            o.remove(key);
        }
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        // `.` is serde_path_to_error's name for the top.
        let path = Some(e.path().to_string()).filter(|p| p != ".").unwrap_or_default();
        // The path of an unknown field ends in its name or in the object that holds it.
        let parent = |name: &str| {
            let within = path.strip_suffix(name).filter(|p| p.is_empty() || p.ends_with('.'));
            within.map_or_else(|| if path.is_empty() { String::new() } else { format!("{path}.") }, str::to_owned)
        };
        let message = e.inner().to_string();
        match unknown_field(&message) {
            Some((field, expected)) => {
                let known: Vec<&str> = expected.iter().map(String::as_str).collect();
                let parent = parent(&field);
                let key = |name: &str| format!("{prefix}{parent}{name}");
                ConfigError::UnknownKey { key: key(&field), nearest: nearest(&field, &known).map(key) }
            }
            None => ConfigError::Invalid {
                key: format!("{prefix}{path}"),
                message: message.split(" at line ").next().unwrap_or(&message).to_owned(),
            },
        }
    })
}

/// The key and the expected keys of serde's "unknown field `x`, expected `a` or `b`".
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, expected) = rest.split_once('`')?;
    let known = expected.split('`').skip(1).step_by(2).map(str::to_owned).collect();
    Some((field.to_owned(), known))
}

/// The valid name `key` most likely misspells, if any is close.
fn nearest<'a>(key: &str, valid: &[&'a str]) -> Option<&'a str> {
    nearest_within(key, valid, usize::MAX)
}

/// The valid name `key` most likely misspells, if any is close and at most `max_edits`
/// away.
pub fn nearest_within<'a>(key: &str, valid: &[&'a str], max_edits: usize) -> Option<&'a str> {
    let lower = key.to_lowercase();
    valid
        .iter()
        .map(|v| (strsim::damerau_levenshtein(&lower, &v.to_lowercase()), *v))
        .filter(|(distance, v)| *distance <= (v.len() / 3).max(1).min(max_edits))
        .min()
        .map(|(_, v)| v)
}

fn resolve_llm(analyzer: LlmEntry, top: LlmEntry) -> LlmConfig {
    LlmConfig {
        enabled: analyzer.enabled.or(top.enabled).unwrap_or(false),
        endpoint: analyzer.endpoint.or(top.endpoint),
        model: analyzer.model.or(top.model),
        api_key: analyzer.api_key.or(top.api_key),
        timeout_ms: analyzer.timeout_ms.or(top.timeout_ms),
        triage: analyzer.triage,
    }
}

/// `"en" | "de" | "both" | "all" | [codes]`; default en + de.
fn resolve_languages(raw: Option<&Value>) -> Result<Vec<String>, ConfigError> {
    let known = |code: &str| -> Result<String, ConfigError> {
        if LANGUAGES.contains(&code) {
            return Ok(code.to_owned());
        }
        Err(ConfigError::Invalid {
            key: "patterns.language".into(),
            message: format!("no language pack `{code}`; the packs are {}, or `both` (en, de) and `all`", LANGUAGES.join(", ")),
        })
    };
    Ok(match raw {
        None | Some(Value::Null) => vec!["en".into(), "de".into()],
        Some(Value::String(s)) if s == "all" => LANGUAGES.iter().map(|s| (*s).to_owned()).collect(),
        Some(Value::String(s)) if s == "both" => vec!["en".into(), "de".into()],
        Some(Value::String(s)) => vec![known(s)?],
        Some(Value::Array(items)) if !items.is_empty() => {
            items.iter().map(|item| item.as_str().ok_or_else(|| not_a_language(item)).and_then(known)).collect::<Result<_, _>>()?
        }
        Some(other) => return Err(not_a_language(other)),
    })
}

fn not_a_language(value: &Value) -> ConfigError {
    ConfigError::Invalid {
        key: "patterns.language".into(),
        message: format!("{value} is not a language code, `both`, `all` or a list of codes"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn error(value: Value) -> String {
        Config::resolve(&value).expect_err("an error").to_string()
    }

    #[test]
    fn a_mistyped_key_is_named_with_the_nearest_valid_one() {
        assert_eq!(
            error(json!({"traceAnalyzer": {"output": {"maxFinding": 10}}})),
            "`traceAnalyzer.output.maxFinding` is not a setting; did you mean `traceAnalyzer.output.maxFindings`?"
        );
        assert_eq!(
            error(json!({"output": {"maxFinding": 10}})),
            "`output.maxFinding` is not a setting; did you mean `output.maxFindings`?"
        );
        assert_eq!(error(json!({"traceAnalyser": {"enabled": true}})), "`traceAnalyser` is not a setting; did you mean `traceAnalyzer`?");
        assert_eq!(
            error(json!({"traceAnalyzer": {"chainGapMinute": 5}})),
            "`traceAnalyzer.chainGapMinute` is not a setting; did you mean `traceAnalyzer.chainGapMinutes`?"
        );
        assert_eq!(error(json!({"traceAnalyzer": {"zzz": 1}})), "`traceAnalyzer.zzz` is not a setting");
        assert_eq!(
            error(json!({"traceAnalyzer": {"llm": {"endpont": "http://127.0.0.1:1"}}})),
            "`traceAnalyzer.llm.endpont` is not a setting; did you mean `traceAnalyzer.llm.endpoint`?"
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_an_error_naming_its_key() {
        let message = error(json!({"traceAnalyzer": {"output": {"maxFindings": "1000"}}}));
        assert!(message.starts_with("`traceAnalyzer.output.maxFindings`: invalid type: string \"1000\""), "{message}");
        let message = error(json!({"traceAnalyzer": {"signals": {"SIG-DOOM-LOOP": {"severity": "hihg"}}}}));
        assert!(message.starts_with("`traceAnalyzer.signals.SIG-DOOM-LOOP.severity`: unknown variant `hihg`"), "{message}");
        let message = error(json!({"patterns": {"language": ["en", "xx"]}}));
        assert!(message.contains("no language pack `xx`"), "{message}");
    }

    #[test]
    fn other_plugins_keys_stay_allowed_and_unused_spec_keys_are_told() {
        let config =
            Config::resolve(&json!({"memory": {"x": 1}, "llm": {"provider": "local", "model": "m"}, "traceAnalyzer": {}})).unwrap();
        assert_eq!(config.llm.model.as_deref(), Some("m"));
        assert_eq!(
            error(json!({"traceAnalyzer": {"fetchBatchSize": 500}})),
            "`traceAnalyzer.fetchBatchSize` has no effect in tracelake: exports fetch from JetStream in batches the server sizes; remove it"
        );
    }

    #[test]
    fn settings_left_out_take_the_spec_defaults() {
        let config = Config::default();
        assert_eq!((config.output.max_findings, config.chain_gap_minutes, config.schedule.interval_hours), (200, 30, 24));
        assert_eq!(config.nats.url, "nats://localhost:4222");
        let config = Config::resolve(&json!({"traceAnalyzer": {"signals": {"SIG-DOOM-LOOP": {"severity": "low"}}}})).unwrap();
        assert_eq!(config.signals["SIG-DOOM-LOOP"], SignalSetting { enabled: None, severity: Some(Severity::Low) });
    }
}
