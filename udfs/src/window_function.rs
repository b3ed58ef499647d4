//! What every window function of this crate shares: a name, a signature and a result
//! column around a partition evaluator (each evaluator is in its own file).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, UInt64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{Documentation, PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl};

#[derive(Debug)]
pub(crate) struct WindowFunction {
    name: &'static str,
    signature: Signature,
    result: DataType,
    nullable: bool,
    evaluator: fn() -> Box<dyn PartitionEvaluator>,
    documentation: Documentation,
}

impl WindowFunction {
    /// `name(…)` with `arguments` (`None`: any number), yielding `result` from `evaluator`.
    pub fn udf(
        name: &'static str,
        arguments: Option<usize>,
        result: DataType,
        nullable: bool,
        evaluator: fn() -> Box<dyn PartitionEvaluator>,
        documentation: Documentation,
    ) -> WindowUDF {
        let signature = match arguments {
            Some(n) => Signature::any(n, Volatility::Immutable),
            None => Signature::variadic_any(Volatility::Immutable),
        };
        WindowUDF::from(Self { name, signature, result, nullable, evaluator, documentation })
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
