//! Property tests of the decoder on hostile input: whatever the bytes, decoding returns an
//! event or a quarantined line, never a panic; secrets hidden anywhere in a valid event
//! never come out. Short in `cargo test`; longer on demand:
//! `PROPTEST_CASES=100000 cargo test --release --test integration fuzz`.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::common::decoder;

const SECRET: &str = "sk-proptestSECRETvalue0123456789";

/// JSON values with edge cases: huge and tiny numbers (as text), deep nesting, surrogates,
/// control characters, the secret as a key or a value.
fn edge_json() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("1e400".to_owned()),
        Just("-1e-400".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just(r#""\ud800""#.to_owned()),
        Just(r#""\u0000\u001f""#.to_owned()),
        Just(format!("{SECRET:?}")),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| f.to_string()),
        ".{0,20}".prop_map(|s| Value::String(s).to_string()),
        (1usize..3000).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d))),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((prop_oneof![Just(SECRET.to_owned()), "[a-z]{1,6}"], inner), 0..4).prop_map(|fields| {
                let members: Vec<String> = fields.iter().map(|(k, v)| format!("{}:{v}", Value::String(k.clone()))).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// An event of either schema with edge values in its fields.
fn event_line() -> impl Strategy<Value = String> {
    let kinds = prop_oneof![
        Just("msg.in"),
        Just("msg.out"),
        Just("tool.call"),
        Just("tool.result"),
        Just("conversation.tool_result"),
        Just("run.error"),
        Just("llm.output")
    ];
    (kinds, edge_json(), edge_json(), edge_json(), edge_json()).prop_map(|(kind, content, params, result, extra)| {
        format!(
            r#"{{"ts":1771504212206,"type":"{kind}","agent":{extra},"session":"s","payload":{{"content":{content},"toolName":{extra},"params":{params},"result":{result},"error":{content},"data":{{"name":{extra},"args":{params},"result":{result}}}}},"meta":{extra},"{SECRET}":{content}}}"#
        )
    })
}

proptest! {
    #[test]
    fn any_bytes_decode_or_are_quarantined(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = decoder().decode(&bytes, "fuzz", 1, None);
    }

    #[test]
    fn edge_values_never_crash_and_never_leak_a_secret(line in event_line()) {
        let text = match decoder().decode(line.as_bytes(), "fuzz", 1, Some(SECRET)) {
            Ok(event) => format!("{event:?}"),
            Err(quarantined) => format!("{quarantined:?}"),
        };
        prop_assert!(!text.contains("proptestSECRET"), "secret in {}", &text[..text.len().min(2000)]);
    }

    #[test]
    fn mutated_events_never_crash(line in event_line(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut bytes = line.into_bytes();
        for (at, bits) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= bits;
        }
        let _ = decoder().decode(&bytes, "fuzz", 1, None);
    }
}

#[test]
fn duplicate_keys_keep_the_last_value_everywhere() {
    let line = r#"{"ts":1771504212206,"type":"msg.in","type":"msg.out","payload":{"content":"a","content":"b"},"x":1,"x":2}"#;
    let event = decoder().decode(line.as_bytes(), "t", 1, None).expect("an event");
    assert_eq!((&*event.event_type, event.content.as_deref()), ("msg.out", Some("b")));
    let extra: Map<String, Value> = serde_json::from_str(event.extra.as_deref().unwrap()).unwrap();
    assert_eq!(Value::Object(extra), json!({"x": 2}));
}
