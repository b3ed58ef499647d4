//! Fix artifacts from classified findings (spec §10): SOUL.md rules, governance policies
//! and cortex patterns; their files; and how well earlier rules worked.

pub mod brief;
pub mod effectiveness;
pub mod factors;
pub mod files;
mod logistic;
pub mod outcome_source;
pub mod patterns;
pub mod policy;
pub mod risk;
pub mod score;
pub mod soul;
pub mod stats;
pub mod table;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::classify::{ActionType, Classification};
use crate::model::Finding;

/// One generated artifact. Its id depends only on what it says, so the same rule produced
/// again in a later run is the same rule, and its effectiveness is tracked from the first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedOutput {
    pub id: String,
    #[serde(rename = "type")]
    pub output_type: ActionType,
    pub content: String,
    pub source_findings: Vec<String>,
    pub observation_count: usize,
    pub confidence: f64,
    /// The signal of the source findings (the first one's, when they differ).
    pub signal: String,
    /// The agents whose findings it came from, sorted.
    pub agents: Vec<String>,
}

/// A finding with the deep analysis it got.
pub type Classified<'a> = (&'a Finding, &'a Classification);

/// Every artifact from `classified`, and warnings about what was dropped.
pub fn generate_outputs(classified: &[Classified]) -> (Vec<GeneratedOutput>, Vec<String>) {
    let of = |t: ActionType| -> Vec<Classified> { classified.iter().filter(|(_, c)| c.action_type == t).copied().collect() };
    let mut outputs = soul::soul_rules(&of(ActionType::SoulRule));
    outputs.extend(policy::governance_policies(&of(ActionType::GovernancePolicy)));
    let (patterns, warnings) = patterns::cortex_patterns(&of(ActionType::CortexPattern));
    outputs.extend(patterns);
    (outputs, warnings)
}

fn output_id(output_type: ActionType, key: &str) -> String {
    let digest = Sha256::digest(format!("{}|{key}", output_type.as_str()));
    hex::encode(&digest[..8])
}

/// A one-finding output.
fn single(output_type: ActionType, (finding, class): Classified, content: String) -> GeneratedOutput {
    GeneratedOutput {
        id: output_id(output_type, &content),
        output_type,
        content,
        source_findings: vec![finding.finding_id.clone()],
        observation_count: 1,
        confidence: class.confidence,
        signal: finding.signal.clone(),
        agents: vec![finding.agent.clone()],
    }
}
