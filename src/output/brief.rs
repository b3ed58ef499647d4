//! The boot context an agent loads when it starts (cortex §4.3, `tracelake brief`),
//! assembled from the lake: state and mood, staleness, the last conversation if it is
//! fresh, a narrative of the last day, the open threads, recent decisions, the rules in
//! force and recent critical findings. Each section is cut to its budget, the whole to
//! `max_chars` with a `[truncated]` marker.

use chrono::{DateTime, Timelike, Utc};
use datafusion::prelude::SessionContext;
use serde::Serialize;
use serde_json::Value;

use crate::engine::{EngineError, query_json};
use tracelake_udfs::clip::clip;

/// Characters of each section at most (cortex §4.3's budget table; rules and findings,
/// which the cortex has not, share what its footer leaves).
const HEADER: usize = 500;
const HOT_SNAPSHOT: usize = 1000;
const NARRATIVE: usize = 2000;
const THREADS: usize = 8000;
const DECISIONS: usize = 3000;
const RULES: usize = 1500;
const FINDINGS: usize = 1500;
const FOOTER: usize = 500;

/// Open threads shown at most, decisions, and how far back decisions go.
const TOP_THREADS: usize = 7;
const TOP_DECISIONS: usize = 10;
const DECISION_DAYS: i64 = 14;
/// The last conversation is shown while its newest message is younger than this.
const HOT_MINUTES: i64 = 60;
/// Messages of the last conversation shown.
const HOT_MESSAGES: usize = 8;
/// An agent silent for longer than this gets a staleness warning.
const STALE_HOURS: i64 = 24;

const TRUNCATED: &str = "\n[truncated]\n";

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Brief {
    pub agent: String,
    pub generated_at: String,
    /// The sections in order, by name; empty ones are left out of the text.
    pub sections: Vec<Section>,
    /// The boot context as written: the sections joined, cut at `max_chars`.
    pub text: String,
    /// The agent's events in the lake.
    #[serde(skip)]
    pub events: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub name: &'static str,
    pub text: String,
}

/// The boot context of `agent` at `now`, at most `max_chars` characters.
pub async fn brief(ctx: &SessionContext, agent: &str, now: DateTime<Utc>, max_chars: usize) -> Result<Brief, EngineError> {
    let a = crate::engine::sql::string_literal(agent);
    let now_ms = now.timestamp_millis();
    let at = |ms: i64| format!("to_timestamp_millis({ms})");

    let latest = query_json(
        ctx,
        &format!(
            "SELECT CAST(max(ts) AS BIGINT) AS ms, count(DISTINCT session) AS sessions, count(*) AS events FROM events WHERE agent = {a}"
        ),
    )
    .await?;
    let latest_ms = latest.first().and_then(|r| r["ms"].as_i64());
    let threads = query_json(
        ctx,
        &format!(
            "SELECT title, status, priority, summary, array_to_string(decisions, '\n') AS decisions, waiting_for, mood, \
             CAST(last_activity AS BIGINT) AS last_ms FROM threads WHERE agent = {a} \
             ORDER BY CASE priority WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, last_activity DESC"
        ),
    )
    .await?;
    // The decisions of the last days, newest first: the header counts them, the narrative
    // takes the last day's, the decisions section the newest few.
    let decisions = query_json(
        ctx,
        &format!(
            "SELECT what, impact, who, CAST(ts AS BIGINT) AS ms FROM decisions WHERE agent = {a} \
             AND ts >= {} AND ts <= {} ORDER BY ts DESC",
            at(now_ms - DECISION_DAYS * 86_400_000),
            at(now_ms)
        ),
    )
    .await?;
    let decisions_made = decisions.len();
    let mood = query_json(
        ctx,
        &format!(
            "SELECT mood FROM cortex_messages WHERE agent = {a} AND mood <> 'neutral' AND ts <= {} ORDER BY ts DESC LIMIT 1",
            at(now_ms)
        ),
    )
    .await?;
    let mood = mood.first().and_then(|r| r["mood"].as_str()).unwrap_or("neutral").to_owned();

    let open: Vec<&Value> = threads.iter().filter(|t| t["status"] == "open").collect();
    let mut sections = vec![Section {
        name: "header",
        text: cut(
            &format!(
                "# Boot context: {agent}\n\nGenerated {} from the lake. State: {} open threads, {} decisions in the last {DECISION_DAYS} days; \
                 mood {mood}; mode: {}.\n",
                now.format("%Y-%m-%d %H:%M UTC"),
                open.len(),
                decisions_made,
                execution_mode(now)
            ),
            HEADER,
        ),
    }];
    let warnings = match latest_ms {
        None => format!("- No events of agent `{agent}` in the lake.\n"),
        Some(ms) if now_ms - ms > STALE_HOURS * 3_600_000 => {
            let hours = (now_ms - ms) / 3_600_000;
            let age = if hours < 48 { format!("{hours} hours") } else { format!("{} days", hours / 24) };
            format!("- The latest event is {age} old: this context may be stale.\n")
        }
        Some(_) => String::new(),
    };
    sections.push(Section { name: "warnings", text: titled("Warnings", &warnings, HEADER) });
    let hot = match latest_ms {
        Some(ms) if (0..HOT_MINUTES * 60_000).contains(&(now_ms - ms)) => hot_snapshot(ctx, &a).await?,
        _ => String::new(),
    };
    sections.push(Section { name: "hotSnapshot", text: titled("Last conversation", &hot, HOT_SNAPSHOT) });

    let day_ago = now_ms - 86_400_000;
    let recent = |t: &&Value| t["last_ms"].as_i64().is_some_and(|ms| ms >= day_ago && ms <= now_ms);
    let mut narrative = String::new();
    for t in threads.iter().filter(|t| t["status"] == "closed").filter(recent) {
        narrative.push_str(&format!("- Closed: {}\n", text(t, "title")));
    }
    for t in open.iter().copied().filter(recent) {
        narrative.push_str(&format!("- Open ({}): {}\n", text(t, "priority"), text(t, "title")));
    }
    for d in decisions.iter().rev().filter(|d| d["ms"].as_i64().is_some_and(|ms| ms >= day_ago)) {
        narrative.push_str(&format!("- Decided: {}\n", clip(&text(d, "what"), 200)));
    }
    sections.push(Section { name: "narrative", text: titled("The last 24 hours", &narrative, NARRATIVE) });

    let mut threads_text = String::new();
    for t in open.iter().take(TOP_THREADS) {
        threads_text.push_str(&format!(
            "### {} ({}, mood {})\n{}\n",
            text(t, "title"),
            text(t, "priority"),
            text(t, "mood"),
            text(t, "summary")
        ));
        if let Some(wait) = t["waiting_for"].as_str() {
            threads_text.push_str(&format!("- Waiting: {}\n", clip(wait, 200)));
        }
        for d in text(t, "decisions").lines().rev().take(3) {
            threads_text.push_str(&format!("- Decided: {}\n", clip(d, 200)));
        }
        threads_text.push('\n');
    }
    sections.push(Section { name: "threads", text: titled("Open threads", &threads_text, THREADS) });

    let decisions_text: String = decisions
        .iter()
        .take(TOP_DECISIONS)
        .map(|d| format!("- {} [{}] {} ({})\n", day_of(d), text(d, "impact"), clip(&text(d, "what"), 200), text(d, "who")))
        .collect();
    sections.push(Section { name: "decisions", text: titled("Recent decisions", &decisions_text, DECISIONS) });

    let rules = query_json(
        ctx,
        &format!(
            "SELECT content FROM outputs WHERE type = 'soul_rule' AND (agents = '' OR strpos(',' || agents || ',', ',' || {a} || ',') > 0) \
             GROUP BY content ORDER BY max(created_at) DESC LIMIT 10"
        ),
    )
    .await?;
    let rules_text: String = rules.iter().map(|r| format!("- {}\n", clip(&text(r, "content"), 300))).collect();
    sections.push(Section { name: "rules", text: titled("Rules in force", &rules_text, RULES) });

    let findings = query_json(
        ctx,
        &format!(
            "SELECT signal, summary, CAST(occurred_at AS BIGINT) AS ms FROM findings WHERE agent = {a} AND severity = 'critical' \
             AND occurred_at <= {} ORDER BY occurred_at DESC LIMIT 5",
            at(now_ms)
        ),
    )
    .await?;
    let findings_text: String =
        findings.iter().map(|f| format!("- {} {}: {}\n", day_of(f), text(f, "signal"), clip(&text(f, "summary"), 200))).collect();
    sections.push(Section { name: "findings", text: titled("Recent critical findings", &findings_text, FINDINGS) });

    let events = latest.first().map_or(0, |r| r["events"].as_u64().unwrap_or(0));
    let sessions = latest.first().map_or(0, |r| r["sessions"].as_u64().unwrap_or(0));
    sections.push(Section {
        name: "footer",
        text: cut(&format!("---\n{events} events in {sessions} sessions; {} threads tracked.\n", threads.len()), FOOTER),
    });

    let whole: String = sections.iter().filter(|s| !s.text.is_empty()).map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n");
    Ok(Brief { agent: agent.to_owned(), generated_at: now.to_rfc3339(), sections, text: cut(&whole, max_chars), events })
}

/// The UTC day of a row's `ms`.
fn day_of(row: &Value) -> String {
    DateTime::from_timestamp_millis(row["ms"].as_i64().unwrap_or(0)).unwrap_or_default().format("%Y-%m-%d").to_string()
}

/// The last messages of the newest session of the agent (`agent`, a SQL string literal),
/// oldest first.
async fn hot_snapshot(ctx: &SessionContext, agent: &str) -> Result<String, EngineError> {
    let rows = query_json(
        ctx,
        &format!(
            "SELECT who, content FROM (SELECT CASE WHEN type = 'msg.in' THEN coalesce(\"from\", 'user') ELSE agent END AS who, \
             content, ts, stream_seq FROM events WHERE type IN ('msg.in', 'msg.out') AND content IS NOT NULL AND agent = {agent} \
             AND session = (SELECT session FROM events WHERE agent = {agent} ORDER BY ts DESC, stream_seq DESC LIMIT 1) \
             ORDER BY ts DESC, stream_seq DESC LIMIT {HOT_MESSAGES}) ORDER BY ts, stream_seq"
        ),
    )
    .await?;
    Ok(rows.iter().map(|r| format!("- [{}] {}\n", text(r, "who"), clip(&text(r, "content"), 150))).collect())
}

/// How the cortex has the agent behave at this hour (UTC).
fn execution_mode(now: DateTime<Utc>) -> &'static str {
    match now.hour() {
        5..=11 => "Morning — brief, directive, efficient",
        12..=17 => "Afternoon — execution mode",
        18..=22 => "Evening — strategic, philosophical possible",
        _ => "Night — emergencies only",
    }
}

fn text(row: &Value, key: &str) -> String {
    row[key].as_str().unwrap_or_default().to_owned()
}

/// A section with its heading, within `budget` characters; nothing when `body` is empty.
fn titled(title: &str, body: &str, budget: usize) -> String {
    if body.is_empty() {
        return String::new();
    }
    cut(&format!("## {title}\n\n{body}"), budget)
}

/// `text` within `max` characters: cut hard, the cut marked `[truncated]`.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let keep = max.saturating_sub(TRUNCATED.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(TRUNCATED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_marked_and_within_the_budget() {
        assert_eq!(cut("short", 100), "short");
        let long = "x".repeat(500);
        let out = cut(&long, 100);
        assert!(out.ends_with("[truncated]\n") && out.chars().count() == 100, "{out}");
    }

    #[test]
    fn the_mode_follows_the_hour() {
        let at = |h: u32| DateTime::parse_from_rfc3339(&format!("2026-01-01T{h:02}:00:00Z")).unwrap().with_timezone(&Utc);
        assert!(execution_mode(at(8)).starts_with("Morning"));
        assert!(execution_mode(at(13)).starts_with("Afternoon"));
        assert!(execution_mode(at(20)).starts_with("Evening"));
        assert!(execution_mode(at(2)).starts_with("Night"));
    }
}
