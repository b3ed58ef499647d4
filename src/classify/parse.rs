//! Reading LLM answers leniently (spec §9.4): code fences and prose around the JSON are
//! tolerated, an unknown actionType becomes manual_review, a missing confidence 0.5.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionType {
    SoulRule,
    GovernancePolicy,
    CortexPattern,
    ManualReview,
}

impl ActionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionType::SoulRule => "soul_rule",
            ActionType::GovernancePolicy => "governance_policy",
            ActionType::CortexPattern => "cortex_pattern",
            ActionType::ManualReview => "manual_review",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::SoulRule, Self::GovernancePolicy, Self::CortexPattern, Self::ManualReview].into_iter().find(|t| t.as_str() == text)
    }
}

/// The deep analysis of one finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Classification {
    pub root_cause: String,
    pub action_type: ActionType,
    pub action_text: String,
    pub confidence: f64,
    pub model: String,
}

/// The triage tier's verdict on one finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TriageVerdict {
    pub keep: bool,
    /// A valid severity, when the model gave one.
    pub severity: Option<Severity>,
    pub reason: String,
    pub model: String,
}

/// The JSON object in an answer: the whole text, a fenced block, or the outermost `{…}`.
fn json_object(raw: &str) -> Option<serde_json::Map<String, Value>> {
    let text = raw.trim();
    let unfenced = text
        .strip_prefix("```")
        .map(|rest| rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric()))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(text);
    let candidates = [Some(unfenced), text.find('{').zip(text.rfind('}')).and_then(|(a, b)| text.get(a..=b))];
    candidates.into_iter().flatten().find_map(|c| match serde_json::from_str(c.trim()) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    })
}

/// A deep-analysis answer, or `None` when it lacks rootCause, actionType or actionText.
pub fn parse_classification(raw: &str, model: &str) -> Option<Classification> {
    let map = json_object(raw)?;
    let text = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
    let action = text("actionType")?;
    Some(Classification {
        root_cause: text("rootCause")?,
        action_type: ActionType::parse(&action).unwrap_or(ActionType::ManualReview),
        action_text: text("actionText")?,
        confidence: map.get("confidence").and_then(Value::as_f64).map_or(0.5, |c| c.clamp(0.0, 1.0)),
        model: model.to_owned(),
    })
}

/// A triage answer, or `None` when `keep` is missing.
pub fn parse_triage(raw: &str, model: &str) -> Option<TriageVerdict> {
    let map = json_object(raw)?;
    Some(TriageVerdict {
        keep: map.get("keep").and_then(Value::as_bool)?,
        severity: map.get("severity").and_then(Value::as_str).and_then(|s| s.parse().ok()),
        reason: map.get("reason").and_then(Value::as_str).unwrap_or_default().to_owned(),
        model: model.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_and_wrapped_answers_parse() {
        let body = r#"{"rootCause":"r","actionType":"soul_rule","actionText":"NEVER x","confidence":0.9}"#;
        for raw in [body.to_owned(), format!("```json\n{body}\n```"), format!("Here you go:\n{body}\nThanks")] {
            let c = parse_classification(&raw, "m").expect("parses");
            assert_eq!((c.action_type, c.confidence, c.model.as_str()), (ActionType::SoulRule, 0.9, "m"));
        }
    }

    #[test]
    fn missing_fields_and_bad_values() {
        assert!(parse_classification(r#"{"rootCause":"r","actionType":"soul_rule"}"#, "m").is_none());
        assert!(parse_classification("not json", "m").is_none());
        let c = parse_classification(r#"{"rootCause":"r","actionType":"reboot","actionText":"t"}"#, "m").unwrap();
        assert_eq!((c.action_type, c.confidence), (ActionType::ManualReview, 0.5));
        let t = parse_triage(r#"{"keep":true,"severity":"urgent"}"#, "m").unwrap();
        assert_eq!((t.keep, t.severity), (true, None));
        assert!(parse_triage(r#"{"severity":"low"}"#, "m").is_none());
    }
}
