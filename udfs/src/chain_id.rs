//! `chain_id(session, agent, first_ts) -> text`: the deterministic chain id of spec §6.4,
//! the first 16 hex digits of sha256("session:agent:firstTs").

use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::array::{Array, ArrayRef, Int64Array, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::digest::short_sha256;
use crate::strings::{Texts, all_scalar, argument_arrays, columnar, is_text};

/// The chain id for a chain of `agent` in `session` whose first event is at `first_ts_ms`.
pub fn chain_id(session: &str, agent: &str, first_ts_ms: i64) -> String {
    short_sha256(&[session.as_bytes(), b":", agent.as_bytes(), b":", first_ts_ms.to_string().as_bytes()])
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ChainIdUdf {
    signature: Signature,
}

impl ChainIdUdf {
    pub fn new() -> Self {
        Self { signature: Signature::any(3, Volatility::Immutable) }
    }
}

impl Default for ChainIdUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for ChainIdUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The chain id: the first 16 hex digits of sha256(`session:agent:first_ts`).",
                "chain_id(session, agent, first_ts)",
                &[("session", "text"), ("agent", "text"), ("first_ts", "the chain's first event time: a timestamp, or ms as an integer")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "chain_id"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        for t in &arg_types[..2] {
            if !is_text(t) {
                return plan_err!("chain_id(session, agent, first_ts): session and agent must be text, got {t}");
            }
        }
        if !(arg_types[2].is_integer() || matches!(arg_types[2], DataType::Timestamp(..) | DataType::Null)) {
            return plan_err!("chain_id(session, agent, first_ts): first_ts must be an integer (ms) or a timestamp, got {}", arg_types[2]);
        }
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, rows) = argument_arrays(&args)?;
        let ts = as_millis(&arrays[2])?;
        let mut out = StringBuilder::with_capacity(rows, rows * 16);
        // The rows of one chain come together: hash each chain once.
        let (sessions, agents) = (Texts::of(&arrays[0])?, Texts::of(&arrays[1])?);
        let mut last: Option<(&str, &str, i64, String)> = None;
        for row in 0..rows {
            match (sessions.get(row), agents.get(row), ts.is_valid(row)) {
                (Some(session), Some(agent), true) => {
                    let first_ts = ts.value(row);
                    match &last {
                        Some((s, a, t, id)) if *t == first_ts && *s == session && *a == agent => out.append_value(id),
                        _ => {
                            let id = chain_id(session, agent, first_ts);
                            out.append_value(&id);
                            last = Some((session, agent, first_ts, id));
                        }
                    }
                }
                _ => out.append_null(),
            }
        }
        columnar(Arc::new(out.finish()), all_scalar(&args.args))
    }
}

/// Integer milliseconds from an integer or a timestamp array.
fn as_millis(array: &ArrayRef) -> Result<Int64Array> {
    let millis = match array.data_type() {
        DataType::Timestamp(_, tz) => cast(array, &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Millisecond, tz.clone()))?,
        _ => array.clone(),
    };
    let ints = cast(&millis, &DataType::Int64)?;
    Ok(ints.as_any().downcast_ref::<Int64Array>().expect("cast to Int64").clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_the_first_16_hex_digits_of_the_sha256_of_session_agent_and_time() {
        // Digests from Python's hashlib.
        assert_eq!(chain_id("test-session", "main", 1_700_000_000_000), "7d2b5a891ac8bd2b");
        assert_eq!(chain_id("s", "main", -5), "5563a0f0fd2dc7d2");
    }
}
