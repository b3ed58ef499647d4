//! The rows of `cortex_messages`: what the cortex patterns find in the messages an
//! analysis sees first.

use super::sql::{CORTEX_MESSAGES, time_literal};

/// The query of the `cortex_messages` rows of `analysis_events`' messages newer than
/// `after_ms` (`None`: all of them).
pub fn cortex_messages_sql(after_ms: Option<i64>) -> String {
    let window = after_ms.map(|after| format!("AND ts > {}", time_literal(after))).unwrap_or_default();
    CORTEX_MESSAGES.replace("${time_window}", &window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_read_are_those_after_the_last_analysis() {
        let after = cortex_messages_sql(Some(86_400_000));
        assert!(after.contains("AND ts > '1970-01-02T00:00:00+00:00'"), "{after}");
        let all = cortex_messages_sql(None);
        assert!(!all.contains("${") && !all.contains("AND ts >"), "{all}");
    }
}
