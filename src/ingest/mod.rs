//! From raw input to normalized, redacted events: line reading, decoding, normalization,
//! and quarantine of what cannot be an event.

pub mod lines;
pub mod nats;
pub mod normalize;
pub mod outcomes;
pub mod quarantine;
pub mod raw;

use std::borrow::Cow;

use crate::model::Event;
use crate::redact::{Redactor, redact_json_text};
use lines::Line;
pub use quarantine::{QuarantineReason, QuarantinedLine};
use raw::{NotAnObject, RawObject};

/// Default upper bound for one raw event (a JSONL line or a stream message).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// How much of a quarantined line is kept.
const QUARANTINE_KEEP_BYTES: usize = 64 * 1024;

/// Turns raw event bytes into events, redacting everything before it leaves this type.
#[derive(Debug, Clone)]
pub struct Decoder {
    redactor: Redactor,
}

impl Decoder {
    pub fn new(redactor: Redactor) -> Self {
        Self { redactor }
    }

    /// Decodes one line read from `source` at `position` (1-based line number or stream sequence).
    pub fn decode_line(&self, line: Line, source: &str, position: u64) -> Result<Event, QuarantinedLine> {
        match line {
            Line::Complete(bytes) => self.decode(&bytes, source, position, None),
            Line::TooLong { prefix, len } => Err(self.quarantine(
                &prefix,
                len,
                source,
                position,
                QuarantineReason::TooLarge,
                format!("event is {len} bytes, over the limit"),
            )),
        }
    }

    /// Decodes one raw event (a complete line or message body).
    pub fn decode(&self, bytes: &[u8], source: &str, position: u64, subject: Option<&str>) -> Result<Event, QuarantinedLine> {
        let fail = |reason, detail: String| self.quarantine(bytes, bytes.len() as u64, source, position, reason, detail);
        // A byte-order mark, as editors on some systems write before the first line.
        let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => return Err(fail(QuarantineReason::InvalidUtf8, e.to_string())),
        };
        let redacted = if self.redactor.may_match_json(text) { redact_json_text(&self.redactor, text) } else { Cow::Borrowed(text) };
        let text = redacted.as_ref();
        let raw = match RawObject::parse(text) {
            Ok(raw) => raw,
            Err(NotAnObject::InvalidJson(e)) => {
                return Err(fail(QuarantineReason::InvalidJson, e.to_string()));
            }
            Err(NotAnObject::OtherValue) => {
                let reason = QuarantineReason::NotAnObject;
                return Err(fail(reason, reason_detail(reason)));
            }
        };
        // A subject is made of the agent's name and the event type, either of which may be a secret.
        let subject = subject.map(|s| self.redactor.redact(s));
        normalize::normalize(&raw, position, subject.as_deref()).map_err(|reason| fail(reason, reason_detail(reason)))
    }

    /// A line that is not an event, redacted. A secret may hide behind JSON escapes
    /// (`sk\u002d…`, `https:\/\/user:pw@…`): when decoding the escapes reveals one, the
    /// line is kept decoded and redacted.
    fn redact_raw(&self, raw: &str) -> String {
        if is_key_material(raw) {
            return KEY_MATERIAL.to_owned();
        }
        if raw.contains('\\') {
            let unescaped = unescape_json(raw);
            if let Cow::Owned(redacted) = self.redactor.redact(&unescaped) {
                return redacted;
            }
        }
        self.redactor.redact(raw).into_owned()
    }

    fn quarantine(
        &self,
        bytes: &[u8],
        raw_bytes: u64,
        source: &str,
        position: u64,
        reason: QuarantineReason,
        detail: String,
    ) -> QuarantinedLine {
        let kept = &bytes[..bytes.len().min(QUARANTINE_KEEP_BYTES)];
        let raw = String::from_utf8_lossy(kept);
        QuarantinedLine {
            source: source.to_owned(),
            position,
            reason,
            detail: self.redactor.redact(&detail).into_owned(),
            raw: self.redact_raw(&raw),
            raw_bytes,
            quarantined_at: chrono::Utc::now().timestamp_millis(),
        }
    }
}

/// What a quarantined line that looks like key material is replaced with.
const KEY_MATERIAL: &str = "[REDACTED_KEY_MATERIAL]";

/// Whether `line` is nothing but base64: most likely a body line of a key or certificate
/// pasted across lines, whose BEGIN and END lines are quarantined apart from it. Such a
/// line tells nothing about why it is not an event, and may be a secret.
fn is_key_material(line: &str) -> bool {
    let line = line.trim();
    line.len() >= 16 && line.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

/// `text` with JSON string escapes decoded wherever they appear; an escape that is not
/// one (or a lone surrogate) is kept as written or becomes U+FFFD.
fn unescape_json(text: &str) -> String {
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

fn reason_detail(reason: QuarantineReason) -> String {
    match reason {
        QuarantineReason::NotAnObject => "an event must be a JSON object".into(),
        QuarantineReason::MissingTimestamp => "no numeric `ts` or `timestamp`".into(),
        QuarantineReason::InvalidTimestamp => "timestamp outside 1970..9999".into(),
        QuarantineReason::MissingType => "no `type`".into(),
        other => other.to_string(),
    }
}
