//! `tool_call_since_user(chain, type) OVER (ORDER BY chain, idx)` over chain events: whether
//! a tool was called between the user's last message before the event (or, with none, the
//! chain's start) and the event: what SIG-UNVERIFIED-CLAIM asks of each claim (spec §7.7).
//!
//! One pass over the sorted partition instead of joining each claim with the events before
//! it in its chain.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::Result;
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::strings::Texts;
use crate::window_function::Kind::{Integer, Text};
use crate::window_function::{Param, Params, WindowFunction};

/// The `tool_call_since_user` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "tool_call_since_user",
        Params(&[Param("chain_no", Integer), Param("type", Text)], None),
        DataType::Boolean,
        false,
        || Box::new(ToolCallSinceUserEvaluator),
        crate::docs::doc(
            "Over chain events: whether a tool was called between the user's last message before the event (or the chain's start) and the event.",
            "tool_call_since_user(chain_no, type) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct ToolCallSinceUserEvaluator;

impl PartitionEvaluator for ToolCallSinceUserEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [chains, types] = values else { unreachable!("the signature takes two arguments") };
        let chains = cast(chains, &DataType::Int64)?;
        let chains = chains.as_primitive::<Int64Type>();
        let types = Texts::of(types)?;
        let mut out = Vec::with_capacity(n);
        let mut called = false;
        for i in 0..n {
            if i == 0 || chains.is_null(i) || chains.is_null(i - 1) || chains.value(i) != chains.value(i - 1) {
                called = false;
            }
            out.push(called);
            match types.get(i) {
                Some("msg.in") => called = false,
                Some("tool.call") => called = true,
                _ => {}
            }
        }
        Ok(Arc::new(BooleanArray::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int64Array, StringArray};

    use super::*;

    fn evaluate(chains: &[i64], types: &[&str]) -> Vec<bool> {
        let values: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(chains.to_vec())), Arc::new(StringArray::from(types.to_vec()))];
        let out = ToolCallSinceUserEvaluator.evaluate_all(&values, chains.len()).unwrap();
        out.as_boolean().iter().map(|v| v.unwrap()).collect()
    }

    #[test]
    fn a_call_counts_until_the_user_speaks_again() {
        let types = ["msg.in", "tool.call", "tool.result", "msg.out", "msg.in", "msg.out"];
        assert_eq!(evaluate(&[1; 6], &types), [false, false, true, true, true, false]);
    }

    #[test]
    fn a_call_before_any_user_message_counts() {
        assert_eq!(evaluate(&[1; 3], &["tool.call", "tool.result", "msg.out"]), [false, true, true]);
    }

    #[test]
    fn each_chain_starts_without_a_call() {
        let types = ["tool.call", "msg.out", "msg.out"];
        assert_eq!(evaluate(&[1, 1, 2], &types), [false, true, false]);
    }
}
