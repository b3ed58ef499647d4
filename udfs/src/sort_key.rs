//! `sort_key(int, …) -> FixedSizeBinary(8·n)`: its integer (or timestamp) arguments packed
//! into one value whose byte order is their lexicographic order, so that rows sorted by it
//! are sorted by all of them, by one comparison of bytes instead of one per column. Nulls
//! sort first within a column.
//!
//! Each argument takes 8 bytes, big-endian; a signed one has its sign bit flipped so that
//! negative values come before positive ones. A null is written as the column's smallest
//! value, so it sorts with that value (a column with nulls should not also hold it).

use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::array::{Array, AsArray, FixedSizeBinaryArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::strings::{all_scalar, argument_arrays, columnar};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SortKeyUdf {
    signature: Signature,
}

impl SortKeyUdf {
    pub fn new() -> Self {
        Self { signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl Default for SortKeyUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for SortKeyUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The integers (or timestamps) packed into one binary value that sorts as they do, column by column.",
                "sort_key(int, ...)",
                &[("int", "integers or timestamps, one or more")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "sort_key"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        for t in arg_types {
            if !(t.is_integer() || matches!(t, DataType::Timestamp(..) | DataType::Null)) {
                return plan_err!("sort_key(int, …): every argument must be an integer or a timestamp, got {t}");
            }
        }
        Ok(DataType::FixedSizeBinary(8 * arg_types.len() as i32))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, rows) = argument_arrays(&args)?;
        let width = 8 * arrays.len();
        let mut bytes = vec![0u8; rows * width];
        for (column, array) in arrays.iter().enumerate() {
            let at = |row: usize| row * width + column * 8;
            if matches!(array.data_type(), DataType::UInt64) {
                let values = array.as_primitive::<UInt64Type>();
                for row in (0..rows).filter(|&row| values.is_valid(row)) {
                    bytes[at(row)..at(row) + 8].copy_from_slice(&values.value(row).to_be_bytes());
                }
            } else {
                let ints = cast(array, &DataType::Int64)?;
                let values = ints.as_primitive::<Int64Type>();
                for row in (0..rows).filter(|&row| values.is_valid(row)) {
                    let ordered = (values.value(row) as u64) ^ (1 << 63);
                    bytes[at(row)..at(row) + 8].copy_from_slice(&ordered.to_be_bytes());
                }
            }
        }
        let keys = FixedSizeBinaryArray::try_new(width as i32, bytes.into(), None)?;
        columnar(Arc::new(keys), all_scalar(&args.args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array, TimestampMillisecondArray, UInt64Array};
    use datafusion::arrow::datatypes::Field;
    use datafusion::config::ConfigOptions;

    fn keys(columns: Vec<ArrayRef>) -> Vec<Vec<u8>> {
        let rows = columns[0].len();
        let arg_fields = columns.iter().map(|c| Arc::new(Field::new("a", c.data_type().clone(), true))).collect();
        let args = ScalarFunctionArgs {
            args: columns.into_iter().map(ColumnarValue::Array).collect(),
            arg_fields,
            number_rows: rows,
            return_field: Arc::new(Field::new("k", DataType::FixedSizeBinary(16), false)),
            config_options: Arc::new(ConfigOptions::default()),
        };
        let ColumnarValue::Array(out) = SortKeyUdf::new().invoke_with_args(args).unwrap() else { panic!("an array") };
        out.as_fixed_size_binary().iter().map(|k| k.unwrap().to_vec()).collect()
    }

    #[test]
    fn keys_sort_as_their_columns_do() {
        let hashes = [u64::MAX, 3, 3, 0, 3, 3];
        let times = [5, i64::MIN, -1, 9, 0, 7];
        let rows =
            keys(vec![Arc::new(UInt64Array::from(hashes.to_vec())) as ArrayRef, Arc::new(Int64Array::from(times.to_vec())) as ArrayRef]);
        let mut by_key: Vec<usize> = (0..rows.len()).collect();
        by_key.sort_by(|a, b| rows[*a].cmp(&rows[*b]));
        let mut by_columns: Vec<usize> = (0..rows.len()).collect();
        by_columns.sort_by_key(|i| (hashes[*i], times[*i]));
        assert_eq!(by_key, by_columns);
        assert_eq!(by_key, [3, 1, 2, 4, 5, 0]);
        // A timestamp (time zone or not) is its count of units.
        let stamps = TimestampMillisecondArray::from(times.to_vec()).with_timezone("UTC");
        assert_eq!(keys(vec![Arc::new(stamps) as ArrayRef]), keys(vec![Arc::new(Int64Array::from(times.to_vec())) as ArrayRef]));
    }
}
