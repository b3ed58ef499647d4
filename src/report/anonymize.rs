//! Anonymized reports for sharing (R-048): agent names and session ids become stable
//! placeholders; user messages, paths, hostnames and IP addresses are removed.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;
use serde_json::value::RawValue;

use super::LakeReport;

static IPV4: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b\d{1,3}(?:\.\d{1,3}){3}\b").expect("valid"));
static IPV6: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(?:[0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}\b|::1\b").expect("valid"));
static PATH: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|[A-Za-z]:\\(?:[\w.@+ -]+\\?)+").expect("valid"));
static HOST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|local|internal|lan|de|uk|eu|us|ai|app|cloud|co|info|biz|xyz|[a-z]{2})\b")
        .expect("valid")
});
static QUOTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"'[^']*'").expect("valid"));

/// Evidence keys whose values are what a user or agent said.
const CONTENT_KEYS: [&str; 7] = ["userMessage", "userCorrection", "agentMessage", "agentClaim", "content", "message", "text"];

#[derive(Debug, Default)]
struct Names {
    agents: HashMap<String, String>,
    sessions: HashMap<String, String>,
}

impl Names {
    fn agent(&mut self, name: &str) -> String {
        let next = self.agents.len() + 1;
        self.agents.entry(name.to_owned()).or_insert_with(|| format!("agent-{next}")).clone()
    }
    fn session(&mut self, id: &str) -> String {
        let next = self.sessions.len() + 1;
        self.sessions.entry(id.to_owned()).or_insert_with(|| format!("session-{next}")).clone()
    }
    /// Known names and ids inside free text, then paths, IPs and hostnames.
    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (from, to) in self.sessions.iter().chain(self.agents.iter()) {
            if from.len() > 2 {
                out = out.replace(from.as_str(), to);
            }
        }
        let out = PATH.replace_all(&out, "[path]");
        let out = IPV4.replace_all(&out, "[ip]");
        let out = IPV6.replace_all(&out, "[ip]");
        HOST.replace_all(&out, "[host]").into_owned()
    }
    /// A finding's evidence, scrubbed as [`Self::scrub_json`] does.
    fn scrub_evidence(&self, evidence: &RawValue) -> Box<RawValue> {
        let mut value: Value = serde_json::from_str(evidence.get()).expect("evidence is JSON");
        self.scrub_json(&mut value);
        serde_json::value::to_raw_value(&value).expect("a JSON value serializes")
    }
    fn scrub_json(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.scrub(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_json(v)),
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if CONTENT_KEYS.contains(&key.as_str()) {
                        *v = Value::String("[removed]".into());
                    } else {
                        self.scrub_json(v);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// Anonymizes `report` in place.
pub fn anonymize(report: &mut LakeReport) {
    let mut names = Names::default();
    let r = &mut report.report;
    for f in &mut r.findings {
        f.agent = names.agent(&f.agent);
        f.session = names.session(&f.session);
    }
    for s in &mut r.signal_stats {
        for a in &mut s.top_agents {
            a.agent = names.agent(&a.agent);
        }
    }
    for o in &mut r.generated_outputs {
        o.agents = o.agents.iter().map(|a| names.agent(a)).collect();
    }
    for row in &mut report.charts.by_agent_severity {
        if let Some(agent) = row["agent"].as_str() {
            row["agent"] = Value::String(names.agent(agent));
        }
    }
    for f in &mut r.findings {
        // Summaries quote what was said: the quotes go.
        f.signal.summary = names.scrub(&QUOTED.replace_all(&f.signal.summary, "'[removed]'"));
        f.signal.evidence = names.scrub_evidence(&f.signal.evidence);
        if let Some(c) = &mut f.classification {
            c.root_cause = names.scrub(&c.root_cause);
            c.action_text = names.scrub(&c.action_text);
        }
    }
    for o in &mut r.generated_outputs {
        o.content = names.scrub(&o.content);
    }
    for events in report.transcripts.values_mut() {
        for e in events {
            if e.event_type == "msg.in" {
                e.content = e.content.as_ref().map(|_| "[user message removed]".to_owned());
            } else {
                e.content = e.content.as_deref().map(|c| names.scrub(c));
            }
            for field in [&mut e.tool_params, &mut e.tool_result, &mut e.tool_error] {
                *field = field.as_deref().map(|t| names.scrub(t));
            }
        }
    }
}
