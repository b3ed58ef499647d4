//! Input that once crashed or stalled the decoder: numbers beyond f64, deep nesting, lines
//! with a great many keys, a byte-order mark. Each either becomes an event or is
//! quarantined with a reason; nothing panics.

use serde_json::json;
use tracelake::ingest::QuarantineReason;

use crate::common::decoder;

const TS: &str = "1771504212206";

fn decode_text(line: &str) -> Result<tracelake::model::Event<'_>, tracelake::ingest::QuarantinedLine> {
    decoder().decode(line.as_bytes(), "test", 1, None)
}

#[test]
fn numbers_beyond_f64_are_kept_as_written_in_every_field() {
    let call = format!(
        r#"{{"ts":{TS},"type":"tool.call","agent":1e400,"id":-1e400,"session":"s","payload":{{"toolName":"t","params":{{"n":1e400}}}}}}"#
    );
    let e = decode_text(&call).expect("a valid event");
    assert_eq!(e.agent, "1e400");
    assert_eq!(e.id, "-1e400");
    assert_eq!(e.tool_params.as_deref(), Some(r#"{"n":1e400}"#));

    let message = format!(r#"{{"ts":{TS},"type":"msg.in","session":"s","payload":{{"content":1e400}}}}"#);
    assert_eq!(decode_text(&message).expect("a valid event").content.as_deref(), Some("1e400"));

    let result = format!(r#"{{"ts":{TS},"type":"tool.result","session":"s","payload":{{"toolName":"t","result":[1e400],"error":1e400}}}}"#);
    let e = decode_text(&result).expect("a valid event");
    assert_eq!(e.tool_error.as_deref(), Some("1e400"));
    assert_eq!(e.tool_result.as_deref(), Some("[1e400]"));
}

#[test]
fn deep_nesting_is_kept_or_quarantined_never_a_crash() {
    let depth = 100_000;
    let nested = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    for field in ["params", "content", "result", "error"] {
        let line = format!(r#"{{"ts":{TS},"type":"tool.call","session":"s","payload":{{"toolName":"t","{field}":{nested}}}}}"#);
        match decode_text(&line) {
            Ok(e) => assert_eq!(e.session, "s"),
            Err(q) => assert_eq!(q.reason, QuarantineReason::InvalidJson, "{field}: {}", q.detail),
        }
    }
    let top = format!(r#"{{"ts":{TS},"type":"msg.in","x":{nested}}}"#);
    let e = decode_text(&top).expect("an unmapped deep field is kept as text");
    assert!(e.extra.as_deref().is_some_and(|x| x.len() > 2 * depth), "the field is kept whole");
}

#[test]
fn a_line_with_many_keys_keeps_the_last_of_each() {
    let mut line = format!(r#"{{"ts":{TS},"type":"msg.in""#);
    for i in 0..100_000 {
        line.push_str(&format!(r#","k{}":{i}"#, i % 50_000));
    }
    line.push('}');
    let e = decode_text(&line).expect("a valid event");
    let extra: serde_json::Value = serde_json::from_str(e.extra.as_deref().unwrap()).unwrap();
    let extra = extra.as_object().unwrap();
    assert_eq!(extra.len(), 50_000, "each key once");
    assert_eq!(extra["k0"], json!(50_000), "the last value of a repeated key wins");
}

#[test]
fn a_byte_order_mark_before_the_first_line_is_ignored() {
    let line = format!("\u{feff}{{\"ts\":{TS},\"type\":\"msg.in\",\"session\":\"s\",\"payload\":{{\"content\":\"hi\"}}}}");
    let e = decode_text(&line).expect("a BOM is no reason to quarantine");
    assert_eq!(e.content.as_deref(), Some("hi"));
}
