//! `json_object(key1, value1, key2, value2, …)`: a JSON object as text, for the `evidence`
//! column of findings. Values keep their type (text, numbers, booleans, null).

use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use serde_json::{Map, Value};

use crate::strings::{Texts, all_scalar, argument_arrays, columnar};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct JsonObjectUdf {
    signature: Signature,
}

impl JsonObjectUdf {
    pub fn new() -> Self {
        Self { signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl Default for JsonObjectUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for JsonObjectUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "A JSON object as text, from key, value pairs.",
                "json_object(key1, value1, ...)",
                &[("key", "text"), ("value", "any value")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "json_object"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !arg_types.len().is_multiple_of(2) {
            return plan_err!("json_object takes key, value pairs");
        }
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = all_scalar(&args.args);
        let (arrays, rows) = argument_arrays(&args)?;
        let values: Vec<ArrayRef> = arrays
            .iter()
            .map(|a| match a.data_type() {
                DataType::Int8 | DataType::Int16 | DataType::Int32 => cast(a, &DataType::Int64),
                DataType::UInt8 | DataType::UInt16 | DataType::UInt32 => cast(a, &DataType::UInt64),
                DataType::Float32 => cast(a, &DataType::Float64),
                DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 => cast(a, &DataType::Utf8),
                _ => Ok(Arc::clone(a)),
            })
            .collect::<std::result::Result<_, _>>()?;
        let mut out = StringBuilder::with_capacity(rows, rows * 64);
        for row in 0..rows {
            let mut object = Map::new();
            for pair in values.chunks(2) {
                let Some(key) = Texts::of(&pair[0])?.get(row) else {
                    continue;
                };
                object.insert(key.to_owned(), json_value(&pair[1], row)?);
            }
            out.append_value(Value::Object(object).to_string());
        }
        columnar(Arc::new(out.finish()), scalar)
    }
}

fn json_value(array: &ArrayRef, row: usize) -> Result<Value> {
    if array.is_null(row) {
        return Ok(Value::Null);
    }
    Ok(match array.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Value::from(Texts::of(array)?.get(row).unwrap_or("")),
        DataType::Boolean => Value::from(array.as_boolean().value(row)),
        DataType::Int64 => Value::from(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt64 => Value::from(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Float64 => Value::from(array.as_primitive::<Float64Type>().value(row)),
        DataType::List(_) | DataType::LargeList(_) => {
            let list = cast(&array.slice(row, 1), &DataType::new_list(DataType::Utf8, true))?;
            let items = list.as_list::<i32>().value(0);
            Value::Array((0..items.len()).map(|i| json_value(&items, i)).collect::<Result<_>>()?)
        }
        other => return exec_err!("json_object cannot encode {other}"),
    })
}
