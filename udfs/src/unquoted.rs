//! `unquoted(amounts, quoted) -> List<Utf8>`: the amounts (as [`amounts`](crate::amounts)
//! writes them) that do not follow from the quoted ones: neither one of them, nor the sum
//! or difference of two, nor two to nine times one (two bags at "$50 per bag" are $100).

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::amounts::parse_amount;
use crate::docs::doc;
use crate::strings::{Texts, all_scalar, argument_arrays, columnar, text_list_type};

/// The `amounts` that do not follow from `quoted`.
pub fn unquoted<'a>(amounts: &[&'a str], quoted: &[&str]) -> Vec<&'a str> {
    let quoted: HashSet<(&str, i64)> = quoted.iter().filter_map(|q| parse_amount(q)).collect();
    let follows = |(currency, value): (&str, i64)| {
        let same: Vec<i64> = quoted.iter().filter(|(c, _)| *c == currency).map(|(_, v)| *v).collect();
        same.iter().any(|&q| q == value || (2..=9).any(|k| q * k == value))
            || same.iter().any(|&a| same.iter().any(|&b| a + b == value || a - b == value))
    };
    amounts.iter().copied().filter(|a| parse_amount(a).is_none_or(|amount| !follows(amount))).collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct UnquotedUdf {
    signature: Signature,
}

impl UnquotedUdf {
    pub fn new() -> Self {
        Self { signature: Signature::any(2, Volatility::Immutable) }
    }
}

impl Default for UnquotedUdf {
    fn default() -> Self {
        Self::new()
    }
}

fn is_text_list(t: &DataType) -> bool {
    matches!(t, DataType::List(item) if matches!(item.data_type(), DataType::Utf8 | DataType::Null)) || *t == DataType::Null
}

impl ScalarUDFImpl for UnquotedUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The amounts that do not follow from the quoted ones: neither one of them, nor the sum or difference of two, nor two to nine times one; NULL for NULL amounts.",
                "unquoted(amounts, quoted)",
                &[("amounts", "a list of amounts, as amounts() returns them"), ("quoted", "the amounts the user was told")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "unquoted"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !arg_types.iter().all(is_text_list) {
            return plan_err!("unquoted(amounts, quoted) takes two lists of amounts, got {} and {}", arg_types[0], arg_types[1]);
        }
        Ok(text_list_type())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, rows) = argument_arrays(&args)?;
        let [amounts, quoted] = [&arrays[0], &arrays[1]].map(|a| a.as_list_opt::<i32>());
        let mut out = ListBuilder::new(StringBuilder::new());
        for row in 0..rows {
            let Some(amounts) = amounts.filter(|a| !a.is_null(row)) else {
                out.append(false);
                continue;
            };
            let wanted = amounts.value(row);
            let told = quoted.filter(|q| !q.is_null(row)).map(|q| q.value(row));
            let told = told.as_ref().map(texts).transpose()?.unwrap_or_default();
            for amount in unquoted(&texts(&wanted)?, &told) {
                out.values().append_value(amount);
            }
            out.append(true);
        }
        columnar(Arc::new(out.finish()) as ArrayRef, all_scalar(&args.args))
    }
}

fn texts(values: &ArrayRef) -> Result<Vec<&str>> {
    if values.data_type() == &DataType::Null {
        return Ok(Vec::new());
    }
    if values.data_type() != &DataType::Utf8 {
        return exec_err!("unquoted: amounts are texts, got {}", values.data_type());
    }
    let texts = Texts::of(values)?;
    Ok((0..values.len()).filter_map(|i| texts.get(i)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_differences_and_multiples_of_quoted_amounts_follow_from_them() {
        let quoted = ["$50", "$174", "$255", "$250"];
        // $100 = 2 × $50, $348 = 2 × $174, $5 = $255 − $250, $505 = $255 + $250, $305 = $255 + $50.
        assert_eq!(unquoted(&["$100", "$348", "$5", "$505", "$305", "€50", "$55"], &quoted), ["€50", "$55"]);
        assert_eq!(unquoted(&["$100"], &[]), ["$100"]);
    }
}
