//! The AnalysisReport of spec §10.4 (camelCase JSON), and its Markdown and terminal forms.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::classify::{Classification, FindingVerdict};
use crate::lake::state::ProcessingState;
use crate::model::{Finding, Severity};
use crate::output::GeneratedOutput;
use crate::output::effectiveness::RuleEffectiveness;
use crate::report::factors::FactorSection;
use crate::report::text::{clip, shell_word};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisReport {
    pub version: u32,
    pub generated_at: String,
    /// The analysis run whose findings these are (the latest, for a lake report).
    pub run_id: String,
    pub stats: Stats,
    pub signal_stats: Vec<SignalStats>,
    pub findings: Vec<ReportFinding>,
    pub generated_outputs: Vec<GeneratedOutput>,
    pub rule_effectiveness: Vec<RuleEffectiveness>,
    pub processing_state: ProcessingState,
    /// What goes with failure, when some sessions have a known outcome (a lake report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factors: Option<FactorSection>,
    /// The lake, for the commands printed as hints; `None` when it will not outlive the
    /// report (a temporary lake) or must not be named (an anonymized one).
    #[serde(skip)]
    pub lake: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub started_at: i64,
    pub completed_at: i64,
    pub events_processed: u64,
    pub chains_reconstructed: u64,
    pub findings_detected: usize,
    /// Findings kept in the lake but not listed in this report (`output.maxFindings`).
    pub findings_not_listed: usize,
    pub findings_classified: usize,
    pub outputs_generated: usize,
    pub time_range: TimeRange,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeRange {
    pub start_ms: i64,
    pub end_ms: i64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalStats {
    pub signal: String,
    pub count: usize,
    pub by_severity: BTreeMap<String, usize>,
    pub top_agents: Vec<AgentCount>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AgentCount {
    pub agent: String,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportFinding {
    pub id: String,
    pub chain_id: String,
    pub agent: String,
    pub session: String,
    pub signal: SignalDetail,
    pub detected_at: i64,
    pub occurred_at: i64,
    pub classification: Option<Classification>,
    pub start_event_id: String,
    pub end_event_id: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalDetail {
    pub signal: String,
    pub severity: Severity,
    pub event_range: EventRange,
    pub summary: String,
    /// The detector's JSON, written as it is (not parsed and printed anew).
    pub evidence: Box<RawValue>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EventRange {
    pub start: i64,
    pub end: i64,
}

/// What a report is made of: an analysis run's results, or the lake's.
#[derive(Debug, Clone)]
pub struct ReportParts {
    pub run_id: String,
    pub started_at: i64,
    pub completed_at: i64,
    pub events_processed: u64,
    pub chains: u64,
    pub time_range: (i64, i64),
    /// The findings listed, most severe first.
    pub findings: Vec<Finding>,
    /// Every finding, counted.
    pub counts: FindingCounts,
    pub processing_state: ProcessingState,
    pub verdicts: Vec<FindingVerdict>,
    pub outputs: Vec<GeneratedOutput>,
    pub rule_effectiveness: Vec<RuleEffectiveness>,
}

impl AnalysisReport {
    pub fn assemble(analysis: ReportParts) -> Self {
        let classifications: HashMap<String, Classification> =
            analysis.verdicts.into_iter().filter_map(|v| v.classification.map(|c| (v.finding_id, c))).collect();
        let signal_stats = analysis.counts.stats();
        let findings_detected = analysis.counts.total().max(analysis.findings.len());
        let findings_not_listed = findings_detected - analysis.findings.len();
        let run_id = analysis.run_id.clone();
        let findings: Vec<ReportFinding> = analysis
            .findings
            .into_iter()
            .map(|f| {
                let classification = classifications.get(&f.finding_id).cloned();
                report_finding(f, classification)
            })
            .collect();
        AnalysisReport {
            version: 1,
            generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            run_id,
            stats: Stats {
                started_at: analysis.started_at,
                completed_at: analysis.completed_at,
                events_processed: analysis.events_processed,
                chains_reconstructed: analysis.chains,
                findings_detected,
                findings_not_listed,
                findings_classified: findings.iter().filter(|f| f.classification.is_some()).count(),
                outputs_generated: analysis.outputs.len(),
                time_range: TimeRange { start_ms: analysis.time_range.0, end_ms: analysis.time_range.1 },
            },
            signal_stats,
            findings,
            generated_outputs: analysis.outputs,
            rule_effectiveness: analysis.rule_effectiveness,
            processing_state: analysis.processing_state,
            factors: None,
            lake: None,
        }
    }

    /// The same report, its hints naming `lake`.
    pub fn at_lake(self, lake: &str) -> Self {
        Self { lake: Some(lake.to_owned()), ..self }
    }

    pub fn to_markdown(&self) -> String {
        let mut md = String::from("# Trace analysis\n\n");
        md.push_str(&format!(
            "{} events in {} chains analyzed; {} findings.\n\n",
            self.stats.events_processed, self.stats.chains_reconstructed, self.stats.findings_detected
        ));
        if !self.signal_stats.is_empty() {
            md.push_str("| signal | findings | by severity | top agents |\n|---|---|---|---|\n");
            for s in &self.signal_stats {
                let sev: Vec<String> = s.by_severity.iter().map(|(k, v)| format!("{k} {v}")).collect();
                let agents: Vec<String> = s.top_agents.iter().map(|a| format!("{} {}", a.agent, a.count)).collect();
                md.push_str(&format!("| {} | {} | {} | {} |\n", s.signal, s.count, sev.join(", "), agents.join(", ")));
            }
            md.push_str("\n## Findings\n\n| severity | signal | agent | session | summary |\n|---|---|---|---|---|\n");
            for f in &self.findings {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    f.signal.severity,
                    f.signal.signal,
                    f.agent,
                    f.session,
                    cell(&f.signal.summary)
                ));
            }
        }
        if self.stats.findings_not_listed > 0 {
            md.push_str(&format!("\n… {} more findings: {}\n", self.stats.findings_not_listed, self.how_to_see_all()));
        }
        let classified: Vec<&ReportFinding> = self.findings.iter().filter(|f| f.classification.is_some()).collect();
        if !classified.is_empty() {
            md.push_str("\n## Root causes\n\n| signal | root cause | fix | confidence |\n|---|---|---|---|\n");
            for f in classified {
                let c = f.classification.as_ref().expect("filtered");
                md.push_str(&format!(
                    "| {} | {} | {}: {} | {:.2} |\n",
                    f.signal.signal,
                    cell(&c.root_cause),
                    c.action_type.as_str(),
                    cell(&c.action_text),
                    c.confidence
                ));
            }
        }
        if !self.generated_outputs.is_empty() {
            md.push_str("\n## Generated fixes\n\n");
            for o in &self.generated_outputs {
                md.push_str(&format!("- **{}**: `{}`\n", o.output_type.as_str(), o.content.replace('\n', " ").replace('`', "'")));
            }
        }
        if !self.rule_effectiveness.is_empty() {
            md.push_str("\n## Rule effectiveness\n\n| rule | signal | failures before | after (per run) | runs after | effectiveness | status |\n|---|---|---|---|---|---|---|\n");
            for e in &self.rule_effectiveness {
                let eff = e.effectiveness.map_or("–".to_owned(), |p| format!("{p:.1} %"));
                md.push_str(&format!(
                    "| {} | {} | {} | {:.1} | {} | {eff} | {} |\n",
                    e.rule_id, e.signal, e.failures_before, e.failures_after, e.runs_after, e.status
                ));
            }
        }
        if let Some(factors) = &self.factors {
            md.push_str(&factors.to_markdown());
        }
        md
    }

    /// Where every finding of the report's run can be seen: the lake keeps them all.
    fn how_to_see_all(&self) -> String {
        let Some(lake) = &self.lake else {
            return "the lake's `findings` table".to_owned();
        };
        let run = if self.run_id.is_empty() { String::new() } else { format!(" WHERE run_id = '{}'", self.run_id) };
        format!("tracelake sql --lake {} \"SELECT severity, signal, session, summary FROM findings{run}\"", shell_word(lake))
    }

    /// A short summary for the terminal.
    pub fn to_terminal(&self, max_rows: usize) -> String {
        let mut out = format!(
            "analyzed {} events in {} chains: {} findings\n",
            self.stats.events_processed, self.stats.chains_reconstructed, self.stats.findings_detected
        );
        // Signal names in one column, however long a user's detector names its signal.
        let width = self.signal_stats.iter().map(|s| s.signal.chars().count()).max().unwrap_or(0).max(22);
        for s in &self.signal_stats {
            let sev: Vec<String> = s.by_severity.iter().rev().map(|(k, v)| format!("{k} {v}")).collect();
            out.push_str(&format!("  {:<width$} {:>5}  ({})\n", s.signal, s.count, sev.join(", ")));
        }
        if !self.findings.is_empty() {
            out.push_str("\nmost severe:\n");
            let shown = by_session(&self.findings, max_rows);
            let sessions = session_labels(&shown.iter().map(|(f, _)| f.session.as_str()).collect::<Vec<_>>());
            for ((f, count), session) in shown.iter().zip(sessions) {
                let summary = clip(&f.signal.summary, 90);
                let times = if *count > 1 { format!(" ×{count}") } else { String::new() };
                out.push_str(&format!(
                    "  [{:<8}] {:<width$} {}@{session}{times}: {summary}\n",
                    f.signal.severity, f.signal.signal, f.agent
                ));
            }
            let listed: usize = shown.iter().map(|(_, count)| count).sum();
            let not_shown = self.stats.findings_detected.saturating_sub(listed);
            if not_shown > 0 {
                out.push_str(&format!("  … {not_shown} more, all in {}\n", self.how_to_see_all()));
            }
        }
        if !self.generated_outputs.is_empty() {
            out.push_str(&format!("\n{} fixes generated:\n", self.generated_outputs.len()));
            for o in self.generated_outputs.iter().take(max_rows) {
                let text = clip(&o.content, 110);
                out.push_str(&format!("  {:<17} {text}\n", o.output_type.as_str()));
            }
        }
        if !self.rule_effectiveness.is_empty() {
            out.push_str("\nrule effectiveness:\n");
            for e in &self.rule_effectiveness {
                let eff = e.effectiveness.map_or("–".to_owned(), |p| format!("{p:.0} %"));
                out.push_str(&format!(
                    "  {} {:<20} {:<11} {eff:>6} ({} before, {:.1} after per run)\n",
                    e.rule_id, e.signal, e.status, e.failures_before, e.failures_after
                ));
            }
        }
        out
    }
}

/// The findings of the first `max` (signal, agent, session) in `findings`' order, each as
/// its first finding and how many `findings` holds: a session often repeats one failure
/// (four cancellations), and the terminal's list is for seeing which sessions fail how.
fn by_session(findings: &[ReportFinding], max: usize) -> Vec<(&ReportFinding, usize)> {
    let mut groups: Vec<(&ReportFinding, usize)> = Vec::new();
    let mut index: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for f in findings {
        let key = (f.signal.signal.as_str(), f.agent.as_str(), f.session.as_str());
        match index.get(&key) {
            Some(&i) => groups[i].1 += 1,
            None if groups.len() < max => {
                index.insert(key, groups.len());
                groups.push((f, 1));
            }
            None => {}
        }
    }
    groups
}

/// Text for a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Session ids as the terminal shows them: a long one with its middle left out (ids
/// differ at the start, as uuids do, or at the end, as counters do), all of them whole
/// when that would make two different ones look the same.
fn session_labels(sessions: &[&str]) -> Vec<String> {
    const KEEP_START: usize = 12;
    const KEEP_END: usize = 15;
    let abbreviated: Vec<String> = sessions
        .iter()
        .map(|s| {
            let chars: Vec<char> = s.chars().collect();
            if chars.len() <= KEEP_START + KEEP_END + 1 {
                return (*s).to_owned();
            }
            let start: String = chars[..KEEP_START].iter().collect();
            let end: String = chars[chars.len() - KEEP_END..].iter().collect();
            format!("{start}…{end}")
        })
        .collect();
    let distinct = |labels: Vec<&str>| labels.into_iter().collect::<std::collections::HashSet<_>>().len();
    if distinct(abbreviated.iter().map(String::as_str).collect()) == distinct(sessions.to_vec()) {
        abbreviated
    } else {
        sessions.iter().map(|s| (*s).to_owned()).collect()
    }
}

pub fn report_finding(f: Finding, classification: Option<Classification>) -> ReportFinding {
    ReportFinding {
        signal: SignalDetail {
            event_range: EventRange { start: f.start_idx, end: f.end_idx },
            evidence: evidence_json(&f.evidence),
            signal: f.signal,
            severity: f.severity,
            summary: f.summary,
        },
        id: f.finding_id,
        chain_id: f.chain_id,
        agent: f.agent,
        session: f.session,
        detected_at: f.detected_at,
        occurred_at: f.occurred_at,
        classification,
        start_event_id: f.start_event_id,
        end_event_id: f.end_event_id,
    }
}

/// A finding's evidence as JSON: the text itself when it is JSON, else a JSON string of it.
fn evidence_json(text: &str) -> Box<RawValue> {
    match serde_json::from_str::<&RawValue>(text) {
        Ok(json) => json.to_owned(),
        Err(_) => serde_json::value::to_raw_value(text).expect("a string is JSON"),
    }
}

/// One signal's findings: how many, per severity, per agent.
#[derive(Debug, Clone, Default)]
struct SignalTally {
    count: usize,
    by_severity: BTreeMap<String, usize>,
    by_agent: BTreeMap<String, usize>,
}

/// Findings counted per signal, severity and agent, for the report's signal statistics:
/// every finding counts, also those a report does not list.
#[derive(Debug, Clone, Default)]
pub struct FindingCounts {
    tallies: BTreeMap<String, SignalTally>,
    total: usize,
}

impl FindingCounts {
    pub fn of(findings: &[Finding]) -> Self {
        let mut counts = Self::default();
        counts.add_findings(findings);
        counts
    }

    pub fn add_findings(&mut self, findings: &[Finding]) {
        for f in findings {
            self.add(&f.signal, f.severity.as_str(), &f.agent, 1);
        }
    }

    /// Counts `n` findings of `signal` at `severity` by `agent`.
    pub fn add(&mut self, signal: &str, severity: &str, agent: &str, n: usize) {
        let tally = match self.tallies.get_mut(signal) {
            Some(t) => t,
            None => self.tallies.entry(signal.to_owned()).or_default(),
        };
        tally.count += n;
        *tally.by_severity.entry(severity.to_owned()).or_default() += n;
        *tally.by_agent.entry(agent.to_owned()).or_default() += n;
        self.total += n;
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// Per signal: count, by severity, top 5 agents (spec §10.4); the signals with the most
    /// severe findings first, then the most frequent.
    pub fn stats(&self) -> Vec<SignalStats> {
        let mut stats: Vec<SignalStats> = self
            .tallies
            .iter()
            .map(|(signal, tally)| {
                let mut top: Vec<AgentCount> =
                    tally.by_agent.iter().map(|(agent, count)| AgentCount { agent: agent.clone(), count: *count }).collect();
                top.sort_by(|a, b| b.count.cmp(&a.count).then(a.agent.cmp(&b.agent)));
                top.truncate(5);
                SignalStats { signal: signal.clone(), count: tally.count, by_severity: tally.by_severity.clone(), top_agents: top }
            })
            .collect();
        let worst = |s: &SignalStats| s.by_severity.keys().filter_map(|k| k.parse::<Severity>().ok()).max();
        stats.sort_by(|a, b| worst(b).cmp(&worst(a)).then(b.count.cmp(&a.count)).then(a.signal.cmp(&b.signal)));
        stats
    }
}

/// Whether any finding is at or above `severity`.
pub fn any_at_least(findings: &[Finding], severity: Severity) -> bool {
    findings.iter().any(|f| f.severity >= severity)
}

#[cfg(test)]
mod tests {
    use super::{evidence_json, session_labels};

    #[test]
    fn sessions_that_differ_never_look_the_same() {
        let ends = ["conversation-2026-11-24-run-a81f3c", "conversation-2026-11-24-run-b92e44", "short"];
        let labels = session_labels(&ends);
        assert_eq!(labels[2], "short");
        assert!(labels[0].contains('…') && labels[0] != labels[1], "{labels:?}");
        let counters = ["tau-airline-12-t0-gpt4o-airline", "tau-airline-13-t0-gpt4o-airline"];
        assert_eq!(session_labels(&counters), counters.map(str::to_owned), "shortened they would look the same");
        // Shortened they would be the same: shown whole.
        let same_ends = ["agent:main:s-aaaaaaaaaa-x-00000000000001", "agent:main:s-bbbbbbbbbb-x-00000000000001"];
        assert_eq!(session_labels(&same_ends), same_ends.map(str::to_owned));
    }

    #[test]
    fn evidence_is_written_as_it_is_or_as_a_string_when_not_json() {
        assert_eq!(evidence_json(r#"{"toolName":"exec","n":[1,2]}"#).get(), r#"{"toolName":"exec","n":[1,2]}"#);
        assert_eq!(evidence_json("not json {").get(), r#""not json {""#);
        assert_eq!(evidence_json("").get(), r#""""#);
    }
}
