//! Fix artifacts (spec §14.3 output-generator tests) and the governance Policy check.

use serde_json::json;
use tracelake::classify::{ActionType, Classification};
use tracelake::model::{Finding, Severity};
use tracelake::output::policy::{Policy, VALID_HOOKS};
use tracelake::output::{GeneratedOutput, generate_outputs};

fn finding(id: &str, signal: &str, agent: &str) -> Finding {
    Finding {
        finding_id: id.into(),
        run_id: "run-1".into(),
        signal: signal.into(),
        severity: Severity::High,
        chain_id: "c1".into(),
        agent: agent.into(),
        session: "s1".into(),
        start_idx: 0,
        end_idx: 3,
        start_event_id: "e1".into(),
        end_event_id: "e4".into(),
        occurred_at: 0,
        detected_at: 0,
        summary: format!("{signal} in a chain"),
        evidence: json!({"toolName": "exec", "error": "permission denied"}).to_string(),
        fingerprint: None,
    }
}

fn class(action_type: ActionType, text: &str, confidence: f64) -> Classification {
    Classification { root_cause: "the agent did not check".into(), action_type, action_text: text.into(), confidence, model: "m".into() }
}

fn generate(items: &[(Finding, Classification)]) -> (Vec<GeneratedOutput>, Vec<String>) {
    let refs: Vec<(&Finding, &Classification)> = items.iter().map(|(f, c)| (f, c)).collect();
    generate_outputs(&refs)
}

const RULE: &str = "NEVER claim success without checking the tool result — instead verify it first.";

#[test]
fn soul_rule_has_the_upstream_line_format_with_count_and_ids() {
    let items = vec![(finding("aaaaaaaa1111", "SIG-HALLUCINATION", "main"), class(ActionType::SoulRule, RULE, 0.9))];
    let (outputs, _) = generate(&items);
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].content, format!("{RULE} [1× beobachtet in Traces, Findings: aaaaaaaa]"));
    assert_eq!(outputs[0].observation_count, 1);
    assert_eq!(outputs[0].source_findings, vec!["aaaaaaaa1111".to_owned()]);
}

#[test]
fn similar_soul_rules_are_grouped_with_averaged_confidence() {
    let items = vec![
        (finding("aaaaaaaa1111", "SIG-HALLUCINATION", "main"), class(ActionType::SoulRule, RULE, 0.9)),
        (finding("bbbbbbbb2222", "SIG-HALLUCINATION", "ops"), class(ActionType::SoulRule, &RULE.to_uppercase().replace('.', "!"), 0.7)),
        (
            finding("cccccccc3333", "SIG-HALLUCINATION", "main"),
            class(ActionType::SoulRule, "NEVER claim success without checking the tool result — instead verify it.", 0.5),
        ),
        (finding("dddddddd4444", "SIG-HALLUCINATION", "main"), class(ActionType::SoulRule, RULE, 0.6)),
        (finding("eeeeeeee5555", "SIG-CORRECTION", "main"), class(ActionType::SoulRule, "Ask before deleting files.", 0.4)),
    ];
    let (outputs, _) = generate(&items);
    assert_eq!(outputs.len(), 2);
    let grouped = &outputs[0];
    assert_eq!(grouped.observation_count, 4);
    assert!((grouped.confidence - 0.675).abs() < 1e-9);
    assert!(grouped.content.ends_with("[4× beobachtet in Traces, Findings: aaaaaaaa, bbbbbbbb, cccccccc]"), "{}", grouped.content);
    assert_eq!(grouped.agents, vec!["main".to_owned(), "ops".to_owned()]);
    assert_eq!(outputs[1].observation_count, 1);
}

#[test]
fn governance_policy_has_the_policy_structure_and_validates() {
    let items = vec![(
        finding("aaaaaaaa1111", "SIG-DOOM-LOOP", "main"),
        class(ActionType::GovernancePolicy, "Audit repeated exec calls with the same command.", 0.8),
    )];
    let (outputs, _) = generate(&items);
    assert_eq!(outputs.len(), 1);
    let policy = Policy::validate_json(&outputs[0].content).expect("a valid Policy");
    assert_eq!(policy.id, "trace-gen-sig-doom-loop-aaaaaaaa");
    assert_eq!(policy.version, "1.0.0");
    assert_eq!(policy.rules.len(), 1);
    let value: serde_json::Value = serde_json::from_str(&outputs[0].content).unwrap();
    assert_eq!(value["rules"][0]["effect"], json!({"action": "audit", "level": "standard"}));
    assert_eq!(value["rules"][0]["conditions"][0], json!({"type": "tool", "name": "exec"}));
    assert_eq!(value["scope"]["hooks"], json!(["before_tool_call"]));
}

#[test]
fn every_signal_gets_a_valid_hook() {
    let signals = [
        "SIG-CORRECTION",
        "SIG-TOOL-FAIL",
        "SIG-DOOM-LOOP",
        "SIG-DISSATISFIED",
        "SIG-REPEAT-FAIL",
        "SIG-HALLUCINATION",
        "SIG-UNVERIFIED-CLAIM",
    ];
    let items: Vec<(Finding, Classification)> = signals
        .iter()
        .enumerate()
        .map(|(i, s)| (finding(&format!("{i:08}xxxx"), s, "main"), class(ActionType::GovernancePolicy, "audit it", 0.5)))
        .collect();
    let (outputs, _) = generate(&items);
    assert_eq!(outputs.len(), signals.len());
    for (o, signal) in outputs.iter().zip(signals) {
        let policy = Policy::validate_json(&o.content).unwrap_or_else(|e| panic!("{signal}: {e}"));
        let hooks = policy.scope.hooks.unwrap();
        assert!(hooks.iter().all(|h| VALID_HOOKS.contains(&h.as_str())), "{signal}: {hooks:?}");
        let expected =
            if ["SIG-TOOL-FAIL", "SIG-DOOM-LOOP", "SIG-REPEAT-FAIL"].contains(&signal) { "before_tool_call" } else { "message_sending" };
        assert_eq!(hooks, vec![expected.to_owned()], "{signal}");
    }
}

#[test]
fn the_policy_check_rejects_what_openclaw_governance_would() {
    let valid = json!({"id": "p", "name": "P", "version": "1.0.0", "scope": {"hooks": ["before_tool_call"]},
        "rules": [{"id": "r", "conditions": [{"type": "tool", "name": "exec"}], "effect": {"action": "audit"}}]});
    assert!(Policy::validate_json(&valid.to_string()).is_ok());
    let mut bad_hook = valid.clone();
    bad_hook["scope"]["hooks"] = json!(["message_sent"]);
    assert!(Policy::validate_json(&bad_hook.to_string()).unwrap_err().contains("message_sent"));
    let mut bad_condition = valid.clone();
    bad_condition["rules"][0]["conditions"][0] = json!({"type": "weather"});
    assert!(Policy::validate_json(&bad_condition.to_string()).is_err());
    let mut audit_with_reason = valid.clone();
    audit_with_reason["rules"][0]["effect"] = json!({"action": "audit", "reason": "x"});
    assert!(Policy::validate_json(&audit_with_reason.to_string()).is_err());
    let mut no_rules = valid;
    no_rules["rules"] = json!([]);
    assert!(Policy::validate_json(&no_rules.to_string()).is_err());
}

#[test]
fn cortex_patterns_must_compile() {
    let items = vec![
        (finding("aaaaaaaa1111", "SIG-TOOL-FAIL", "main"), class(ActionType::CortexPattern, "/permission denied/i", 0.7)),
        (finding("bbbbbbbb2222", "SIG-TOOL-FAIL", "main"), class(ActionType::CortexPattern, "(unclosed", 0.7)),
    ];
    let (outputs, warnings) = generate(&items);
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].content, "(?i)permission denied");
    assert_eq!(outputs[0].output_type, ActionType::CortexPattern);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("bbbbbbbb2222"), "{warnings:?}");
}

#[test]
fn manual_review_and_unclassified_findings_produce_nothing() {
    let items = vec![(finding("aaaaaaaa1111", "SIG-CORRECTION", "main"), class(ActionType::ManualReview, "look at it", 0.3))];
    assert!(generate(&items).0.is_empty());
    assert!(generate(&[]).0.is_empty());
}

#[test]
fn mixed_action_types_give_each_their_output_type() {
    let items = vec![
        (finding("aaaaaaaa1111", "SIG-HALLUCINATION", "main"), class(ActionType::SoulRule, RULE, 0.9)),
        (finding("bbbbbbbb2222", "SIG-TOOL-FAIL", "main"), class(ActionType::GovernancePolicy, "audit exec", 0.8)),
        (finding("cccccccc3333", "SIG-TOOL-FAIL", "main"), class(ActionType::CortexPattern, "permission denied", 0.7)),
        (finding("dddddddd4444", "SIG-CORRECTION", "main"), class(ActionType::ManualReview, "look", 0.3)),
    ];
    let (outputs, _) = generate(&items);
    let types: Vec<ActionType> = outputs.iter().map(|o| o.output_type).collect();
    assert_eq!(types, vec![ActionType::SoulRule, ActionType::GovernancePolicy, ActionType::CortexPattern]);
    let ids: std::collections::HashSet<&str> = outputs.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids.len(), 3, "ids are distinct");
}

#[test]
fn artifact_files_are_written_and_valid() {
    let items = vec![
        (finding("aaaaaaaa1111", "SIG-HALLUCINATION", "main"), class(ActionType::SoulRule, RULE, 0.9)),
        (finding("bbbbbbbb2222", "SIG-TOOL-FAIL", "main"), class(ActionType::GovernancePolicy, "audit exec", 0.8)),
        (finding("cccccccc3333", "SIG-TOOL-FAIL", "main"), class(ActionType::CortexPattern, "permission denied", 0.7)),
    ];
    let (outputs, _) = generate(&items);
    let dir = tempfile::tempdir().unwrap();
    let files = tracelake::output::files::write_artifacts(dir.path(), &outputs).unwrap();
    assert_eq!(files.len(), 3);
    let soul = std::fs::read_to_string(dir.path().join("soul-rules.md")).unwrap();
    assert!(soul.contains(&format!("- {RULE} [1× beobachtet")));
    let policies: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("governance-policies.json")).unwrap()).unwrap();
    let policies = policies["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 1);
    Policy::validate_json(&policies[0].to_string()).unwrap();
    let patterns: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cortex-patterns.json")).unwrap()).unwrap();
    assert_eq!(patterns["patterns"][0]["pattern"], "permission denied");
}
