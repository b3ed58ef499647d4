//! `key_hash(text, …) -> UInt64`: a 64-bit hash of its arguments' text, so that rows can be
//! compared by a long key (a message, a tool call's params) without carrying the key.
//! A null argument hashes differently from every text, the empty one included.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::UInt64Array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::strings::{all_scalar, argument_arrays, columnar, string_at};

/// The hash of `parts` in order (`None`: null).
pub fn key_hash<'a>(parts: impl IntoIterator<Item = Option<&'a str>>) -> u64 {
    // DefaultHasher::new() has fixed keys: the same text hashes the same in every run.
    let mut hasher = DefaultHasher::new();
    for part in parts {
        part.hash(&mut hasher);
    }
    hasher.finish()
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct KeyHashUdf {
    signature: Signature,
}

impl KeyHashUdf {
    pub fn new() -> Self {
        Self { signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl Default for KeyHashUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for KeyHashUdf {
    fn name(&self) -> &str {
        "key_hash"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        for t in arg_types {
            if !matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null) {
                return exec_err!("key_hash(text, …) takes text arguments, got {t}");
            }
        }
        Ok(DataType::UInt64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, rows) = argument_arrays(&args)?;
        let hashes = (0..rows)
            .map(|row| {
                let parts = arrays.iter().map(|a| string_at(a, row)).collect::<Result<Vec<_>>>()?;
                Ok(key_hash(parts))
            })
            .collect::<Result<Vec<u64>>>()?;
        columnar(Arc::new(UInt64Array::from(hashes)), all_scalar(&args.args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_text_hashes_equal_and_parts_do_not_run_together() {
        assert_eq!(key_hash([Some("exec"), Some("{}")]), key_hash([Some("exec"), Some("{}")]));
        assert_ne!(key_hash([Some("ab"), Some("c")]), key_hash([Some("a"), Some("bc")]));
        assert_ne!(key_hash([None]), key_hash([Some("")]));
    }
}
