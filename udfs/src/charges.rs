//! `charges(text) -> List<Utf8>`: the sums a text says were or will be charged to the user,
//! written as [`amounts`](crate::amounts) writes them: the amounts of its sentences that
//! say so ("$100 has been charged to your card", "will be debited"), per the chosen
//! language packs (`charge`). A price ("an additional charge of $50") is no charge.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::amounts::amounts_of;
use crate::docs::doc;
use crate::patterns::{Category, Patterns};
use crate::strings::{is_text, map_to_text_lists, text_list_type};
use crate::values::sentences;

/// The sums of the sentences of `text` that say a sum was charged, each once.
pub fn charges(patterns: &Patterns, text: &str) -> Vec<String> {
    amounts_of(sentences(text).filter(|s| patterns.is(Category::Charge, s)))
}

#[derive(Debug)]
pub struct ChargesUdf {
    patterns: Arc<Patterns>,
    signature: Signature,
}

impl ChargesUdf {
    pub fn new(patterns: Arc<Patterns>) -> Self {
        Self { patterns, signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl PartialEq for ChargesUdf {
    fn eq(&self, other: &Self) -> bool {
        self.patterns.languages() == other.patterns.languages()
    }
}
impl Eq for ChargesUdf {}
impl Hash for ChargesUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.patterns.languages().hash(state);
    }
}

impl ScalarUDFImpl for ChargesUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The sums a text says were or will be charged to the user (the amounts of its sentences that say so, per the chosen language packs), written as amounts() writes them.",
                "charges(text)",
                &[("text", "an agent's message")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "charges"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !is_text(&arg_types[0]) {
            return plan_err!("charges(text) takes a text, got {}", arg_types[0]);
        }
        Ok(text_list_type())
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_to_text_lists(&args, |text| charges(&self.patterns, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_sums_said_to_be_charged_are_charges() {
        let p = Patterns::default_languages();
        let text = "The two bags are added. $100 has been charged to your card ending in 7447. A refund of $20 is on its way.";
        assert_eq!(charges(&p, text), ["$100"]);
        assert_eq!(charges(&p, "Die Differenz von 54.20 € wurde Ihrer Karte belastet."), ["€54.20"]);
        assert!(charges(&p, "The total is $305. Shall I book it?").is_empty());
        assert!(charges(&p, "The 24MP camera means an additional charge of $384.76. Which one do you want?").is_empty());
    }
}
