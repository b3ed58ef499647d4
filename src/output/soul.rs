//! SOUL.md rules: findings whose fixes say the same thing become one rule line,
//! `<actionText> [N× beobachtet in Traces, Findings: id8, id8, id8]`.

use std::collections::BTreeSet;

use tracelake_udfs::similarity::levenshtein_ratio;

use super::{Classified, GeneratedOutput, output_id};
use crate::classify::ActionType;

/// Action texts at least this similar (after normalizing) are the same rule.
const SAME_RULE_SIMILARITY: f64 = 0.8;

pub fn soul_rules(findings: &[Classified]) -> Vec<GeneratedOutput> {
    let mut groups: Vec<(String, Vec<Classified>)> = Vec::new();
    for &item in findings {
        let key = normalize(&item.1.action_text);
        match groups.iter_mut().find(|(k, _)| levenshtein_ratio(k, &key) >= SAME_RULE_SIMILARITY) {
            Some((_, group)) => group.push(item),
            None => groups.push((key, vec![item])),
        }
    }
    groups
        .into_iter()
        .map(|(key, group)| {
            let ids: Vec<String> = group.iter().map(|(f, _)| f.finding_id.clone()).collect();
            let agents: BTreeSet<String> = group.iter().map(|(f, _)| f.agent.clone()).collect();
            let confidence = group.iter().map(|(_, c)| c.confidence).sum::<f64>() / group.len() as f64;
            GeneratedOutput {
                id: output_id(ActionType::SoulRule, &key),
                output_type: ActionType::SoulRule,
                content: rule_line(&group[0].1.action_text, group.len(), &ids),
                observation_count: group.len(),
                confidence,
                signal: group[0].0.signal.clone(),
                agents: agents.into_iter().collect(),
                source_findings: ids,
            }
        })
        .collect()
}

pub fn rule_line(action_text: &str, count: usize, finding_ids: &[String]) -> String {
    let refs: Vec<&str> = finding_ids.iter().take(3).map(|id| id.get(..8).unwrap_or(id)).collect();
    format!("{} [{count}× beobachtet in Traces, Findings: {}]", action_text.trim(), refs.join(", "))
}

/// Lower case, letters and digits only, single spaces.
fn normalize(text: &str) -> String {
    let cleaned: String = text.to_lowercase().chars().map(|c| if c.is_alphanumeric() { c } else { ' ' }).collect();
    cleaned.split_whitespace().collect::<Vec<_>>().join(" ")
}
