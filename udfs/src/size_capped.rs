//! DataFusion's functions whose result can be far larger than their arguments (`repeat`,
//! `lpad`, `rpad`, `array_repeat`, `replace`, `range`, `generate_series`), capped: their
//! results are allocated outside the memory pool, so `repeat('x', 2000000000)` would
//! grow the process by gigabytes whatever the pool's limit. A call whose result would take more than the cap fails at once,
//! naming the function and the size; what the cap allows runs unchanged.

use std::sync::Arc;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::{ExprSchema, Result, ScalarValue, exec_err};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::interval_arithmetic::Interval;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

use crate::strings::Texts;

/// How the size of a function's result follows from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(text, n)`: the text's bytes, n times.
    Repeat,
    /// `lpad(text, n [, fill])`, `rpad`: n characters, of up to 4 bytes each.
    Pad,
    /// `array_repeat(element, n)`: n elements of at least 8 bytes each.
    ArrayRepeat,
    /// `replace(text, from, to)`: `to` at most once per `from` in the text (between every
    /// two characters when `from` is empty).
    Replace,
    /// `range([start,] stop [, step])`, `generate_series`: a list of 8-byte integers.
    Range,
}

/// The names of the functions capped.
const CAPPED: [&str; 7] = ["repeat", "lpad", "rpad", "array_repeat", "replace", "range", "generate_series"];

impl Growth {
    fn of(name: &str) -> Option<Self> {
        match name {
            "repeat" => Some(Self::Repeat),
            "lpad" | "rpad" => Some(Self::Pad),
            "array_repeat" => Some(Self::ArrayRepeat),
            "replace" => Some(Self::Replace),
            "range" | "generate_series" => Some(Self::Range),
            _ => None,
        }
    }

    /// At most how many bytes the result of `args` over `rows` rows takes, as far as the
    /// arguments tell (a count that is not an integer, or a text of another type, counts
    /// nothing: the function itself rejects them; so do ranges of dates and times).
    fn bytes(self, args: &[ColumnarValue], rows: usize) -> Result<u128> {
        let ints = args.iter().map(|a| integers(a, rows)).collect::<Result<Vec<_>>>()?;
        let int = |i: usize, row: usize| ints.get(i).and_then(|values| values.as_ref()?.get(row).copied().flatten());
        let texts: Vec<Option<Texts>> = args
            .iter()
            .map(|a| match a {
                ColumnarValue::Array(array) => Texts::of(array).ok(),
                ColumnarValue::Scalar(_) => None,
            })
            .collect();
        let text = |i: usize, row: usize| args.get(i).map_or(0, |a| text_bytes(a, texts[i], row));
        let mut total = 0u128;
        for row in 0..rows {
            let count = |i: usize| int(i, row).filter(|n| *n > 0).map_or(0, |n| n as u128);
            total += match self {
                Self::Repeat => count(1) * text(0, row),
                Self::Pad => count(1) * 4,
                Self::ArrayRepeat => count(1) * 8,
                Self::Replace => {
                    let (text, from, to) = (text(0, row), text(1, row), text(2, row));
                    text + (text / from.max(1) + 1) * to
                }
                Self::Range => {
                    let (start, stop, step) = match args.len() {
                        1 => (Some(0), int(0, row), Some(1)),
                        2 => (int(0, row), int(1, row), Some(1)),
                        _ => (int(0, row), int(1, row), int(2, row)),
                    };
                    match (start, stop, step) {
                        (Some(start), Some(stop), Some(step)) if step != 0 => {
                            (i128::from(stop) - i128::from(start)).unsigned_abs() / u128::from(step.unsigned_abs()) * 8
                        }
                        _ => 0,
                    }
                }
            };
        }
        Ok(total)
    }
}

/// The values of an argument as integers, row by row (a scalar's in every row); `None`
/// when it is not an integer.
fn integers(value: &ColumnarValue, rows: usize) -> Result<Option<Vec<Option<i64>>>> {
    if !value.data_type().is_integer() {
        return Ok(None);
    }
    let array = match value {
        ColumnarValue::Scalar(scalar) => scalar.to_array_of_size(1)?,
        ColumnarValue::Array(array) => Arc::clone(array),
    };
    let values = datafusion::arrow::compute::cast(&array, &DataType::Int64)?;
    let values: Vec<Option<i64>> = values.as_primitive::<Int64Type>().iter().collect();
    Ok(Some(if values.len() == 1 { vec![values[0]; rows] } else { values }))
}

/// The bytes of the text at `row` (of a scalar: the only one); `texts` is an array's, typed
/// once for all rows.
fn text_bytes(value: &ColumnarValue, texts: Option<Texts>, row: usize) -> u128 {
    match value {
        ColumnarValue::Scalar(ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s)) => {
            s.as_ref().map_or(0, |s| s.len() as u128)
        }
        ColumnarValue::Scalar(_) => 0,
        ColumnarValue::Array(_) => texts.and_then(|t| t.get(row)).map_or(0, |s| s.len() as u128),
    }
}

/// A function of [`Growth`], capped at `max_bytes` per call.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SizeCapped {
    inner: Arc<ScalarUDF>,
    growth: Growth,
    max_bytes: u64,
}

/// Replaces the functions of [`CAPPED`] in `ctx` with versions whose results may take at
/// most `max_bytes` per call.
pub fn register(ctx: &SessionContext, max_bytes: u64) {
    for name in CAPPED {
        let (Ok(inner), Some(growth)) = (ctx.udf(name), Growth::of(name)) else { continue };
        ctx.register_udf(ScalarUDF::new_from_impl(SizeCapped { inner, growth, max_bytes }));
    }
}

// Delegates every method, as DataFusion's own wrappers do; only `invoke_with_args` checks.
impl ScalarUDFImpl for SizeCapped {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.inner().schema_name(args)
    }
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }
    #[allow(deprecated)]
    fn is_nullable(&self, args: &[Expr], schema: &dyn ExprSchema) -> bool {
        self.inner.inner().is_nullable(args, schema)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let bytes = self.growth.bytes(&args.args, args.number_rows)?;
        if bytes > u128::from(self.max_bytes) {
            return exec_err!(
                "{}() would make {} MiB of results, over the {} MiB one call may take (the size of the memory pool)",
                self.name(),
                bytes >> 20,
                self.max_bytes >> 20
            );
        }
        self.inner.invoke_with_args(args)
    }
    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }
    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }
    fn evaluate_bounds(&self, input: &[&Interval]) -> Result<Interval> {
        self.inner.evaluate_bounds(input)
    }
    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(inputs)
    }
    fn preserves_lex_ordering(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::ArrayRef;

    use super::*;

    #[test]
    fn the_size_of_a_result_follows_from_the_counts_and_texts_of_every_row() {
        let texts: ArrayRef = Arc::new(datafusion::arrow::array::StringArray::from(vec![Some("abc"), None, Some("é")]));
        let counts: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(vec![Some(10), Some(5), Some(-1)]));
        let rows = [ColumnarValue::Array(texts), ColumnarValue::Array(counts)];
        assert_eq!(Growth::Repeat.bytes(&rows, 3).unwrap(), 30, "null texts and negative counts make nothing");
        let scalar = [ColumnarValue::Scalar(ScalarValue::Utf8(Some("xy".into()))), ColumnarValue::Scalar(ScalarValue::Int64(Some(7)))];
        assert_eq!(Growth::Repeat.bytes(&scalar, 1).unwrap(), 14);
        assert_eq!(Growth::Pad.bytes(&scalar, 1).unwrap(), 28);
        assert_eq!(Growth::ArrayRepeat.bytes(&scalar, 1).unwrap(), 56);
        let text = |s: &str| ColumnarValue::Scalar(ScalarValue::Utf8(Some(s.into())));
        let int = |n: i64| ColumnarValue::Scalar(ScalarValue::Int64(Some(n)));
        assert_eq!(Growth::Replace.bytes(&[text("abcd"), text("b"), text("xyz")], 1).unwrap(), 4 + 5 * 3);
        assert_eq!(Growth::Replace.bytes(&[text("abcd"), text(""), text("-")], 1).unwrap(), 4 + 5, "between every two characters");
        assert_eq!(Growth::Range.bytes(&[int(1000)], 1).unwrap(), 8000);
        assert_eq!(Growth::Range.bytes(&[int(10), int(1010), int(-10)], 1).unwrap(), 800, "a step away from stop gives at most this");
        assert_eq!(Growth::Range.bytes(&[int(0), int(10), int(0)], 1).unwrap(), 0, "a zero step is the function's error");
    }
}
