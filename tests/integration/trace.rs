//! Building small traces by hand (as spec §14.1's helpers) and running the detectors on them.

use serde_json::{Value, json};
use tracelake::config::Config;
use tracelake::ingest::Decoder;
use tracelake::lake::Lake;
use tracelake::load::import::{ImportOptions, ImportSource, import_source};
use tracelake::pipeline::{AnalyzeOptions, analyze};
use tracelake::redact::Redactor;

pub const BASE_TS: i64 = 1_700_000_000_000;

/// Schema-A events of one or more sessions, one second apart unless told otherwise.
pub struct Trace {
    pub events: Vec<Value>,
    ts: i64,
    agent: String,
    session: String,
}

impl Default for Trace {
    fn default() -> Self {
        Self { events: Vec::new(), ts: BASE_TS, agent: "main".into(), session: "test-session".into() }
    }
}

impl Trace {
    pub fn new() -> Self {
        Self::default()
    }

    /// Following events belong to this session (and agent).
    pub fn session(&mut self, session: &str, agent: &str) -> &mut Self {
        self.session = session.into();
        self.agent = agent.into();
        self
    }

    /// Moves the clock forward.
    pub fn wait_minutes(&mut self, minutes: i64) -> &mut Self {
        self.ts += minutes * 60_000;
        self
    }

    pub fn event(&mut self, kind: &str, payload: Value) -> &mut Self {
        self.ts += 1000;
        let n = self.events.len() + 1;
        self.events
            .push(json!({"id": format!("test-{n}"), "ts": self.ts, "agent": self.agent, "session": self.session, "type": kind, "payload": payload}));
        self
    }

    pub fn user(&mut self, text: &str) -> &mut Self {
        self.event("msg.in", json!({"content": text}))
    }

    pub fn agent(&mut self, text: &str) -> &mut Self {
        self.event("msg.out", json!({"content": text}))
    }

    pub fn call(&mut self, tool: &str, params: Value) -> &mut Self {
        self.event("tool.call", json!({"toolName": tool, "params": params}))
    }

    pub fn tool_ok(&mut self, tool: &str, params: Value) -> &mut Self {
        self.call(tool, params.clone()).event("tool.result", json!({"toolName": tool, "params": params, "result": {"exitCode": 0}}))
    }

    pub fn tool_fail(&mut self, tool: &str, params: Value, error: &str) -> &mut Self {
        self.call(tool, params.clone()).event("tool.result", json!({"toolName": tool, "params": params, "error": error}))
    }

    pub fn lines(&self) -> String {
        self.events.iter().map(|e| e.to_string() + "\n").collect()
    }
}

/// One finding, as the tests look at it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub signal: String,
    pub severity: String,
    pub start: i64,
    pub end: i64,
    pub summary: String,
}

/// Imports `lines` into a new lake and runs a full analysis with every signal on.
pub fn detect_lines(lines: &str, config: Option<Value>) -> Vec<Found> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("trace.jsonl");
    std::fs::write(&input, lines).unwrap();
    let lake = Lake::new(dir.path().join("lake"));
    import_source(&lake, &Decoder::new(Redactor::builtin()), &ImportSource::File(input), &ImportOptions::default(), &|_| {}).unwrap();
    let config = Config::resolve(&config.unwrap_or_else(|| {
        json!({"output": {"maxFindings": 100000}, "signals": {"SIG-TOOL-FAIL": {"enabled": true}, "SIG-REPEAT-FAIL": {"enabled": true}, "SIG-UNVERIFIED-CLAIM": {"enabled": true}, "SIG-UNANSWERED": {"enabled": true}, "SIG-ERROR-ENDING": {"enabled": true}}})
    })).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let analysis = runtime
        .block_on(analyze(&lake, &config, Redactor::builtin(), &AnalyzeOptions { full: true, ..AnalyzeOptions::default() }))
        .unwrap();
    let mut found: Vec<Found> = analysis
        .results
        .findings
        .into_iter()
        .map(|f| Found { signal: f.signal, severity: f.severity.to_string(), start: f.start_idx, end: f.end_idx, summary: f.summary })
        .collect();
    found.sort_by(|a, b| (a.start, &a.signal).cmp(&(b.start, &b.signal)));
    found
}

pub fn detect(trace: &Trace) -> Vec<Found> {
    detect_lines(&trace.lines(), None)
}

/// Findings of one signal.
pub fn of(found: &[Found], signal: &str) -> Vec<Found> {
    found.iter().filter(|f| f.signal == signal).cloned().collect()
}
