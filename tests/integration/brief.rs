//! `tracelake brief` and the cortex views it reads (`decisions`, `threads`, `moods`) on a
//! fixture lake: the sections in order within their budgets, freshness judged at `--at`,
//! no secret, and the same views whether the lake was analysed at once or in increments.

use serde_json::{Value, json};

use crate::common::{sql_rows, tracelake, tracelake_ok};

/// 2026-01-05T10:00:00Z.
const START_MS: i64 = 1_767_607_200_000;

/// One agent's conversation over an hour: a topic, decisions, a wait, a closure, moods,
/// and a secret the user pasted.
fn conversation() -> Vec<String> {
    let messages = [
        ("s1", "msg.in", "Back to the database migration, please. My token is ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
        ("s1", "msg.out", "We decided the database migration runs on Sunday night, after the backup."),
        ("s1", "msg.in", "Regarding billing export for March: careful, this is urgent."),
        ("s1", "msg.out", "Waiting for the March numbers of the billing export from finance."),
        ("s2", "msg.in", "The database migration is done! Nice."),
        ("s2", "msg.out", "Great. Let's do the billing export for March once the numbers are in."),
    ];
    messages
        .iter()
        .enumerate()
        .map(|(i, (session, kind, content))| {
            json!({"id": format!("m{i}"), "ts": START_MS + i as i64 * 600_000, "agent": "ops", "session": session, "type": kind,
                   "payload": {"content": content}})
            .to_string()
        })
        .collect()
}

fn lake_of(dir: &std::path::Path, parts: &[&[String]]) -> String {
    let lake = dir.join("lake").display().to_string();
    for (i, part) in parts.iter().enumerate() {
        let file = dir.join(format!("part{i}.jsonl"));
        std::fs::write(&file, part.join("\n") + "\n").unwrap();
        tracelake_ok(&["import", "--lake", &lake, file.to_str().unwrap()]);
        tracelake_ok(&["analyze", "--lake", &lake]);
    }
    lake
}

/// A user's message to the agent `ops`, `minutes` after the start.
fn user_message(id: &str, session: &str, minutes: i64, content: &str) -> String {
    json!({"id": id, "ts": START_MS + minutes * 60_000, "agent": "ops", "session": session, "type": "msg.in", "payload": {"content": content}})
        .to_string()
}

fn at(minutes_after_start: i64) -> String {
    chrono::DateTime::from_timestamp_millis(START_MS + minutes_after_start * 60_000).unwrap().to_rfc3339()
}

#[test]
fn the_brief_holds_its_sections_in_order_within_budget_and_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_of(dir.path(), &[&conversation()]);
    let text = tracelake_ok(&["brief", "--lake", &lake, "--agent", "ops", "--at", &at(60)]);
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        headings,
        [
            "# Boot context: ops",
            "## Last conversation",
            "## The last 24 hours",
            "## Open threads",
            "### billing export for March (medium, mood tense)",
            "## Recent decisions"
        ],
        "{text}"
    );
    assert!(text.contains("State: 1 open threads, 2 decisions in the last 14 days"), "{text}");
    assert!(text.contains("- Closed: the database migration") && text.contains("- Open (medium): billing export for March"), "{text}");
    assert!(text.contains("- Waiting: Waiting for the March numbers of the billing export from finance."), "{text}");
    assert!(text.contains("[high] We decided the database migration runs on Sunday night"), "{text}");
    assert!(!text.contains("ghp_abcdefghij"), "no secret: {text}");
    let summary = sql_rows(&lake, "SELECT summary FROM threads WHERE title = 'the database migration'");
    assert_eq!(summary, vec![json!({"summary": "Back to the database migration, please. My token is [REDACTED_GH_TOKEN]"})]);

    // Three days on, the context is stale and the conversation no longer hot.
    let later = tracelake_ok(&["brief", "--lake", &lake, "--agent", "ops", "--at", &at(3 * 24 * 60)]);
    assert!(later.contains("## Warnings") && later.contains("is 2 days old") && !later.contains("## Last conversation"), "{later}");

    let short = tracelake_ok(&["brief", "--lake", &lake, "--agent", "ops", "--at", &at(60), "--max-chars", "300"]);
    assert!(short.chars().count() <= 300 && short.ends_with("[truncated]\n"), "{short}");

    let file = dir.path().join("BOOTSTRAP.md");
    tracelake_ok(&["brief", "--lake", &lake, "--agent", "ops", "--at", &at(60), "--output", file.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let json: Value =
        serde_json::from_str(&tracelake_ok(&["brief", "--lake", &lake, "--agent", "ops", "--at", &at(60), "--format", "json"])).unwrap();
    let names: Vec<&str> = json["sections"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["header", "warnings", "hotSnapshot", "narrative", "threads", "decisions", "rules", "findings", "footer"]);

    let status = tracelake_ok(&["status", "--lake", &lake]);
    assert!(status.contains("cortex:      1 open of 2 thread(s), 2 decision(s)"), "{status}");
    for line in status.lines().filter(|l| l.starts_with("imports:") || l.starts_with("analyses:")) {
        let at = line.split(" at ").nth(1).and_then(|rest| rest.split(',').next()).unwrap_or_default();
        assert!(chrono::NaiveDateTime::parse_from_str(at, "%Y-%m-%d %H:%M:%S UTC").is_ok(), "shown as the time range is: {line}");
    }

    let unknown = tracelake(&["brief", "--lake", &lake, "--agent", "opz", "--at", &at(60)]);
    assert!(unknown.status.success(), "a new agent gets a brief");
    assert!(String::from_utf8_lossy(&unknown.stdout).contains("No events of agent `opz`"));
    let note = String::from_utf8_lossy(&unknown.stderr);
    assert!(note.contains("no events of agent `opz` (did you mean ops?); its agents: `ops`"), "{note}");
    let only = tracelake_ok(&["brief", "--lake", &lake, "--at", &at(60)]);
    assert_eq!(only, text, "the lake's only agent is the default");
}

#[test]
fn a_brief_without_an_agent_names_the_lakes_agents() {
    let dir = tempfile::tempdir().unwrap();
    let mut events = conversation();
    events.push(
        json!({"id": "x1", "ts": START_MS, "agent": "sales", "session": "s9", "type": "msg.in", "payload": {"content": "hi"}}).to_string(),
    );
    let lake = lake_of(dir.path(), &[&events]);
    let out = tracelake(&["brief", "--lake", &lake]);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("the lake holds 2 agents: name one with --agent (`ops`, `sales`)"), "most events first: {said}");
}

#[test]
fn the_cortex_views_are_the_same_after_increments_as_after_one_run() {
    let messages = conversation();
    let (once, parts) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let whole = lake_of(once.path(), &[&messages]);
    let split = lake_of(parts.path(), &[&messages[..2], &messages[2..4], &messages[4..]]);
    // Nothing new: nothing read twice.
    tracelake_ok(&["analyze", "--lake", &split]);
    for query in [
        "SELECT event_id, decision, waiting_for, topic, closes, mood FROM cortex_messages ORDER BY ts",
        "SELECT event_id, what, impact, who FROM decisions ORDER BY ts",
        "SELECT id, title, status, priority, waiting_for, mood, array_to_string(decisions, '|') AS d FROM threads ORDER BY id",
        "SELECT event_id, mood FROM moods ORDER BY ts",
    ] {
        let (a, b) = (sql_rows(&whole, query), sql_rows(&split, query));
        assert!(!a.is_empty(), "{query}");
        assert_eq!(a, b, "{query}");
    }
    tracelake_ok(&["analyze", "--lake", &split, "--full"]);
    assert_eq!(
        sql_rows(&split, "SELECT id, status FROM threads ORDER BY id"),
        sql_rows(&whole, "SELECT id, status FROM threads ORDER BY id")
    );
}

/// `cortex.maxThreads` keeps the open threads first.
#[test]
fn the_thread_cap_drops_closed_threads_first() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_of(dir.path(), &[&conversation()]);
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"traceAnalyzer": {"cortex": {"maxThreads": 1}}}"#).unwrap();
    let rows = crate::common::json_lines(&tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--config",
        config.to_str().unwrap(),
        "--format",
        "ndjson",
        "SELECT title, status FROM threads",
    ]));
    assert_eq!(rows, vec![json!({"title": "billing export for March", "status": "open"})]);
}

/// The HTML report has a section per agent: open threads, decisions, mood by day (drawn).
#[test]
fn the_report_shows_each_agents_threads_decisions_and_mood() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_of(dir.path(), &[&conversation()]);
    let page = dir.path().join("report.html");
    tracelake_ok(&["report", "--lake", &lake, "--output", page.to_str().unwrap()]);
    let (dom, console) = crate::report::chromium_render(&page);
    assert!(console.is_empty(), "{console:#?}");
    let section = &dom[dom.find("id=\"cortex\"").expect("a cortex section")..];
    assert!(section.contains("<h3>ops</h3>") && section.contains("<td class=\"text\">billing export for March</td>"), "{section}");
    assert!(section.contains("We decided the database migration runs on Sunday night"), "{section}");
    let chart = &section[section.find("id=\"chart-mood-0\"").unwrap()..];
    assert!(chart.contains("data-rendered=\"true\"") && chart[..chart.find("</figure>").unwrap()].contains("class=\"bar\""), "{chart}");
    let anonymous = tracelake_ok(&["report", "--lake", &lake, "--anonymize"]);
    assert!(!anonymous.contains("billing export") && !anonymous.contains("id=\"cortex\""), "free text stays out");
}

/// A message alone in its chain (an hour after the rest of its session) is read by the
/// analysis that first sees it, and not again by the next one.
#[test]
fn a_message_alone_in_its_chain_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let message = |i: i64, session: &str, minutes: i64, content: &str| user_message(&format!("x{i}"), session, minutes, content);
    let lake = lake_of(
        dir.path(),
        &[
            &[message(0, "s1", 0, "hello"), message(1, "s1", 1, "hello again")],
            &[message(2, "s1", 120, "Nice, the export works now.")],
            &[message(3, "s2", 240, "hi"), message(4, "s2", 241, "there")],
        ],
    );
    assert_eq!(sql_rows(&lake, "SELECT event_id, mood FROM cortex_messages"), vec![json!({"event_id": "x2", "mood": "productive"})]);
}

/// A backfill (messages older than what the last analysis saw) is read by the next
/// incremental run, once: a `--since` window run in between leaves it to that run.
#[test]
fn a_backfilled_message_is_read_once_by_the_run_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let message = |i: i64, session: &str, minutes: i64, content: &str| user_message(&format!("b{i}"), session, minutes, content);
    let lake = lake_of(dir.path(), &[&[message(0, "late", 300, "hello"), message(1, "late", 301, "Nice, the export works now.")]]);
    let backfill = dir.path().join("backfill.jsonl");
    std::fs::write(&backfill, [message(2, "early", 10, "hi"), message(3, "early", 11, "Nice, the export works now.")].join("\n") + "\n")
        .unwrap();
    tracelake_ok(&["import", "--lake", &lake, backfill.to_str().unwrap()]);
    tracelake_ok(&["analyze", "--lake", &lake, "--since", &at(0)]);
    tracelake_ok(&["analyze", "--lake", &lake]);
    tracelake_ok(&["analyze", "--lake", &lake]);
    let read = sql_rows(&lake, "SELECT event_id, count(*) AS n FROM cortex_messages GROUP BY event_id ORDER BY event_id");
    assert_eq!(read, vec![json!({"event_id": "b1", "n": 1}), json!({"event_id": "b3", "n": 1})]);
}
