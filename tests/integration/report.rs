//! The AnalysisReport (spec §14.3 report tests) and `tracelake report`: JSON, Markdown,
//! anonymized, and HTML whose charts render in headless Chromium with no console output.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use tracelake::classify::{ActionType, Classification, FindingVerdict};
use tracelake::lake::state::ProcessingState;
use tracelake::model::Finding;
use tracelake::output::GeneratedOutput;
use tracelake::output::effectiveness::RuleEffectiveness;
use tracelake::report::analysis::{AnalysisReport, FindingCounts, ReportParts};
use tracelake::report::json::{ROUND_FINDINGS, write_json_pretty};

use crate::common::{realworld, tracelake_ok};

fn finding(signal: &str, severity: &str, agent: &str) -> Finding {
    Finding {
        finding_id: format!("{signal}-{agent}-{severity}"),
        run_id: "run".into(),
        signal: signal.into(),
        severity: severity.parse().unwrap(),
        chain_id: "c".into(),
        agent: agent.into(),
        session: "s".into(),
        start_idx: 0,
        end_idx: 1,
        start_event_id: "a".into(),
        end_event_id: "b".into(),
        occurred_at: 5,
        detected_at: 6,
        summary: "x".into(),
        evidence: "{}".into(),
        fingerprint: None,
    }
}

fn analysis(findings: Vec<Finding>, chains: u64, events: u64, range: (i64, i64), state: ProcessingState) -> ReportParts {
    ReportParts {
        run_id: "run".into(),
        started_at: 100,
        completed_at: 200,
        events_processed: events,
        chains,
        time_range: range,
        counts: FindingCounts::of(&findings),
        findings,
        processing_state: state,
        verdicts: Vec::new(),
        outputs: Vec::new(),
        rule_effectiveness: Vec::new(),
    }
}

fn sample() -> AnalysisReport {
    let findings = vec![
        finding("SIG-TOOL-FAIL", "high", "main"),
        finding("SIG-TOOL-FAIL", "high", "ops"),
        finding("SIG-TOOL-FAIL", "medium", "main"),
        finding("SIG-CORRECTION", "medium", "main"),
    ];
    AnalysisReport::assemble(analysis(
        findings,
        3,
        42,
        (1000, 9000),
        ProcessingState { last_processed_ts: 9000, total_events_processed: 42, total_findings: 4, ..ProcessingState::default() },
    ))
}

#[test]
fn the_terminal_summary_keeps_its_columns_for_a_long_signal_name() {
    let long = "SIG-A-DETECTOR-OF-OUR-OWN-WITH-A-LONG-NAME";
    let findings = vec![finding("SIG-TOOL-FAIL", "high", "main"), finding(long, "medium", "main")];
    let report = AnalysisReport::assemble(analysis(findings, 1, 2, (1, 2), ProcessingState::default()));
    let text = report.to_terminal(10);
    let column = |prefix: &str, of: &str| -> usize {
        let line = text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no line {prefix}: {text}"));
        line.find(of).unwrap_or_else(|| panic!("{of} in {line}"))
    };
    assert_eq!(column("  SIG-TOOL-FAIL ", "1  ("), column(&format!("  {long} "), "1  ("), "the counts line up:\n{text}");
    assert_eq!(column("  [high    ] SIG-TOOL-FAIL", "main@"), column("  [medium  ] SIG-A", "main@"), "the agents line up:\n{text}");
}

#[test]
fn report_has_version_1_and_an_iso_generated_at() {
    let report = sample();
    assert_eq!(report.version, 1);
    assert!(chrono::DateTime::parse_from_rfc3339(&report.generated_at).is_ok(), "{}", report.generated_at);
}

#[test]
fn stats_count_events_chains_and_findings() {
    let s = sample().stats;
    assert_eq!((s.events_processed, s.chains_reconstructed, s.findings_detected), (42, 3, 4));
    assert_eq!((s.started_at, s.completed_at, s.findings_classified, s.outputs_generated), (100, 200, 0, 0));
}

#[test]
fn signal_stats_are_aggregated_per_signal_with_top_agents() {
    let report = sample();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["signalStats"],
        json!([
            {"signal": "SIG-TOOL-FAIL", "count": 3, "bySeverity": {"high": 2, "medium": 1}, "topAgents": [{"agent": "main", "count": 2}, {"agent": "ops", "count": 1}]},
            {"signal": "SIG-CORRECTION", "count": 1, "bySeverity": {"medium": 1}, "topAgents": [{"agent": "main", "count": 1}]}
        ])
    );
}

#[test]
fn the_json_is_what_serde_writes_pretty_for_any_number_of_findings() {
    // Up to several rounds of findings per thread.
    for count in [0, 1, 2, ROUND_FINDINGS + 1, 3 * ROUND_FINDINGS + 5] {
        let findings: Vec<Finding> = (0..count)
            .map(|n| Finding {
                finding_id: format!("f-{n}"),
                session: format!("s{}", n % 7),
                summary: format!("exec failed \"{n}\"\nand said\tso — ✓"),
                evidence: r#"{"toolName":"exec","errors":["a","b"],"n":{"x":[]}}"#.into(),
                ..finding("SIG-TOOL-FAIL", "high", "main")
            })
            .collect();
        let mut run = analysis(findings, 4, 3, (5, 6), ProcessingState::default());
        let classification = Classification {
            root_cause: "no retry".into(),
            action_type: ActionType::SoulRule,
            action_text: "Retry once.".into(),
            confidence: 0.5,
            model: "m".into(),
        };
        run.verdicts = (0..count)
            .step_by(3)
            .map(|n| FindingVerdict {
                finding_id: format!("f-{n}"),
                triage: None,
                classification: Some(classification.clone()),
                error: None,
            })
            .collect();
        run.outputs = vec![GeneratedOutput {
            id: "o1".into(),
            output_type: ActionType::SoulRule,
            content: "Retry once.\nThen stop.".into(),
            source_findings: vec!["f-0".into()],
            observation_count: 1,
            confidence: 0.5,
            signal: "SIG-TOOL-FAIL".into(),
            agents: vec![],
        }];
        run.rule_effectiveness = vec![RuleEffectiveness {
            rule_id: "o1".into(),
            rule_type: "soul_rule".into(),
            signal: "SIG-TOOL-FAIL".into(),
            created_run_id: "run-0".into(),
            failures_before: 2,
            failures_after: 0.5,
            runs_after: 2,
            effectiveness: None,
            status: "pending".into(),
        }];
        let report = AnalysisReport::assemble(run);
        let mut ours = Vec::new();
        write_json_pretty(&report, &mut ours).unwrap();
        let serde = serde_json::to_vec_pretty(&report).unwrap();
        assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(serde).unwrap(), "{count} findings");
    }
}

#[test]
fn time_range_and_processing_state_come_from_the_run() {
    let json = serde_json::to_value(sample()).unwrap();
    assert_eq!(json["stats"]["timeRange"], json!({"startMs": 1000, "endMs": 9000}));
    assert_eq!(json["processingState"]["lastProcessedTs"], 9000);
    assert_eq!(json["processingState"]["totalFindings"], 4);
}

#[test]
fn empty_findings_and_empty_chains() {
    let report = AnalysisReport::assemble(analysis(Vec::new(), 0, 0, (0, 0), ProcessingState::default()));
    assert!(report.findings.is_empty() && report.signal_stats.is_empty());
    assert_eq!((report.stats.chains_reconstructed, report.stats.time_range.start_ms, report.stats.time_range.end_ms), (0, 0, 0));
    assert!(report.to_markdown().contains("0 findings"));
}

/// A lake in `dir` with `events` (a JSONL file) imported and analyzed.
fn analyzed_lake(dir: &Path, events: &Path) -> String {
    let lake = dir.join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, events.to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake]);
    lake
}

/// A lake with the demo sample, analyzed.
fn analyzed_sample_lake(dir: &Path) -> String {
    analyzed_lake(dir, &Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample.events.jsonl"))
}

#[test]
fn incremental_totals_accumulate_and_report_json_reads_the_lake() {
    let dir = tempfile::tempdir().unwrap();
    let lake = analyzed_sample_lake(dir.path());
    let report: Value =
        serde_json::from_str(&tracelake_ok(&["report", "--lake", &lake, "--format", "json", "--max-findings", "5"])).unwrap();
    let findings_in_lake: Value =
        serde_json::from_str(&tracelake_ok(&["sql", "--lake", &lake, "--format", "json", "SELECT count(*) AS n FROM findings"])).unwrap();
    assert_eq!(report["stats"]["findingsDetected"], findings_in_lake[0]["n"]);
    assert_eq!(report["findings"].as_array().unwrap().len(), 5);
    assert_eq!(report["findings"][0]["signal"]["severity"], "critical", "most severe first");
    let total = report["processingState"]["totalEventsProcessed"].as_u64().unwrap();
    assert!(total > 0);
    // A second incremental run with nothing new adds nothing; the totals stay.
    tracelake_ok(&["analyze", "--lake", &lake]);
    let again: Value = serde_json::from_str(&tracelake_ok(&["report", "--lake", &lake, "--format", "json"])).unwrap();
    assert!(again["processingState"]["totalEventsProcessed"].as_u64().unwrap() >= total);
    assert_eq!(again["stats"]["findingsDetected"], report["stats"]["findingsDetected"]);
}

#[test]
fn anonymized_reports_hold_no_names_ids_or_user_content() {
    let dir = tempfile::tempdir().unwrap();
    let lake = analyzed_sample_lake(dir.path());
    let plain = tracelake_ok(&["report", "--lake", &lake, "--format", "html"]);
    let anonymous = tracelake_ok(&["report", "--lake", &lake, "--format", "html", "--anonymize"]);
    let agents: Vec<Value> =
        serde_json::from_str(&tracelake_ok(&["sql", "--lake", &lake, "--format", "json", "SELECT DISTINCT agent, session FROM findings"]))
            .unwrap();
    assert!(!agents.is_empty());
    for row in &agents {
        let (agent, session) = (row["agent"].as_str().unwrap(), row["session"].as_str().unwrap());
        assert!(plain.contains(session));
        assert!(!anonymous.contains(session), "session {session} left in the anonymized report");
        assert!(!anonymous.contains(&format!(">{agent}<")), "agent {agent} left in the anonymized report");
    }
    let user_messages: Vec<Value> = serde_json::from_str(&tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "json",
        "SELECT DISTINCT content FROM chain_events WHERE type = 'msg.in' AND length(content) > 12 LIMIT 50",
    ]))
    .unwrap();
    let shown = user_messages.iter().filter(|m| plain.contains(&tracelake::report::html::escape(m["content"].as_str().unwrap()))).count();
    assert!(shown > 0, "the plain report shows user messages");
    for m in &user_messages {
        let text = tracelake::report::html::escape(m["content"].as_str().unwrap());
        assert!(!anonymous.contains(&text), "user content {text:?} left in the anonymized report");
    }
    assert!(anonymous.contains("agent-1") && anonymous.contains("session-1"));
}

/// Loads `page` in headless Chromium: the DOM after scripts ran, and console lines.
pub fn chromium_render(page: &Path) -> (String, Vec<String>) {
    chromium_render_in(page, 800)
}

/// [`chromium_render`] in a window `width` pixels wide.
fn chromium_render_in(page: &Path, width: u32) -> (String, Vec<String>) {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--window-size={width},900"))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium must be installed (apt-get install -y chromium)");
    let console = String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.contains(":CONSOLE")).map(str::to_owned).collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

#[test]
fn html_report_renders_its_charts_in_chromium_without_console_output() {
    let dir = tempfile::tempdir().unwrap();
    let lake = analyzed_sample_lake(dir.path());
    let page = dir.path().join("report.html");
    tracelake_ok(&["report", "--lake", &lake, "--format", "html", "--output", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<link") && !html.contains(" src=") && !html.contains("href=\"http"), "no external resources");

    let (dom, console) = chromium_render(&page);
    assert!(console.is_empty(), "console output: {console:#?}");
    for id in ["chart-per-day", "chart-agent-severity", "chart-tools", "chart-chain-lengths"] {
        let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("{id} missing"));
        let chart = &dom[at..dom[at..].find("</figure>").map_or(dom.len(), |end| at + end)];
        assert!(chart.contains("data-rendered=\"true\""), "{id} not rendered");
        assert!(chart.matches("class=\"bar\"").count() >= 1, "{id} has no bars: {chart}");
    }
    // Every signal of the sample has a colour of its own in the chart over time.
    let at = dom.find("id=\"chart-per-day\"").unwrap();
    let chart = &dom[at..at + dom[at..].find("</figure>").unwrap()];
    let swatches = chart.split("<rect ").filter(|r| r.split('>').next().unwrap_or_default().contains("class=\"swatch\""));
    let fills: Vec<&str> = swatches.filter_map(|r| r.split("fill=\"").nth(1)?.split('"').next()).collect();
    assert!(fills.len() > 8, "a swatch per signal, more signals than a short palette holds: {fills:?}");
    let distinct: std::collections::HashSet<&&str> = fills.iter().collect();
    assert_eq!(distinct.len(), fills.len(), "two signals share a colour: {fills:?}");
    // Each finding links to its chain's transcript, which exists in the page.
    let link = dom.find("href=\"#chain-").expect("a transcript link");
    let id = &dom[link + 7..link + 7 + dom[link + 7..].find('"').unwrap()];
    assert!(dom.contains(&format!("id=\"{id}\"")), "transcript {id} missing");

    // The check itself can fail: a broken script is caught.
    let broken = dir.path().join("broken.html");
    std::fs::write(&broken, html.replace("\"use strict\";", "\"use strict\"; notDefined();")).unwrap();
    let (broken_dom, broken_console) = chromium_render(&broken);
    assert!(!broken_console.is_empty());
    assert!(!broken_dom.contains("data-rendered=\"true\""));
}

#[test]
fn the_html_report_is_not_written_to_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    // `script` runs the command on a pseudo-terminal, as a user's shell would.
    let in_terminal = |args: &str| {
        Command::new("script")
            .args(["-qec", &format!("{} {args} --lake {lake}", env!("CARGO_BIN_EXE_tracelake")), "/dev/null"])
            .env_remove("TRACELAKE_LAKE")
            .output()
            .expect("script (util-linux) is installed")
    };
    let html = in_terminal("report");
    let said = String::from_utf8_lossy(&html.stdout);
    assert_eq!(html.status.code(), Some(1), "{said}");
    assert!(said.contains("--output report.html") && !said.contains("<html"), "{said}");
    let markdown = in_terminal("report --format markdown");
    assert!(markdown.status.success() && String::from_utf8_lossy(&markdown.stdout).contains("# "), "markdown is for terminals");
}

/// Values a report must never show anonymized, planted in every field an event has.
const PLANTED: [&str; 12] = [
    "Yusuf",
    "Okafor",
    "yusuf.okafor@example.com",
    "+1 415 555 0199",
    "221B Baker Street",
    "user_8842",
    "/home/yokafor/orders.csv",
    "db7.internal.example.net",
    "10.42.7.19",
    "okafor-helpdesk",
    "sess-yokafor-1",
    "evt-yokafor",
];

fn planted_trace() -> String {
    let (agent, session) = ("okafor-helpdesk", "sess-yokafor-1");
    let events = [
        (
            "msg.in",
            json!({"from": "user", "content": "Hi, I am Yusuf Okafor (user_8842), mail yusuf.okafor@example.com, phone +1 415 555 0199. Cancel my order to 221B Baker Street."}),
        ),
        (
            "tool.call",
            json!({"toolName": "cancel_order", "params": {"user": "user_8842", "name": "Yusuf Okafor", "file": "/home/yokafor/orders.csv"}}),
        ),
        (
            "tool.result",
            json!({"toolName": "cancel_order", "params": {"user": "user_8842"}, "error": "connect db7.internal.example.net (10.42.7.19) failed for yusuf.okafor@example.com"}),
        ),
        (
            "msg.out",
            json!({"to": "user", "content": "Done, Yusuf Okafor! Your order to 221B Baker Street is cancelled; we will call +1 415 555 0199.", "success": true}),
        ),
        (
            "msg.in",
            json!({"from": "user", "content": "No, that's wrong, Yusuf Okafor's order at 221B Baker Street still shows as active! This is useless."}),
        ),
        ("tool.call", json!({"toolName": "cancel_order", "params": {"user": "user_8842", "host": "db7.internal.example.net"}})),
        (
            "tool.result",
            json!({"toolName": "cancel_order", "params": {"user": "user_8842"}, "error": "connect db7.internal.example.net (10.42.7.19) failed for yusuf.okafor@example.com"}),
        ),
        ("tool.call", json!({"toolName": "cancel_order", "params": {"user": "user_8842", "host": "db7.internal.example.net"}})),
        (
            "tool.result",
            json!({"toolName": "cancel_order", "params": {"user": "user_8842"}, "error": "connect db7.internal.example.net (10.42.7.19) failed for yusuf.okafor@example.com"}),
        ),
        ("tool.call", json!({"toolName": "cancel_order", "params": {"user": "user_8842", "host": "db7.internal.example.net"}})),
        (
            "tool.result",
            json!({"toolName": "cancel_order", "params": {"user": "user_8842"}, "result": {"owner": "Yusuf Okafor", "address": "221B Baker Street"}, "error": "still failing for user_8842 at 10.42.7.19"}),
        ),
        (
            "msg.out",
            json!({"to": "user", "content": "I have cancelled it now, Yusuf Okafor. The refund goes to yusuf.okafor@example.com.", "success": true}),
        ),
    ];
    jsonl("evt-yokafor", agent, session, 2000, &events)
}

/// Events of one session as JSONL, `step_ms` apart, with ids `{id}-{n}`.
fn jsonl(id: &str, agent: &str, session: &str, step_ms: i64, events: &[(&str, Value)]) -> String {
    events
        .iter()
        .enumerate()
        .map(|(i, (kind, payload))| {
            json!({"id": format!("{id}-{i}"), "ts": 1_767_225_600_000_i64 + i as i64 * step_ms, "agent": agent, "session": session, "type": kind, "payload": payload})
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A lake with `trace` imported and analyzed.
fn analyzed_trace(dir: &Path, trace: &str) -> String {
    let file = dir.join("trace.jsonl");
    std::fs::write(&file, trace).unwrap();
    analyzed_lake(dir, &file)
}

#[test]
fn an_anonymized_report_holds_none_of_the_values_planted_in_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let lake = analyzed_trace(dir.path(), &planted_trace());
    let findings = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT DISTINCT signal FROM findings ORDER BY 1"]);
    assert!(findings.lines().count() >= 3, "the planted trace has findings of several signals: {findings}");
    let plain = tracelake_ok(&["report", "--lake", &lake, "--format", "json"]);
    assert!(PLANTED.iter().filter(|p| plain.contains(*p)).count() >= 6, "the plain report shows what was said: {plain}");
    for format in ["json", "markdown", "html"] {
        let anonymous = tracelake_ok(&["report", "--lake", &lake, "--format", format, "--anonymize"]);
        for planted in PLANTED {
            assert!(!anonymous.contains(planted), "{format}: `{planted}` left in the anonymized report:\n{anonymous}");
        }
        assert!(anonymous.contains("cancel_order") && anonymous.contains("agent-1"), "{format}: tools and placeholders stay");
    }
}

/// Two failing tools whose names share their first 24 characters, one result that is JSON.
fn two_tools_trace() -> String {
    let tools = ["lookup_customer_account_by_email", "lookup_customer_account_by_phone"];
    let mut events = vec![("msg.in", json!({"from": "user", "content": "Where is my order?"}))];
    for (tool, failures) in tools.iter().zip([7, 3]) {
        for _ in 0..failures {
            events.push(("tool.call", json!({"toolName": tool, "params": {"key": "k"}})));
            events.push((
                "tool.result",
                json!({"toolName": tool, "result": {"status": "unavailable", "retry": true}, "error": "backend unavailable"}),
            ));
        }
    }
    events.push(("tool.call", json!({"toolName": "get_order", "params": {"order": 7}})));
    events.push(("tool.result", json!({"toolName": "get_order", "result": {"order": 7, "state": "shipped"}})));
    events.push(("msg.out", json!({"to": "user", "content": "It has shipped.", "success": true})));
    jsonl("e", "a", "s", 1000, &events)
}

/// The labels of the ticks drawn in a rendered chart.
fn tick_labels(chart: &str) -> Vec<String> {
    chart.split("class=\"tick\"").skip(1).map(|rest| rest[rest.find('>').unwrap() + 1..rest.find('<').unwrap()].to_owned()).collect()
}

/// The values of the ticks drawn in a rendered chart (`150k` is 150000).
fn ticks(chart: &str) -> Vec<f64> {
    tick_labels(chart)
        .iter()
        .map(|label| {
            let label = label.replace(',', "");
            match label.strip_suffix('k').map(|n| (n, 1e3)).or_else(|| label.strip_suffix('M').map(|n| (n, 1e6))) {
                Some((n, unit)) => n.parse::<f64>().unwrap() * unit,
                None => label.parse().unwrap(),
            }
        })
        .collect()
}

/// The chart texts that reach outside their chart, measured by Chromium after layout.
const OVERFLOW_CHECK: &str = r#"<script>
document.body.dataset.overflow = JSON.stringify([...document.querySelectorAll(".chart svg")].flatMap((svg) => {
  const box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll("text")].map((t) => [t.textContent, t.getBoundingClientRect()])
    .filter(([, r]) => r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
    .map(([text]) => text);
}));
</script></body>"#;

/// Every count in the report's chart data times `factor`.
fn scaled_page(html: &str, factor: f64) -> String {
    let (start, end) = ("id=\"report-data\">", "</script>");
    let from = html.find(start).unwrap() + start.len();
    let to = from + html[from..].find(end).unwrap();
    let mut data: Value = serde_json::from_str(&html[from..to]).unwrap();
    for rows in data["charts"].as_object_mut().unwrap().values_mut() {
        for row in rows.as_array_mut().into_iter().flatten() {
            for key in ["count", "chains", "failures"] {
                if let Some(n) = row.get(key).and_then(Value::as_f64) {
                    row[key] = json!((n * factor).round());
                }
            }
        }
    }
    let data = data.to_string().replace("</", "<\\/");
    format!("{}{data}{}", &html[..from], &html[to..]).replacen("</body>", OVERFLOW_CHECK, 1)
}

/// The charts' labels fit in the charts at any size of data: compact tick labels (150k),
/// margins sized to the labels, the first date under the bars whole.
#[test]
fn chart_labels_fit_at_every_size() {
    let dir = tempfile::tempdir().unwrap();
    let lake = analyzed_sample_lake(dir.path());
    let page = dir.path().join("report.html");
    tracelake_ok(&["report", "--lake", &lake, "--format", "html", "--output", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    for factor in [1.0, 37.0, 1_500.0, 48_000.0, 2_000_000.0] {
        let scaled = dir.path().join(format!("scaled-{factor}.html"));
        std::fs::write(&scaled, scaled_page(&html, factor)).unwrap();
        let (dom, console) = chromium_render(&scaled);
        assert!(console.is_empty(), "{console:#?}");
        let at = dom.find("data-overflow=\"").expect("the check ran") + "data-overflow=\"".len();
        let overflow = &dom[at..at + dom[at..].find('"').unwrap()];
        assert_eq!(overflow, "[]", "×{factor}: labels outside their chart");
        let at = dom.find("id=\"chart-chain-lengths\"").unwrap();
        let labels = tick_labels(&dom[at..at + dom[at..].find("</figure>").unwrap()]);
        assert!(labels.iter().all(|l| l.len() <= 5), "×{factor}: compact tick labels: {labels:?}");
    }
}

#[test]
fn the_html_report_reads_well_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let lake = analyzed_trace(dir.path(), &two_tools_trace());
    let page = dir.path().join("report.html");
    tracelake_ok(&["report", "--lake", &lake, "--format", "html", "--output", page.to_str().unwrap()]);
    let (dom, console) = chromium_render(&page);
    assert!(console.is_empty(), "{console:#?}");

    // Tool names that are cut end in an ellipsis and keep the whole name as a tooltip.
    let at = dom.find("id=\"chart-tools\"").unwrap();
    let chart = &dom[at..at + dom[at..].find("</figure>").unwrap()];
    for tool in ["lookup_customer_account_by_email", "lookup_customer_account_by_phone"] {
        assert!(chart.contains(&format!("<title>{tool}</title>")), "{tool} as a tooltip: {chart}");
    }
    let labels: Vec<&str> = chart.split("…").collect();
    assert!(labels.len() >= 3, "both names end in an ellipsis: {chart}");
    assert!(!chart.contains(">lookup_customer_ac<"), "not cut without a mark");

    // Axis ticks are 0 and steps of 1, 2 or 5 times a power of ten.
    for id in ["chart-per-day", "chart-agent-severity", "chart-tools", "chart-chain-lengths"] {
        let at = dom.find(&format!("id=\"{id}\"")).unwrap();
        let values = ticks(&dom[at..at + dom[at..].find("</figure>").unwrap()]);
        assert!(values.len() >= 2 && values[0] == 0.0, "{id}: {values:?}");
        let step = values[1];
        let power = 10f64.powf(step.log10().floor());
        assert!([1.0, 2.0, 5.0].iter().any(|m| (m * power - step).abs() < 1e-9), "{id}: step {step}");
        assert!(values.windows(2).all(|w| (w[1] - w[0] - step).abs() < 1e-9), "{id}: {values:?}");
    }

    // Without an LLM there is no empty fix column, and the page says how to get fixes.
    assert!(!dom.contains("<th>fix</th>"), "an empty fix column");
    assert!(dom.contains("llm.enabled"), "says how to get fixes");

    // The transcript marks the finding's events and lays out JSON results to be read.
    let at = dom.find("class=\"transcript\"").expect("a transcript");
    let transcript = &dom[at..];
    assert!(transcript.contains("<li class=\"hit\">"), "the finding's events are marked: {transcript}");
    assert!(transcript.contains("\"status\": \"unavailable\""), "JSON laid out: {transcript}");
    assert!(!transcript.contains("\\\""), "no escaped JSON: {transcript}");
}

/// A change made on a user's answer to a choice, not on a yes, with its parameters a long
/// JSON object and no space in it: the summary that names them holds a long unbroken run.
fn long_parameters_trace() -> String {
    let params =
        json!({"item_ids": ["4579334072", "6117189161", "4947717507"], "order_id": "#W5490111", "payment_method_id": "paypal_9497703"});
    let events = [
        ("msg.in", json!({"from": "user", "content": "I want to return the keyboards from my last order."})),
        ("msg.out", json!({"to": "user", "content": "Should the refund go to PayPal or to a gift card?"})),
        ("msg.in", json!({"from": "user", "content": "PayPal."})),
        ("tool.call", json!({"toolName": "return_delivered_order_items", "params": params})),
        ("tool.result", json!({"toolName": "return_delivered_order_items", "result": {"status": "return requested"}})),
        ("msg.out", json!({"to": "user", "content": "The return is requested.", "success": true})),
    ];
    jsonl("long", "shop", "s-long", 1000, &events)
}

/// Chromium's widths, once the page has loaded: of the page's content and its window,
/// and of the findings table and the box it scrolls in.
const WIDTH_CHECK: &str = r#"<script>
window.addEventListener("load", () => {
  const page = document.documentElement, table = document.querySelector(".wide");
  document.body.dataset.widths = [page.scrollWidth, page.clientWidth, table.scrollWidth, table.clientWidth].join(" ");
});
</script></body>"#;

/// The widths of [`WIDTH_CHECK`] for `html` in a window `width` pixels wide.
fn rendered_widths(dir: &Path, html: &str, width: u32) -> Vec<u32> {
    let page = dir.join(format!("report-{width}.html"));
    std::fs::write(&page, html.replacen("</body>", WIDTH_CHECK, 1)).unwrap();
    let (dom, console) = chromium_render_in(&page, width);
    assert!(console.is_empty(), "{console:#?}");
    let at = dom.find("data-widths=\"").expect("the check ran") + "data-widths=\"".len();
    dom[at..at + dom[at..].find('"').unwrap()].split(' ').map(|w| w.parse().unwrap()).collect()
}

#[test]
fn long_unbroken_texts_wrap_inside_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let lake = analyzed_trace(dir.path(), &long_parameters_trace());
    let summaries = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT summary FROM findings"]);
    let longest_run = summaries.split([' ', '\n']).map(str::len).max().unwrap_or(0);
    assert!(longest_run > 100, "a summary holds a long unbroken run: {summaries}");
    let html = tracelake_ok(&["report", "--lake", &lake, "--format", "html"]);

    // On a laptop's screen the findings table fits; on a narrow one it scrolls in its box,
    // and the page never does.
    let widths = rendered_widths(dir.path(), &html, 1024);
    assert!(widths[0] <= widths[1] && widths[2] <= widths[3], "at 1024 px (page, window, table, box): {widths:?}");
    let widths = rendered_widths(dir.path(), &html, 640);
    assert!(widths[0] <= widths[1], "at 640 px the page is wider than its window (page, window, table, box): {widths:?}");
    // The check can fail: without the rule that breaks long runs, the table is wider.
    let unbroken = html.replace("overflow-wrap: anywhere", "overflow-wrap: normal");
    let widths = rendered_widths(dir.path(), &unbroken, 1024);
    assert!(widths[2] > widths[3], "without the rule the table fits too ({widths:?}): the trace tests nothing");
}
