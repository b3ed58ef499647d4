//! Reading string arguments of any string type (Utf8, LargeUtf8, Utf8View).

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};

/// Applies `f` to every value of a string array, producing a Utf8 array.
pub(crate) fn map_strings(
    array: &ArrayRef,
    mut f: impl FnMut(&str) -> String,
) -> Result<StringArray> {
    Ok(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().iter().map(|v| v.map(&mut f)).collect(),
        DataType::LargeUtf8 => array.as_string::<i64>().iter().map(|v| v.map(&mut f)).collect(),
        DataType::Utf8View => array.as_string_view().iter().map(|v| v.map(&mut f)).collect(),
        DataType::Null => StringArray::new_null(array.len()),
        other => return exec_err!("expected a string argument, got {other}"),
    })
}

/// The string at `row` of a string array of any string type, `None` when null.
pub(crate) fn string_at(array: &ArrayRef, row: usize) -> Result<Option<&str>> {
    if array.is_null(row) {
        return Ok(None);
    }
    Ok(Some(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(row),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row),
        DataType::Utf8View => array.as_string_view().value(row),
        other => return exec_err!("expected a string argument, got {other}"),
    }))
}
