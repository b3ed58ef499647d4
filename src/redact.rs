//! Redaction of whole events before anything reaches disk or an LLM (spec §11).
//!
//! Text is redacted with [`Redactor`]; JSON is redacted string by string (object keys
//! included), everything between its strings copied as it is, so that the result stays
//! valid JSON whatever a replacement does, and numbers or nesting that a JSON tree could
//! not hold (`1e400`, ten thousand levels) pass through unharmed.

use std::borrow::Cow;

pub use tracelake_udfs::redact::unescape_json;
pub use tracelake_udfs::{Redactor, RedactorError};

/// The JSON text `json` with every string in it redacted; borrowed when nothing changed.
/// Text that is not valid JSON is redacted as far as its strings can be told apart.
pub fn redact_json_text<'a>(redactor: &Redactor, json: &'a str) -> Cow<'a, str> {
    map_json_strings(json, |s| redactor.redact(s))
}

/// The JSON text `json` with every string in it (object keys included) passed through
/// `map`; borrowed when nothing changed.
pub fn map_json_strings<'a>(json: &'a str, map: impl for<'s> Fn(&'s str) -> Cow<'s, str>) -> Cow<'a, str> {
    let bytes = json.as_bytes();
    let mut out = String::new();
    // Bytes of `json` before this are in `out` (once anything changed).
    let mut copied = 0;
    let mut at = 0;
    while let Some(start) = memchr::memchr(b'"', &bytes[at..]).map(|p| at + p) {
        let Some(end) = string_end(bytes, start) else { break };
        let token = &json[start..=end];
        let inner = &json[start + 1..end];
        let decoded: Cow<str> = if inner.contains('\\') {
            serde_json::from_str::<String>(token).map_or(Cow::Borrowed(inner), Cow::Owned)
        } else {
            Cow::Borrowed(inner)
        };
        if let Cow::Owned(redacted) = map(&decoded) {
            out.push_str(&json[copied..start]);
            out.push_str(&serde_json::to_string(&redacted).expect("a string always serializes"));
            copied = end + 1;
        }
        at = end + 1;
    }
    if copied == 0 {
        return Cow::Borrowed(json);
    }
    out.push_str(&json[copied..]);
    Cow::Owned(out)
}

/// The index of the quote that closes the string opened at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        let found = at + memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes[found] == b'"' {
            return Some(found);
        }
        at = found + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_keys_are_redacted_and_the_rest_is_kept_as_written() {
        let r = Redactor::builtin();
        let json = r#"{"PASSWORD=hunter2": [1e400, "x"], "k": "a \"q\" sk\u002dabcdefghijklmnopqrstuvwxyz", "n": 1.50}"#;
        let out = redact_json_text(&r, json);
        assert_eq!(out, r#"{"PASSWORD=[REDACTED]": [1e400, "x"], "k": "a \"q\" [REDACTED_API_KEY]", "n": 1.50}"#);
        assert!(matches!(redact_json_text(&r, r#"{"a": "plain"}"#), Cow::Borrowed(_)));
        assert_eq!(redact_json_text(&r, r#"{"a": "unterminated PASSWORD=x"#), r#"{"a": "unterminated PASSWORD=x"#);
    }
}
