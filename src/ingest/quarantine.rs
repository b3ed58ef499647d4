//! Input that cannot become an event: why, and where it came from.

use std::fmt;

/// Why a line was quarantined. The names are stable: they appear in summaries and in the
/// `quarantine` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuarantineReason {
    InvalidUtf8,
    TooLarge,
    InvalidJson,
    NotAnObject,
    MissingTimestamp,
    InvalidTimestamp,
    MissingType,
    /// OTLP traces that are not valid (a span without ids, ids of the wrong length).
    InvalidSpans,
}

impl QuarantineReason {
    pub const ALL: [QuarantineReason; 8] = [
        Self::InvalidUtf8,
        Self::TooLarge,
        Self::InvalidJson,
        Self::NotAnObject,
        Self::MissingTimestamp,
        Self::InvalidTimestamp,
        Self::MissingType,
        Self::InvalidSpans,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidUtf8 => "invalid_utf8",
            Self::TooLarge => "too_large",
            Self::InvalidJson => "invalid_json",
            Self::NotAnObject => "not_an_object",
            Self::MissingTimestamp => "missing_timestamp",
            Self::InvalidTimestamp => "invalid_timestamp",
            Self::MissingType => "missing_type",
            Self::InvalidSpans => "invalid_spans",
        }
    }
}

impl fmt::Display for QuarantineReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One quarantined input: the reason, where it was (file and line, or stream sequence),
/// the parser's message, and the (redacted, possibly truncated) raw text.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarantinedLine {
    pub source: String,
    pub position: u64,
    pub reason: QuarantineReason,
    pub detail: String,
    pub raw: String,
    /// Size of the original input in bytes (`raw` may be a prefix of it).
    pub raw_bytes: u64,
    /// When it was quarantined, ms since the epoch.
    pub quarantined_at: i64,
}

impl QuarantinedLine {
    /// Roughly what the line takes in memory.
    pub fn approx_bytes(&self) -> usize {
        64 + self.source.len() + self.detail.len() + self.raw.len()
    }
}
