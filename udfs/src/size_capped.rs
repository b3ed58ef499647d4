//! DataFusion's functions whose result can be far larger than their arguments (`repeat`,
//! `lpad`, `rpad`, `array_repeat`), capped: their results are allocated outside the
//! memory pool, so `repeat('x', 2000000000)` would grow the process by gigabytes whatever
//! the pool's limit. A call whose result would take more than the cap fails at once,
//! naming the function and the size; what the cap allows runs unchanged.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
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

/// How the size of a function's result follows from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(text, n)`: the text's bytes, n times.
    Repeat,
    /// `lpad(text, n [, fill])`, `rpad`: n characters, of up to 4 bytes each.
    Pad,
    /// `array_repeat(element, n)`: n elements of at least 8 bytes each.
    ArrayRepeat,
}

impl Growth {
    fn of(name: &str) -> Option<Self> {
        match name {
            "repeat" => Some(Self::Repeat),
            "lpad" | "rpad" => Some(Self::Pad),
            "array_repeat" => Some(Self::ArrayRepeat),
            _ => None,
        }
    }

    /// At most how many bytes the result of `args` over `rows` rows takes, as far as the
    /// arguments tell (a count that is not an integer, or a text of another type, counts
    /// nothing: the function itself rejects them).
    fn bytes(self, args: &[ColumnarValue], rows: usize) -> Result<u128> {
        let Some(count) = args.get(1) else { return Ok(0) };
        let counts = count.to_array(rows)?;
        let Ok(counts) = datafusion::arrow::compute::cast(&counts, &DataType::Int64) else { return Ok(0) };
        let counts = counts.as_primitive::<Int64Type>();
        let per_unit = |row: usize| -> Result<u128> {
            Ok(match self {
                Self::Repeat => text_bytes(&args[0], row)?,
                Self::Pad => 4,
                Self::ArrayRepeat => 8,
            })
        };
        let mut total = 0u128;
        for row in 0..counts.len() {
            if counts.is_valid(row) && counts.value(row) > 0 {
                total += counts.value(row) as u128 * per_unit(row)?;
            }
        }
        Ok(total)
    }
}

/// The bytes of the text at `row` (of a scalar: the only one).
fn text_bytes(value: &ColumnarValue, row: usize) -> Result<u128> {
    Ok(match value {
        ColumnarValue::Scalar(ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s)) => {
            s.as_ref().map_or(0, |s| s.len() as u128)
        }
        ColumnarValue::Scalar(_) => 0,
        ColumnarValue::Array(array) => array_text_bytes(array, row),
    })
}

fn array_text_bytes(array: &ArrayRef, row: usize) -> u128 {
    if array.is_null(row) {
        return 0;
    }
    (match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(row).len(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).len(),
        DataType::Utf8View => array.as_string_view().value(row).len(),
        _ => 0,
    }) as u128
}

/// A function of [`Growth`], capped at `max_bytes` per call.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SizeCapped {
    inner: Arc<ScalarUDF>,
    growth: Growth,
    max_bytes: u64,
}

/// Replaces `repeat`, `lpad`, `rpad` and `array_repeat` in `ctx` with versions whose
/// results may take at most `max_bytes` per call.
pub fn register(ctx: &SessionContext, max_bytes: u64) {
    for name in ["repeat", "lpad", "rpad", "array_repeat"] {
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
    }
}
