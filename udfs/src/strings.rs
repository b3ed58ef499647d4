//! Reading string arguments of any string type (Utf8, LargeUtf8, Utf8View).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, LargeStringArray, ListBuilder, StringArray, StringBuilder, StringViewArray};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs};

/// Applies `f` to every value of a string array, producing a Utf8 array.
pub(crate) fn map_strings(array: &ArrayRef, mut f: impl FnMut(&str) -> String) -> Result<StringArray> {
    let texts = Texts::of(array)?;
    Ok((0..array.len()).map(|row| texts.get(row).map(&mut f)).collect())
}

/// Whether a UDF argument of type `t` is text (or a null literal).
pub(crate) fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null)
}

/// A string array of any string type, read row by row: its type is looked at once, not at
/// every row.
#[derive(Clone, Copy)]
pub(crate) enum Texts<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
    Null,
}

impl<'a> Texts<'a> {
    /// `array` as texts; an error for an array of another type.
    pub(crate) fn of(array: &'a ArrayRef) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Utf8 => Texts::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => Texts::Large(array.as_string::<i64>()),
            DataType::Utf8View => Texts::View(array.as_string_view()),
            DataType::Null => Texts::Null,
            other => return exec_err!("expected a string argument, got {other}"),
        })
    }

    /// The text at `row`, `None` when null.
    #[inline]
    pub(crate) fn get(&self, row: usize) -> Option<&'a str> {
        match self {
            Texts::Utf8(a) => a.is_valid(row).then(|| a.value(row)),
            Texts::Large(a) => a.is_valid(row).then(|| a.value(row)),
            Texts::View(a) => a.is_valid(row).then(|| a.value(row)),
            Texts::Null => None,
        }
    }
}

/// The arguments as arrays, and how many rows to compute: one when every argument is a
/// scalar (the result is then a scalar too, see [`columnar`]).
pub(crate) fn argument_arrays(args: &ScalarFunctionArgs) -> Result<(Vec<ArrayRef>, usize)> {
    let arrays = ColumnarValue::values_to_arrays(&args.args)?;
    let rows = if all_scalar(&args.args) { 1 } else { args.number_rows };
    Ok((arrays, rows))
}

/// Whether every argument is a scalar (then the result is one too).
pub(crate) fn all_scalar(args: &[ColumnarValue]) -> bool {
    args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)))
}

/// A UDF result: the first value as a scalar when every argument was one, else the array.
pub(crate) fn columnar(out: ArrayRef, scalar: bool) -> Result<ColumnarValue> {
    if scalar {
        return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
    }
    Ok(ColumnarValue::Array(out))
}

/// The type of a list of texts, as [`map_to_text_lists`] makes them.
pub(crate) fn text_list_type() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true)))
}

/// A UDF result of one list of texts per row: `f` of each text of the first argument, NULL
/// for NULL.
pub(crate) fn map_to_text_lists(args: &ScalarFunctionArgs, mut f: impl FnMut(&str) -> Vec<String>) -> Result<ColumnarValue> {
    let (arrays, rows) = argument_arrays(args)?;
    let texts = Texts::of(&arrays[0])?;
    let mut out = ListBuilder::new(StringBuilder::new());
    for row in 0..rows {
        match texts.get(row) {
            Some(text) => {
                for value in f(text) {
                    out.values().append_value(value);
                }
                out.append(true);
            }
            None => out.append(false),
        }
    }
    columnar(Arc::new(out.finish()), all_scalar(&args.args))
}
