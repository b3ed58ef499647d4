//! `key_hash(text, …) -> UInt64`: a 64-bit hash of its arguments' text, so that rows can be
//! compared by a long key (a message, a tool call's params) without carrying the key.
//! A null argument hashes differently from every text, the empty one included.

use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::array::{ArrayRef, UInt64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::hash_utils::{RandomState, create_hashes};
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::strings::{all_scalar, argument_arrays, columnar, is_text};

/// The hash of each row of `columns` (text, all of one length): DataFusion's column
/// hashing with fixed seeds, so the same text hashes the same in every query of a run,
/// whatever its string type (a view read from Parquet hashes as plain text does).
pub fn key_hashes(columns: &[ArrayRef]) -> Result<Vec<u64>> {
    let plain = |c: &ArrayRef| match c.data_type() {
        DataType::Utf8 => Ok(Arc::clone(c)),
        _ => cast(c, &DataType::Utf8),
    };
    let columns = columns.iter().map(plain).collect::<Result<Vec<_>, _>>()?;
    let mut hashes = vec![0; columns.first().map_or(0, |c| c.len())];
    create_hashes(&columns, &RandomState::with_seed(0), &mut hashes)?;
    Ok(hashes)
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
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc("A 64-bit hash of the texts (deduplication and shard keys).", "key_hash(text, ...)", &[("text", "one or more texts")])
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "key_hash"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        for t in arg_types {
            if !is_text(t) {
                return plan_err!("key_hash(text, …) takes text arguments, got {t}");
            }
        }
        Ok(DataType::UInt64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, _) = argument_arrays(&args)?;
        let hashes = key_hashes(&arrays)?;
        columnar(Arc::new(UInt64Array::from(hashes)), all_scalar(&args.args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{LargeStringArray, StringArray, StringViewArray};

    #[test]
    fn a_text_hashes_the_same_in_every_string_type() {
        let values = [Some("76836a0332107d0c"), Some("s"), None];
        let plain = key_hashes(&[Arc::new(StringArray::from(values.to_vec()))]).unwrap();
        assert_eq!(plain, key_hashes(&[Arc::new(StringViewArray::from(values.to_vec()))]).unwrap());
        assert_eq!(plain, key_hashes(&[Arc::new(LargeStringArray::from(values.to_vec()))]).unwrap());
    }

    #[test]
    fn equal_text_hashes_equal_and_parts_do_not_run_together() {
        let text = |values: &[Option<&str>]| Arc::new(StringArray::from(values.to_vec())) as ArrayRef;
        let first = text(&[Some("exec"), Some("ab"), Some("a"), None, Some("")]);
        let second = text(&[Some("{}"), Some("c"), Some("bc"), None, Some("")]);
        let h = key_hashes(&[first.clone(), second]).unwrap();
        assert_eq!(h[0], key_hashes(&[text(&[Some("exec")]), text(&[Some("{}")])]).unwrap()[0]);
        assert_ne!(h[1], h[2], "(ab, c) and (a, bc)");
        let single = key_hashes(&[first]).unwrap();
        assert_ne!(single[3], single[4], "null and the empty text");
    }
}
