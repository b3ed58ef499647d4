//! What every window function of this crate shares: a name, a signature and a result
//! column around a partition evaluator (each evaluator is in its own file).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::Result;
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
