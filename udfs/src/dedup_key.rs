//! `dedup_key(type, content, tool_name, tool_params) -> UInt64`: what the two copies of an
//! event published by both schemas have in common (spec §6.3), as a 64-bit hash: a
//! message's first 200 characters, a tool call's tool and params, a tool result's tool.
//! Other events have no key (0): their copies are recognized by the exact time alone.
//! A null text counts as the empty one (params: as `{}`).
//!
//! Hashed row by row from the columns as they are: a SQL `CASE` over the event types would
//! copy each branch's rows (messages included) before hashing them.

use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::array::UInt64Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::hash_utils::RandomState;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::strings::{Texts, all_scalar, argument_arrays, columnar, is_text};

/// Characters of a message compared (spec §6.3).
const MESSAGE_PREFIX_CHARS: usize = 200;

/// The key of one event; equal for its two copies, and for no other event of the same type
/// (up to the hash).
pub fn dedup_key(
    state: &RandomState,
    event_type: Option<&str>,
    content: Option<&str>,
    tool_name: Option<&str>,
    tool_params: Option<&str>,
) -> u64 {
    match event_type {
        Some("msg.in" | "msg.out") => state.hash_one(prefix_chars(content.unwrap_or(""), MESSAGE_PREFIX_CHARS)),
        Some("tool.call") => state.hash_one((tool_name.unwrap_or(""), tool_params.unwrap_or("{}"))),
        Some("tool.result") => state.hash_one(tool_name.unwrap_or("")),
        _ => 0,
    }
}

/// The first `chars` characters of `text`.
fn prefix_chars(text: &str, chars: usize) -> &str {
    text.char_indices().nth(chars).map_or(text, |(end, _)| &text[..end])
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DedupKeyUdf {
    signature: Signature,
}

impl DedupKeyUdf {
    pub fn new() -> Self {
        Self { signature: Signature::any(4, Volatility::Immutable) }
    }
}

impl Default for DedupKeyUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for DedupKeyUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "A 64-bit key two copies of an event share (spec §6.3): a message's first 200 characters, a call's tool and params, a result's tool; 0 for other events.",
                "dedup_key(type, content, tool_name, tool_params)",
                &[("type", "the event type"), ("content", "message text"), ("tool_name", "text"), ("tool_params", "JSON text")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "dedup_key"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        for t in arg_types {
            if !is_text(t) {
                return plan_err!("dedup_key(type, content, tool_name, tool_params) takes text arguments, got {t}");
            }
        }
        Ok(DataType::UInt64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, rows) = argument_arrays(&args)?;
        let state = RandomState::with_seed(0);
        let (kinds, contents) = (Texts::of(&arrays[0])?, Texts::of(&arrays[1])?);
        let (tools, params) = (Texts::of(&arrays[2])?, Texts::of(&arrays[3])?);
        let keys: UInt64Array =
            (0..rows).map(|row| Some(dedup_key(&state, kinds.get(row), contents.get(row), tools.get(row), params.get(row)))).collect();
        columnar(Arc::new(keys), all_scalar(&args.args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_share_a_key_and_other_events_do_not() {
        let state = RandomState::with_seed(0);
        let key = |t: &str, c: Option<&str>, n: Option<&str>, p: Option<&str>| dedup_key(&state, Some(t), c, n, p);
        let long = "ä".repeat(200);
        assert_eq!(key("msg.in", Some(&format!("{long}-one")), None, None), key("msg.in", Some(&format!("{long}-two")), Some("x"), None));
        assert_ne!(key("msg.in", Some(&"ä".repeat(199)), None, None), key("msg.in", Some(&format!("{}b", "ä".repeat(199))), None, None));
        assert_eq!(key("msg.out", None, None, None), key("msg.out", Some(""), None, None));
        assert_eq!(key("tool.call", Some("a"), Some("exec"), None), key("tool.call", Some("b"), Some("exec"), Some("{}")));
        assert_ne!(key("tool.call", None, Some("exec"), Some("{\"a\":1}")), key("tool.call", None, Some("exec"), Some("{\"a\":2}")));
        assert_ne!(key("tool.call", None, Some("ab"), Some("c")), key("tool.call", None, Some("a"), Some("bc")));
        assert_eq!(key("tool.result", Some("ok"), Some("exec"), Some("x")), key("tool.result", Some("failed"), Some("exec"), None));
        assert_ne!(key("tool.result", None, Some("exec"), None), key("tool.result", None, Some("read"), None));
        assert_eq!(key("run.start", Some("a"), Some("b"), None), dedup_key(&state, None, None, None, None));
    }
}
