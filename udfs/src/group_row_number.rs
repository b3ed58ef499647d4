//! `group_row_number(key, …) OVER ([PARTITION BY shard] ORDER BY key, …, <order>)`: the
//! row's number (from 1) among the consecutive rows with the same keys — `row_number()
//! OVER (PARTITION BY key, … ORDER BY <order>)` when the window is ordered by the keys first.
//!
//! With one window partition per key, DataFusion's window operator pays a fixed cost per
//! partition, which dominates when most keys have a row or two (failures per session, or
//! per fingerprint); here a coarse partition (e.g. a hash of the keys modulo a small number)
//! keeps the parallelism and each row costs a comparison with its neighbour.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::same_keys::SameKeys;
use crate::window_function::Kind::Any;
use crate::window_function::{Param, Params, WindowFunction};

/// The `group_row_number` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "group_row_number",
        Params(&[], Some(Param("key", Any))),
        DataType::UInt64,
        false,
        || Box::new(GroupRowNumberEvaluator),
        crate::docs::doc(
            "The row's number among the consecutive rows with the same keys: `row_number()` per key without a window partition per key.",
            "group_row_number(key, ...) OVER ([PARTITION BY shard] ORDER BY key, ..., <order>)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct GroupRowNumberEvaluator;

impl PartitionEvaluator for GroupRowNumberEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        if values.is_empty() {
            return exec_err!("group_row_number(key, …) takes at least one key");
        }
        let keys = SameKeys::new(values)?;
        let mut numbers = Vec::with_capacity(n);
        for i in 0..n {
            let same_group = i > 0 && keys.same(i - 1, i);
            numbers.push(if same_group { numbers[i - 1] + 1 } else { 1 });
        }
        Ok(Arc::new(UInt64Array::from(numbers)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{AsArray, Int64Array, StringArray};
    use datafusion::arrow::datatypes::UInt64Type;

    #[test]
    fn rows_are_numbered_within_each_run_of_equal_keys() {
        let values: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![Some("a"), Some("a"), Some("a"), Some("b"), None, None])),
            Arc::new(Int64Array::from(vec![1, 1, 2, 2, 2, 2])),
        ];
        let out = GroupRowNumberEvaluator.evaluate_all(&values, 6).unwrap();
        assert_eq!(out.as_primitive::<UInt64Type>().values().to_vec(), [1, 2, 1, 1, 1, 2], "null keys group together");
    }
}
