//! Redaction of whole events before anything reaches disk or an LLM (spec §11).
//!
//! Text is redacted with [`Redactor`]; JSON is redacted leaf by leaf, so that the result
//! stays valid JSON whatever a replacement does.

use serde_json::Value;

pub use tracelake_udfs::{Redactor, RedactorError};

/// Redacts every string in `value` in place, object keys included.
pub fn redact_json(redactor: &Redactor, value: &mut Value) {
    match value {
        Value::String(text) => {
            if let std::borrow::Cow::Owned(redacted) = redactor.redact(text) {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_json(redactor, v)),
        Value::Object(map) => {
            if map.keys().any(|k| matches!(redactor.redact(k), std::borrow::Cow::Owned(_))) {
                *map = std::mem::take(map).into_iter().map(|(k, v)| (redactor.redact(&k).into_owned(), v)).collect();
            }
            map.values_mut().for_each(|v| redact_json(redactor, v));
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
