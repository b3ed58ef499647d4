//! Times as agents write them, read as epoch milliseconds.
//!
//! A number is taken by its magnitude: below 10^11 it counts seconds (10^11 seconds is the
//! year 5138), below 10^14 milliseconds, below 10^17 microseconds, beyond that
//! nanoseconds; a fraction is kept to the millisecond. A text is RFC 3339
//! (`2026-01-05T10:00:00Z`, `2026-01-05 10:00:00+01:00`) or such a number written out.
//! A time before 2000 or more than a day ahead of the clock is not plausible: it is
//! almost always a unit read wrongly or a default value, and writing it would put the
//! event in a partition of 1970.

use chrono::{DateTime, Utc};

/// 2000-01-01T00:00:00Z.
const EARLIEST_MS: i64 = 946_684_800_000;
const DAY_MS: i64 = 86_400_000;

/// Epoch milliseconds of a number of seconds, milliseconds, microseconds or nanoseconds.
pub fn number_ms(n: f64) -> Option<i64> {
    if !n.is_finite() {
        return None;
    }
    let magnitude = n.abs();
    let ms = if magnitude < 1e11 {
        n * 1e3
    } else if magnitude < 1e14 {
        n
    } else if magnitude < 1e17 {
        n / 1e3
    } else {
        n / 1e6
    };
    Some(ms as i64)
}

/// Epoch milliseconds of an RFC 3339 text or a number written as text.
pub fn text_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(n) = text.parse::<f64>() {
        return number_ms(n);
    }
    DateTime::parse_from_rfc3339(text)
        .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z"))
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Whether `ms` is a time an event can have taken place at: from 2000 on, and at most a
/// day after `now_ms` (or after the clock now, for a process that runs for days).
pub fn is_plausible(ms: i64, now_ms: i64) -> bool {
    ms >= EARLIEST_MS && (ms <= now_ms.saturating_add(DAY_MS) || ms <= Utc::now().timestamp_millis().saturating_add(DAY_MS))
}

/// `ms` as an RFC 3339 text for messages, or the number when it is out of chrono's range.
pub fn display(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAN_5: i64 = 1_767_607_203_000;

    #[test]
    fn numbers_are_read_by_their_magnitude() {
        assert_eq!(number_ms(1_767_607_203.0), Some(JAN_5), "seconds");
        assert_eq!(number_ms(1_767_607_203.25), Some(JAN_5 + 250), "seconds with a fraction");
        assert_eq!(number_ms(JAN_5 as f64), Some(JAN_5), "milliseconds");
        assert_eq!(number_ms(JAN_5 as f64 * 1e3), Some(JAN_5), "microseconds");
        assert_eq!(number_ms(JAN_5 as f64 * 1e6), Some(JAN_5), "nanoseconds");
        assert_eq!(number_ms(f64::NAN), None);
    }

    #[test]
    fn texts_are_rfc_3339_or_numbers() {
        assert_eq!(text_ms("2026-01-05T10:00:03Z"), Some(JAN_5));
        assert_eq!(text_ms("2026-01-05T11:00:03.000+01:00"), Some(JAN_5));
        assert_eq!(text_ms("2026-01-05 10:00:03+00:00"), Some(JAN_5));
        assert_eq!(text_ms("1767607203"), Some(JAN_5));
        assert_eq!(text_ms("yesterday"), None);
    }

    #[test]
    fn times_before_2000_or_beyond_tomorrow_are_implausible() {
        assert!(is_plausible(JAN_5, JAN_5));
        assert!(is_plausible(JAN_5 + DAY_MS - 1, JAN_5), "clocks differ a little");
        assert!(!is_plausible(1_767_607_203, JAN_5), "seconds read as milliseconds: 1970");
        assert!(!is_plausible(EARLIEST_MS - 1, JAN_5));
        assert!(!is_plausible(Utc::now().timestamp_millis() + 2 * DAY_MS, JAN_5));
        assert_eq!(display(JAN_5), "2026-01-05T10:00:03.000Z");
    }
}
