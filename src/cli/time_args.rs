//! Durations (`500ms`, `30s`, `15m`, `24h`, `7d`, `2w`) and points in time (RFC 3339,
//! `YYYY-MM-DD`, epoch seconds or milliseconds, or a duration meaning "that long ago") on
//! the command line.

use std::time::Duration;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use tracelake::ingest::time::{display as ms_display, is_plausible, number_ms};
use tracelake::lake::history::AsOf;

/// A duration of more than zero (an interval: `--every`, `--window`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    match span(text)? {
        Duration::ZERO => Err("the duration must be more than zero".into()),
        d => Ok(d),
    }
}

/// A number with a unit: ms, s, m, h (also without a unit), d or w.
fn span(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| format!("{text:?} is not a duration like 30s, 15m, 24h, 7d or 2w"))?;
    let unit_ms: u64 = match unit.trim() {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" | "" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        other => return Err(format!("{text:?}: unknown unit {other:?}; use ms, s, m, h, d or w")),
    };
    n.checked_mul(unit_ms).map(Duration::from_millis).ok_or_else(|| format!("{text:?} is longer than any lake is old"))
}

/// `interval` as `--every` takes it: `90s`, `15m`, `24h`, `500ms`.
pub fn format_duration(interval: Duration) -> String {
    let ms = interval.as_millis();
    match ms {
        ms if ms >= 3_600_000 && ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms >= 60_000 && ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// A point in time as the CLI prints it: `2026-01-05 08:00:00 UTC`.
pub fn format_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// Milliseconds since the epoch as [`format_time`] prints them.
pub fn format_time_ms(ms: i64) -> String {
    format_time(DateTime::from_timestamp_millis(ms).unwrap_or_default())
}

/// Milliseconds since the epoch of `text`: RFC 3339, a UTC date, epoch seconds or
/// milliseconds (told apart by magnitude), or a duration ago (`0s` is now).
pub fn parse_time(text: &str) -> Result<i64, String> {
    let text = text.trim();
    // Bare digits are a time since the epoch, not hours ago: 1767600000 is January 2026.
    if text.len() >= 9 && text.bytes().all(|b| b.is_ascii_digit()) {
        let ms = text.parse::<f64>().ok().and_then(number_ms).unwrap_or(0);
        if !is_plausible(ms, Utc::now().timestamp_millis()) {
            return Err(format!("{text} read as epoch seconds or milliseconds is {}: not a time traces come from", ms_display(ms)));
        }
        return Ok(ms);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.timestamp_millis());
    }
    // As SQL writes a timestamp: a space for the `T`, UTC without a zone.
    if let Ok(t) = NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S") {
        return Ok(t.and_utc().timestamp_millis());
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).expect("midnight").and_utc().timestamp_millis());
    }
    let duration = text.strip_suffix("ago").map_or(text, str::trim_end);
    let now = Utc::now().timestamp_millis();
    match span(duration) {
        Ok(ago) if i64::try_from(ago.as_millis()).is_ok_and(|ago| ago <= now) => Ok(now - ago.as_millis() as i64),
        Ok(_) => Err(format!("{text:?} ago is before 1970")),
        Err(_) => Err(format!(
            "{text:?} is not a time: use RFC 3339 (2026-01-05T08:00:00Z), a UTC timestamp (2026-01-05 08:00:00), a date (2026-01-05), epoch seconds (1767600000) or a duration ago (24h, 7d, 2w, or 24h ago)"
        )),
    }
}

/// A point in the lake's past for `--as-of`: a revision (`12`, as `status` prints it), or
/// a time as [`parse_time`] reads it.
pub fn parse_as_of(text: &str) -> Result<AsOf, String> {
    let text = text.trim();
    if !text.is_empty() && text.len() < 9 && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().map(AsOf::Revision).map_err(|e| format!("{text:?}: {e}"));
    }
    parse_time(text).map(AsOf::Time).map_err(|e| format!("{e}; or a revision, as `tracelake status` prints it"))
}

/// A duration that may be zero (`--retain 0s`).
pub fn parse_span(text: &str) -> Result<Duration, String> {
    span(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert!(parse_duration("0s").is_err(), "an interval of nothing");
        assert!(parse_duration("3 weeks").is_err());
    }

    #[test]
    fn durations_print_as_they_are_given() {
        for text in ["24h", "15m", "90s", "1500ms", "2d"] {
            let printed = format_duration(parse_duration(text).unwrap());
            assert_eq!(parse_duration(&printed), parse_duration(text), "{text} printed as {printed}");
        }
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("2026-01-05"), Ok(1_767_571_200_000));
        assert_eq!(parse_time("2026-01-05T08:00:00Z"), Ok(1_767_600_000_000));
        let ago = parse_time("1h").unwrap();
        assert!((Utc::now().timestamp_millis() - ago - 3_600_000).abs() < 5_000);
        // As `--help` writes it, and as SQL writes a timestamp.
        let ago = parse_time("24h ago").unwrap();
        assert!((Utc::now().timestamp_millis() - ago - 86_400_000).abs() < 5_000);
        assert_eq!(parse_time("2026-01-05 08:00:00"), Ok(1_767_600_000_000));
        assert!(parse_time("yesterday").is_err());
    }

    #[test]
    fn times_that_used_to_mislead() {
        assert_eq!(parse_time("1767600000"), Ok(1_767_600_000_000), "epoch seconds, not hours ago");
        assert_eq!(parse_time("1767600000000"), Ok(1_767_600_000_000), "epoch milliseconds");
        assert!(parse_time("100000000").unwrap_err().contains("1973"), "{:?}", parse_time("100000000"));
        let week = Utc::now().timestamp_millis() - parse_time("1w").unwrap();
        assert!((week - 7 * 86_400_000).abs() < 5_000);
        assert!((Utc::now().timestamp_millis() - parse_time("0s").unwrap()).abs() < 5_000, "0s ago is now");
        assert!(parse_time("99999999999999h").is_err());
    }

    #[test]
    fn as_of_takes_a_revision_or_a_time() {
        assert_eq!(parse_as_of("12"), Ok(AsOf::Revision(12)));
        assert_eq!(parse_as_of("2026-01-05"), Ok(AsOf::Time(1_767_571_200_000)));
        assert_eq!(parse_as_of("1767571200"), Ok(AsOf::Time(1_767_571_200_000)), "epoch seconds are a time");
        assert!(parse_as_of("yesterday").unwrap_err().contains("or a revision, as `tracelake status` prints it"));
    }
}
