//! From raw input to normalized, redacted events: line reading, decoding, normalization,
//! and quarantine of what cannot be an event.

pub mod conversation;
pub mod lines;
pub mod nats;
pub mod normalize;
pub mod otel;
pub mod outcomes;
pub mod quarantine;
pub mod raw;
pub mod time;
pub mod transcript;

use std::borrow::Cow;
use std::sync::Arc;

use crate::model::Event;
use crate::privacy::{Pii, PiiKind};
use crate::redact::{Redactor, map_json_strings, redact_json_text, unescape_json};
use lines::Line;
pub use quarantine::{QuarantineReason, QuarantinedLine};
use raw::{NotAnObject, RawObject};

/// Default upper bound for one raw event (a JSONL line or a stream message).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// How much of a quarantined line is kept.
const QUARANTINE_KEEP_BYTES: usize = 64 * 1024;

/// The events of one line (or message) of input, borrowing from it.
#[derive(Debug)]
// Returned once per line and consumed at once: boxing the event would cost an allocation
// per line.
#[allow(clippy::large_enum_variant)]
pub enum LineEvents<'a> {
    /// An OpenClaw event.
    One(Event<'a>),
    /// A chat transcript's events, complete.
    Many(Vec<Event<'static>>),
    /// The spans of a line, whose events [`otel::Assembler`] puts together with other lines'.
    Spans(LineSpans),
}

/// The event candidates of the spans of the line at `position`.
#[derive(Debug)]
pub struct LineSpans {
    pub position: u64,
    pub candidates: Vec<otel::Candidate>,
}

impl LineEvents<'_> {
    /// The events owning their texts, to outlive the line.
    fn into_owned(self) -> LineEvents<'static> {
        match self {
            Self::One(event) => LineEvents::One(event.into_owned()),
            Self::Many(events) => LineEvents::Many(events),
            Self::Spans(spans) => LineEvents::Spans(spans),
        }
    }
}

impl LineSpans {
    /// The events these spans complete, put together by `assembler` with other lines'.
    pub fn events(self, assembler: &mut otel::Assembler) -> Vec<Event<'static>> {
        assembler.add(self.position, self.candidates)
    }
}

/// The sequence of the `index`-th event of a line (or message) at `position` that holds
/// several: the line number shifted left 20 bits, plus the index, so that events keep
/// their order in the line and after it.
pub fn sequence_in_line(position: u64, index: u64) -> u64 {
    (position << 20) | index.min((1 << 20) - 1)
}

/// Turns raw event bytes into events, redacting everything (and replacing personal data,
/// when asked to) before it leaves this type.
#[derive(Debug, Clone)]
pub struct Decoder {
    redactor: Redactor,
    pii: Option<Arc<Pii>>,
    /// When decoding began (ms): the time of transcripts that carry none, and what bounds
    /// plausible times.
    now_ms: i64,
}

impl Decoder {
    pub fn new(redactor: Redactor) -> Self {
        Self { redactor, pii: None, now_ms: chrono::Utc::now().timestamp_millis() }
    }

    /// Replaces personal data too (`privacy.pii`).
    pub fn with_pii(mut self, pii: Option<Arc<Pii>>) -> Self {
        self.pii = pii;
        self
    }

    /// What personal data was replaced so far, per kind.
    pub fn pii_counts(&self) -> Vec<(PiiKind, u64)> {
        self.pii.as_ref().map(|p| p.counts()).unwrap_or_default()
    }

    /// `text` with secrets redacted and personal data replaced.
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let redacted = self.redactor.redact(text);
        match &self.pii {
            Some(pii) => match pii.scrub(&redacted) {
                Cow::Borrowed(_) => redacted,
                Cow::Owned(scrubbed) => Cow::Owned(scrubbed),
            },
            None => redacted,
        }
    }

    /// When decoding began, ms since the epoch.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// Decodes one line of a file: an OpenClaw event, OTLP traces or a chat transcript.
    pub fn decode_events<'a>(&self, line: &'a Line, source: &str, position: u64) -> Result<LineEvents<'a>, QuarantinedLine> {
        let bytes = match line {
            Line::Complete(bytes) => bytes,
            too_long @ Line::TooLong { .. } => return self.decode_line(too_long, source, position).map(LineEvents::One),
        };
        let prepared =
            self.prepare(bytes).map_err(|(reason, detail)| self.quarantine(bytes, bytes.len() as u64, source, position, reason, detail))?;
        match prepared {
            Cow::Borrowed(text) => self.decode_text(bytes, text, source, position),
            Cow::Owned(text) => self.decode_text(bytes, &text, source, position).map(LineEvents::into_owned),
        }
    }

    /// Decodes `text`, the prepared text of the line `bytes`.
    fn decode_text<'t>(&self, bytes: &[u8], text: &'t str, source: &str, position: u64) -> Result<LineEvents<'t>, QuarantinedLine> {
        let fail = |reason, detail: String| self.quarantine(bytes, bytes.len() as u64, source, position, reason, detail);
        let shape = match RawObject::parse(text) {
            Ok(raw) if raw.contains_key("resourceSpans") => Shape::Traces,
            Ok(raw) if raw.contains_key("messages") && !raw.contains_key("type") => Shape::Transcript,
            Err(NotAnObject::OtherValue) if text.trim_start().starts_with('[') => Shape::Transcript,
            parsed => return self.decode_parsed(bytes, parsed, source, position, None).map(LineEvents::One),
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| fail(QuarantineReason::InvalidJson, e.to_string()))?;
        match shape {
            Shape::Traces => {
                let spans = otel::spans_from_json(&value).map_err(|e| fail(QuarantineReason::InvalidSpans, e.to_string()))?;
                otel::check_times(&spans, self.now_ms).map_err(|e| fail(QuarantineReason::InvalidTimestamp, e))?;
                Ok(LineEvents::Spans(LineSpans { position, candidates: spans.iter().flat_map(otel::span_events).collect() }))
            }
            Shape::Transcript if transcript::is_transcript(&value) => transcript::transcript_events(&value, text, position, self.now_ms)
                .map(LineEvents::Many)
                .map_err(|reason| fail(reason, reason_detail(reason))),
            Shape::Transcript => Err(fail(QuarantineReason::NotAnObject, reason_detail(QuarantineReason::NotAnObject))),
        }
    }

    /// Decodes one line read from `source` at `position` (1-based line number or stream sequence).
    pub fn decode_line<'a>(&self, line: &'a Line, source: &str, position: u64) -> Result<Event<'a>, QuarantinedLine> {
        match line {
            Line::Complete(bytes) => self.decode(bytes, source, position, None),
            Line::TooLong { prefix, len } => Err(self.quarantine(
                prefix,
                *len,
                source,
                position,
                QuarantineReason::TooLarge,
                format!("event is {len} bytes, over the limit"),
            )),
        }
    }

    /// Decodes one raw event (a complete line or message body); the event borrows the
    /// texts it passes on unchanged from `bytes` and `subject`.
    pub fn decode<'a>(&self, bytes: &'a [u8], source: &str, position: u64, subject: Option<&'a str>) -> Result<Event<'a>, QuarantinedLine> {
        let text =
            self.prepare(bytes).map_err(|(reason, detail)| self.quarantine(bytes, bytes.len() as u64, source, position, reason, detail))?;
        self.decode_prepared(bytes, text, source, position, subject)
    }

    /// Decodes `text`, the prepared text of `bytes`. A text the redaction changed is not
    /// the input's: the event owns its texts then.
    fn decode_prepared<'a>(
        &self,
        bytes: &'a [u8],
        text: Cow<'a, str>,
        source: &str,
        position: u64,
        subject: Option<&'a str>,
    ) -> Result<Event<'a>, QuarantinedLine> {
        match text {
            Cow::Borrowed(text) => self.decode_parsed(bytes, RawObject::parse(text), source, position, subject),
            Cow::Owned(text) => self.decode_parsed(bytes, RawObject::parse(&text), source, position, subject).map(Event::into_owned),
        }
    }

    /// The text of raw bytes, redacted.
    fn prepare<'a>(&self, bytes: &'a [u8]) -> Result<Cow<'a, str>, (QuarantineReason, String)> {
        // A byte-order mark, as editors on some systems write before the first line.
        let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|e| (QuarantineReason::InvalidUtf8, e.to_string()))?;
        Ok(self.scrub_json(text))
    }

    /// The JSON text `text` with secrets redacted and personal data replaced in every string.
    pub fn scrub_json<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let redacted = if self.redactor.may_match_json(text) { redact_json_text(&self.redactor, text) } else { Cow::Borrowed(text) };
        match &self.pii {
            Some(pii) if pii.may_match(&redacted) => match map_json_strings(&redacted, |s| pii.scrub(s)) {
                Cow::Borrowed(_) => redacted,
                Cow::Owned(scrubbed) => Cow::Owned(scrubbed),
            },
            _ => redacted,
        }
    }

    /// Normalizes `parsed`, the object parsed from the redacted text of `bytes`.
    fn decode_parsed<'t>(
        &self,
        bytes: &[u8],
        parsed: Result<RawObject<'t>, NotAnObject>,
        source: &str,
        position: u64,
        subject: Option<&'t str>,
    ) -> Result<Event<'t>, QuarantinedLine> {
        let fail = |reason, detail: String| self.quarantine(bytes, bytes.len() as u64, source, position, reason, detail);
        let raw = match parsed {
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
        let subject = subject.map(|s| self.scrub(s));
        normalize::normalize(&raw, position, subject, self.now_ms).map_err(|reason| fail(reason, reason_detail(reason)))
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
            if let Cow::Owned(redacted) = self.scrub(&unescaped) {
                return redacted;
            }
        }
        self.scrub(raw).into_owned()
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
        let raw = if (kept.len() as u64) < raw_bytes { without_cut_word(&raw).to_owned() } else { raw.into_owned() };
        QuarantinedLine {
            source: source.to_owned(),
            position,
            reason,
            detail: self.scrub(&detail).into_owned(),
            raw: self.redact_raw(&raw),
            raw_bytes,
            quarantined_at: chrono::Utc::now().timestamp_millis(),
        }
    }
}

/// A text cut off by a size limit without its last word: a secret cut in two is no longer
/// one that a pattern knows, and its first part must not be kept. A word here is a run of
/// the characters tokens, keys, URLs and JSON escapes are made of.
fn without_cut_word(text: &str) -> &str {
    let text = text.trim_end_matches('\u{fffd}');
    text.trim_end_matches(|c: char| c.is_alphanumeric() || "_-.:/@+=%~\\".contains(c))
}

/// The shapes of input other than an OpenClaw event.
enum Shape {
    Traces,
    Transcript,
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

fn reason_detail(reason: QuarantineReason) -> String {
    match reason {
        QuarantineReason::NotAnObject => "an event must be a JSON object".into(),
        QuarantineReason::MissingTimestamp => {
            "no `ts` or `timestamp` that reads as a time (epoch seconds, milliseconds or microseconds, or RFC 3339)".into()
        }
        QuarantineReason::InvalidTimestamp => {
            "the time is before 2000 or more than a day ahead (epoch seconds, milliseconds and microseconds are told apart by magnitude)"
                .into()
        }
        QuarantineReason::MissingType => "no `type`".into(),
        other => other.to_string(),
    }
}
