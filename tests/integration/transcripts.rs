//! Chat transcripts: the real tau-bench conversations, turned back into OpenAI-style
//! transcripts, give the same findings as their OpenClaw-event form.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::common::{realworld, sql_rows, tracelake_ok};

/// The OpenClaw events of `file` as one OpenAI-style conversation a line, messages with
/// their time when `timed`.
fn as_transcripts(file: &Path, timed: bool) -> String {
    let mut sessions: BTreeMap<String, (String, i64, Vec<Value>)> = BTreeMap::new();
    let mut open_calls: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (n, line) in std::fs::read_to_string(file).unwrap().lines().enumerate() {
        let e: Value = serde_json::from_str(line).unwrap();
        let session = e["session"].as_str().unwrap().to_owned();
        let (ts, p) = (e["ts"].as_i64().unwrap(), &e["payload"]);
        let entry = sessions.entry(session.clone()).or_insert_with(|| (e["agent"].as_str().unwrap().to_owned(), ts, Vec::new()));
        let mut message = match e["type"].as_str().unwrap() {
            "msg.in" => json!({"role": "user", "content": p["content"]}),
            "msg.out" => json!({"role": "assistant", "content": p["content"]}),
            "tool.call" => {
                let id = format!("call-{n}");
                let tool = p["toolName"].as_str().unwrap().to_owned();
                open_calls.entry(session.clone()).or_default().push((id.clone(), tool.clone()));
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": tool, "arguments": p["params"].to_string()}}]})
            }
            "tool.result" => {
                let calls = open_calls.get_mut(&session).unwrap();
                let at = calls.iter().position(|(_, tool)| tool == p["toolName"].as_str().unwrap()).unwrap();
                let (id, _) = calls.remove(at);
                let content = p.get("error").or(p.get("result")).unwrap();
                let content = content.as_str().map_or_else(|| content.to_string(), str::to_owned);
                json!({"role": "tool", "tool_call_id": id, "content": content})
            }
            _ => continue,
        };
        if timed {
            message["timestamp"] = json!(ts);
        }
        entry.2.push(message);
    }
    let mut out = String::new();
    for (session, (agent, started, messages)) in sessions {
        let mut conversation = json!({"session": session, "agent": agent, "messages": messages});
        if timed {
            conversation["created_at"] = json!(started);
        }
        out.push_str(&conversation.to_string());
        out.push('\n');
    }
    out
}

/// Each finding of the analyzed lake at `lake` as (signal, session, first and last event
/// index in its chain), sorted.
fn findings(lake: &str) -> Vec<(String, String, i64, i64)> {
    let mut found: Vec<_> = sql_rows(lake, "SELECT signal, session, start_idx, end_idx FROM findings")
        .iter()
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap().to_owned();
            (text("signal"), text("session"), r["start_idx"].as_i64().unwrap(), r["end_idx"].as_i64().unwrap())
        })
        .collect();
    found.sort();
    found
}

/// The lake of `file` analyzed with every signal on.
fn analyzed(dir: &Path, name: &str, file: &Path) -> String {
    let lake = dir.join(name).display().to_string();
    tracelake_ok(&["import", "--lake", &lake, file.to_str().unwrap()]);
    let config = crate::analyze::write_config(dir, crate::analyze::ALL_FINDINGS);
    tracelake_ok(&["analyze", "--lake", &lake, "--config", &config]);
    lake
}

#[test]
fn tau_bench_as_transcripts_gives_the_findings_of_its_event_form() {
    let dir = tempfile::tempdir().unwrap();
    let events = realworld("tau-airline.events.jsonl");
    let expected = findings(&analyzed(dir.path(), "events", &events));
    assert!(expected.len() > 50, "the airline traces have findings: {}", expected.len());

    let timed = dir.path().join("timed.jsonl");
    std::fs::write(&timed, as_transcripts(&events, true)).unwrap();
    assert_eq!(findings(&analyzed(dir.path(), "timed", &timed)), expected);

    // Without a clock the messages are a second apart: the same findings in every
    // conversation. Only which session failed a way first is unknown then, which
    // SIG-REPEAT-FAIL (the later sessions that fail the same way) goes by: it finds as many.
    let untimed = dir.path().join("untimed.jsonl");
    std::fs::write(&untimed, as_transcripts(&events, false)).unwrap();
    let untimed = findings(&analyzed(dir.path(), "untimed", &untimed));
    let (repeats, within): (Vec<_>, Vec<_>) = untimed.into_iter().partition(|f| f.0 == "SIG-REPEAT-FAIL");
    let (expected_repeats, expected_within): (Vec<_>, Vec<_>) = expected.into_iter().partition(|f| f.0 == "SIG-REPEAT-FAIL");
    assert_eq!(within, expected_within);
    assert_eq!(repeats.len(), expected_repeats.len());
}

#[test]
fn a_pretty_printed_conversation_file_is_one_session() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("conversation.json");
    let conversation = json!({"id": "conv-7", "agent": "support", "messages": [
        {"role": "user", "content": "Cancel order 17."},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "cancel_order", "arguments": "{\"order\": 17}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: order 17 has shipped"},
        {"role": "assistant", "content": "Your order is cancelled."}
    ]});
    std::fs::write(&file, serde_json::to_string_pretty(&conversation).unwrap()).unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let out = tracelake_ok(&["import", "--lake", &lake, file.to_str().unwrap()]);
    assert!(out.contains("6 events, 0 quarantined"), "{out}");
    let rows = tracelake_ok(&[
        "sql",
        "--lake",
        &lake,
        "--format",
        "csv",
        "SELECT session, agent, type, tool_name, tool_error FROM events ORDER BY stream_seq",
    ]);
    assert_eq!(
        rows,
        "session,agent,type,tool_name,tool_error\n\
         conv-7,support,session.start,,\n\
         conv-7,support,msg.in,,\n\
         conv-7,support,tool.call,cancel_order,\n\
         conv-7,support,tool.result,cancel_order,Error: order 17 has shipped\n\
         conv-7,support,msg.out,,\n\
         conv-7,support,session.end,,\n"
    );
}
