//! Every kind of secret the redactor knows, planted in every field of both schemas (keys
//! and values, nested and top level), in invalid lines (behind JSON escapes, cut by the
//! quarantine's truncation): none of it may reach the lake's files, any command's output,
//! any report or an LLM request.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{all_strings, tracelake};
use crate::llm_server::{LlmServer, Reply};

/// (what is planted, a part of it that must never be seen again).
fn secrets() -> Vec<(String, &'static str)> {
    vec![
        ("sk-proj0penAIsecretVALUE0123456789".into(), "0penAIsecretVALUE"),
        ("sk_live_StripeSecretVALUE0123456789".into(), "StripeSecretVALUE"),
        ("pk_live_StripePublicVALUE0123456789".into(), "StripePublicVALUE"),
        ("Bearer BearerSecretVALUE0123456789abc".into(), "BearerSecretVALUE"),
        (
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJKd3RTZWNyZXRWQUxVRSJ9.JwtSignatureVALUE0123456789abc".into(),
            "JwtSignatureVALUE",
        ),
        ("postgres://admin:UrlPassVALUE42@db.example.org/x".into(), "UrlPassVALUE"),
        ("PASSWORD=EnvPassVALUE42".into(), "EnvPassVALUE"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpemBodyVALUE0123456789\n-----END RSA PRIVATE KEY-----".into(), "MIIEpemBodyVALUE"),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQPGpgpBodyVALUE0123456789\n-----END PGP PRIVATE KEY BLOCK-----".into(),
            "lQPGpgpBodyVALUE",
        ),
        (format!("ghp_GhpTokenVALUE{}", "a".repeat(30)), "GhpTokenVALUE"),
        (format!("gho_GhoTokenVALUE{}", "b".repeat(30)), "GhoTokenVALUE"),
        (format!("github_pat_GhPatVALUE_{}", "c".repeat(60)), "GhPatVALUE"),
        (format!("ssh-ed25519 AAAASshKeyVALUE{}", "d".repeat(60)), "SshKeyVALUE"),
        ("AKIASECRETAWSVALUE12".into(), "SECRETAWSVALUE"),
        ("xoxb-1234-SlackTokenVALUE-abcdef".into(), "SlackTokenVALUE"),
        ("AIzaGoogleKeyVALUE0123456789abcdefghijklm".into(), "GoogleKeyVALUE"),
    ]
}

const TS: i64 = 1_771_504_212_206;

/// One session per secret: schema A and schema B events with the secret in every field,
/// and a tool failure the agent does not recover from, so that it becomes a finding.
fn planted_lines(secret: &str, n: usize) -> Vec<Value> {
    let s = secret;
    let session = format!("session-{n}-{s}");
    let a = |offset: i64, kind: &str, payload: Value| {
        json!({"id": format!("id-{s}"), "ts": TS + offset, "agent": s, "session": session, "type": kind,
               "payload": payload, s: s, "meta": {s: {s: [s]}}, "scope": {"sessionKey": s}})
    };
    let b = |offset: i64, kind: &str, data: Value| {
        json!({"id": format!("b-{s}"), "timestamp": TS + offset, "agent": s, "session": format!("agent:main:{session}"), "type": kind,
               "payload": {"role": s, "text_preview": [{"type": "text", "text": s}], "data": data}, "meta": {"runId": s, s: s}})
    };
    vec![
        a(0, "msg.in", json!({"content": format!("please run it, {s}"), "from": s, "channel": s, s: s})),
        a(1000, "tool.call", json!({"toolName": s, "params": {s: s, "nested": {s: [s]}}})),
        a(2000, "tool.result", json!({"toolName": s, "params": {s: s}, "error": format!("denied: {s}"), "result": {s: {"content": s}}})),
        a(3000, "msg.out", json!({"content": format!("Done, all good with {s}"), "to": s, "error": s})),
        a(4000, "llm.output", json!({"model": s, "provider": s, "assistantTexts": [s], "usage": {s: 1}})),
        b(5000, "conversation.tool_call", json!({"name": s, "args": {s: s}, "toolCallId": s})),
        b(6000, "conversation.tool_result", json!({"name": s, "args": {s: s}, "isError": true, "result": {"content": s}, "error": s})),
        b(7000, "conversation.message.out", json!({})),
        a(8000, "run.error", json!({"error": s, "runId": s, "toolCallId": s})),
    ]
}

/// Lines that are not events but hold a secret: escaped, cut off by the size limit, and
/// pasted as they are (a key's body lines each on a line of their own).
fn invalid_lines(secret: &str) -> Vec<String> {
    let escaped = serde_json::to_string(secret).unwrap().replace('/', "\\/").replace('-', "\\u002d");
    let cut = format!("{{\"ts\": {TS}, \"type\": \"msg.in\", \"payload\": {{\"content\": {escaped}{}", "x".repeat(70_000));
    let mut lines =
        vec![format!("{{\"ts\": {TS}, \"payload\": {escaped}, broken"), format!("{escaped} {}", secret.replace('\n', " ")), cut];
    lines.extend(secret.lines().map(str::to_owned));
    lines
}

#[test]
fn no_planted_secret_is_seen_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake_arg = lake.to_str().unwrap();
    let secrets = secrets();
    let mut lines = String::new();
    for (n, (secret, _)) in secrets.iter().enumerate() {
        for line in planted_lines(secret, n) {
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        for line in invalid_lines(secret) {
            lines.push_str(&line);
            lines.push('\n');
        }
    }
    let input = dir.path().join("planted.jsonl");
    std::fs::write(&input, lines).unwrap();

    let server = LlmServer::start(|_, r| {
        if r.is_triage() {
            Reply::content(r#"{"keep": true, "reason": "real"}"#)
        } else {
            Reply::content(
                r#"{"rootCause": "r", "actionType": "soul_rule", "actionText": "Always check the tool result.", "confidence": 0.9}"#,
            )
        }
    });
    let config = dir.path().join("config.json");
    let llm = json!({"llm": {"enabled": true, "endpoint": server.url, "model": "m"},
                     "traceAnalyzer": {"llm": {"enabled": true, "triage": {"endpoint": server.url, "model": "t"}}, "output": {"maxFindings": 1000}}});
    std::fs::write(&config, llm.to_string()).unwrap();
    let config = config.to_str().unwrap();

    let html = dir.path().join("report.html");
    let commands: Vec<Vec<&str>> = vec![
        vec!["import", "--lake", lake_arg, input.to_str().unwrap()],
        vec!["status", "--lake", lake_arg],
        vec!["analyze", "--lake", lake_arg, "--config", config, "--format", "json"],
        vec!["analyze", "--lake", lake_arg, "--config", config, "--full"],
        vec!["analyze", "--lake", lake_arg, "--config", config, "--full", "--format", "markdown"],
        vec!["report", "--lake", lake_arg, "--format", "markdown"],
        vec!["report", "--lake", lake_arg, "--format", "json"],
        vec!["report", "--lake", lake_arg, "--output", html.to_str().unwrap()],
        vec!["sql", "--lake", lake_arg, "--format", "json", "SELECT * FROM events"],
        vec!["sql", "--lake", lake_arg, "--format", "json", "SELECT * FROM quarantine"],
        vec!["sql", "--lake", lake_arg, "SELECT * FROM findings"],
    ];
    let mut seen: Vec<(String, String)> = Vec::new();
    for args in &commands {
        let out = tracelake(args);
        assert!(out.status.success(), "tracelake {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        seen.push((format!("stdout of {}", args[0..1].join(" ")), String::from_utf8_lossy(&out.stdout).into_owned()));
        seen.push((format!("stderr of {}", args[0..1].join(" ")), String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    assert!(seen[0].1.contains("quarantined") || seen[1].1.contains("quarantined"), "import counts the invalid lines");
    seen.push(("the HTML report".into(), std::fs::read_to_string(&html).unwrap()));
    for text in all_strings(&lake) {
        seen.push(("a Parquet file".into(), text));
    }
    for file in walk(&lake) {
        if file.extension().is_none_or(|e| e != "parquet") {
            seen.push((file.display().to_string(), String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned()));
        }
    }
    let requests = server.received();
    assert!(!requests.is_empty(), "the findings were sent for classification");
    for request in requests {
        seen.push(("an LLM request".into(), request.body.to_string()));
    }

    let leaks: Vec<String> = secrets
        .iter()
        .flat_map(|&(_, needle)| {
            seen.iter().filter(move |(_, text)| text.contains(needle)).map(move |(place, _)| format!("{needle} in {place}"))
        })
        .collect();
    assert!(leaks.is_empty(), "{} leaks:\n{}", leaks.len(), leaks.join("\n"));
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}
