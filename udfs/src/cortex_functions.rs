//! `decision_context(text)`, `wait_context(text)`, `topic_title(text)`, `is_closure(text)`
//! and `mood(text)`: what a message decides, waits for, turns to, whether it closes
//! something, and its mood, per the cortex patterns of the chosen language packs; and
//! `cortex_matches(text)`, whether any of them finds something (one pass, to filter on
//! before the others run). One struct serves every function.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::docs::doc;
use crate::patterns::Patterns;
use crate::strings::{Texts, all_scalar, columnar, is_text};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Function {
    Decision,
    Wait,
    Topic,
    Closure,
    Mood,
    Any,
}

impl Function {
    const ALL: [Function; 6] = [Function::Decision, Function::Wait, Function::Topic, Function::Closure, Function::Mood, Function::Any];

    fn name(self) -> &'static str {
        match self {
            Function::Decision => "decision_context",
            Function::Wait => "wait_context",
            Function::Topic => "topic_title",
            Function::Closure => "is_closure",
            Function::Mood => "mood",
            Function::Any => "cortex_matches",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Function::Decision => "What a message decides: its first decision phrase with the 50 characters before and 100 after, or NULL.",
            Function::Wait => "What a message waits for: from its first wait phrase (waiting for, blocked by), 100 characters, or NULL.",
            Function::Topic => "The topic a message turns to (back to X, regarding X): the words after the phrase, or NULL.",
            Function::Closure => "Whether a message closes something (done, fixed, solved, erledigt).",
            Function::Mood => {
                "The mood of a message: frustrated, excited, tense, productive or exploratory (the last match wins), else neutral."
            }
            Function::Any => {
                "Whether any cortex pattern matches a message: false means no decision, wait, topic or closure, and a neutral mood."
            }
        }
    }
}

#[derive(Debug)]
pub struct CortexUdf {
    function: Function,
    patterns: Arc<Patterns>,
    signature: Signature,
    documentation: Documentation,
}

/// The names of the cortex functions.
pub fn names() -> impl Iterator<Item = &'static str> {
    Function::ALL.iter().map(|f| f.name())
}

/// Every cortex function over `patterns`.
pub fn udfs(patterns: &Arc<Patterns>) -> Vec<ScalarUDF> {
    Function::ALL
        .iter()
        .map(|f| {
            let documentation = doc(f.description(), &format!("{}(text)", f.name()), &[("text", "message text")]);
            let udf = CortexUdf {
                function: *f,
                patterns: Arc::clone(patterns),
                signature: Signature::any(1, Volatility::Immutable),
                documentation,
            };
            ScalarUDF::from(udf)
        })
        .collect()
}

impl PartialEq for CortexUdf {
    fn eq(&self, other: &Self) -> bool {
        self.function == other.function && self.patterns.languages() == other.patterns.languages()
    }
}
impl Eq for CortexUdf {}
impl Hash for CortexUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.function.hash(state);
        self.patterns.languages().hash(state);
    }
}

impl ScalarUDFImpl for CortexUdf {
    fn name(&self) -> &str {
        self.function.name()
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&self.documentation)
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !is_text(&arg_types[0]) {
            return plan_err!("{}(text) takes a text, got {}", self.name(), arg_types[0]);
        }
        Ok(if matches!(self.function, Function::Closure | Function::Any) { DataType::Boolean } else { DataType::Utf8 })
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = all_scalar(&args.args);
        let text = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let cortex = self.patterns.cortex();
        let texts = Texts::of(&text)?;
        let rows = (0..text.len()).map(|i| texts.get(i));
        let out: ArrayRef = match self.function {
            Function::Closure => Arc::new(rows.map(|t| t.map(|t| cortex.closes(t))).collect::<BooleanArray>()),
            Function::Any => Arc::new(rows.map(|t| t.map(|t| cortex.matches_any(t))).collect::<BooleanArray>()),
            Function::Mood => Arc::new(rows.map(|t| t.map(|t| cortex.mood(t))).collect::<StringArray>()),
            Function::Decision => Arc::new(rows.map(|t| t.and_then(|t| cortex.decision(t))).collect::<StringArray>()),
            Function::Wait => Arc::new(rows.map(|t| t.and_then(|t| cortex.wait(t))).collect::<StringArray>()),
            Function::Topic => Arc::new(rows.map(|t| t.and_then(|t| cortex.topic(t))).collect::<StringArray>()),
        };
        columnar(out, scalar)
    }
}
