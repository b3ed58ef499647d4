//! `doom_loop_id(chain, tool_name, tool_params, failed, min_loop, min_similarity) OVER
//! (ORDER BY chain, idx)` over tool attempts: for every attempt in a doom loop (`min_loop`
//! or more consecutive failures of the same tool in one chain, with parameters more than
//! `min_similarity` similar to the first; spec §7.3: 3 and 0.8) the row number of the
//! loop's first attempt, null elsewhere. The thresholds are arguments so that the
//! detector's SQL holds all of them.
//!
//! Sequence logic SQL expresses badly, as a window function over a whole sorted partition
//! at once ("columnar chains"). Rows of one chain must be together, in chain order, so one
//! window over every chain serves, with no partition per chain.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::similarity::{param_similarity_values, params_at};
use crate::strings::Texts;
use crate::window_function::Kind::{Boolean, Integer, Number, Text};
use crate::window_function::{Param, Params, WindowFunction};

/// The `doom_loop_id` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "doom_loop_id",
        Params(
            &[
                Param("chain_no", Integer),
                Param("tool", Text),
                Param("params", Text),
                Param("failed", Boolean),
                Param("min_loop", Integer),
                Param("min_similarity", Number),
            ],
            None,
        ),
        DataType::Int64,
        true,
        || Box::new(DoomLoopEvaluator),
        crate::docs::doc(
            "Over tool attempts, rows of a chain together and in order: the doom loop each attempt belongs to (`min_loop` or more consecutive failing calls of one tool with params more than `min_similarity` similar to the first).",
            "doom_loop_id(chain_no, tool, params, failed, min_loop, min_similarity) OVER (PARTITION BY chain_shard ORDER BY chain_no, call_idx)",
            &[
                ("min_loop", "the fewest failures that make a loop (a constant)"),
                ("min_similarity", "0 to 1: how similar to the first call's params a failure must be to continue the loop (a constant)"),
            ],
        ),
    )
}

#[derive(Debug)]
struct DoomLoopEvaluator;

impl PartitionEvaluator for DoomLoopEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [chains, tools, params, failed, min_loop, min_similarity] = values else { unreachable!("the signature takes six arguments") };
        if n == 0 {
            return Ok(Arc::new(Int64Array::from(Vec::<i64>::new())));
        }
        let min_loop = match cast(min_loop, &DataType::Int64)?.as_primitive::<Int64Type>() {
            v if v.is_valid(0) && v.value(0) >= 2 => v.value(0) as usize,
            _ => return exec_err!("doom_loop_id: `min_loop` must be a number of 2 or more"),
        };
        let min_similarity = match cast(min_similarity, &DataType::Float64)?.as_primitive::<Float64Type>() {
            v if v.is_valid(0) && (0.0..=1.0).contains(&v.value(0)) => v.value(0),
            _ => return exec_err!("doom_loop_id: `min_similarity` must be a number from 0 to 1"),
        };
        let chains = cast(chains, &DataType::Int64)?;
        let chains = chains.as_primitive::<Int64Type>();
        let failed = match failed.data_type() {
            DataType::Boolean => failed.as_boolean(),
            other => return exec_err!("doom_loop_id: `failed` must be boolean, got {other}"),
        };
        let is_failed = |i: usize| failed.is_valid(i) && failed.value(i);
        let (tools, params) = (Texts::of(tools)?, Texts::of(params)?);
        let mut out: Vec<Option<i64>> = vec![None; n];
        let mut i = 0;
        while i < n {
            if !is_failed(i) {
                i += 1;
                continue;
            }
            let tool = tools.get(i);
            let anchor_params = params_at(params, i);
            let mut j = i + 1;
            while j < n
                && chains.value(j) == chains.value(i)
                && is_failed(j)
                && tools.get(j) == tool
                && param_similarity_values(&anchor_params, &params_at(params, j)) > min_similarity
            {
                j += 1;
            }
            if j - i >= min_loop {
                out[i..j].fill(Some(i as i64));
                i = j;
            } else {
                i += 1;
            }
        }
        Ok(Arc::new(Int64Array::from(out)))
    }
}
