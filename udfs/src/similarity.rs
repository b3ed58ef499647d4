//! Similarity of texts and of tool parameters (spec §7.3), and their UDFs
//! `levenshtein_ratio(a, b)` and `param_similarity(params_a, params_b)`.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::array::Float64Builder;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use serde_json::Value;

use crate::strings::{Texts, all_scalar, argument_arrays, columnar};

/// Compared prefix length, to keep the quadratic distance bounded.
const MAX_CHARS: usize = 500;

/// 1.0 for identical texts, 0.0 for completely different ones (first 500 characters).
pub fn levenshtein_ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().take(MAX_CHARS).collect();
    let b: Vec<char> = b.chars().take(MAX_CHARS).collect();
    let max_len = a.len().max(b.len());
    if max_len == 0 {
        return 1.0;
    }
    1.0 - levenshtein(&a, &b) as f64 / max_len as f64
}

fn levenshtein(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut curr = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        curr[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            curr[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(curr[j] + 1);
        }
        std::mem::swap(&mut prev, &mut curr);
    }
    prev[b.len()]
}

/// Similarity of two tool parameter objects (JSON text): Levenshtein on `command` when both
/// have one (exec), otherwise Jaccard on `key=value` pairs, ignoring `timeout`.
pub fn param_similarity(a: &str, b: &str) -> f64 {
    let a: Value = serde_json::from_str(a).unwrap_or(Value::Null);
    let b: Value = serde_json::from_str(b).unwrap_or(Value::Null);
    param_similarity_values(&a, &b)
}

/// The parsed parameters in row `row` of a text column (null when missing or not JSON).
pub(crate) fn params_at(params: Texts, row: usize) -> Value {
    params.get(row).and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null)
}

pub fn param_similarity_values(a: &Value, b: &Value) -> f64 {
    let command = |v: &Value| v.get("command").and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_owned);
    if let (Some(ca), Some(cb)) = (command(a), command(b)) {
        return levenshtein_ratio(&ca, &cb);
    }
    let pairs = |v: &Value| -> HashSet<String> {
        v.as_object()
            .map(|o| o.iter().filter(|(k, _)| k.as_str() != "timeout").map(|(k, v)| format!("{k}={v}")).collect())
            .unwrap_or_default()
    };
    let (pa, pb) = (pairs(a), pairs(b));
    let union = pa.union(&pb).count();
    if union == 0 { 0.0 } else { pa.intersection(&pb).count() as f64 / union as f64 }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Measure {
    Levenshtein,
    Params,
}

/// A two-text-argument UDF returning a similarity in 0..=1.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PairSimilarityUdf {
    measure: Measure,
    signature: Signature,
}

impl PairSimilarityUdf {
    pub fn levenshtein_ratio() -> Self {
        Self { measure: Measure::Levenshtein, signature: Signature::string(2, Volatility::Immutable) }
    }
    pub fn param_similarity() -> Self {
        Self { measure: Measure::Params, signature: Signature::string(2, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for PairSimilarityUdf {
    fn name(&self) -> &str {
        match self.measure {
            Measure::Levenshtein => "levenshtein_ratio",
            Measure::Params => "param_similarity",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn documentation(&self) -> Option<&Documentation> {
        static LEVENSHTEIN: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "1 minus the Levenshtein distance over the longer length: 1 for equal texts, 0 for nothing in common.",
                "levenshtein_ratio(a, b)",
                &[("a", "text"), ("b", "text")],
            )
        });
        static PARAMS: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "How alike two tool calls' parameters are, in 0..1: Levenshtein on exec commands, else Jaccard over the key/value pairs.",
                "param_similarity(params_a, params_b)",
                &[("params_a", "JSON text"), ("params_b", "JSON text")],
            )
        });
        Some(match self.measure {
            Measure::Levenshtein => &LEVENSHTEIN,
            Measure::Params => &PARAMS,
        })
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = all_scalar(&args.args);
        let (arrays, rows) = argument_arrays(&args)?;
        let (left, right) = (Texts::of(&arrays[0])?, Texts::of(&arrays[1])?);
        let mut out = Float64Builder::with_capacity(rows);
        for row in 0..rows {
            match (left.get(row), right.get(row)) {
                (Some(a), Some(b)) => out.append_value(match self.measure {
                    Measure::Levenshtein => levenshtein_ratio(a, b),
                    Measure::Params => param_similarity(a, b),
                }),
                _ => out.append_null(),
            }
        }
        columnar(Arc::new(out.finish()), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levenshtein_ratio_bounds() {
        assert_eq!(levenshtein_ratio("", ""), 1.0);
        assert_eq!(levenshtein_ratio("abc", "abc"), 1.0);
        assert_eq!(levenshtein_ratio("abc", "xyz"), 0.0);
        assert!((levenshtein_ratio("kitten", "sitting") - (1.0 - 3.0 / 7.0)).abs() < 1e-9);
    }

    #[test]
    fn params_compare_commands_or_pairs() {
        assert!(param_similarity(r#"{"command":"ls -la /tmp","timeout":5}"#, r#"{"command":"ls -la /tmp/","timeout":9}"#) > 0.9);
        assert_eq!(param_similarity(r#"{"path":"a","timeout":1}"#, r#"{"path":"a","timeout":2}"#), 1.0);
        assert_eq!(param_similarity(r#"{"path":"a","mode":"r"}"#, r#"{"path":"a","mode":"w"}"#), 1.0 / 3.0);
        assert_eq!(param_similarity("{}", "{}"), 0.0);
    }
}
