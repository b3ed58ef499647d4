//! `privacy.pii`: personal data planted in every kind of input and field is not in any
//! Parquet file of the lake; pseudonyms are stable within a lake and differ between lakes.

use std::path::Path;

use serde_json::json;

use crate::common::{all_strings, tracelake_ok};

/// One value of each kind, as it is written and as it may be spelled elsewhere.
const PLANTED: [&str; 7] = [
    "jane.doe@example.com",
    "+49 30 1234567",
    "(555) 123-4567",
    "DE89 3704 0044 0532 0130 00",
    "4111 1111 1111 1111",
    "203.0.113.77",
    "2001:db8::8a2e:370:7334",
];

/// Every shape of input, with the planted values in every text field.
fn input() -> String {
    let all = PLANTED.join(" / ");
    let lines = [
        json!({"id": "e1", "ts": 1_767_225_600_000i64, "agent": "a", "session": "s1", "type": "msg.in",
               "payload": {"content": format!("reach me at {all}"), "from": PLANTED[0]}, "meta": {"note": all}}),
        json!({"id": "e2", "ts": 1_767_225_601_000i64, "agent": "a", "session": "s1", "type": "tool.call",
               "payload": {"toolName": "lookup", "params": {"email": PLANTED[0], "card": PLANTED[4]}}}),
        json!({"id": "e3", "ts": 1_767_225_602_000i64, "agent": "a", "session": "s1", "type": "tool.result",
               "payload": {"toolName": "lookup", "result": {"iban": PLANTED[3], "ip": PLANTED[5]}, "error": PLANTED[6]}}),
        json!({"session": "chat-1", "messages": [
            {"role": "user", "content": format!("I am {}", PLANTED[0])},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "call", "arguments": json!({"phone": PLANTED[1]}).to_string()}}]},
            {"role": "tool", "tool_call_id": "c1", "content": format!("Error: {} unreachable", PLANTED[2])}]}),
        json!({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
            "scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "execute_tool pay",
            "startTimeUnixNano": "1767225600000000000", "endTimeUnixNano": "1767225601000000000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                           {"key": "gen_ai.tool.name", "value": {"stringValue": "pay"}},
                           {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": json!({"iban": PLANTED[3], "card": PLANTED[4]}).to_string()}},
                           {"key": "gen_ai.tool.call.result", "value": {"stringValue": format!("paid from {}", PLANTED[5])}}]}]}]}]}),
    ];
    let mut text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    // A line that is not an event is quarantined, and kept without the data too.
    text.push_str(&format!("not json, mail {}\n", PLANTED[0]));
    text
}

fn config(dir: &Path, action: &str) -> String {
    let path = dir.join(format!("config-{action}.json"));
    std::fs::write(&path, json!({"traceAnalyzer": {"privacy": {"pii": {"enabled": true, "action": action}}}}).to_string()).unwrap();
    path.display().to_string()
}

fn pseudonyms(strings: &[String]) -> Vec<String> {
    let found = regex::Regex::new(r"\[(EMAIL|PHONE|IBAN|CARD|IP):[0-9a-f]{12}\]").unwrap();
    let mut all: Vec<String> = strings.iter().flat_map(|s| found.find_iter(s).map(|m| m.as_str().to_owned()).collect::<Vec<_>>()).collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn planted_personal_data_is_in_no_parquet_file_and_pseudonyms_are_stable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("input.jsonl");
    std::fs::write(&file, input()).unwrap();
    let config = config(dir.path(), "pseudonymize");
    let lake = dir.path().join("lake").display().to_string();
    let out = tracelake_ok(&["import", "--lake", &lake, "--config", &config, file.to_str().unwrap()]);
    assert!(out.contains("personal data replaced:") && out.contains("email") && out.contains("card"), "{out}");

    let strings = all_strings(&dir.path().join("lake"));
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
    for planted in PLANTED {
        let leaked: Vec<&String> =
            strings.iter().filter(|s| s.contains(planted) || (digits(planted).len() > 8 && digits(s).contains(&digits(planted)))).collect();
        assert!(leaked.is_empty(), "{planted} is in the lake: {leaked:?}");
    }
    let first = pseudonyms(&strings);
    for kind in ["EMAIL", "PHONE", "IBAN", "CARD", "IP"] {
        assert!(first.iter().any(|p| p.contains(kind)), "no {kind} pseudonym in {first:?}");
    }

    // The same input again into the same lake: the same pseudonyms.
    tracelake_ok(&["import", "--lake", &lake, "--config", &config, "--force", file.to_str().unwrap()]);
    assert_eq!(pseudonyms(&all_strings(&dir.path().join("lake"))), first);
    // Another lake has another key.
    let other = dir.path().join("other").display().to_string();
    tracelake_ok(&["import", "--lake", &other, "--config", &config, file.to_str().unwrap()]);
    let elsewhere = pseudonyms(&all_strings(&dir.path().join("other")));
    assert_eq!(elsewhere.len(), first.len());
    assert!(elsewhere.iter().all(|p| !first.contains(p)));
    let key = std::fs::metadata(dir.path().join("lake/_state/pii.key")).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&key.permissions()) & 0o777, 0o600);
}

#[test]
fn removal_leaves_only_the_kind() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("input.jsonl");
    std::fs::write(&file, input()).unwrap();
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, "--config", &config(dir.path(), "remove"), file.to_str().unwrap()]);
    let strings = all_strings(&dir.path().join("lake"));
    assert!(pseudonyms(&strings).is_empty());
    assert!(strings.iter().any(|s| s.contains("[EMAIL]")) && strings.iter().any(|s| s.contains("[IBAN]")));
    assert!(!dir.path().join("lake/_state/pii.key").exists(), "removal needs no key");
    assert!(PLANTED.iter().all(|p| strings.iter().all(|s| !s.contains(p))));
}
