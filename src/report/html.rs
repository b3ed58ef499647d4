//! The report as one self-contained HTML page: no network, charts drawn as SVG by a small
//! inline script from data embedded in the page, transcripts linked from each finding.

use std::fmt::Write;

use serde_json::{Value, json};

use super::LakeReport;
use super::analysis::ReportFinding;
use super::factors::FactorSection;
use crate::classify::TranscriptEvent;
use crate::classify::prompts::truncate;
use crate::output::risk::known_outcome;
use crate::output::stats::probability_text;
use crate::report::text::shell_word;

const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

pub fn render(report: &LakeReport) -> String {
    let r = &report.report;
    let moods: Vec<&Vec<Value>> = report.cortex.iter().map(|a| &a.moods).collect();
    let data = json!({ "charts": report.charts, "signals": r.signal_stats, "factors": forest_rows(r.factors.as_ref()), "moods": moods });
    // `</` inside a script element would end it early.
    let data = serde_json::to_string(&data).expect("report data serializes").replace("</", "<\\/");
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tracelake report</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head><body>\n\
         <header><h1>tracelake report</h1><p>{} events in {} chains · {} findings · {} classified · {} outputs · generated {}</p></header>\n",
        r.stats.events_processed,
        r.stats.chains_reconstructed,
        r.stats.findings_detected,
        r.stats.findings_classified,
        r.stats.outputs_generated,
        escape(&r.generated_at)
    );
    page.push_str("<section class=\"charts\">\n");
    for (id, title) in [
        ("per-day", "Findings per signal over time"),
        ("agent-severity", "Findings by agent and severity"),
        ("tools", "Top failing tools"),
        ("chain-lengths", "Chain length distribution"),
    ] {
        let _ = writeln!(page, "<figure><figcaption>{title}</figcaption><div class=\"chart\" id=\"chart-{id}\"></div></figure>");
    }
    page.push_str("</section>\n");
    factors_section(&mut page, report);
    findings_table(&mut page, report);
    outputs_section(&mut page, report);
    cortex_section(&mut page, report);
    transcripts_section(&mut page, report);
    session_transcripts_section(&mut page, report);
    let _ =
        write!(page, "<script type=\"application/json\" id=\"report-data\">{data}</script>\n<script>{SCRIPT}</script>\n</body></html>\n");
    page
}

fn findings_table(page: &mut String, report: &LakeReport) {
    let r = &report.report;
    page.push_str("<section><h2>Findings</h2>\n");
    if r.findings.is_empty() {
        page.push_str("<p>No findings.</p></section>\n");
        return;
    }
    if r.stats.findings_not_listed > 0 {
        let _ = writeln!(
            page,
            "<p>The {} most severe of {} findings; all are in the lake: <code>{}</code>, or <code>--max-findings</code> for more here.</p>",
            r.findings.len(),
            r.stats.findings_detected,
            escape(&match &r.lake {
                Some(lake) => format!("tracelake sql --lake {} \"SELECT * FROM findings\"", shell_word(lake)),
                None => "tracelake sql --lake LAKE \"SELECT * FROM findings\"".to_owned(),
            })
        );
    }
    // Fixes come from classification; without it the column would be empty on every row.
    let classified = r.findings.iter().any(|f| f.classification.is_some());
    if !classified {
        page.push_str("<p class=\"hint\">No fixes are suggested: findings are classified, and fixes written, only when an LLM is configured (<code>llm.enabled</code>, see the README).</p>\n");
    }
    let fix_header = if classified { "<th>fix</th>" } else { "" };
    let _ = writeln!(
        page,
        "<div class=\"wide\"><table class=\"findings\"><thead><tr><th>severity</th><th>signal</th><th>agent</th><th>session</th><th>occurred</th><th>summary</th>{fix_header}<th>chain</th></tr></thead><tbody>"
    );
    for f in &r.findings {
        let fix = match (&f.classification, classified) {
            (_, false) => String::new(),
            (Some(c), true) => format!("<td class=\"text\"><b>{}</b> {}</td>", c.action_type.as_str(), escape(&c.action_text)),
            (None, true) => "<td></td>".to_owned(),
        };
        let link = if report.transcripts.contains_key(&f.chain_id) {
            format!("<a href=\"#chain-{0}\">{0}</a>", escape(&f.chain_id))
        } else {
            escape(&f.chain_id)
        };
        let _ = writeln!(
            page,
            "<tr class=\"sev-{sev}\"><td>{sev}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td>{fix}<td>{link}</td></tr>",
            escape(&f.signal.signal),
            escape(&f.agent),
            escape(&f.session),
            iso(f.occurred_at),
            escape(&f.signal.summary),
            sev = escape(f.signal.severity.as_str()),
        );
    }
    page.push_str("</tbody></table></div></section>\n");
}

/// The forest plot's rows: each factor value's lift with its interval; `lift` is null
/// when it is unbounded (no other session failed), and the plot draws it at its edge.
fn forest_rows(section: Option<&FactorSection>) -> Vec<Value> {
    let factors = section.map(|s| s.factors.as_slice()).unwrap_or_default();
    factors
        .iter()
        .map(|f| {
            let label = format!("{} = {}", f.factor, f.value);
            json!({ "label": label, "lift": f.lift, "low": f.lift_low, "high": f.lift_high, "rate": f.failure_rate, "sessions": f.sessions, "q": f.q_value })
        })
        .collect()
}

fn factors_section(page: &mut String, report: &LakeReport) {
    let Some(section) = &report.report.factors else {
        return;
    };
    let _ = writeln!(
        page,
        "<section id=\"factors\"><h2>What goes with failure</h2>\n<p>{}. The {} most telling of {} factor values held by at least {} of them and lacked by as many: \
         how much more often sessions with the value failed than the others (lift), with its 95 % interval; at lift 1 they fail as often. \
         <code>tracelake factors</code> lists every value. {}</p>",
        escape(&section.scored()),
        section.factors.len(),
        section.tested,
        section.min_support,
        escape(&section.standing_out_text())
    );
    page.push_str("<figure class=\"forest\"><figcaption>Failure-rate lift by factor value (log scale)</figcaption><div class=\"chart\" id=\"chart-factors\"></div></figure>\n");
    page.push_str("<table class=\"factors\"><thead><tr><th>factor = value</th><th>sessions</th><th>failure rate (95 % CI)</th><th>lift</th><th>q</th></tr></thead><tbody>\n");
    for f in &section.factors {
        let _ = writeln!(
            page,
            "<tr><td>{} = {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&f.factor),
            escape(&f.value),
            f.sessions,
            f.rate_text(),
            f.lift_text(),
            probability_text(f.q_value, 3)
        );
    }
    page.push_str("</tbody></table>\n");
    let risk = &section.risk;
    let _ = writeln!(
        page,
        "<h3>Riskiest sessions without a finding</h3>\n<p>A risk model (logistic regression on {} factor values and signals) ranks a failed session \
         above a successful one of a task it never saw with a cross-validated AUC of {}. These sessions got no finding: \
         the failures the signals may miss. <code>tracelake risk</code> writes every session's risk into <code>session_risk</code>.</p>",
        risk.features,
        escape(&section.auc())
    );
    if risk.riskiest_without_finding.is_empty() {
        page.push_str("<p>Every session has a finding.</p></section>\n");
        return;
    }
    let _ = writeln!(
        page,
        "<table class=\"risk\"><thead><tr><th>risk</th><th>session</th><th>{}</th></tr></thead><tbody>",
        section.outcome_heading()
    );
    for s in &risk.riskiest_without_finding {
        let session = if report.session_transcripts.contains_key(&s.session) {
            format!("<a href=\"#session-{0}\">{0}</a>", escape(&s.session))
        } else {
            escape(&s.session)
        };
        let _ = writeln!(page, "<tr><td>{:.1} %</td><td>{session}</td><td>{}</td></tr>", 100.0 * s.risk, known_outcome(s.failed));
    }
    page.push_str("</tbody></table></section>\n");
}

/// Per agent: its open threads, recent decisions and mood over time.
fn cortex_section(page: &mut String, report: &LakeReport) {
    if report.cortex.is_empty() {
        return;
    }
    page.push_str("<section id=\"cortex\"><h2>Threads, decisions and mood</h2>\n<p class=\"hint\">What each agent's conversations are about, read by the cortex patterns: the views <code>threads</code>, <code>decisions</code> and <code>moods</code>, and <code>tracelake brief</code>.</p>\n");
    for (i, agent) in report.cortex.iter().enumerate() {
        let _ = writeln!(page, "<h3>{}</h3>", escape(&agent.agent));
        if !agent.open_threads.is_empty() {
            page.push_str("<table class=\"threads\"><thead><tr><th>open thread</th><th>priority</th><th>waiting for</th><th>mood</th><th>last activity</th></tr></thead><tbody>\n");
            for t in &agent.open_threads {
                let text = |k: &str| escape(t[k].as_str().unwrap_or(""));
                let _ = writeln!(
                    page,
                    "<tr><td class=\"text\">{}</td><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td></tr>",
                    text("title"),
                    text("priority"),
                    text("waitingFor"),
                    text("mood"),
                    iso(t["lastActivity"].as_i64().unwrap_or(0))
                );
            }
            page.push_str("</tbody></table>\n");
        }
        if !agent.decisions.is_empty() {
            page.push_str("<ul class=\"decisions\">\n");
            for d in &agent.decisions {
                let text = |k: &str| escape(d[k].as_str().unwrap_or(""));
                let _ = writeln!(
                    page,
                    "<li>{} <b>{}</b> {} <span class=\"hint\">({})</span></li>",
                    iso(d["ts"].as_i64().unwrap_or(0)),
                    text("impact"),
                    text("what"),
                    text("who")
                );
            }
            page.push_str("</ul>\n");
        }
        if !agent.moods.is_empty() {
            let _ = writeln!(
                page,
                "<figure class=\"mood\"><figcaption>Mood of the messages by day</figcaption><div class=\"chart\" id=\"chart-mood-{i}\"></div></figure>"
            );
        }
    }
    page.push_str("</section>\n");
}

fn outputs_section(page: &mut String, report: &LakeReport) {
    let r = &report.report;
    if !r.generated_outputs.is_empty() {
        page.push_str("<section><h2>Generated fixes</h2><ul class=\"outputs\">\n");
        for o in &r.generated_outputs {
            let _ = writeln!(page, "<li><b>{}</b> <pre>{}</pre></li>", o.output_type.as_str(), escape(&o.content));
        }
        page.push_str("</ul></section>\n");
    }
    if !r.rule_effectiveness.is_empty() {
        page.push_str("<section><h2>Rule effectiveness</h2><table><thead><tr><th>rule</th><th>type</th><th>signal</th><th>failures before</th><th>after (per run)</th><th>runs after</th><th>effectiveness</th><th>status</th></tr></thead><tbody>\n");
        for e in &r.rule_effectiveness {
            let eff = e.effectiveness.map_or("–".to_owned(), |p| format!("{p:.1} %"));
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{eff}</td><td>{}</td></tr>",
                escape(&e.rule_id),
                escape(&e.rule_type),
                escape(&e.signal),
                e.failures_before,
                e.failures_after,
                e.runs_after,
                escape(&e.status)
            );
        }
        page.push_str("</tbody></table></section>\n");
    }
}

fn transcripts_section(page: &mut String, report: &LakeReport) {
    if report.transcripts.is_empty() {
        return;
    }
    page.push_str("<section><h2>Chain transcripts</h2>\n<p class=\"hint\">The events of a finding are marked, with the finding's signal beside them.</p>\n");
    for (chain_id, events) in &report.transcripts {
        let findings: Vec<&ReportFinding> = report.report.findings.iter().filter(|f| &f.chain_id == chain_id).collect();
        let mut signals: Vec<&str> = findings.iter().map(|f| f.signal.signal.as_str()).collect();
        signals.sort_unstable();
        signals.dedup();
        let _ = writeln!(
            page,
            "<details id=\"chain-{0}\" class=\"transcript\"><summary>chain {0} ({1} events) · {2}</summary><ol start=\"0\">",
            escape(chain_id),
            events.len(),
            escape(&signals.join(", "))
        );
        for (idx, event) in events.iter().enumerate() {
            let idx = idx as i64;
            let marks: Vec<&str> = findings
                .iter()
                .filter(|f| f.signal.event_range.start <= idx && idx <= f.signal.event_range.end)
                .map(|f| f.signal.signal.as_str())
                .collect();
            let class = if marks.is_empty() { String::new() } else { " class=\"hit\"".to_owned() };
            let mark = if marks.is_empty() { String::new() } else { format!("<span class=\"mark\">{}</span>", escape(&marks.join(", "))) };
            let _ = writeln!(page, "<li{class}>{mark}{}</li>", transcript_event(event));
        }
        page.push_str("</ol></details>\n");
    }
    page.push_str("</section>\n");
}

fn session_transcripts_section(page: &mut String, report: &LakeReport) {
    if report.session_transcripts.is_empty() {
        return;
    }
    page.push_str("<section><h2>Transcripts of the riskiest sessions</h2>\n");
    for (session, events) in &report.session_transcripts {
        let _ = writeln!(
            page,
            "<details id=\"session-{0}\" class=\"transcript\"><summary>session {0} ({1} events)</summary><ol start=\"0\">",
            escape(session),
            events.len()
        );
        for event in events {
            let _ = writeln!(page, "<li>{}</li>", transcript_event(event));
        }
        page.push_str("</ol></details>\n");
    }
    page.push_str("</section>\n");
}

/// One event of a transcript: time, kind, tool, and its text (JSON laid out to be read).
fn transcript_event(event: &TranscriptEvent) -> String {
    let time = chrono::DateTime::from_timestamp_millis(event.ts_ms).unwrap_or_default().format("%H:%M:%S");
    let tool = event.tool_name.as_deref().map_or(String::new(), |t| format!(" <code>{}</code>", escape(t)));
    let (kind, texts) = match event.event_type.as_str() {
        "msg.in" => ("user", vec![&event.content]),
        "msg.out" => ("agent", vec![&event.content]),
        "tool.call" => ("tool call", vec![&event.tool_params]),
        "tool.result" if event.tool_error.is_some() => ("tool error", vec![&event.tool_error, &event.tool_result]),
        "tool.result" => ("tool result", vec![&event.tool_result]),
        other => (other, vec![&event.content]),
    };
    let css = kind.replace(' ', "-");
    let prose = if matches!(kind, "user" | "agent") { " class=\"prose\"" } else { "" };
    let body: String = texts
        .into_iter()
        .flatten()
        .map(|text| format!("<pre{prose}>{}</pre>", escape(&truncate(&readable(text), TRANSCRIPT_TEXT_CHARS))))
        .collect();
    format!("<span class=\"time\">{time}</span> <span class=\"kind {css}\">{}</span>{tool}{body}", escape(kind))
}

/// Characters of one event's text shown in a transcript.
const TRANSCRIPT_TEXT_CHARS: usize = 2000;

/// Text as a person reads it: JSON laid out with indentation, a JSON string holding JSON
/// unwrapped first, and a tool result of text blocks (`{"content": [{"type": "text",
/// "text": …}]}`, as MCP tools return) as its texts; anything else as it is.
fn readable(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(inner)) => match serde_json::from_str::<Value>(&inner) {
            Ok(value @ (Value::Object(_) | Value::Array(_))) => readable_value(&value),
            _ => inner,
        },
        Ok(value @ (Value::Object(_) | Value::Array(_))) => readable_value(&value),
        _ => text.to_owned(),
    }
}

fn readable_value(value: &Value) -> String {
    let blocks = value.get("content").and_then(Value::as_array).filter(|blocks| !blocks.is_empty());
    let texts: Option<Vec<String>> = blocks.and_then(|blocks| {
        blocks.iter().map(|b| (b.get("type")? == "text").then(|| b.get("text")?.as_str().map(readable)).flatten()).collect()
    });
    match texts {
        Some(texts) => texts.join("\n"),
        None => serde_json::to_string_pretty(value).expect("a JSON value serializes"),
    }
}

fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default().format("%Y-%m-%d %H:%M").to_string()
}

pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn json_is_laid_out_and_text_blocks_read_as_their_text() {
        assert_eq!(readable(r#"{"a":1}"#), "{\n  \"a\": 1\n}");
        assert_eq!(readable(r#""{\"a\":1}""#), "{\n  \"a\": 1\n}", "a JSON string holding JSON");
        assert_eq!(readable(r##"{"content":[{"type":"text","text":"\"# Notes\\nall good\""}],"details":{}}"##), "# Notes\nall good");
        assert_eq!(
            readable(r#"{"content":[{"type":"image","data":"x"}]}"#),
            "{\n  \"content\": [\n    {\n      \"data\": \"x\",\n      \"type\": \"image\"\n    }\n  ]\n}"
        );
        assert_eq!(readable("plain words"), "plain words");
    }
}
