//! Sequence logic over one chain's columns that SQL expresses badly, as window functions
//! evaluated over a whole sorted partition at once ("columnar chains"):
//!
//! - `doom_loop_id(tool_name, tool_params, failed) OVER (PARTITION BY chain ORDER BY idx)`
//!   over a chain's tool attempts: the position of the loop's first attempt for every
//!   attempt in a doom loop (3+ consecutive failures of the same tool with parameters
//!   more than 0.8 similar to the first), null elsewhere (spec §7.3).
//! - `unrecovered_failure(type, tool_name, tool_params, failed) OVER (…)` over a chain's
//!   events: true at a `tool.call` whose result failed, when the agent answered
//!   (`msg.out`) without a successful recovery attempt before it (spec §7.2).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{PartitionEvaluator, Signature, Volatility, WindowUDFImpl};
use serde_json::Value;

use crate::similarity::param_similarity_values;
use crate::strings::string_at;

/// Attempts at least this similar to a loop's first one continue the loop.
const LOOP_SIMILARITY: f64 = 0.8;
/// A retry less similar than this is a different approach (a recovery attempt).
const RECOVERY_DISSIMILARITY: f64 = 0.5;
const MIN_LOOP: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Scan {
    DoomLoop,
    UnrecoveredFailure,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ChainScanUdf {
    scan: Scan,
    signature: Signature,
}

impl ChainScanUdf {
    pub fn doom_loop_id() -> Self {
        Self { scan: Scan::DoomLoop, signature: Signature::any(3, Volatility::Immutable) }
    }
    pub fn unrecovered_failure() -> Self {
        Self { scan: Scan::UnrecoveredFailure, signature: Signature::any(4, Volatility::Immutable) }
    }
}

impl WindowUDFImpl for ChainScanUdf {
    fn name(&self) -> &str {
        match self.scan {
            Scan::DoomLoop => "doom_loop_id",
            Scan::UnrecoveredFailure => "unrecovered_failure",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn partition_evaluator(&self, _args: PartitionEvaluatorArgs) -> Result<Box<dyn PartitionEvaluator>> {
        Ok(Box::new(ChainScanEvaluator { scan: self.scan }))
    }
    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        let data_type = match self.scan {
            Scan::DoomLoop => DataType::Int64,
            Scan::UnrecoveredFailure => DataType::Boolean,
        };
        Ok(Arc::new(Field::new(field_args.name(), data_type, true)))
    }
}

#[derive(Debug)]
struct ChainScanEvaluator {
    scan: Scan,
}

impl PartitionEvaluator for ChainScanEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        match self.scan {
            Scan::DoomLoop => doom_loops(&values[0], &values[1], &values[2], num_rows),
            Scan::UnrecoveredFailure => unrecovered(&values[0], &values[1], &values[2], &values[3], num_rows),
        }
    }
}

fn flags(array: &ArrayRef) -> Result<&BooleanArray> {
    match array.data_type() {
        DataType::Boolean => Ok(array.as_boolean()),
        other => exec_err!("expected a boolean `failed` argument, got {other}"),
    }
}

fn params_at(array: &ArrayRef, row: usize) -> Result<Value> {
    Ok(string_at(array, row)?.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null))
}

fn doom_loops(tools: &ArrayRef, params: &ArrayRef, failed: &ArrayRef, n: usize) -> Result<ArrayRef> {
    let failed = flags(failed)?;
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

fn unrecovered(types: &ArrayRef, tools: &ArrayRef, params: &ArrayRef, failed: &ArrayRef, n: usize) -> Result<ArrayRef> {
    let failed = flags(failed)?;
    let is_failed = |i: usize| failed.is_valid(i) && failed.value(i);
    let kind = |i: usize| string_at(types, i);
    let mut out = vec![Some(false); n];
    for i in 0..n.saturating_sub(1) {
        if kind(i)? != Some("tool.call") || kind(i + 1)? != Some("tool.result") || !is_failed(i + 1) {
            continue;
        }
        let tool = string_at(tools, i)?;
        let call_params = params_at(params, i)?;
        let mut answered = false;
        let mut recovered = false;
        for j in i + 2..n {
            match kind(j)? {
                Some("msg.out") => {
                    answered = true;
                    break;
                }
                Some("tool.call") => {
                    let different = string_at(tools, j)? != tool
                        || param_similarity_values(&params_at(params, j)?, &call_params) < RECOVERY_DISSIMILARITY;
                    if different && j + 1 < n && kind(j + 1)? == Some("tool.result") && !is_failed(j + 1) {
                        recovered = true;
                        break;
                    }
                }
                _ => {}
            }
        }
        out[i] = Some(answered && !recovered);
    }
    Ok(Arc::new(BooleanArray::from(out)))
}
