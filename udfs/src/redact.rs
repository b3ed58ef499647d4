//! Secret redaction (spec §11.2) and the `redact(text)` UDF.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use crate::docs::doc;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use regex::{Regex, RegexSet};

use crate::strings::map_strings;

/// Built-in patterns, their replacements, and a byte every match holds where one pattern
/// has many literals to look for. A JWT is two base64url JSON objects (`eyJ…`) and a
/// signature, dot-separated; a header as short as `{"alg":"HS256"}` is 17 characters after
/// its `eyJ`, and an unsigned token has an empty signature, so neither segment is asked
/// for 20 characters. The JWT pattern runs before the API-key pattern so that
/// `Bearer eyJ…` loses the whole token, not only its header segment. A private-key block
/// whose end is missing (a line cut short) is redacted to the end of the text. A
/// `KEY=value` value ends at white space or a quote, so that one match cannot swallow the
/// next key and leave its value; its case-insensitive words would make the one-pass test
/// of all patterns ten times slower, so it is tried on its own, on texts with a `=`.
const BUILTIN_PATTERNS: &[(&str, &str, Option<u8>)] = &[
    (r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*", "[REDACTED_JWT]", None),
    (r"(?:sk-|[sprk]k_(?:live|test)_|Bearer\s+)[A-Za-z0-9_-]{20,}", "[REDACTED_API_KEY]", None),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "[REDACTED_AWS_KEY]", None),
    (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "[REDACTED_SLACK_TOKEN]", None),
    (r"\bAIza[0-9A-Za-z_-]{35}", "[REDACTED_GOOGLE_KEY]", None),
    (r"://([^:/\s]+):([^@\s]+)@", "://${1}:[REDACTED]@", None),
    (r#"(?i)((?:PASSWORD|SECRET|TOKEN|KEY|CREDENTIAL|API_KEY)\s*=\s*["']?)[^\s"']+"#, "${1}[REDACTED]", Some(b'=')),
    (
        r"-----BEGIN [A-Z0-9 ]*(?:PRIVATE |RSA )?KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*KEY(?: BLOCK)?-----|[\s\S]*)",
        "[REDACTED_PEM_BLOCK]",
        None,
    ),
    (r"\bgh[pousr]_[A-Za-z0-9]{36,}", "[REDACTED_GH_TOKEN]", None),
    (r"\bgithub_pat_[A-Za-z0-9_]{22,}", "[REDACTED_GH_TOKEN]", None),
    (r"AAAA[A-Za-z0-9+/]{40,}", "[REDACTED_SSH_KEY]", None),
];

/// Replacement for matches of user-supplied patterns.
const CUSTOM_REPLACEMENT: &str = "[REDACTED]";

#[derive(Debug, thiserror::Error)]
pub enum RedactorError {
    #[error("invalid redaction pattern {pattern:?}: {source}")]
    InvalidPattern {
        pattern: String,
        #[source]
        source: regex::Error,
    },
}

/// Removes secrets from text: the built-in patterns first, then the user's, in order.
#[derive(Debug, Clone)]
pub struct Redactor {
    rules: Arc<[(Regex, &'static str)]>,
    custom: Arc<[String]>,
    /// One pass over the text that tells whether a rule with no required byte can match.
    any: Arc<RegexSet>,
    /// The rules with a byte every match holds, tried only on a text that holds it.
    needing: Arc<[(u8, Regex)]>,
}

impl Redactor {
    /// A redactor with the built-in patterns and `custom` ones; an invalid custom pattern
    /// is an error naming it.
    pub fn new(custom: &[String]) -> Result<Self, RedactorError> {
        let compiled = |p: &str| Regex::new(p).expect("built-in pattern compiles");
        let mut rules: Vec<(Regex, &'static str)> = BUILTIN_PATTERNS.iter().map(|(p, r, _)| (compiled(p), *r)).collect();
        let mut at_once: Vec<&str> = BUILTIN_PATTERNS.iter().filter(|(_, _, byte)| byte.is_none()).map(|(p, _, _)| *p).collect();
        let needing = BUILTIN_PATTERNS.iter().filter_map(|(p, _, byte)| byte.map(|b| (b, compiled(p)))).collect();
        for pattern in custom {
            let regex = Regex::new(pattern).map_err(|source| RedactorError::InvalidPattern { pattern: pattern.clone(), source })?;
            rules.push((regex, CUSTOM_REPLACEMENT));
            at_once.push(pattern);
        }
        let any = RegexSet::new(at_once).expect("patterns compiled one by one compile as a set");
        Ok(Self { rules: rules.into(), custom: custom.into(), any: Arc::new(any), needing })
    }

    /// A redactor with only the built-in patterns.
    pub fn builtin() -> Self {
        Self::new(&[]).expect("built-in patterns compile")
    }

    /// Whether any string inside the JSON text `raw` could need redaction. A match inside
    /// one string is a match in the whole text with its escapes decoded: no built-in
    /// pattern is anchored, and a string's quotes are neither word characters nor white
    /// space, just as the start and end of a text are not. User patterns may be anchored:
    /// with any, it answers true.
    pub fn may_match_json(&self, raw: &str) -> bool {
        if !self.custom.is_empty() {
            return true;
        }
        if raw.contains('\\') { self.may_match(&unescape_json(raw)) } else { self.may_match(raw) }
    }

    /// Whether any rule can match `text`.
    fn may_match(&self, text: &str) -> bool {
        self.any.is_match(text) || self.needing.iter().any(|(byte, regex)| text.as_bytes().contains(byte) && regex.is_match(text))
    }

    /// `text` with every secret replaced; borrowed when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.may_match(text) {
            return Cow::Borrowed(text);
        }
        let mut out = Cow::Borrowed(text);
        for (regex, replacement) in self.rules.iter() {
            if let Cow::Owned(replaced) = regex.replace_all(&out, *replacement) {
                out = Cow::Owned(replaced);
            }
        }
        out
    }
}

/// `text` with JSON string escapes decoded wherever they appear; an escape that is not
/// one (or a lone surrogate) is kept as written or becomes U+FFFD.
pub fn unescape_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let mut chars = rest.chars();
        chars.next();
        let (decoded, len) = match chars.next() {
            Some('n') => ('\n', 2),
            Some('t') => ('\t', 2),
            Some('r') => ('\r', 2),
            Some('b') => ('\u{8}', 2),
            Some('f') => ('\u{c}', 2),
            Some(c @ ('"' | '\\' | '/')) => (c, 2),
            Some('u') => match rest.get(2..6).and_then(|h| u32::from_str_radix(h, 16).ok()) {
                Some(code) => (char::from_u32(code).unwrap_or('\u{fffd}'), 6),
                None => ('\\', 1),
            },
            _ => ('\\', 1),
        };
        out.push(decoded);
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.custom == other.custom
    }
}
impl Eq for Redactor {}
impl Hash for Redactor {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.custom.hash(state);
    }
}

/// `redact(text) -> text`: the text with secrets replaced.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RedactUdf {
    signature: Signature,
    redactor: Redactor,
}

impl RedactUdf {
    pub fn new(redactor: Redactor) -> Self {
        Self { signature: Signature::string(1, Volatility::Immutable), redactor }
    }
}

impl ScalarUDFImpl for RedactUdf {
    fn documentation(&self) -> Option<&Documentation> {
        static DOC: LazyLock<Documentation> = LazyLock::new(|| {
            doc(
                "The text with secrets (API keys, tokens, private keys, the config's redactPatterns) replaced.",
                "redact(text)",
                &[("text", "any text")],
            )
        });
        Some(&DOC)
    }
    fn name(&self) -> &str {
        "redact"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match &args.args[0] {
            ColumnarValue::Scalar(scalar) => {
                let text = scalar.try_as_str().flatten();
                Ok(ColumnarValue::Scalar(ScalarValue::Utf8(text.map(|t| self.redactor.redact(t).into_owned()))))
            }
            ColumnarValue::Array(array) => {
                let out = map_strings(array, |t| self.redactor.redact(t).into_owned())?;
                Ok(ColumnarValue::Array(Arc::new(out)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The assignment rule is tried apart from the others: the prefilter still finds it in
    /// any case, and passes over a text with no `=` and no other secret.
    #[test]
    fn jwts_with_the_shortest_headers_and_unsigned_ones_are_redacted() {
        let redactor = Redactor::builtin();
        // {"alg":"HS256"} and {"alg":"none"}, with {"sub":"1234567890"}.
        let hs256 = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let unsigned = "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0.";
        for token in [hs256, unsigned] {
            assert_eq!(redactor.redact(&format!("token {token} end")), "token [REDACTED_JWT] end");
            assert_eq!(redactor.redact(&format!("Authorization: Bearer {token}")), "Authorization: Bearer [REDACTED_JWT]");
        }
        assert_eq!(redactor.redact("eyJhbGci.eyJzdWIi.x and version 1.2.3"), "eyJhbGci.eyJzdWIi.x and version 1.2.3");
    }

    #[test]
    fn the_prefilter_finds_assignments_apart_from_the_other_rules() {
        let redactor = Redactor::builtin();
        for line in [r#"{"content":"export Api_Key = abc123"}"#, r#"{"content":"password='hunter2'"}"#, r#"{"u":"https://a:b@host"}"#] {
            assert!(redactor.may_match_json(line), "{line}");
        }
        for line in [r#"{"content":"the key is in the drawer"}"#, r#"{"content":"a = b is fine"}"#] {
            assert_eq!(redactor.redact(line), line, "nothing to replace in {line}");
        }
        assert!(!redactor.may_match_json(r#"{"content":"the key is in the drawer"}"#));
        assert_eq!(redactor.redact("export Api_Key = abc123"), "export Api_Key = [REDACTED]");
    }

    #[test]
    fn the_prefilter_sees_through_escapes_and_lets_harmless_ones_pass() {
        let redactor = Redactor::builtin();
        for hidden in [
            r#"{"content":"key sk\u002dabcdefghijklmnopqrstuvwxyz"}"#,
            r#"{"url":"https:\/\/admin:pa55@db.example.org"}"#,
            r#"{"content":"line one\nPASSWORD\u003dhunter2"}"#,
            r#"{"content":"quoted \"Bearer abcdefghijklmnopqrstuvwxyz0123\""}"#,
        ] {
            assert!(redactor.may_match_json(hidden), "{hidden}");
        }
        for harmless in [r#"{"content":"line one\nline two \"quoted\" \u00e9t\u00e9"}"#, r#"{"path":"C:\\temp\\x"}"#] {
            assert!(!redactor.may_match_json(harmless), "{harmless}");
        }
        let custom = Redactor::new(&["^anchored".to_owned()]).unwrap();
        assert!(custom.may_match_json(r#"{"content":"nothing here"}"#), "user patterns may be anchored");
    }
}
