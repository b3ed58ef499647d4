//! `first_in_window(ts_ms, window_ms) OVER (PARTITION BY key ORDER BY ts_ms)`: whether a row
//! is kept when rows of the same key within `window_ms` after a kept one are dropped (the
//! cortex keeps the same decision once within 24 h). Unlike a comparison with the row
//! before, a row dropped does not start a window of its own.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::window_function::Kind::Integer;
use crate::window_function::{Param, Params, WindowFunction};

pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "first_in_window",
        Params(&[Param("ts_ms", Integer), Param("window_ms", Integer)], None),
        DataType::Boolean,
        false,
        || Box::new(FirstInWindowEvaluator),
        crate::docs::doc(
            "Whether the row is kept when rows within window_ms after a kept row of the same partition are dropped.",
            "first_in_window(ts_ms, window_ms) OVER (PARTITION BY key ORDER BY ts_ms)",
            &[("ts_ms", "the row's time in milliseconds"), ("window_ms", "the window in milliseconds")],
        ),
    )
}

#[derive(Debug)]
struct FirstInWindowEvaluator;

impl PartitionEvaluator for FirstInWindowEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [ts, window] = values else {
            return exec_err!("first_in_window(ts_ms, window_ms) takes two arguments");
        };
        let (ts, window) = (cast(ts, &DataType::Int64)?, cast(window, &DataType::Int64)?);
        let (ts, window) = (ts.as_primitive::<Int64Type>(), window.as_primitive::<Int64Type>());
        let mut kept_at: Option<i64> = None;
        let kept: BooleanArray = (0..n)
            .map(|i| {
                let keep = kept_at.is_none_or(|at| ts.value(i) - at >= window.value(i));
                if keep {
                    kept_at = Some(ts.value(i));
                }
                Some(keep)
            })
            .collect();
        Ok(Arc::new(kept))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;

    #[test]
    fn a_dropped_row_starts_no_window() {
        let hour = 3_600_000;
        let ts: ArrayRef = Arc::new(Int64Array::from(vec![0, 20 * hour, 30 * hour, 40 * hour]));
        let window: ArrayRef = Arc::new(Int64Array::from(vec![24 * hour; 4]));
        let out = FirstInWindowEvaluator.evaluate_all(&[ts, window], 4).unwrap();
        assert_eq!(out.as_boolean().iter().collect::<Vec<_>>(), [Some(true), Some(false), Some(true), Some(false)]);
    }
}
