//! The rows of `cortex_messages`: what the cortex patterns find in the messages an
//! analysis sees first.

use super::sql::{CORTEX_MESSAGES, fill_template};

/// The query of the `cortex_messages` rows of `analysis_events`' messages: those new to
/// the analysis (its `fresh` column) when `fresh_only`, else all of them.
pub fn cortex_messages_sql(fresh_only: bool) -> String {
    fill_template(CORTEX_MESSAGES, &[("fresh", if fresh_only { "AND fresh" } else { "" })])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_read_are_those_new_to_the_analysis() {
        let fresh = cortex_messages_sql(true);
        assert!(fresh.contains("cortex_matches(content) AND fresh"), "{fresh}");
        let all = cortex_messages_sql(false);
        assert!(!all.contains("${") && !all.contains("AND fresh"), "{all}");
    }
}
