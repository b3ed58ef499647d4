//! `superseded(ts_ms, seq, window_ms, key, …) OVER (ORDER BY …, ts_ms, seq)`: true for an
//! event that has a copy with a higher sequence: an event with the same keys less than
//! `window_ms` away (spec §6.3: events published by both schemas). The window must be
//! ordered by time within each group of keys (e.g. `ORDER BY hash(agent, session), ts_ms,
//! seq` with agent and session among the keys); each event is compared with the events around
//! it up to `window_ms` away, so a pair straddling a second boundary is caught too.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::same_keys::SameKeys;
use crate::window_function::Kind::{Any, Integer};
use crate::window_function::{Param, Params, WindowFunction};

/// The `superseded` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "superseded",
        Params(&[Param("ts_ms", Integer), Param("seq", Integer), Param("window_ms", Integer)], Some(Param("key", Any))),
        DataType::Boolean,
        false,
        || Box::new(SupersededEvaluator),
        crate::docs::doc(
            "True for an event with a copy (same keys, under `window_ms` away) of higher sequence: deduplication. The order must be by time within each group of keys.",
            "superseded(ts_ms, seq, window_ms, key, ...) OVER (ORDER BY agent, session, ts_ms, seq)",
            &[],
        ),
    )
}

#[derive(Debug)]
struct SupersededEvaluator;

impl PartitionEvaluator for SupersededEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        if values.len() < 4 {
            return exec_err!("superseded(ts_ms, seq, window_ms, key, …) takes at least one key");
        }
        let int = |a: &ArrayRef| cast(a, &DataType::Int64);
        let (ts, seq, window) = (int(&values[0])?, int(&values[1])?, int(&values[2])?);
        let (ts, seq, window) = (ts.as_primitive::<Int64Type>(), seq.as_primitive::<Int64Type>(), window.as_primitive::<Int64Type>());
        let keys = SameKeys::new(&values[3..])?;
        // Whether event `other` is a copy of event `i` with a higher sequence.
        let copy = |i: usize, other: usize| seq.value(other) > seq.value(i) && keys.same(i, other);
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let (t, w) = (ts.value(i), window.value(i));
            let mut found = false;
            let mut j = i + 1;
            while !found && j < n && ts.value(j) >= t && ts.value(j) - t < w {
                found = copy(i, j);
                j += 1;
            }
            let mut j = i;
            while !found && j > 0 && ts.value(j - 1) <= t && t - ts.value(j - 1) < w {
                found = copy(i, j - 1);
                j -= 1;
            }
            out.push(found);
        }
        Ok(Arc::new(BooleanArray::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};

    #[test]
    fn the_copy_with_the_lower_sequence_is_superseded() {
        // (key, ts, seq), in window order: a pair 999 ms apart straddling a second
        // boundary with another event between them, a pair 1000 ms apart (not copies),
        // and a lone event of another key.
        let rows = [("a", 1_500, 7), ("x", 1_600, 8), ("a", 2_499, 3), ("b", 3_000, 1), ("b", 4_000, 2), ("c", 0, 9)];
        let n = rows.len();
        let values = [
            Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>()) as ArrayRef,
            Arc::new(rows.iter().map(|r| r.2).collect::<Int64Array>()) as ArrayRef,
            Arc::new(Int64Array::from(vec![1000; n])) as ArrayRef,
            Arc::new(StringArray::from(rows.iter().map(|r| r.0).collect::<Vec<_>>())) as ArrayRef,
        ];
        let out = SupersededEvaluator.evaluate_all(&values, n).unwrap();
        let out: Vec<bool> = out.as_boolean().iter().map(Option::unwrap).collect();
        assert_eq!(out, [false, false, true, false, false, false]);
    }
}
