//! `fail_fingerprint(tool_name, params, error)`: the cross-session identity of a tool
//! failure (spec §7.5). Volatile parts of the error (timestamps, pids, sequence numbers,
//! /tmp paths) and of the params (timeout, timestamp) are dropped first.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::array::StringBuilder;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use regex::Regex;
use serde_json::Value;

use crate::digest::short_sha256;
use crate::strings::{Texts, all_scalar, argument_arrays, columnar};

static VOLATILE: LazyLock<[(Regex, &'static str); 4]> = LazyLock::new(|| {
    [
        (Regex::new(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}[.\dZ]*").expect("valid"), "<TIMESTAMP>"),
        (Regex::new(r"(?i)\bpid[= ]\d+").expect("valid"), "pid=<PID>"),
        (Regex::new(r"(?i)\bseq[= ]\d+").expect("valid"), "seq=<SEQ>"),
        (Regex::new(r"/tmp/\S+").expect("valid"), "/tmp/<PATH>"),
    ]
});

/// The error with volatile parts replaced, trimmed, at most 200 characters.
pub fn normalize_error(error: &str) -> String {
    let mut text = Cow::Borrowed(error);
    for (regex, replacement) in VOLATILE.iter() {
        if let Cow::Owned(replaced) = regex.replace_all(&text, *replacement) {
            text = Cow::Owned(replaced);
        }
    }
    text.trim().chars().take(200).collect()
}

/// First 16 hex digits of sha256("tool|stable params|normalized error").
pub fn fail_fingerprint(tool_name: &str, params: &str, error: &str) -> String {
    let mut params: Value = serde_json::from_str(params).unwrap_or(Value::Object(serde_json::Map::default()));
    if let Some(object) = params.as_object_mut() {
        object.remove("timeout");
        object.remove("timestamp");
    }
    short_sha256(&[tool_name.as_bytes(), b"|", params.to_string().as_bytes(), b"|", normalize_error(error).as_bytes()])
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FailFingerprintUdf {
    signature: Signature,
}

impl FailFingerprintUdf {
    pub fn new() -> Self {
        Self { signature: Signature::string(3, Volatility::Immutable) }
    }
}

impl Default for FailFingerprintUdf {
    fn default() -> Self {
        Self::new()
    }
}

impl ScalarUDFImpl for FailFingerprintUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "16 hex digits identifying a failure: tool, stable params and normalized error, with volatile parts (timestamps, pids, sequence numbers, /tmp paths, timeout params) removed.",
                "fail_fingerprint(tool, params, error)",
                &[("tool", "tool name"), ("params", "JSON text"), ("error", "error text")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "fail_fingerprint"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = all_scalar(&args.args);
        let (arrays, rows) = argument_arrays(&args)?;
        let mut out = StringBuilder::with_capacity(rows, rows * 16);
        let (tools, params, errors) = (Texts::of(&arrays[0])?, Texts::of(&arrays[1])?, Texts::of(&arrays[2])?);
        for row in 0..rows {
            let tool = tools.get(row).unwrap_or("");
            let params = params.get(row).unwrap_or("{}");
            match errors.get(row) {
                Some(error) => out.append_value(fail_fingerprint(tool, params, error)),
                None => out.append_null(),
            }
        }
        columnar(Arc::new(out.finish()), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volatile_parts_do_not_change_the_fingerprint() {
        let a = fail_fingerprint("exec", r#"{"command":"x","timeout":5}"#, "2026-01-01T10:00:00.123Z pid=123 failed at /tmp/abc.sock");
        let b = fail_fingerprint("exec", r#"{"command":"x","timeout":30}"#, "2026-02-03 11:22:33 pid 999 failed at /tmp/zzz");
        assert_eq!(a, b);
        assert_ne!(a, fail_fingerprint("exec", r#"{"command":"y"}"#, "pid=1 failed at /tmp/x"));
        assert_eq!(normalize_error("seq=42 seq 7"), "seq=<SEQ> seq=<SEQ>");
    }

    #[test]
    fn the_fingerprint_is_the_first_16_hex_digits_of_the_sha256_of_tool_params_and_error() {
        // sha256("exec|{\"command\":\"x\"}|boom at /tmp/<PATH>") from Python's hashlib.
        assert_eq!(fail_fingerprint("exec", r#"{"command":"x","timeout":5}"#, " boom at /tmp/a.sock "), "855bb93e27b52911");
    }
}
