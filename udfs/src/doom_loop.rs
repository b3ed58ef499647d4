//! `doom_loop_id(chain, tool_name, tool_params, failed) OVER (ORDER BY chain, idx)` over tool
//! attempts: for every attempt in a doom loop (3+ consecutive failures of the same tool in
//! one chain, with parameters more than 0.8 similar to the first; spec §7.3) the row number
//! of the loop's first attempt, null elsewhere.
//!
//! Sequence logic SQL expresses badly, as a window function over a whole sorted partition
//! at once ("columnar chains"). Rows of one chain must be together, in chain order, so one
//! window over every chain serves, with no partition per chain.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::similarity::{param_similarity_values, params_at};
use crate::strings::string_at;
use crate::window_function::WindowFunction;

/// Attempts at least this similar to a loop's first one continue the loop.
const LOOP_SIMILARITY: f64 = 0.8;
const MIN_LOOP: usize = 3;

/// The `doom_loop_id` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "doom_loop_id",
        Some(4),
        DataType::Int64,
        true,
        || Box::new(DoomLoopEvaluator),
        crate::docs::doc(
            "Over tool attempts, rows of a chain together and in order: the doom loop each attempt belongs to (3+ consecutive failing calls of one tool with params over 0.8 similar).",
            "doom_loop_id(chain_no, tool, params, failed) OVER (ORDER BY chain_no, call_idx)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct DoomLoopEvaluator;

impl PartitionEvaluator for DoomLoopEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [chains, tools, params, failed] = values else { unreachable!("the signature takes four arguments") };
        let chains = cast(chains, &DataType::Int64)?;
        let chains = chains.as_primitive::<Int64Type>();
        let failed = match failed.data_type() {
            DataType::Boolean => failed.as_boolean(),
            other => return exec_err!("doom_loop_id: `failed` must be boolean, got {other}"),
        };
        let is_failed = |i: usize| failed.is_valid(i) && failed.value(i);
        let mut out: Vec<Option<i64>> = vec![None; n];
        let mut i = 0;
        while i < n {
            if !is_failed(i) {
                i += 1;
                continue;
            }
            let tool = string_at(tools, i)?;
            let anchor_params = params_at(params, i)?;
            let mut j = i + 1;
            while j < n
                && chains.value(j) == chains.value(i)
                && is_failed(j)
                && string_at(tools, j)? == tool
                && param_similarity_values(&anchor_params, &params_at(params, j)?) > LOOP_SIMILARITY
            {
                j += 1;
            }
            if j - i >= MIN_LOOP {
                out[i..j].fill(Some(i as i64));
                i = j;
            } else {
                i += 1;
            }
        }
        Ok(Arc::new(Int64Array::from(out)))
    }
}
