//! `tracelake export` against a real nats-server: full and incremental export, subject
//! filters, kill -9 at several points, a server restart, and clear errors.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{lake_state, sql_rows, tracelake, tracelake_ok};
use crate::delta::delta_event_rows;
use crate::nats_server::NatsServer;

const STREAM: &str = "openclaw-events";

fn generated(events: u64, seed: u64) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.jsonl");
    tracelake_ok(&["generate", "--events", &events.to_string(), "--seed", &seed.to_string(), "--output", path.to_str().unwrap()]);
    std::fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect()
}

fn export(lake: &str, server: &NatsServer, extra: &[&str]) -> String {
    let url = server.url();
    let mut args = vec!["export", "--lake", lake, "--nats-url", &url, "--stream", STREAM];
    args.extend_from_slice(extra);
    tracelake_ok(&args)
}

/// An export committing every 2,000 messages, running in the background.
fn spawn_export(lake: &str, server: &NatsServer) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["export", "--lake", lake, "--nats-url", &server.url(), "--stream", STREAM, "--commit-every", "2000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// (rows, distinct stream sequences, distinct ids)
fn counts(lake: &str) -> (i64, i64, i64) {
    let r = &sql_rows(lake, "SELECT count(*) AS n, count(DISTINCT stream_seq) AS seqs, count(DISTINCT id) AS ids FROM events")[0];
    (r["n"].as_i64().unwrap(), r["seqs"].as_i64().unwrap(), r["ids"].as_i64().unwrap())
}

#[test]
fn exports_both_schemas_then_only_new_events() {
    let server = NatsServer::start();
    let lines = generated(3000, 21);
    server.publish(STREAM, &lines[..2000]);
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();

    let first = export(&lake, &server, &[]);
    assert!(first.contains("exported 2000 events, 0 quarantined") && first.contains("cursor 2000 of 2000"), "{first}");
    let schemas = sql_rows(&lake, "SELECT schema, count(*) AS n FROM events GROUP BY schema ORDER BY schema");
    assert_eq!(schemas.len(), 2, "both schemas: {schemas:?}");
    let subjects =
        sql_rows(&lake, "SELECT count(*) AS n FROM events WHERE subject LIKE 'openclaw.events.%' AND stream_seq BETWEEN 1 AND 2000");
    assert_eq!(subjects[0]["n"], 2000);

    server.publish(STREAM, &lines[2000..]);
    let second = export(&lake, &server, &[]);
    assert!(second.contains("exported 1000 events") && second.contains("cursor 3000 of 3000"), "{second}");
    let third = export(&lake, &server, &[]);
    assert!(third.contains("exported 0 events"), "{third}");
    assert_eq!(counts(&lake), (3000, 3000, 3000));

    let status = tracelake_ok(&["status", "--lake", &lake, "--nats-url", &server.url()]);
    assert!(status.contains("at sequence 3000; stream last sequence 3000, 0 behind"), "{status}");
    server.publish(STREAM, &generated(40, 22));
    let behind = tracelake_ok(&["status", "--lake", &lake, "--nats-url", &server.url()]);
    assert!(behind.contains("stream last sequence 3040, 40 behind"), "{behind}");
}

#[test]
fn subject_filters_select_on_the_server() {
    let server = NatsServer::start();
    let lines = generated(2000, 23);
    server.publish(STREAM, &lines);
    let expected_main = lines.iter().filter(|l| l.contains("\"agent\":\"main\"")).count() as i64;
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();

    export(&lake, &server, &["--agent", "main"]);
    let agents = sql_rows(&lake, "SELECT agent, count(*) AS n FROM events GROUP BY agent");
    assert_eq!(agents.len(), 1);
    assert_eq!((agents[0]["agent"].as_str(), agents[0]["n"].as_i64()), (Some("main"), Some(expected_main)));

    let url = server.url();
    let changed = tracelake(&["export", "--lake", &lake, "--nats-url", &url, "--stream", STREAM, "--type", "msg.in"]);
    assert_eq!(changed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&changed.stderr).contains("--full"), "{changed:?}");

    export(&lake, &server, &["--type", "msg.in", "--full"]);
    let expected_msg_in = lines.iter().filter(|l| l.contains("\"type\":\"msg.in\"")).count() as i64;
    let types = sql_rows(&lake, "SELECT raw_type, count(*) AS n FROM events GROUP BY raw_type");
    assert_eq!(types.len(), 1, "{types:?}");
    assert_eq!((types[0]["raw_type"].as_str(), types[0]["n"].as_i64()), (Some("msg.in"), Some(expected_msg_in)));
}

#[test]
fn kill_9_at_any_point_then_rerun_gives_every_event_exactly_once() {
    let server = NatsServer::start();
    server.publish(STREAM, &generated(40_000, 24));
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let url = server.url();
    let mut progress = Vec::new();
    for delay_ms in [80, 250, 500, 800, 1200] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tracelake"))
            .args(["export", "--lake", &lake, "--nats-url", &url, "--stream", STREAM, "--commit-every", "1500"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (rows, seqs, _) = if std::path::Path::new(&lake).join("events").exists() { counts(&lake) } else { (0, 0, 0) };
        assert_eq!(rows, seqs, "no duplicate after a kill at {delay_ms} ms");
        // The Delta log follows the manifest: a kill between the two leaves it a commit behind.
        let delta_rows = delta_event_rows(&lake);
        assert!(delta_rows <= rows as u64, "a Delta reader sees only committed rows after a kill at {delay_ms} ms");
        progress.push(rows);
    }
    assert!(progress.iter().any(|&n| n > 0 && n < 40_000), "some kill landed mid-export: {progress:?}");
    let out = export(&lake, &server, &[]);
    assert!(out.contains("cursor 40000 of 40000"), "{out}");
    assert_eq!(counts(&lake), (40_000, 40_000, 40_000));
    assert_eq!(delta_event_rows(&lake), 40_000);
    let gaps = sql_rows(&lake, "SELECT min(stream_seq) AS lo, max(stream_seq) AS hi FROM events");
    assert_eq!((gaps[0]["lo"].as_i64(), gaps[0]["hi"].as_i64()), (Some(1), Some(40_000)));
}

#[test]
fn a_server_restart_mid_export_loses_and_duplicates_nothing() {
    let mut server = NatsServer::start();
    server.publish(STREAM, &generated(60_000, 25));
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let child = spawn_export(&lake, &server);
    std::thread::sleep(Duration::from_millis(400));
    server.kill();
    std::thread::sleep(Duration::from_millis(700));
    server.restart();
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60), "the export neither hung nor waited forever");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        assert!(stderr.contains("run export again"), "a failed run says how to continue: {stderr}");
    }
    let rerun = export(&lake, &server, &[]);
    assert!(rerun.contains("cursor 60000 of 60000"), "{rerun}");
    assert_eq!(counts(&lake), (60_000, 60_000, 60_000));
}

#[test]
fn an_unreachable_server_is_one_clear_line_and_leaves_the_lake_untouched() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let out = tracelake(&["export", "--lake", lake.to_str().unwrap(), "--nats-url", &format!("nats://127.0.0.1:{port}")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cannot reach NATS at nats://127.0.0.1:") && stderr.contains("check the URL"), "{stderr}");
    assert!(!lake.exists());
}

#[test]
fn a_missing_stream_is_named_in_the_error() {
    let server = NatsServer::start();
    server.create_stream("something-else");
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let out = tracelake(&["export", "--lake", lake.to_str().unwrap(), "--nats-url", &server.url(), "--stream", "openclaw-events"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stream \"openclaw-events\" does not exist"), "{stderr}");
    assert!(!lake.exists());
}

#[test]
fn a_scheduled_export_stops_cleanly_on_ctrl_c() {
    scheduled_export_stops_cleanly_on("-INT", 26);
}

#[test]
fn a_scheduled_export_stops_cleanly_on_sigterm() {
    scheduled_export_stops_cleanly_on("-TERM", 28);
}

/// A scheduled export sent `signal` after its first run ends with that run committed.
fn scheduled_export_stops_cleanly_on(signal: &str, seed: u64) {
    let server = NatsServer::start();
    server.publish(STREAM, &generated(500, seed));
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let child = Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["export", "--lake", &lake, "--nats-url", &server.url(), "--stream", STREAM, "--every", "1h"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    // Commits within a run commit the state too (with `"lastRun": null`): the first run
    // is over when its record is there.
    let first_run_done = || lake_state(std::path::Path::new(&lake)).is_some_and(|m| m["export"]["lastRun"].is_object());
    while !first_run_done() {
        assert!(Instant::now() < deadline, "the first scheduled run did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("exported 500 events"), "{out:?}");
    assert_eq!(counts(&lake), (500, 500, 500));
}

#[test]
fn a_poison_message_is_quarantined_with_its_sequence_and_the_export_goes_on() {
    let server = NatsServer::start();
    let good = generated(10, 27);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let poison = [
        r#"{"ts": 1771504212206, "type": "tool.call", "agent": 1e400, "payload": {"toolName": "t", "params": {"n": -1e400}}}"#.to_owned(),
        format!(r#"{{"ts": 1771504212206, "type": "msg.in", "payload": {{"content": {deep}}}}}"#),
        "{not json".to_owned(),
    ];
    let lines: Vec<String> = good[..5].iter().chain(&poison).chain(&good[5..]).cloned().collect();
    server.publish(STREAM, &lines);
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let out = export(&lake, &server, &[]);
    assert!(out.contains("cursor 13 of 13"), "{out}");
    assert_eq!(sql_rows(&lake, "SELECT count(*) AS n FROM events")[0]["n"], 12, "every message that is an event, poison or not");
    let quarantined = sql_rows(&lake, "SELECT position, reason FROM quarantine");
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    assert_eq!(quarantined[0]["position"], 8, "the stream sequence of the bad message");
    assert!(export(&lake, &server, &[]).contains("exported 0 events"), "the cursor moved past it");
}

#[test]
fn an_export_whose_server_dies_says_how_far_it_got_and_fails() {
    let mut server = NatsServer::start();
    server.publish(STREAM, &generated(60_000, 29));
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let child = spawn_export(&lake, &server);
    let deadline = Instant::now() + Duration::from_secs(60);
    let cursor = || -> u64 { lake_state(std::path::Path::new(&lake)).and_then(|m| m["export"]["cursor"].as_u64()).unwrap_or(0) };
    while cursor() == 0 {
        assert!(Instant::now() < deadline, "the export never committed");
        std::thread::sleep(Duration::from_millis(5));
    }
    server.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let done = sql_rows(&lake, "SELECT count(*) AS n FROM events")[0]["n"].as_i64().unwrap();
    assert!(done < 60_000, "the server died before the export finished ({done} events)");
    assert!(!out.status.success(), "an export cut short fails: {stderr}");
    assert!(stderr.contains("run export again"), "{stderr}");
    assert!(stderr.contains(&format!("sequence {done}")), "it says how far it got ({done}): {stderr}");
}

#[test]
fn a_schedule_says_when_the_server_is_down_and_goes_on_when_it_is_back() {
    let mut server = NatsServer::start();
    let events = generated(150, 28);
    server.publish(STREAM, &events[..100]);
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["export", "--lake", &lake, "--nats-url", &server.url(), "--stream", STREAM, "--every", "1s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = std::thread::spawn({
        let said = std::sync::Arc::clone(&said);
        move || {
            for line in std::io::BufRead::lines(stderr).map_while(Result::ok) {
                said.lock().unwrap().push_str(&(line + "\n"));
            }
        }
    });
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "{what}; stderr: {}", said.lock().unwrap());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let log = std::path::Path::new(&lake).join("events/_delta_log");
    wait_for("the first 100 events exported", &|| log.exists() && counts(&lake).0 == 100);
    server.kill();
    wait_for("the outage told", &|| said.lock().unwrap().contains("did not answer"));
    server.restart();
    server.publish(STREAM, &events[100..]);
    wait_for("the rest exported after the outage", &|| counts(&lake).0 == 150);
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    reader.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.lines().all(|l| l.starts_with("[20") && l.contains(" UTC] exported")), "timestamped: {stdout}");
    let said = said.lock().unwrap();
    assert!(said.lines().any(|l| l.starts_with("[20") && l.contains("trying again in 1s")), "{said}");
    assert_eq!(counts(&lake), (150, 150, 150), "nothing lost or doubled");
}

#[test]
fn a_scheduled_export_and_analyses_share_a_lake_and_lose_nothing() {
    let server = NatsServer::start();
    let lines = generated(9000, 27);
    server.publish(STREAM, &lines[..3000]);
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    export(&lake, &server, &[]);
    let child = Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["export", "--lake", &lake, "--nats-url", &server.url(), "--stream", STREAM, "--every", "1s", "--commit-every", "500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Analyses run while the export commits what arrives, in both orders of who commits first.
    for batch in lines[3000..].chunks(1500) {
        server.publish(STREAM, batch);
        for full in [true, false] {
            let mut args = vec!["analyze", "--lake", &lake, "--format", "json"];
            args.extend(full.then_some("--full"));
            let out = tracelake(&args);
            assert!(out.status.success(), "analyze beside a running export: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while counts(&lake).0 < 9000 {
        assert!(Instant::now() < deadline, "the scheduled export did not catch up: {:?}", counts(&lake));
        std::thread::sleep(Duration::from_millis(200));
    }
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(counts(&lake), (9000, 9000, 9000), "every event once");

    // The last analysis over every event finds what an analysis of a copy made afterwards does.
    tracelake_ok(&["analyze", "--lake", &lake, "--full"]);
    let findings = |lake: &str| sql_rows(lake, "SELECT finding_id FROM findings ORDER BY finding_id");
    let shared = findings(&lake);
    let dup = &sql_rows(&lake, "SELECT count(*) AS n, count(DISTINCT finding_id) AS ids FROM findings")[0];
    assert_eq!(dup["n"], dup["ids"], "no finding twice");
    let alone = dir.path().join("alone").display().to_string();
    export(&alone, &server, &[]);
    tracelake_ok(&["analyze", "--lake", &alone, "--full"]);
    assert!(!shared.is_empty());
    assert_eq!(shared, findings(&alone));
}
