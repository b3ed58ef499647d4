//! `--workers`: two `tracelake worker` processes on loopback run the plans of analyze and
//! of ad-hoc window queries, with the results of the embedded engine.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{finding_ids, json_lines, realworld, tracelake_ok};

/// A `tracelake worker` on a free loopback port, stopped when dropped.
struct Worker {
    child: Child,
    url: String,
}

impl Worker {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tracelake"))
            .args(["worker", "--listen", "127.0.0.1:0"])
            .env_remove("TRACELAKE_WORKERS")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("no address in {line:?}")).to_owned();
        Worker { child, url }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A config whose scans are split into a task per file, so that even a small lake is
/// read by the workers.
fn tiny_tasks(dir: &std::path::Path) -> String {
    let path = dir.join("config.json");
    std::fs::write(&path, r#"{"traceAnalyzer": {"workerScanBytes": 1}}"#).unwrap();
    path.display().to_string()
}

/// A query's rows as a set of JSON lines (row order is the query's to choose).
fn rows(lake: &str, workers: Option<(&str, &str)>, query: &str) -> BTreeSet<String> {
    let mut args = vec!["sql", "--lake", lake, "--format", "ndjson"];
    if let Some((workers, config)) = workers {
        args.extend(["--workers", workers, "--config", config]);
    }
    args.push(query);
    json_lines(&tracelake_ok(&args)).iter().map(Value::to_string).collect()
}

#[test]
fn two_workers_give_the_embedded_findings_and_query_results() {
    let (a, b) = (Worker::start(), Worker::start());
    let workers = format!("{},{}", a.url, b.url);
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("g.jsonl").display().to_string();
    tracelake_ok(&["generate", "--events", "20000", "--seed", "9", "--output", &generated]);
    let lake = dir.path().join("lake").display().to_string();
    let airline = realworld("tau-airline.events.jsonl").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, &generated, &airline]);
    let config = tiny_tasks(dir.path());

    let embedded = finding_ids(&tracelake_ok(&["analyze", "--lake", &lake, "--full", "--format", "json"]));
    let distributed =
        finding_ids(&tracelake_ok(&["analyze", "--lake", &lake, "--full", "--format", "json", "--workers", &workers, "--config", &config]));
    assert!(embedded.len() > 10, "{}", embedded.len());
    assert_eq!(distributed, embedded);
    // One worker: the same findings, and a note that it took no part.
    let alone =
        crate::common::tracelake(&["analyze", "--lake", &lake, "--full", "--format", "json", "--workers", &a.url, "--config", &config]);
    let said = String::from_utf8_lossy(&alone.stderr);
    assert!(alone.status.success(), "{said}");
    assert_eq!(finding_ids(&String::from_utf8_lossy(&alone.stdout)), embedded);
    assert!(said.contains(&format!("note: with one worker ({}) the plan runs in this process", a.url)), "{said}");
    // As every command that plans over the lake says.
    let status = crate::common::tracelake(&["status", "--lake", &lake, "--workers", &a.url]);
    let said = String::from_utf8_lossy(&status.stderr);
    assert!(status.status.success() && said.contains("note: with one worker"), "{said}");
    assert!(
        !String::from_utf8_lossy(&crate::common::tracelake(&["analyze", "--lake", &lake, "--workers", &workers]).stderr)
            .contains("one worker")
    );
    // The chains and detectors ran on the workers, not here: with shares enough for both
    // (`--bucket-events`), both take part, however few bytes the scan reads.
    let args = ["analyze", "--lake", &lake, "--full", "--verbose", "--workers", &workers, "--bucket-events", "5000"];
    let verbose = crate::common::tracelake(&args);
    let stages = String::from_utf8_lossy(&verbose.stderr);
    assert!(stages.contains("workers: scan to findings") && !stages.contains("\n  scan to findings"), "{stages}");
    let chains = stages.lines().find(|l| l.trim_start().starts_with("chains and cortex")).unwrap_or_else(|| panic!("{stages}"));
    assert!(chains.ends_with("which run on the workers") && !stages.contains("spread by session "), "{stages}");
    assert!(stages.contains("the chain build and the detectors, once in each worker's task"), "{stages}");
    // With the stages of the workers' plan: the scan, the shuffle by session, the job,
    // each on both workers.
    let job = stages.lines().find(|l| l.contains("SessionJobExec")).unwrap_or_else(|| panic!("{stages}"));
    assert!(job.contains("input_rows=") && stages.contains("NetworkShuffleExec"), "{stages}");
    assert_eq!(stages.matches("── tasks=2,").count(), 2, "{stages}");

    let queries = [
        "SELECT agent, session, count(*) AS n FROM events GROUP BY agent, session",
        "SELECT session, id, row_number() OVER (PARTITION BY session ORDER BY ts, stream_seq, id) AS idx FROM events",
        "SELECT session, tool_name, lag(type) OVER (PARTITION BY session ORDER BY ts, stream_seq, id) AS before FROM events WHERE tool_name IS NOT NULL",
        "SELECT tool_name, count(*) AS calls, sum(CASE WHEN failed THEN 1 ELSE 0 END) AS failed FROM tool_attempts GROUP BY tool_name",
        "SELECT fingerprint, session, start_event_id FROM failure_occurrences",
        "SELECT signal, count(*) AS n FROM findings GROUP BY signal",
    ];
    for query in queries {
        let expected = rows(&lake, None, query);
        assert!(!expected.is_empty(), "{query}");
        assert_eq!(rows(&lake, Some((&workers, &config)), query), expected, "{query}");
    }
    let explain = [
        "sql",
        "--lake",
        &lake,
        "--workers",
        &workers,
        "--config",
        &config,
        "--format",
        "csv",
        "EXPLAIN SELECT agent, count(*) FROM events GROUP BY agent",
    ];
    let plan = tracelake_ok(&explain);
    assert!(plan.contains("distributed_plan") && plan.contains("[Stage 1]") && plan.contains("tasks=2"), "{plan}");
    // A detector's SQL over the chain views: the chains are built on the workers, shard
    // by shard of sessions, behind a shuffle.
    let detector = include_str!("../../sql/detectors/sig_doom_loop.sql");
    let loops = rows(&lake, None, detector);
    assert!(!loops.is_empty());
    assert_eq!(rows(&lake, Some((&workers, &config)), detector), loops);
    let analyzed = format!("EXPLAIN ANALYZE {detector}");
    let plan = tracelake_ok(&["sql", "--lake", &lake, "--workers", &workers, "--config", &config, "--format", "csv", &analyzed]);
    let shuffled = plan.lines().skip_while(|l| !l.contains("NetworkShuffleExec")).collect::<Vec<_>>().join("\n");
    assert!(shuffled.contains("WindowAggExec") && shuffled.contains("chain_shard"), "{plan}");

    // The results came from the workers: without them the same command fails.
    drop((a, b));
    let args = ["sql", "--lake", &lake, "--workers", &workers, "--config", &config, queries[0]];
    let out = crate::common::tracelake(&args);
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn an_unreachable_worker_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("g.jsonl").display().to_string();
    tracelake_ok(&["generate", "--events", "2000", "--seed", "3", "--output", &generated]);
    let lake = dir.path().join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, &generated]);
    let config = tiny_tasks(dir.path());
    let live = Worker::start();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // One worker gone among others, or alone (where a small plan would run here anyway).
    for workers in [format!("{},127.0.0.1:{port}", live.url), format!("127.0.0.1:{port}")] {
        for command in ["sql", "analyze"] {
            let mut args = vec![command, "--lake", &lake, "--config", &config, "--workers", &workers];
            if command == "sql" {
                args.push("SELECT agent, count(*) FROM events GROUP BY agent");
            }
            let out = crate::common::tracelake(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?}: {err}");
            assert!(err.contains(&format!("127.0.0.1:{port}")) && err.contains("tracelake worker --listen"), "{err}");
            assert_eq!(err.lines().count(), 1, "one line: {err}");
        }
    }
    let out = crate::common::tracelake(&["sql", "--lake", &lake, "--workers", "not a url", "SELECT 1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a worker URL"), "{}", String::from_utf8_lossy(&out.stderr));
}
