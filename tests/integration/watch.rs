//! `tracelake watch` against a real nats-server: one webhook call per critical finding,
//! none again for more events of the same chains, none again after a restart.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::llm_server::{LlmServer, Reply};
use crate::nats_server::NatsServer;
use crate::trace::Trace;

const STREAM: &str = "openclaw-events";

fn start_watch(nats: &NatsServer, lake: &str, webhook: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["watch", "--lake", lake, "--nats-url", &nats.url(), "--stream", STREAM, "--webhook", webhook, "--interval", "200ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn interrupt(child: Child) {
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "watch exits cleanly on Ctrl-C: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
}

fn wait_for(server: &LlmServer, calls: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.received().len() < calls && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A session of five identical failing calls: a critical SIG-DOOM-LOOP.
fn doom_loop() -> Trace {
    let mut t = Trace::new();
    t.session("loop", "ops");
    for _ in 0..5 {
        t.tool_fail("exec", json!({"command": "cat /etc/shadow"}), "Permission denied");
    }
    t
}

#[test]
fn one_webhook_call_per_critical_finding() {
    let nats = NatsServer::start();
    let mut t = doom_loop();
    t.session("claim", "main").user("Deploy bitte").tool_fail("deploy", json!({"env": "prod"}), "connect ECONNREFUSED").agent("Done ✅");
    t.session("minor", "main").user("Wie ist der Status?").agent("Der Server läuft auf Port 8080.").user("nein, das ist falsch");
    let lines: Vec<String> = t.events.iter().map(ToString::to_string).collect();
    nats.publish(STREAM, &lines);

    let webhook = LlmServer::start(|_, _| Reply::Status(200));
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let watcher = start_watch(&nats, &lake, &format!("{}/hook", webhook.url));
    wait_for(&webhook, 2);

    // More events in the same chains: the same findings again, which must not be re-sent.
    let mut more = Trace::new();
    more.session("claim", "main").wait_minutes(1).user("Und jetzt?");
    more.events.iter_mut().for_each(|e| e["id"] = json!(format!("more-{}", e["id"].as_str().unwrap())));
    nats.publish(STREAM, &more.events.iter().map(ToString::to_string).collect::<Vec<_>>());
    std::thread::sleep(Duration::from_secs(2));
    interrupt(watcher);

    let calls = webhook.received();
    assert_eq!(calls.len(), 2, "{:#?}", calls.iter().map(|c| &c.body).collect::<Vec<_>>());
    let mut signals: Vec<&str> = calls.iter().map(|c| c.body["finding"]["signal"]["signal"].as_str().unwrap()).collect();
    signals.sort_unstable();
    assert_eq!(signals, ["SIG-DOOM-LOOP", "SIG-HALLUCINATION"]);
    assert!(calls.iter().all(|c| c.body["finding"]["signal"]["severity"] == "critical" && c.path == "/v1/hook"));
    assert_ne!(calls[0].body["finding"]["id"], calls[1].body["finding"]["id"]);
    let now = chrono::Utc::now().timestamp_millis();
    for call in &calls {
        let detected = call.body["finding"]["detectedAt"].as_i64().unwrap();
        assert!((now - 120_000..=now).contains(&detected), "an alert says when it was detected: {detected}");
    }

    // A restarted watch sees the same events and remembers what it sent.
    let again = start_watch(&nats, &lake, &format!("{}/hook", webhook.url));
    std::thread::sleep(Duration::from_secs(3));
    interrupt(again);
    assert_eq!(webhook.received().len(), 2);
}

/// `--since` reads the stream from a time instead of the window back from now: a replay
/// of traces published before the watch started.
#[test]
fn since_replays_what_was_published_before() {
    let nats = NatsServer::start();
    let t = doom_loop();
    nats.publish(STREAM, &t.events.iter().map(ToString::to_string).collect::<Vec<_>>());

    let webhook = LlmServer::start(|_, _| Reply::Status(200));
    let watcher = Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["watch", "--nats-url", &nats.url(), "--stream", STREAM, "--webhook", &format!("{}/hook", webhook.url)])
        .args(["--interval", "200ms", "--window", "20s", "--since", "1h"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&webhook, 1);
    interrupt(watcher);
    let calls = webhook.received();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["finding"]["signal"]["signal"], "SIG-DOOM-LOOP");
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    let out = crate::common::tracelake(&["watch", "--nats-url", "nats://127.0.0.1:1", "--webhook", "http://127.0.0.1:1/x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach NATS"), "{}", String::from_utf8_lossy(&out.stderr));
}
