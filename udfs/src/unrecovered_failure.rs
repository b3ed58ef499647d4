//! `unrecovered_failure(chain, type, tool_name, tool_params, next_type, next_failed)
//! OVER (ORDER BY chain, idx)` over chain events: true on the call of every failed tool
//! attempt that the agent answers without recovering first (spec §7.2), false elsewhere.
//!
//! An attempt is a `tool.call` followed by its `tool.result` (`next_type`); it failed if
//! `next_failed`. The answer is the chain's first `msg.out` after the result; an attempt
//! with none is not reported. A recovery is a successful attempt between the result and
//! the answer with another tool, or the same tool with parameters under 0.5 similar.
//!
//! The scan from each failure to its answer is sequence logic SQL expresses with two
//! joins over the whole chain; here it is one pass over the sorted partition.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};
use serde_json::Value;

use crate::similarity::{param_similarity_values, params_at};
use crate::strings::string_at;
use crate::window_function::WindowFunction;

/// A retry of the same tool recovers only with parameters less similar than this.
const RECOVERY_SIMILARITY: f64 = 0.5;

/// The `unrecovered_failure` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "unrecovered_failure",
        Some(6),
        DataType::Boolean,
        false,
        || Box::new(UnrecoveredFailureEvaluator),
        crate::docs::doc(
            "Over chain events: true on the call of each failed tool attempt the agent answers (its next `msg.out`) without a successful recovery first (another tool, or the same tool with params under 0.5 similar).",
            "unrecovered_failure(chain_no, type, tool, params, next_type, next_failed) OVER (ORDER BY chain_no, idx)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct UnrecoveredFailureEvaluator;

impl PartitionEvaluator for UnrecoveredFailureEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [chains, types, tools, params, next_types, next_failed] = values else { unreachable!("the signature takes six arguments") };
        let chains = cast(chains, &DataType::Int64)?;
        let chains = chains.as_primitive::<Int64Type>();
        let next_failed = match next_failed.data_type() {
            DataType::Boolean => next_failed.as_boolean(),
            other => {
                return exec_err!("unrecovered_failure: `next_failed` must be boolean, got {other}");
            }
        };
        let is_attempt = |i: usize| -> Result<bool> {
            Ok(string_at(types, i)? == Some("tool.call") && string_at(next_types, i)? == Some("tool.result"))
        };
        let failed = |i: usize| next_failed.is_valid(i) && next_failed.value(i);
        let same_chain = |i: usize, j: usize| chains.is_valid(j) && chains.value(j) == chains.value(i);

        let mut out = vec![false; n];
        for (i, unrecovered) in out.iter_mut().enumerate() {
            if !(is_attempt(i)? && failed(i)) {
                continue;
            }
            let tool = string_at(tools, i)?;
            let mut failed_params: Option<Value> = None;
            // From the event after the result to the answer.
            let mut j = i + 2;
            while j < n && same_chain(i, j) {
                if string_at(types, j)? == Some("msg.out") {
                    *unrecovered = true;
                    break;
                }
                if is_attempt(j)? && !failed(j) {
                    let recovers = string_at(tools, j)? != tool || {
                        let failed_params = match &failed_params {
                            Some(p) => p,
                            None => failed_params.insert(params_at(params, i)?),
                        };
                        param_similarity_values(&params_at(params, j)?, failed_params) < RECOVERY_SIMILARITY
                    };
                    if recovers {
                        break;
                    }
                }
                j += 1;
            }
        }
        Ok(Arc::new(BooleanArray::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};

    use super::*;

    /// One chain of `(type, tool, params, failed)` events; `failed` marks a result.
    fn evaluate(events: &[(&str, Option<&str>, Option<&str>, bool)]) -> Vec<bool> {
        let n = events.len();
        let next = |i: usize| events.get(i + 1);
        let values: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![7; n])),
            Arc::new(StringArray::from_iter_values(events.iter().map(|e| e.0))),
            Arc::new(StringArray::from(events.iter().map(|e| e.1).collect::<Vec<_>>())),
            Arc::new(StringArray::from(events.iter().map(|e| e.2).collect::<Vec<_>>())),
            Arc::new(StringArray::from((0..n).map(|i| next(i).map(|e| e.0)).collect::<Vec<_>>())),
            Arc::new(BooleanArray::from((0..n).map(|i| next(i).map(|e| e.3)).collect::<Vec<_>>())),
        ];
        let out = UnrecoveredFailureEvaluator.evaluate_all(&values, n).unwrap();
        out.as_boolean().iter().map(|v| v.unwrap()).collect()
    }

    const CALL: &str = "tool.call";
    const RESULT: &str = "tool.result";
    const EXEC: Option<&str> = Some("exec");

    #[test]
    fn a_failure_answered_without_a_retry_is_unrecovered() {
        let events = [(CALL, EXEC, Some(r#"{"command":"ls /a"}"#), false), (RESULT, EXEC, None, true), ("msg.out", None, None, false)];
        assert_eq!(evaluate(&events), [true, false, false]);
    }

    #[test]
    fn a_failure_never_answered_is_not_reported() {
        let events = [(CALL, EXEC, None, false), (RESULT, EXEC, None, true), ("msg.in", None, None, false)];
        assert_eq!(evaluate(&events), [false, false, false]);
    }

    #[test]
    fn another_tool_succeeding_before_the_answer_recovers() {
        let events = [
            (CALL, EXEC, None, false),
            (RESULT, EXEC, None, true),
            (CALL, Some("read"), None, false),
            (RESULT, Some("read"), None, false),
            ("msg.out", None, None, false),
        ];
        assert_eq!(evaluate(&events), [false; 5]);
    }

    #[test]
    fn only_a_clearly_different_retry_of_the_same_tool_recovers() {
        let retry = |params: &'static str| {
            [
                (CALL, EXEC, Some(r#"{"command":"systemctl restart nginx"}"#), false),
                (RESULT, EXEC, None, true),
                (CALL, EXEC, Some(params), false),
                (RESULT, EXEC, None, false),
                ("msg.out", None, None, false),
            ]
        };
        assert!(evaluate(&retry(r#"{"command":"systemctl restart nginx "}"#))[0]);
        assert!(!evaluate(&retry(r#"{"command":"df -h"}"#))[0]);
    }

    #[test]
    fn a_success_after_the_answer_does_not_recover() {
        let events = [
            (CALL, EXEC, None, false),
            (RESULT, EXEC, None, true),
            ("msg.out", None, None, false),
            (CALL, Some("read"), None, false),
            (RESULT, Some("read"), None, false),
        ];
        assert_eq!(evaluate(&events), [true, false, false, false, false]);
    }
}
