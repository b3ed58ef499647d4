//! The artifact files: `soul-rules.md`, `governance-policies.json`, `cortex-patterns.json`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::GeneratedOutput;
use crate::classify::ActionType;
use crate::lake::LakeError;
use crate::lake::state::write_atomic;

pub const SOUL_RULES_FILE: &str = "soul-rules.md";
pub const POLICIES_FILE: &str = "governance-policies.json";
pub const PATTERNS_FILE: &str = "cortex-patterns.json";

/// Writes the three files into `dir` (each atomically); returns their paths.
pub fn write_artifacts(dir: &Path, outputs: &[GeneratedOutput]) -> Result<Vec<PathBuf>, LakeError> {
    let of = |t: ActionType| outputs.iter().filter(move |o| o.output_type == t);
    let mut soul = String::from("# Rules from trace analysis\n\nAdd these to the agent's SOUL.md.\n\n");
    for rule in of(ActionType::SoulRule) {
        soul.push_str(&format!("- {}\n", rule.content));
    }
    let policies: Vec<Value> = of(ActionType::GovernancePolicy).filter_map(|p| serde_json::from_str(&p.content).ok()).collect();
    let patterns: Vec<Value> = of(ActionType::CortexPattern)
        .map(|p| json!({"id": p.id, "pattern": p.content, "signal": p.signal, "confidence": p.confidence, "sourceFindings": p.source_findings}))
        .collect();
    let files = [
        (SOUL_RULES_FILE, soul),
        (POLICIES_FILE, pretty(&json!({ "policies": policies }))),
        (PATTERNS_FILE, pretty(&json!({ "patterns": patterns }))),
    ];
    files
        .into_iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            write_atomic(&path, text.as_bytes()).map(|()| path)
        })
        .collect()
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("JSON serializes") + "\n"
}
