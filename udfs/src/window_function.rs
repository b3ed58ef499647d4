//! What every window function of this crate shares: a name, a signature and a result
//! column around a partition evaluator (each evaluator is in its own file).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, UInt64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::{Result, exec_err, plan_err};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{Documentation, PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl};

use crate::strings::is_text;

/// What an argument of a window function must be. Checked when a query is planned, so
/// that a wrong call fails before any row is read, naming the function and the argument.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Text,
    Integer,
    Number,
    Boolean,
    Any,
}

impl Kind {
    fn admits(self, t: &DataType) -> bool {
        match self {
            Kind::Text => is_text(t),
            Kind::Integer => t.is_integer() || t == &DataType::Null,
            Kind::Number => t.is_numeric() || t == &DataType::Null,
            Kind::Boolean => t == &DataType::Boolean,
            Kind::Any => true,
        }
    }

    fn described(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Integer => "an integer",
            Kind::Number => "a number",
            Kind::Boolean => "boolean",
            Kind::Any => "any value",
        }
    }
}

/// An argument of a window function: its name in the documentation, and its kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Param(pub &'static str, pub Kind);

/// The arguments of a window function: these, then (for `Some`) one or more of the last kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params(pub &'static [Param], pub Option<Param>);

impl Params {
    fn signature(self) -> Signature {
        match self.1 {
            None => Signature::any(self.0.len(), Volatility::Immutable),
            Some(_) => Signature::variadic_any(Volatility::Immutable),
        }
    }

    /// Fails, naming `function` and the argument, when an argument is not of its kind.
    fn check(self, function: &str, inputs: &[FieldRef]) -> Result<()> {
        let Params(fixed, repeated) = self;
        if let Some(Param(name, _)) = repeated
            && inputs.len() <= fixed.len()
        {
            return plan_err!("{function} takes at least one `{name}` after its {} other arguments", fixed.len());
        }
        for (i, input) in inputs.iter().enumerate() {
            let Some(Param(name, kind)) = fixed.get(i).copied().or(repeated) else { break };
            if !kind.admits(input.data_type()) {
                return plan_err!("{function}: `{name}` must be {}, got {}", kind.described(), input.data_type());
            }
        }
        Ok(())
    }
}

#[derive(Debug)]
pub(crate) struct WindowFunction {
    name: &'static str,
    params: Params,
    signature: Signature,
    result: DataType,
    nullable: bool,
    evaluator: fn() -> Box<dyn PartitionEvaluator>,
    documentation: Documentation,
}

impl WindowFunction {
    /// `name(params)`, yielding `result` from `evaluator`.
    pub fn udf(
        name: &'static str,
        params: Params,
        result: DataType,
        nullable: bool,
        evaluator: fn() -> Box<dyn PartitionEvaluator>,
        documentation: Documentation,
    ) -> WindowUDF {
        WindowUDF::from(Self { name, params, signature: params.signature(), result, nullable, evaluator, documentation })
    }
}

// Identified by name: every window function of this crate has its own.
impl PartialEq for WindowFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for WindowFunction {}
impl Hash for WindowFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl WindowUDFImpl for WindowFunction {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn documentation(&self) -> Option<&Documentation> {
        Some(&self.documentation)
    }
    fn partition_evaluator(&self, _args: PartitionEvaluatorArgs) -> Result<Box<dyn PartitionEvaluator>> {
        Ok((self.evaluator)())
    }
    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        self.params.check(self.name, field_args.input_fields())?;
        Ok(Arc::new(Field::new(field_args.name(), self.result.clone(), self.nullable)))
    }
}

/// A boolean argument of window function `function`, or an error naming it.
pub(crate) fn boolean_argument<'a>(array: &'a ArrayRef, function: &str, name: &str) -> Result<&'a BooleanArray> {
    match array.data_type() {
        DataType::Boolean => Ok(array.as_boolean()),
        other => exec_err!("{function}: `{name}` must be boolean, got {other}"),
    }
}

/// A session key argument (`key_hash(agent, session)`, or any integer) as `u64`s.
pub(crate) fn session_keys(array: &ArrayRef) -> Result<UInt64Array> {
    Ok(cast(array, &DataType::UInt64)?.as_primitive::<UInt64Type>().clone())
}

/// Whether row `i` starts another session than the row before it (rows of a session are
/// consecutive).
pub(crate) fn starts_session(keys: &UInt64Array, i: usize) -> bool {
    i > 0 && (keys.is_valid(i) != keys.is_valid(i - 1) || keys.value(i) != keys.value(i - 1))
}

/// Test rows for the window functions over one session's chain events: `(type, text)`
/// pairs become the session key (1), the types, one text column per predicate (the text
/// where the predicate holds for the type, null elsewhere), and `checks_call` (true on
/// calls).
#[cfg(test)]
pub(crate) fn session_rows(events: &[(&str, &str)], columns: &[fn(&str) -> bool]) -> Vec<ArrayRef> {
    use datafusion::arrow::array::StringArray;
    let mut values: Vec<ArrayRef> =
        vec![Arc::new(UInt64Array::from(vec![1; events.len()])), Arc::new(StringArray::from_iter_values(events.iter().map(|e| e.0)))];
    for keep in columns {
        values.push(Arc::new(StringArray::from(events.iter().map(|(t, text)| keep(t).then_some(*text)).collect::<Vec<_>>())));
    }
    values.push(Arc::new(BooleanArray::from(events.iter().map(|e| e.0 == "tool.call").collect::<Vec<_>>())));
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(types: &[DataType]) -> Vec<FieldRef> {
        types.iter().map(|t| Arc::new(Field::new("x", t.clone(), true))).collect()
    }

    #[test]
    fn arguments_of_the_wrong_kind_are_refused_by_name_and_the_right_ones_pass() {
        let params = Params(&[Param("ts_ms", Kind::Integer), Param("failed", Kind::Boolean)], Some(Param("key", Kind::Text)));
        let check = |types: &[DataType]| params.check("f", &fields(types)).map_err(|e| e.strip_backtrace());
        assert!(check(&[DataType::Int64, DataType::Boolean, DataType::Utf8View, DataType::Null]).is_ok());
        let wrong = check(&[DataType::Utf8, DataType::Boolean, DataType::Utf8]).unwrap_err();
        assert_eq!(wrong, "Error during planning: f: `ts_ms` must be an integer, got Utf8");
        let wrong = check(&[DataType::Int64, DataType::Boolean, DataType::Int64]).unwrap_err();
        assert_eq!(wrong, "Error during planning: f: `key` must be text, got Int64");
        let short = check(&[DataType::Int64, DataType::Boolean]).unwrap_err();
        assert_eq!(short, "Error during planning: f takes at least one `key` after its 2 other arguments");
    }
}
