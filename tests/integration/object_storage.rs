//! A lake on object storage (`s3://…`) against a real S3-compatible server: every command
//! as on a directory, exactly-once export through kill -9, and concurrent importers.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::{finding_ids, realworld, sql_rows, tracelake_ok};
use crate::delta::{delta_reader, read_as_delta};
use crate::nats_server::NatsServer;
use crate::s3_server::S3Server;

fn generate(dir: &std::path::Path, events: u64, seed: u64) -> String {
    let path = dir.join(format!("g{seed}.jsonl")).display().to_string();
    tracelake_ok(&["generate", "--events", &events.to_string(), "--seed", &seed.to_string(), "--output", &path]);
    path
}

fn counts(rows: &[Value]) -> (i64, i64) {
    (rows[0]["n"].as_i64().unwrap(), rows[0]["ids"].as_i64().unwrap())
}

const COUNTS: &str = "SELECT count(*) AS n, count(DISTINCT id) AS ids FROM events";

#[test]
fn a_lake_on_s3_imports_queries_analyzes_and_reports_as_a_directory_does() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().unwrap();
    let generated = generate(dir.path(), 3000, 5);
    let airline = realworld("tau-airline.events.jsonl").display().to_string();
    let local = dir.path().join("lake").display().to_string();
    let remote = s3.lake("traces/a");

    tracelake_ok(&["import", "--lake", &local, &generated, &airline]);
    let imported = s3.ok(&["import", "--lake", &remote, &generated, &airline]);
    assert!(imported.contains("events"), "{imported}");
    assert!(!s3.keys("traces/a/events/_delta_log/").is_empty(), "the events log holds the commits");
    let state = s3.keys("traces/a/_state/");
    assert!(state.len() == 1 && state[0].starts_with("traces/a/_state/state-"), "one state file, the one committed last: {state:?}");
    assert!(s3.keys("traces/a/events/").iter().all(|k| k.ends_with(".parquet") || k.starts_with("traces/a/events/_delta_log/")));

    let expected = counts(&sql_rows(&local, COUNTS));
    assert!(expected.0 > 3000);
    assert_eq!(counts(&s3.sql_rows(&remote, COUNTS)), expected);
    let window = "SELECT session, count(*) AS n, max(idx) AS last FROM (SELECT session, row_number() OVER (PARTITION BY session ORDER BY ts, stream_seq) AS idx FROM events) GROUP BY session ORDER BY session";
    assert_eq!(s3.sql_rows(&remote, window), sql_rows(&local, window));

    let again = s3.ok(&["import", "--lake", &remote, &generated]);
    assert!(again.contains("skipped"), "{again}");
    assert_eq!(counts(&s3.sql_rows(&remote, COUNTS)), expected);

    let embedded = finding_ids(&tracelake_ok(&["analyze", "--lake", &local, "--full", "--format", "json"]));
    let on_s3 = finding_ids(&s3.ok(&["analyze", "--lake", &remote, "--full", "--format", "json"]));
    assert!(!embedded.is_empty());
    assert_eq!(on_s3, embedded);
    let stored = "SELECT finding_id FROM findings ORDER BY finding_id";
    let kept = sql_rows(&local, stored);
    assert!(kept.len() >= embedded.len());
    assert_eq!(s3.sql_rows(&remote, stored), kept);

    let status = s3.ok(&["status", "--lake", &remote]);
    assert!(status.contains(&format!("events:      {}", expected.0)), "{status}");
    let tables = |status: &str| -> Vec<String> {
        // Each table's name and file count, as listed on the store and on disk.
        let line = status.lines().find(|l| l.starts_with("tables:")).unwrap_or_default().to_owned();
        let without_version = |t: &str| t.split_whitespace().filter(|w| !w.starts_with('v')).collect::<Vec<_>>().join(" ");
        line.split(", ").map(|t| without_version(t.split(" file(s)").next().unwrap().trim_start_matches("tables:"))).collect()
    };
    let local_status = tracelake_ok(&["status", "--lake", &local]);
    assert!(tables(&status).iter().any(|t| t.starts_with("events ")), "{status}");
    assert_eq!(tables(&status), tables(&local_status), "{status}\n{local_status}");
    assert!(!status.contains(" 0 B"), "sizes listed on the store: {status}");
    let report = s3.ok(&["report", "--lake", &remote, "--format", "markdown"]);
    assert!(report.contains("SIG-"), "{report}");

    // A Delta reader on the bucket sees what tracelake sees.
    let delta = read_as_delta(s3.with_credentials(delta_reader(&remote)));
    assert_eq!(delta["events"]["rows"].as_i64(), Some(expected.0), "{delta}");
    let finding_keys: Vec<Value> = kept.iter().map(|r| r["finding_id"].clone()).collect();
    assert_eq!(delta["findings"]["keys"].as_array(), Some(&finding_keys));

    // The past on the bucket: a full analysis replaces the findings files, which the
    // earlier revision still reads until a vacuum deletes them from the store.
    let revision = status.lines().find_map(|l| l.strip_prefix("revision:")).and_then(|r| r.split_whitespace().next()).unwrap().to_owned();
    let findings_keys = s3.keys("traces/a/findings/date=");
    s3.ok(&["analyze", "--lake", &remote, "--full"]);
    let count_then = "SELECT count(*) AS n FROM findings";
    let then = s3.ok(&["sql", "--lake", &remote, "--as-of", &revision, "--format", "ndjson", count_then]);
    let then: Value = serde_json::from_str(then.lines().next().unwrap()).unwrap();
    assert_eq!(then["n"].as_u64(), Some(kept.len() as u64), "as of the earlier revision");
    assert!(s3.ok(&["compact", "--lake", &remote]).contains("nothing to compact"), "one file per partition and owner already");
    s3.ok(&["vacuum", "--lake", &remote, "--retain", "0s"]);
    assert!(findings_keys.iter().all(|k| !s3.keys("traces/a/findings/date=").contains(k)), "the replaced files are deleted from the store");
    let gone = s3.run(&["sql", "--lake", &remote, "--as-of", &revision, count_then]);
    assert!(String::from_utf8_lossy(&gone.stderr).contains("were vacuumed since"), "{gone:?}");
    assert_eq!(s3.sql_rows(&remote, stored).len(), kept.len(), "the lake keeps its findings");

    // An incremental analysis adds findings files beside the full one's: compaction reads
    // them from the store, merges them and commits the merged file.
    s3.ok(&["import", "--lake", &remote, &generate(dir.path(), 2000, 6)]);
    s3.ok(&["analyze", "--lake", &remote]);
    let before = s3.sql_rows(&remote, stored);
    let files_before = s3.keys("traces/a/findings/date=");
    assert!(before.len() > kept.len(), "the second analysis found more");
    let compacted = s3.ok(&["compact", "--lake", &remote, "--table", "findings"]);
    assert!(compacted.contains("merged "), "{compacted}");
    assert_eq!(s3.sql_rows(&remote, stored), before, "the same findings, read from the merged files");
    s3.ok(&["vacuum", "--lake", &remote, "--retain", "0s"]);
    let files_after = s3.keys("traces/a/findings/date=");
    assert!(files_after.len() < files_before.len(), "{files_before:?} -> {files_after:?}");
    let delta = read_as_delta(s3.with_credentials(delta_reader(&remote)));
    let keys: Vec<Value> = before.iter().map(|r| r["finding_id"].clone()).collect();
    assert_eq!(delta["findings"]["keys"].as_array(), Some(&keys), "a Delta reader sees the merged files");
}

#[test]
fn a_lake_of_an_earlier_release_on_s3_is_upgraded_in_place() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().unwrap();
    crate::delta::earlier_release_lake(dir.path(), false);
    let manifest: Value = serde_json::from_slice(&std::fs::read(dir.path().join("lake/_state/manifest.json")).unwrap()).unwrap();
    let findings: u64 = manifest["analyses"].as_array().unwrap().iter().map(|run| run["findings"].as_u64().unwrap()).sum();
    assert!(findings > 0, "the analysis of that release found something: {manifest}");
    s3.upload_dir(&dir.path().join("lake"), "old");
    let remote = s3.lake("old");
    let refused = s3.run(&["status", "--lake", &remote]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains(&format!("run `tracelake upgrade --lake {remote}`")), "{said}");

    let upgraded = s3.ok(&["upgrade", "--lake", &remote]);
    assert!(upgraded.contains("events           Delta version 0, "), "{upgraded}");
    let state = s3.keys("old/_state/");
    assert!(
        state.contains(&"old/_state/manifest.json.upgraded".to_owned()) && !state.contains(&"old/_state/manifest.json".to_owned()),
        "{state:?}"
    );
    let counts = s3.sql_rows(&remote, "SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM findings) AS findings");
    assert_eq!((counts[0]["events"].as_u64(), counts[0]["findings"].as_u64()), (Some(3160), Some(findings)), "the rows it had");
    assert!(s3.ok(&["upgrade", "--lake", &remote]).contains("nothing to upgrade"));
}

#[test]
fn a_missing_s3_lake_and_a_repair_on_s3_are_clear_errors() {
    let s3 = S3Server::start();
    let out = s3.run(&["sql", "--lake", &s3.lake("nothing-here"), "SELECT 1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("does not exist") && err.contains("tracelake import --lake s3://"), "{err}");
    let out = s3.run(&["sql", "--lake", "ftp://host/lake", "SELECT 1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a directory or on s3://, s3a://, gs://") && err.contains(", abfss://, not on ftp://"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let generated = generate(dir.path(), 500, 2);
    let lake = s3.lake("r");
    s3.ok(&["import", "--lake", &lake, &generated]);
    let out = s3.run(&["repair", "--lake", &lake, "--yes"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("object storage"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn two_concurrent_importers_lose_nothing_and_duplicate_nothing() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<String> = (10..16).map(|seed| generate(dir.path(), 2000, seed)).collect();
    let lake = s3.lake("concurrent");
    let spawn = |files: &[String]| {
        let mut args = vec!["import", "--lake", &lake];
        args.extend(files.iter().map(String::as_str));
        s3.command(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let (a, b) = (spawn(&files[..3]), spawn(&files[3..]));
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let local = dir.path().join("lake").display().to_string();
    let mut args = vec!["import", "--lake", &local];
    args.extend(files.iter().map(String::as_str));
    tracelake_ok(&args);
    let expected = counts(&sql_rows(&local, COUNTS));
    assert_eq!(expected.0, expected.1);
    assert_eq!(counts(&s3.sql_rows(&lake, COUNTS)), expected);
    let delta = read_as_delta(s3.with_credentials(delta_reader(&lake)));
    assert_eq!(delta["events"]["rows"].as_i64(), Some(expected.0), "both importers' files are in the Delta log: {delta}");

    // The same new file from two importers at once: it counts once.
    let shared = generate(dir.path(), 3000, 20);
    let (a, b) = (spawn(std::slice::from_ref(&shared)), spawn(std::slice::from_ref(&shared)));
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    for out in &outs {
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() || said.contains("committed to"), "{said}");
    }
    assert!(outs.iter().any(|o| o.status.success()));
    let shared_events = counts(&sql_rows(&local, COUNTS)).0;
    tracelake_ok(&["import", "--lake", &local, &shared]);
    let with_shared = counts(&sql_rows(&local, COUNTS)).0;
    assert!(with_shared > shared_events);
    assert_eq!(counts(&s3.sql_rows(&lake, COUNTS)), (with_shared, with_shared));
}

#[test]
fn export_to_s3_killed_at_any_point_then_rerun_gives_every_event_exactly_once() {
    let s3 = S3Server::start();
    let server = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    let generated = generate(dir.path(), 20_000, 31);
    let lines: Vec<String> = std::fs::read_to_string(&generated).unwrap().lines().map(str::to_owned).collect();
    server.publish("openclaw-events", &lines);
    let lake = s3.lake("exported");
    let url = server.url();
    let export = ["export", "--lake", &lake, "--nats-url", &url, "--stream", "openclaw-events", "--commit-every", "1000"];
    let seqs = "SELECT count(*) AS n, count(DISTINCT stream_seq) AS ids FROM events";
    let mut progress = Vec::new();
    for delay_ms in [300, 700, 1200, 2000] {
        let mut child = s3.command(&export).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let exists = !s3.keys("exported/events/_delta_log/").is_empty();
        let (rows, distinct) = if exists { counts(&s3.sql_rows(&lake, seqs)) } else { (0, 0) };
        assert_eq!(rows, distinct, "no duplicate after a kill at {delay_ms} ms");
        progress.push(rows);
    }
    let out = s3.ok(&export);
    assert!(out.contains("cursor 20000 of 20000"), "{out} (after kills at {progress:?})");
    assert_eq!(counts(&s3.sql_rows(&lake, seqs)), (20_000, 20_000));
    let range = s3.sql_rows(&lake, "SELECT min(stream_seq) AS lo, max(stream_seq) AS hi FROM events");
    assert_eq!((range[0]["lo"].as_i64(), range[0]["hi"].as_i64()), (Some(1), Some(20_000)));
}

#[test]
fn two_analyses_at_once_on_s3_commit_one_run_and_say_so_to_the_other() {
    let s3 = S3Server::start();
    let dir = tempfile::tempdir().unwrap();
    let generated = generate(dir.path(), 20_000, 41);
    let lake = s3.lake("analyzed");
    s3.ok(&["import", "--lake", &lake, &generated]);
    let analyze = ["analyze", "--lake", &lake, "--full", "--format", "json"];
    let spawn = || s3.command(&analyze).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    for out in &outs {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() || err.contains("another tracelake analyze committed to"), "{err}");
    }
    assert!(outs.iter().any(|o| o.status.success()));
    let runs = s3.sql_rows(&lake, "SELECT count(*) AS n, count(DISTINCT finding_id) AS ids, count(DISTINCT run_id) AS runs FROM findings");
    let (n, ids, runs) = (runs[0]["n"].as_i64().unwrap(), runs[0]["ids"].as_i64().unwrap(), runs[0]["runs"].as_i64().unwrap());
    assert!(n > 0 && n == ids, "each finding once: {n} rows, {ids} ids");
    let committed = outs.iter().filter(|o| o.status.success()).count() as i64;
    assert!(runs <= committed, "{runs} runs stored, {committed} committed");

    // Events committed after the analysis are read from their own files on the store.
    let more = generate(dir.path(), 2_000, 42);
    s3.ok(&["import", "--lake", &lake, &more]);
    let incremental: serde_json::Value = serde_json::from_str(&s3.ok(&["analyze", "--lake", &lake, "--format", "json"])).unwrap();
    let read = incremental["stats"]["eventsProcessed"].as_u64().unwrap();
    assert!(read > 0 && read <= 2_000, "only the new sessions are read: {read}");
    let status = s3.ok(&["status", "--lake", &lake]);
    assert!(status.contains("nothing committed since"), "{status}");
}
