//! The redactor tests of spec §14.3, plus redaction of whole events at ingest.

use serde_json::json;
use tracelake::ingest::Decoder;
use tracelake::redact::{Redactor, RedactorError};

fn redact(text: &str) -> String {
    Redactor::builtin().redact(text).into_owned()
}

const JWT: &str =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

#[test]
fn redacts_openai_style_api_keys() {
    let out = redact("use sk-proj1234567890abcdefghijKLMN for the call");
    assert_eq!(out, "use [REDACTED_API_KEY] for the call");
    assert_eq!(redact("pk_live_abcdefghijklmnopqrstuv1234"), "[REDACTED_API_KEY]");
}

#[test]
fn redacts_bearer_tokens_whole() {
    let out = redact(&format!("Authorization: Bearer {JWT}"));
    assert!(!out.contains("eyJ") && !out.contains("SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"), "{out}");
    assert!(out.contains("[REDACTED"), "{out}");
    assert_eq!(redact("Bearer abcdefghijklmnopqrstuvwxyz0123"), "[REDACTED_API_KEY]");
}

#[test]
fn redacts_passwords_in_urls() {
    assert_eq!(redact("postgres://user:secret@host:5432/db"), "postgres://user:[REDACTED]@host:5432/db");
}

#[test]
fn redacts_pem_blocks() {
    let pem = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----\ndone";
    assert_eq!(redact(pem), "key:\n[REDACTED_PEM_BLOCK]\ndone");
}

#[test]
fn redacts_github_tokens() {
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    assert_eq!(redact(&format!("token {token} here")), "token [REDACTED_GH_TOKEN] here");
}

#[test]
fn redacts_jwts() {
    assert_eq!(redact(&format!("jwt={JWT}").replace("jwt=", "the jwt ")), "the jwt [REDACTED_JWT]");
}

#[test]
fn redacts_sensitive_environment_values() {
    assert_eq!(redact("PASSWORD=mysecret"), "PASSWORD=[REDACTED]");
    assert_eq!(redact("export api_key = abc123 && run"), "export api_key = [REDACTED] && run");
    assert_eq!(redact("GITHUB_TOKEN=xyz"), "GITHUB_TOKEN=[REDACTED]");
}

#[test]
fn redacts_ssh_key_material() {
    let key = format!("ssh-ed25519 AAAA{} me@host", "C3NzaC1lZDI1NTE5".repeat(4));
    assert_eq!(redact(&key), "ssh-ed25519 [REDACTED_SSH_KEY] me@host");
}

#[test]
fn applies_custom_patterns_after_the_built_in_ones() {
    let r = Redactor::new(&["ACME-\\d{6}".into(), "internal\\.example\\.org".into()]).unwrap();
    assert_eq!(r.redact("ticket ACME-123456 on internal.example.org"), "ticket [REDACTED] on [REDACTED]");
}

#[test]
fn an_invalid_custom_pattern_is_a_clear_error() {
    let err = Redactor::new(&["(unclosed".into()]).expect_err("invalid pattern");
    let RedactorError::InvalidPattern { pattern, .. } = &err;
    assert_eq!(pattern, "(unclosed");
    assert!(err.to_string().contains("invalid redaction pattern \"(unclosed\""), "{err}");
}

#[test]
fn leaves_normal_text_alone() {
    for text in ["Hello, how are you?", "ls -la /tmp && echo ok", "The monkey ate 3 bananas.", "see https://example.org/docs"] {
        assert_eq!(redact(text), text);
    }
}

#[test]
fn every_text_field_of_an_event_is_redacted() {
    let secret = "sk-live0123456789abcdefghijkl";
    let decoder = Decoder::new(Redactor::builtin());
    let raw = json!({"ts": 1_771_504_212_206_i64, "agent": "main", "session": "s", "type": "tool.result",
        "payload": {"toolName": "exec", "params": {"command": format!("curl -H 'Authorization: {secret}'")},
                    "result": {"content": [{"type": "text", "text": format!("echo {secret}")}], "details": {"env": {"nested": [secret]}}},
                    "error": format!("failed with {secret}")},
        "meta": {"note": secret}});
    let line = raw.to_string();
    let e = decoder.decode(line.as_bytes(), "t", 1, None).unwrap();
    let texts = [e.tool_params.unwrap(), e.tool_result.unwrap(), e.tool_error.unwrap(), e.payload, e.extra.unwrap()];
    for text in &texts {
        assert!(!text.contains(secret), "secret left in {text}");
        assert!(text.contains("[REDACTED_API_KEY]"), "{text}");
    }
    let msg = json!({"ts": 1_771_504_212_206_i64, "type": "msg.in", "payload": {"content": format!("my key is {secret}"), "from": format!("PASSWORD=hunter2")}});
    let line = msg.to_string();
    let e = decoder.decode(line.as_bytes(), "t", 2, None).unwrap();
    assert_eq!(e.content.as_deref(), Some("my key is [REDACTED_API_KEY]"));
    assert_eq!(e.from.as_deref(), Some("PASSWORD=[REDACTED]"));
}

#[test]
fn nested_tool_results_stay_valid_json_after_redaction() {
    let decoder = Decoder::new(Redactor::builtin());
    let raw = json!({"ts": 1_771_504_212_206_i64, "type": "tool.result", "payload": {"toolName": "http",
        "result": {"url": "https://admin:pa55word@db.example.org/x", "headers": [{"auth": format!("Bearer {JWT}")}]}}});
    let line = raw.to_string();
    let e = decoder.decode(line.as_bytes(), "t", 1, None).unwrap();
    let result: serde_json::Value = serde_json::from_str(e.tool_result.as_deref().unwrap()).expect("still JSON");
    assert_eq!(result["url"], "https://admin:[REDACTED]@db.example.org/x");
    assert!(result["headers"][0]["auth"].as_str().unwrap().starts_with("Bearer [REDACTED"));
}

#[test]
fn secrets_behind_json_escapes_are_still_found() {
    // The raw line does not contain the secret as written; the decoded string does.
    let decoder = Decoder::new(Redactor::builtin());
    let raw = r#"{"ts": 1771504212206, "type": "msg.in", "payload": {"content": "key sk\u002dabcdefghijklmnopqrstuvwxyz and PASSWORD\u003dhunter2"}}"#;
    let e = decoder.decode(raw.as_bytes(), "t", 1, None).unwrap();
    assert_eq!(e.content.as_deref(), Some("key [REDACTED_API_KEY] and PASSWORD=[REDACTED]"));
    assert!(!e.payload.contains("hunter2") && !e.payload.contains("abcdefghijklmnopqrstuvwxyz"), "{}", e.payload);
}
