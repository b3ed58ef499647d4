//! Governance policies in the openclaw-governance `Policy` type, and the check
//! that every generated policy is one: known hooks, known condition types, audit effect.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Classified, GeneratedOutput, single};
use crate::classify::ActionType;

pub const VALID_HOOKS: [&str; 4] = ["before_tool_call", "message_sending", "before_agent_start", "session_start"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    pub id: String,
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub scope: Scope,
    pub rules: Vec<Rule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scope {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_agents: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub conditions: Vec<Condition>,
    pub effect: Effect,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_trust: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_trust: Option<String>,
}

/// Conditions by `type`; the fields of each are checked by openclaw-governance itself,
/// so only the ones generated here are spelled out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Condition {
    Tool {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        params: Option<Value>,
    },
    Agent {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    Time(#[serde(default)] serde_json::Map<String, Value>),
    Context(#[serde(default)] serde_json::Map<String, Value>),
    Risk(#[serde(default)] serde_json::Map<String, Value>),
    Frequency {
        max_count: u64,
        window_seconds: u64,
    },
    Any {
        conditions: Vec<Condition>,
    },
    Not {
        condition: Box<Condition>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase", deny_unknown_fields)]
pub enum Effect {
    Allow,
    Deny {
        reason: String,
    },
    Audit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        level: Option<String>,
    },
    #[serde(rename = "2fa")]
    TwoFactor,
}

impl Policy {
    /// Parses and checks a policy as openclaw-governance would load it.
    pub fn validate_json(json: &str) -> Result<Policy, String> {
        let policy: Policy = serde_json::from_str(json).map_err(|e| format!("not a Policy: {e}"))?;
        policy.validate()?;
        Ok(policy)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.id.trim().is_empty() || self.name.trim().is_empty() || self.version.trim().is_empty() {
            return Err("id, name and version must not be empty".into());
        }
        for hook in self.scope.hooks.iter().flatten() {
            if !VALID_HOOKS.contains(&hook.as_str()) {
                return Err(format!("unknown hook `{hook}` (valid: {})", VALID_HOOKS.join(", ")));
            }
        }
        if self.rules.is_empty() {
            return Err("a policy needs at least one rule".into());
        }
        for rule in &self.rules {
            if rule.id.trim().is_empty() {
                return Err("every rule needs an id".into());
            }
            if let Effect::Audit { level: Some(level) } = &rule.effect
                && !["minimal", "standard", "verbose"].contains(&level.as_str())
            {
                return Err(format!("unknown audit level `{level}`"));
            }
        }
        Ok(())
    }
}

/// Which hook sees the behaviour a signal is about.
pub fn hooks_for_signal(signal: &str) -> Vec<String> {
    let hook = match signal {
        "SIG-DOOM-LOOP" | "SIG-TOOL-FAIL" | "SIG-REPEAT-FAIL" => "before_tool_call",
        _ => "message_sending",
    };
    vec![hook.to_owned()]
}

/// One audit policy per finding: the failing tool where the evidence names one, else the agent.
pub fn governance_policies(findings: &[Classified]) -> Vec<GeneratedOutput> {
    findings
        .iter()
        .map(|&(finding, class)| {
            let short = finding.finding_id.get(..8).unwrap_or(&finding.finding_id);
            let slug: String = finding.signal.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
            let evidence: Value = serde_json::from_str(&finding.evidence).unwrap_or(Value::Null);
            let hooks = hooks_for_signal(&finding.signal);
            let condition = match evidence.get("toolName").and_then(Value::as_str) {
                Some(tool) if hooks[0] == "before_tool_call" => Condition::Tool { name: Some(tool.to_owned()), params: None },
                _ => Condition::Agent { id: Some(finding.agent.clone()) },
            };
            let policy = Policy {
                id: format!("trace-gen-{slug}-{short}"),
                name: format!("Auto: {}", finding.summary.chars().take(60).collect::<String>()),
                version: "1.0.0".into(),
                description: Some(format!(
                    "Auto-generated from trace analysis finding {}. Root cause: {}",
                    finding.finding_id, class.root_cause
                )),
                scope: Scope { agents: Some(vec![finding.agent.clone()]), hooks: Some(hooks), ..Scope::default() },
                rules: vec![Rule {
                    id: format!("rule-{short}"),
                    description: Some(class.action_text.clone()),
                    conditions: vec![condition],
                    effect: Effect::Audit { level: Some("standard".into()) },
                    min_trust: None,
                    max_trust: None,
                }],
                enabled: None,
                priority: None,
            };
            let json = serde_json::to_string_pretty(&policy).expect("a policy serializes");
            single(ActionType::GovernancePolicy, (finding, class), json)
        })
        .collect()
}
