//! Cortex patterns: the regex an analysis proposes, kept only if it compiles.

use super::{Classified, GeneratedOutput, single};
use crate::classify::ActionType;

/// Patterns that compile, and a warning for each that does not.
pub fn cortex_patterns(findings: &[Classified]) -> (Vec<GeneratedOutput>, Vec<String>) {
    let mut outputs = Vec::new();
    let mut warnings = Vec::new();
    for &item in findings {
        let pattern = as_regex(&item.1.action_text);
        match regex::Regex::new(&pattern) {
            Ok(_) => outputs.push(single(ActionType::CortexPattern, item, pattern)),
            Err(e) => warnings.push(format!(
                "cortex pattern of finding {} dropped: not a valid regex ({})",
                item.0.finding_id,
                e.to_string().lines().last().unwrap_or_default()
            )),
        }
    }
    (outputs, warnings)
}

/// `/body/flags` (JavaScript style) → `(?flags)body`; anything else as it is, trimmed.
fn as_regex(text: &str) -> String {
    let text = text.trim();
    if let Some(rest) = text.strip_prefix('/')
        && let Some(end) = rest.rfind('/')
    {
        let (body, flags) = (&rest[..end], &rest[end + 1..]);
        let flags: String = flags.chars().filter(|c| matches!(c, 'i' | 'm' | 's' | 'x' | 'u')).collect();
        if flags.len() == rest[end + 1..].len() {
            let flags: String = flags.chars().filter(|c| *c != 'u').collect();
            return if flags.is_empty() { body.to_owned() } else { format!("(?{flags}){body}") };
        }
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::as_regex;

    #[test]
    fn javascript_literals_become_rust_regexes() {
        assert_eq!(as_regex("/permission denied/i"), "(?i)permission denied");
        assert_eq!(as_regex(" /a+b/ "), "a+b");
        assert_eq!(as_regex("/usr/bin"), "/usr/bin");
        assert_eq!(as_regex("timeout after \\d+s"), "timeout after \\d+s");
    }
}
