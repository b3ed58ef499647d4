//! `clip(text, max) -> Utf8`: the text on one line, cut to at most `max` characters at a
//! word, with `…` where it was cut: the excerpts of finding summaries.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::docs::doc;
use crate::strings::{all_scalar, columnar, is_text, map_strings};

/// `text` on one line (runs of white space as one space), at most `max` characters: cut
/// at the last space before the limit (or at the limit, in a word longer than half of it)
/// and ended with `…`.
pub fn clip(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    let at_word = match cut.rfind(' ') {
        Some(space) if space > cut.len() / 2 => &cut[..space],
        _ => cut.as_str(),
    };
    format!("{}…", at_word.trim_end_matches([',', ';', ':', ' ']))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ClipUdf {
    signature: Signature,
}

impl ClipUdf {
    pub fn new() -> Self {
        Self { signature: Signature::any(2, Volatility::Immutable) }
    }
}

impl Default for ClipUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for ClipUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The text on one line, cut at a word to at most max characters, with … where it was cut.",
                "clip(text, max)",
                &[("text", "the text"), ("max", "the most characters kept, a number")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "clip"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !is_text(&arg_types[0]) || !arg_types[1].is_integer() {
            return plan_err!("clip(text, max) takes a text and a number, got {} and {}", arg_types[0], arg_types[1]);
        }
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let max = match &args.args[1] {
            ColumnarValue::Scalar(n) => match n.cast_to(&DataType::Int64)? {
                ScalarValue::Int64(Some(n)) if n >= 1 => n as usize,
                other => return exec_err!("clip(text, max): max must be a number of at least 1, got {other}"),
            },
            ColumnarValue::Array(_) => return exec_err!("clip(text, max): max must be a constant"),
        };
        let text = args.args[0].to_array(if all_scalar(&args.args) { 1 } else { args.number_rows })?;
        columnar(Arc::new(map_strings(&text, |t| clip(t, max))?), all_scalar(&args.args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clips_at_a_word_and_says_so() {
        assert_eq!(clip("short text", 20), "short text");
        assert_eq!(clip("the agent claimed success without a tool call", 20), "the agent claimed…");
        assert_eq!(clip("a\nmulti   line", 20), "a multi line");
        assert_eq!(clip("abcdefghijklmnopqrstuvwxyz", 10), "abcdefghi…", "a long word is cut where it must");
        assert_eq!(clip("Refund of $54.20, done", 19), "Refund of $54.20…");
        assert!(clip(&"ü".repeat(50), 10).chars().count() <= 10);
    }
}
