//! `tracelake generate`: deterministic, exact in size, both schemas, every signal injected.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::tracelake_ok;

fn generate(dir: &std::path::Path, name: &str, events: u64, seed: u64) -> (Vec<u8>, Value) {
    let path = dir.join(name);
    tracelake_ok(&["generate", "--events", &events.to_string(), "--seed", &seed.to_string(), "--output", path.to_str().unwrap()]);
    let expected: Value = serde_json::from_slice(&std::fs::read(dir.join(format!("{name}.expected.json"))).unwrap()).unwrap();
    (std::fs::read(&path).unwrap(), expected)
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = generate(dir.path(), "a.jsonl", 2000, 7);
    let (b, _) = generate(dir.path(), "b.jsonl", 2000, 7);
    let (c, _) = generate(dir.path(), "c.jsonl", 2000, 8);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn writes_exactly_the_requested_number_of_events() {
    let dir = tempfile::tempdir().unwrap();
    for n in [1, 2, 17, 999] {
        let (bytes, expected) = generate(dir.path(), "n.jsonl", n, 3);
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count() as u64, n);
        assert_eq!(expected["events"], n);
    }
}

#[test]
fn holds_both_schemas_every_signal_and_ordered_time() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, expected) = generate(dir.path(), "g.jsonl", 5000, 11);
    let mut by_type: BTreeMap<String, u64> = BTreeMap::new();
    let mut last_ts = 0;
    let mut envelope = 0;
    for line in String::from_utf8(bytes).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        *by_type.entry(v["type"].as_str().unwrap().to_owned()).or_default() += 1;
        let ts = v["ts"].as_i64().or(v["timestamp"].as_i64()).unwrap();
        assert!(ts >= last_ts, "events come in time order, as on a stream");
        last_ts = ts;
        envelope += u64::from(v.get("schemaVersion").is_some());
    }
    let recorded: BTreeMap<String, u64> = serde_json::from_value(expected["eventsByType"].clone()).unwrap();
    assert_eq!(by_type, recorded);
    for t in
        ["msg.in", "tool.result", "session.start", "llm.output", "conversation.message.in", "conversation.tool_result", "lifecycle.start"]
    {
        assert!(by_type.get(t).copied().unwrap_or(0) > 0, "no {t} in {by_type:?}");
    }
    assert!(envelope > 0, "some events carry the v1 envelope");
    for signal in tracelake::detect::signals::signals().iter().map(|s| s.id.as_str()) {
        assert!(expected["findings"][signal].as_u64().unwrap_or(0) > 0, "{signal} not injected: {}", expected["findings"]);
    }
}

#[test]
fn every_generated_line_imports_as_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.jsonl");
    tracelake_ok(&["generate", "--events", "3000", "--seed", "5", "--output", path.to_str().unwrap()]);
    let lake = dir.path().join("lake");
    let out = tracelake_ok(&["import", "--lake", lake.to_str().unwrap(), path.to_str().unwrap()]);
    assert!(out.contains("3000 events, 0 quarantined"), "{out}");
}
