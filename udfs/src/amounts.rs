//! `amounts(text) -> List<Utf8>`: the sums of money a text states, each once, in the order
//! they first appear, written one way (`$1,047.00`, `USD 1.047,00` and `1047 dollars` are
//! all `$1047`), so that two texts' amounts compare (`array_except`, `unquoted`).

use std::sync::LazyLock;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use regex::Regex;

use crate::docs::doc;
use crate::strings::{is_text, map_to_text_lists, text_list_type};
use crate::values::hundredths;

/// A number with a currency before it (`$54.20`, `€ 12`, `USD 1,047`) or after it
/// (`1047 USD`, `12 €`, `12 euros`). A `$` after a number is left out (in "2 $50 bags"
/// it is the 50's), and so are "pounds", as often a weight.
static AMOUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:(?P<sign>[$€£¥])|\b(?P<code>usd|eur|gbp|jpy)\s?)\s?(?P<number>\d+(?:[.,]\d{3})*(?:[.,]\d{1,2})?)|\b(?P<number_first>\d+(?:[.,]\d{3})*(?:[.,]\d{1,2})?)\s?(?:(?P<sign_after>[€£¥])|\b(?P<code_after>usd|eur|gbp|jpy|dollars?|euros?|yen)\b)",
    )
    .expect("valid")
});

/// The amounts `text` states, written as `$1047` or `€54.20`, each once.
pub fn amounts(text: &str) -> Vec<String> {
    amounts_of([text])
}

/// The amounts `texts` state, each once, in the order they first appear.
pub(crate) fn amounts_of<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for m in texts.into_iter().flat_map(|text| AMOUNT.captures_iter(text)) {
        let currency = ["sign", "code", "sign_after", "code_after"].iter().find_map(|name| m.name(name)).map_or("", |c| c.as_str());
        let Some(number) = m.name("number").or(m.name("number_first")) else { continue };
        let amount = format!("{}{}", symbol(currency), canonical(number.as_str()));
        if !found.contains(&amount) {
            found.push(amount);
        }
    }
    found
}

fn symbol(currency: &str) -> &'static str {
    match currency.to_lowercase().as_str() {
        "€" | "eur" | "euro" | "euros" => "€",
        "£" | "gbp" => "£",
        "¥" | "jpy" | "yen" => "¥",
        _ => "$",
    }
}

/// An amount as [`amounts`] writes it (`$1047`, `€54.20`): its currency and its value in
/// hundredths.
pub(crate) fn parse_amount(amount: &str) -> Option<(&str, i64)> {
    let split = amount.find(|c: char| c.is_ascii_digit())?;
    let (currency, number) = amount.split_at(split);
    Some((currency, hundredths(number.parse().ok()?)?))
}

/// `1,047.00` and `1.047,00` as `1047`, `54.2` and `54,20` as `54.20`: a `.` or `,` before
/// one or two final digits is the decimal point, any other separates thousands.
fn canonical(number: &str) -> String {
    let (whole, fraction) = match number.rfind(['.', ',']) {
        Some(at) if number.len() - at <= 3 => (&number[..at], &number[at + 1..]),
        _ => (number, ""),
    };
    let whole: String = whole.chars().filter(char::is_ascii_digit).collect();
    if fraction.bytes().all(|b| b == b'0') { whole } else { format!("{whole}.{fraction:0<2}") }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct AmountsUdf {
    signature: Signature,
}

impl AmountsUdf {
    pub fn new() -> Self {
        Self { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl Default for AmountsUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for AmountsUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The sums of money a text states ($54.20, € 12, 1,047 USD), each once, written as $54.20 or €12, so that the amounts of two texts compare with array_except.",
                "amounts(text)",
                &[("text", "the text")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "amounts"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !is_text(&arg_types[0]) {
            return plan_err!("amounts(text) takes a text, got {}", arg_types[0]);
        }
        Ok(text_list_type())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_to_text_lists(&args, amounts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_found_however_they_are_written() {
        let text = "The total is $1,047.00: $128 from the gift card, USD 919 on your card (919 dollars), and €54.2, 12 EUR or 13 €.";
        assert_eq!(amounts(text), ["$1047", "$128", "$919", "€54.20", "€12", "€13"]);
    }

    #[test]
    fn decimal_commas_and_thousands_points_are_read_as_written() {
        assert_eq!(amounts("1.047,00 €, EUR 12,50, $1,047 and $3.5"), ["€1047", "€12.50", "$1047", "$3.50"]);
    }

    #[test]
    fn numbers_without_a_currency_are_no_amounts() {
        assert!(amounts("Flight HAT136 on 2024-05-20, 2 bags of 50 pounds, reservation 7504069.").is_empty());
    }
}
