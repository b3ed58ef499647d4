//! `is_correction(text)`, `is_question(text)`, … `is_consequential_tool(name)`: does a text
//! (or a tool name) fall in a signal category, per the chosen language packs. One struct
//! serves every category.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::docs::doc;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::patterns::{Category, Patterns};
use crate::strings::Texts;

#[derive(Debug)]
pub struct TextCategoryUdf {
    name: String,
    category: Category,
    patterns: Arc<Patterns>,
    signature: Signature,
    documentation: Documentation,
}

impl TextCategoryUdf {
    pub fn new(category: Category, patterns: Arc<Patterns>) -> Self {
        let name = format!("is_{}", category.key());
        let documentation = if category.is_tool_name() {
            doc(
                &format!(
                    "Whether a tool name is a {} tool (`common.json`, or the config's `toolPatterns`).",
                    category.key().trim_end_matches("_tool").replace('_', " ")
                ),
                &format!("{name}(tool_name)"),
                &[("tool_name", "text")],
            )
        } else {
            doc(
                &format!("Whether a text is a {}, per the chosen language packs (`patterns.language`).", category.key().replace('_', " ")),
                &format!("{name}(text)"),
                &[("text", "message text")],
            )
        };
        Self { name, category, patterns, signature: Signature::string(1, Volatility::Immutable), documentation }
    }

    /// One UDF per category.
    pub fn all(patterns: &Arc<Patterns>) -> Vec<Self> {
        Category::ALL.iter().map(|c| Self::new(*c, Arc::clone(patterns))).collect()
    }
}

impl PartialEq for TextCategoryUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.patterns.languages() == other.patterns.languages()
            && self.patterns.tool_patterns() == other.patterns.tool_patterns()
    }
}
impl Eq for TextCategoryUdf {}
impl Hash for TextCategoryUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.patterns.languages().hash(state);
        self.patterns.tool_patterns().hash(state);
    }
}

impl ScalarUDFImpl for TextCategoryUdf {
    fn name(&self) -> &str {
        &self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&self.documentation)
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let array = match &args.args[0] {
            ColumnarValue::Scalar(s) => {
                let answer = s.try_as_str().flatten().map(|t| self.patterns.is(self.category, t));
                return Ok(ColumnarValue::Scalar(ScalarValue::Boolean(answer)));
            }
            ColumnarValue::Array(array) => array,
        };
        let answers = if self.category.is_tool_name() {
            // A batch holds few distinct tool names: each is matched once.
            let mut seen: datafusion::common::HashMap<&str, bool> = datafusion::common::HashMap::default();
            map_bool(array, |name| name.map(|n| *seen.entry(n).or_insert_with(|| self.patterns.is(self.category, n))))?
        } else {
            map_bool(array, |text| text.map(|t| self.patterns.is(self.category, t)))?
        };
        Ok(ColumnarValue::Array(Arc::new(answers) as ArrayRef))
    }
}

fn map_bool<'a>(array: &'a ArrayRef, f: impl FnMut(Option<&'a str>) -> Option<bool>) -> Result<BooleanArray> {
    let texts = Texts::of(array)?;
    Ok((0..array.len()).map(|row| texts.get(row)).map(f).collect())
}
