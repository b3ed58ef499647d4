//! Anonymized reports for sharing. What is kept is listed, not what is removed:
//! no pattern finds every name, address or customer number in free text, so free text
//! goes. An anonymized report keeps signals, severities, counts, times, event types and
//! tool names; agents, sessions, chains and events become stable placeholders
//! (`agent-1`, `session-1`, `chain-1`, `event-1`); every text a user, an agent, a tool or
//! a model wrote (messages, parameters, results, errors, summaries, evidence strings,
//! root causes, rule texts) is replaced by `[removed]` or by a line made of the kept
//! fields alone. Personal data in what is kept (a tool named after a customer's email) is
//! removed too ([`crate::privacy`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use serde_json::Value;
use serde_json::value::RawValue;

use super::LakeReport;
use crate::classify::TranscriptEvent;
use crate::privacy::{Pii, PiiAction, PiiKind};

const REMOVED: &str = "[removed]";

/// Removes every kind of personal data from the names a report keeps.
static PERSONAL: LazyLock<Pii> = LazyLock::new(|| Pii::new(&PiiKind::ALL, PiiAction::Remove, Vec::new()));

/// A kept name without personal data.
fn kept_name(name: &str) -> String {
    PERSONAL.scrub(name).into_owned()
}

/// Evidence keys whose values are tool names, which are kept.
const TOOL_KEYS: [&str; 3] = ["toolName", "tool", "tool_name"];

/// Placeholders, numbered in the order names are first met.
#[derive(Debug, Default)]
struct Placeholders {
    by_kind: HashMap<(&'static str, String), String>,
    counts: HashMap<&'static str, usize>,
}

impl Placeholders {
    fn of(&mut self, kind: &'static str, name: &str) -> String {
        if let Some(placeholder) = self.by_kind.get(&(kind, name.to_owned())) {
            return placeholder.clone();
        }
        let n = self.counts.entry(kind).or_default();
        *n += 1;
        let placeholder = format!("{kind}-{n}");
        self.by_kind.insert((kind, name.to_owned()), placeholder.clone());
        placeholder
    }
}

/// Anonymizes `report` in place.
pub fn anonymize(report: &mut LakeReport) {
    let mut names = Placeholders::default();
    let r = &mut report.report;
    r.lake = None;
    for f in &mut r.findings {
        f.agent = names.of("agent", &f.agent);
        f.session = names.of("session", &f.session);
        f.chain_id = names.of("chain", &f.chain_id);
        f.start_event_id = names.of("event", &f.start_event_id);
        f.end_event_id = names.of("event", &f.end_event_id);
        let evidence: Value = serde_json::from_str(f.signal.evidence.get()).unwrap_or(Value::Null);
        f.signal.summary = match tool_of(&evidence) {
            Some(tool) => format!("{} in {tool}", f.signal.signal),
            None => f.signal.signal.clone(),
        };
        f.signal.evidence = kept_evidence(evidence);
        if let Some(c) = &mut f.classification {
            c.root_cause = REMOVED.to_owned();
            c.action_text = REMOVED.to_owned();
        }
    }
    for s in &mut r.signal_stats {
        for a in &mut s.top_agents {
            a.agent = names.of("agent", &a.agent);
        }
    }
    for o in &mut r.generated_outputs {
        o.agents = o.agents.iter().map(|a| names.of("agent", a)).collect();
        o.content = format!("{REMOVED} ({}, from {} findings of {})", o.output_type.as_str(), o.observation_count, o.signal);
    }
    for row in &mut report.charts.by_agent_severity {
        if let Some(agent) = row["agent"].as_str() {
            row["agent"] = Value::String(names.of("agent", agent));
        }
    }
    if let Some(section) = &mut r.factors {
        for f in &mut section.factors {
            f.value = if f.factor == "agent" { names.of("agent", &f.value) } else { kept_name(&f.value) };
            f.factor = kept_name(&f.factor);
        }
        for s in &mut section.risk.riskiest_without_finding {
            s.session = names.of("session", &s.session);
        }
        section.risk.risks.clear();
    }
    // Threads and decisions are free text.
    report.cortex.clear();
    report.transcripts = anonymized_transcripts(std::mem::take(&mut report.transcripts), "chain", &mut names);
    report.session_transcripts = anonymized_transcripts(std::mem::take(&mut report.session_transcripts), "session", &mut names);
    for row in &mut report.charts.failing_tools {
        if let Some(tool) = row["tool"].as_str() {
            row["tool"] = Value::String(kept_name(tool));
        }
    }
}

/// Transcripts under placeholders of `kind`, tool names kept, every text removed.
fn anonymized_transcripts(
    transcripts: BTreeMap<String, Vec<TranscriptEvent>>,
    kind: &'static str,
    names: &mut Placeholders,
) -> BTreeMap<String, Vec<TranscriptEvent>> {
    transcripts
        .into_iter()
        .map(|(key, mut events)| {
            for e in &mut events {
                e.tool_name = e.tool_name.as_deref().map(kept_name);
                for text in [&mut e.content, &mut e.tool_params, &mut e.tool_result, &mut e.tool_error] {
                    if text.is_some() {
                        *text = Some(REMOVED.to_owned());
                    }
                }
            }
            (names.of(kind, &key), events)
        })
        .collect()
}

/// The tool a finding's evidence names, if any.
fn tool_of(evidence: &Value) -> Option<String> {
    TOOL_KEYS.iter().find_map(|k| evidence.get(*k)?.as_str().map(kept_name))
}

/// The evidence with its shape, numbers, booleans and tool names; every other string
/// removed.
fn kept_evidence(mut evidence: Value) -> Box<RawValue> {
    keep(&mut evidence, false);
    serde_json::value::to_raw_value(&evidence).expect("a JSON value serializes")
}

fn keep(value: &mut Value, is_tool: bool) {
    match value {
        Value::String(s) if !is_tool => *s = REMOVED.to_owned(),
        Value::String(s) => *s = kept_name(s),
        Value::Array(items) => items.iter_mut().for_each(|v| keep(v, is_tool)),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                keep(v, TOOL_KEYS.contains(&key.as_str()));
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_tool_names_lose_personal_data() {
        let mut evidence = serde_json::json!({"toolName": "notify:jane.doe@example.com", "error": "x", "count": 3});
        keep(&mut evidence, false);
        assert_eq!(evidence, serde_json::json!({"toolName": "notify:[EMAIL]", "error": REMOVED, "count": 3}));
        assert_eq!(kept_name("get_order"), "get_order");
    }
}
