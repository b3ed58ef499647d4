//! The prompts of spec §9 and the chain transcript they carry.

use serde_json::Value;

use super::classifier::TranscriptEvent;
use crate::model::Finding;

pub const TRIAGE_SYSTEM_PROMPT: &str = r#"You are a signal triage system. Given a failure detection summary, decide:
1. Is this a TRUE positive (real failure) or FALSE positive (benign/expected behavior)?
2. If true positive, what severity? (low/medium/high/critical)

Respond ONLY with JSON: {"keep": true|false, "severity": "low|medium|high|critical", "reason": "one sentence"}

Common false positives to watch for:
- User saying "nein" to a question (not a correction)
- Tool errors that the agent intentionally provoked for testing
- Session endings due to timeout, not dissatisfaction
- Tool calls to check status (no claim made, just checking)"#;

pub const DEEP_ANALYSIS_SYSTEM_PROMPT: &str = r#"You are analyzing an agent failure trace. Given the full conversation chain and failure signal, produce:

1. **rootCause**: Why did the failure happen? Be specific — name the exact behavior or missing capability.
2. **actionType**: What kind of fix prevents recurrence?
   - "soul_rule": A behavioral directive for the agent's system prompt (e.g., "NEVER do X — instead Y")
   - "governance_policy": A machine-enforced policy rule that blocks/audits specific actions
   - "cortex_pattern": A regex pattern for detecting this situation in real-time
   - "manual_review": Requires human judgment — no automated fix possible
3. **actionText**: The specific rule/policy/pattern text. Be concrete and actionable.
   - For soul_rule: Write in the format "NIEMALS X — stattdessen Y. [Grund: Z]" (German) or "NEVER X — instead Y. [Reason: Z]" (English).
   - For governance_policy: Write the condition and effect as a sentence.
   - For cortex_pattern: Write a regex string.
   - For manual_review: Describe what a human should investigate.
4. **confidence**: How confident are you (0.0–1.0)?

Respond ONLY with valid JSON matching this schema:
{
  "rootCause": "...",
  "actionType": "soul_rule|governance_policy|cortex_pattern|manual_review",
  "actionText": "...",
  "confidence": 0.85
}"#;

/// The evidence of a finding, pretty-printed as the prompts show it.
fn evidence_text(finding: &Finding) -> String {
    match serde_json::from_str::<Value>(&finding.evidence) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_default(),
        Err(_) => finding.evidence.clone(),
    }
}

pub fn triage_user_prompt(finding: &Finding) -> String {
    format!(
        "Signal: {}\nDetected severity: {}\nSummary: {}\nAgent: {}\nEvidence: {}",
        finding.signal,
        finding.severity,
        finding.summary,
        finding.agent,
        evidence_text(finding)
    )
}

pub fn deep_user_prompt(finding: &Finding, chain: &[TranscriptEvent]) -> String {
    format!(
        "## Failure Signal\nType: {}\nSeverity: {}\nSummary: {}\n\n## Evidence\n{}\n\n## Full Conversation Chain ({} events, {}@{})\n{}",
        finding.signal,
        finding.severity,
        finding.summary,
        evidence_text(finding),
        chain.len(),
        finding.agent,
        finding.session,
        transcript(chain)
    )
}

/// One line per event: `[ISO time] USER: …`, `TOOL_CALL: name(params)`, `TOOL_ERROR: …`.
pub fn transcript(chain: &[TranscriptEvent]) -> String {
    let lines: Vec<String> = chain
        .iter()
        .map(|e| {
            let ts =
                chrono::DateTime::from_timestamp_millis(e.ts_ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let tool = e.tool_name.as_deref().unwrap_or("");
            let body = match e.event_type.as_str() {
                "msg.in" => format!("USER: {}", truncate(e.content.as_deref().unwrap_or(""), 500)),
                "msg.out" => format!("AGENT: {}", truncate(e.content.as_deref().unwrap_or(""), 500)),
                "tool.call" => {
                    format!("TOOL_CALL: {tool}({})", truncate(e.tool_params.as_deref().unwrap_or("{}"), 300))
                }
                "tool.result" => match &e.tool_error {
                    Some(error) => format!("TOOL_ERROR: {tool} → {}", truncate(error, 300)),
                    None => format!("TOOL_OK: {tool} → {}", truncate(e.tool_result.as_deref().unwrap_or(""), 300)),
                },
                "session.start" => "SESSION_START".to_owned(),
                "session.end" => "SESSION_END".to_owned(),
                other => other.to_uppercase(),
            };
            format!("[{ts}] {body}")
        })
        .collect();
    lines.join("\n")
}

/// The first `max` characters, and `…` when there were more.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}
