//! From raw input to normalized, redacted events: line reading, decoding, normalization,
//! and quarantine of what cannot be an event.

pub mod event;
pub mod lines;
pub mod nats;
pub mod normalize;
pub mod outcomes;
pub mod quarantine;
pub mod raw;

use serde_json::Value;

use crate::redact::{Redactor, redact_json};
pub use event::{Event, Schema};
use lines::Line;
use raw::{NotAnObject, RawObject};
pub use quarantine::{QuarantineReason, QuarantinedLine};

/// Default upper bound for one raw event (a JSONL line or a stream message).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

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
    pub fn decode(
        &self,
        bytes: &[u8],
        source: &str,
        position: u64,
        subject: Option<&str>,
    ) -> Result<Event, QuarantinedLine> {
        let fail = |reason, detail: String| {
            self.quarantine(bytes, bytes.len() as u64, source, position, reason, detail)
        };
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => return Err(fail(QuarantineReason::InvalidUtf8, e.to_string())),
        };
        let redacted;
        let text = if self.redactor.may_match_json(text) {
            let mut value: Value = match serde_json::from_str(text) {
                Ok(v) => v,
                Err(e) => return Err(fail(QuarantineReason::InvalidJson, e.to_string())),
            };
            redact_json(&self.redactor, &mut value);
            redacted = serde_json::to_string(&value).expect("a JSON value always serializes");
            redacted.as_str()
        } else {
            text
        };
        let raw = match RawObject::parse(text) {
            Ok(raw) => raw,
            Err(NotAnObject::InvalidJson(e)) => return Err(fail(QuarantineReason::InvalidJson, e.to_string())),
            Err(NotAnObject::OtherValue) => {
                let reason = QuarantineReason::NotAnObject;
                return Err(fail(reason, reason_detail(reason)));
            }
        };
        normalize::normalize(&raw, position, subject).map_err(|reason| fail(reason, reason_detail(reason)))
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
            detail,
            raw: self.redactor.redact(&raw).into_owned(),
            raw_bytes,
            quarantined_at: chrono::Utc::now().timestamp_millis(),
        }
    }
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
