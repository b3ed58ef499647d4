//! `language(text) -> Utf8`: the language a text is written in, by its English name
//! (`English`, `German`), or NULL when the text is too short or mixed to tell reliably.
//! Identification is `whatlang`'s (trigrams over 69 languages).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::docs::doc;
use crate::strings::{Texts, all_scalar, columnar, is_text};

/// The language of `text`, when whatlang is confident of it.
pub fn language(text: &str) -> Option<&'static str> {
    whatlang::detect(text).filter(whatlang::Info::is_reliable).map(|info| info.lang().eng_name())
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct LanguageUdf {
    signature: Signature,
}

impl LanguageUdf {
    pub fn new() -> Self {
        Self { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl Default for LanguageUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for LanguageUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The language the text is written in, by its English name (English, German, …), or NULL when it cannot be told reliably.",
                "language(text)",
                &[("text", "the text")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "language"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !is_text(&arg_types[0]) {
            return plan_err!("language(text) takes a text, got {}", arg_types[0]);
        }
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = all_scalar(&args.args);
        let text = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let texts = Texts::of(&text)?;
        let languages: StringArray = (0..text.len()).map(|row| texts.get(row).and_then(language)).collect();
        columnar(Arc::new(languages), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::language;

    #[test]
    fn tells_the_language_of_a_sentence_and_not_of_a_word() {
        assert_eq!(
            language("I would like a refund for the order I placed last week, because the blue jacket arrived torn and I cannot wear it."),
            Some("English")
        );
        assert_eq!(
            language("Ich möchte meine Bestellung stornieren, die ich gestern aufgegeben habe. Die Nummer ist vierzehn."),
            Some("German")
        );
        assert_eq!(language("ok"), None);
    }
}
