//! `tracelake import` end to end: row counts, quarantine, secrets, paths, re-imports and
//! leftovers of interrupted writes, all checked by reading the Parquet files back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::TimestampMillisecondType;
use serde_json::{Value, json};

use crate::common::{all_strings, parquet_files, parquet_rows, read_parquet, realworld, sql_rows, tracelake, tracelake_ok};

fn lake_arg(dir: &Path) -> String {
    dir.join("lake").display().to_string()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

/// Per-type counts of a JSONL file, computed independently of tracelake's normalizer.
fn type_counts(path: &Path) -> BTreeMap<String, i64> {
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        *counts.entry(v["type"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    counts
}

#[test]
fn realworld_traces_import_one_row_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let retail = realworld("tau-retail.events.jsonl");
    let airline = realworld("tau-airline.events.jsonl");
    let out = tracelake_ok(&["import", "--lake", &lake, retail.to_str().unwrap(), airline.to_str().unwrap()]);
    assert!(out.contains("imported") && out.contains("3160 events, 0 quarantined"), "{out}");
    assert!(out.contains("5598 events, 0 quarantined"), "{out}");
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3160 + 5598);

    let mut expected = type_counts(&retail);
    for (k, v) in type_counts(&airline) {
        *expected.entry(k).or_default() += v;
    }
    let rows = sql_rows(&lake, "SELECT type, count(*) AS n FROM events GROUP BY type");
    let actual: BTreeMap<String, i64> = rows.iter().map(|r| (r["type"].as_str().unwrap().to_owned(), r["n"].as_i64().unwrap())).collect();
    assert_eq!(actual, expected);
    let ids = sql_rows(&lake, "SELECT count(DISTINCT id) AS ids, count(*) AS n FROM events");
    assert_eq!(ids[0]["ids"], ids[0]["n"], "every event exactly once");
}

#[test]
fn a_lake_named_through_a_parent_directory_is_the_same_lake() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
    let through_parent = dir.path().join("elsewhere/../lake").display().to_string();
    let retail = realworld("tau-retail.events.jsonl");
    let out = tracelake_ok(&["import", "--lake", &through_parent, retail.to_str().unwrap()]);
    assert!(out.contains("3160 events, 0 quarantined"), "{out}");
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3160);
    let rows = sql_rows(&through_parent, "SELECT count(*) AS n FROM events");
    assert_eq!(rows[0]["n"], 3160);
    tracelake_ok(&["analyze", "--lake", &through_parent]);
    let direct = sql_rows(&lake_arg(dir.path()), "SELECT count(*) AS n FROM findings");
    assert_eq!(sql_rows(&through_parent, "SELECT count(*) AS n FROM findings"), direct);
}

#[test]
fn ctrl_c_during_an_import_says_what_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["import", "--lake", &lake, "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line =
        json!({"id": "e1", "ts": 1_767_225_600_000_i64, "agent": "main", "session": "s", "type": "msg.in", "payload": {"content": "hi"}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{line}").unwrap();
    // The import waits for more input; once it reads, the handler is in place.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !dir.path().join("lake/_state").exists() {
        assert!(std::time::Instant::now() < deadline, "the import never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("nothing committed from standard input; run the command again"), "{stderr}");
    assert!(sql_rows(&lake, "SELECT id FROM events").is_empty());
}

#[test]
fn times_as_text_or_epoch_seconds_land_in_their_own_date() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let input = dir.path().join("times.jsonl");
    let line = |id: &str, ts: Value| {
        json!({"id": id, "ts": ts, "agent": "main", "session": "s", "type": "msg.in", "payload": {"content": "hi"}}).to_string()
    };
    write_lines(&input, &[line("text", json!("2026-01-05T10:00:00Z")), line("seconds", json!(1_767_607_203)), line("old", json!(1_000))]);
    let out = tracelake_ok(&["import", "--lake", &lake, input.to_str().unwrap()]);
    assert!(out.contains("2 events, 1 quarantined") && out.contains("invalid_timestamp 1"), "{out}");
    let rows = sql_rows(&lake, "SELECT id, CAST(date AS VARCHAR) AS date FROM events ORDER BY id");
    assert_eq!(rows, vec![json!({"id": "seconds", "date": "2026-01-05"}), json!({"id": "text", "date": "2026-01-05"})]);
    assert!(parquet_files(&dir.path().join("lake/events")).iter().all(|f| f.to_string_lossy().contains("date=2026-01-05")));
}

#[test]
fn files_are_partitioned_by_date_and_sorted_by_agent_session_time() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let files = parquet_files(&dir.path().join("lake/events"));
    assert!(!files.is_empty());
    for file in files {
        let partition = file.parent().unwrap().file_name().unwrap().to_str().unwrap().to_owned();
        let batches: Vec<RecordBatch> = read_parquet(&file);
        let mut keys = Vec::new();
        for b in &batches {
            let agent = b.column_by_name("agent").unwrap().as_string::<i32>();
            let session = b.column_by_name("session").unwrap().as_string::<i32>();
            let ts = b.column_by_name("ts").unwrap().as_primitive::<TimestampMillisecondType>();
            for i in 0..b.num_rows() {
                let day = chrono::DateTime::from_timestamp_millis(ts.value(i)).unwrap().format("date=%Y-%m-%d").to_string();
                assert_eq!(day, partition, "row in the partition of its own date");
                keys.push((agent.value(i).to_owned(), session.value(i).to_owned(), ts.value(i)));
            }
        }
        assert!(keys.is_sorted(), "{} is not sorted by (agent, session, ts)", file.display());
    }
}

#[test]
fn bad_lines_are_quarantined_counted_and_nothing_valid_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let input = dir.path().join("mixed.jsonl");
    let good = |n: i64| {
        json!({"id": format!("e{n}"), "ts": 1_767_225_600_000_i64 + n, "agent": "main", "session": "s", "type": "msg.in", "payload": {"content": "hi"}}).to_string()
    };
    let mut lines = vec![good(1), "{not json".into(), "[1,2,3]".into(), good(2)];
    lines.push(json!({"type": "msg.in"}).to_string());
    lines.push(json!({"ts": -3, "type": "msg.in"}).to_string());
    lines.push(json!({"ts": 1_767_225_600}).to_string());
    lines.push(format!("{{\"ts\": 1, \"type\": \"msg.in\", \"payload\": {{\"content\": \"{}\"}}}}", "x".repeat(3000)));
    lines.push(String::new());
    lines.push(good(3));
    write_lines(&input, &lines);
    let mut raw = std::fs::read(&input).unwrap();
    raw.extend_from_slice(b"{\"ts\": 1, \"type\": \"\xff\"}\n");
    std::fs::write(&input, raw).unwrap();

    let out = tracelake_ok(&["import", "--lake", &lake, "--max-event-bytes", "2000", input.to_str().unwrap()]);
    assert!(out.contains("3 events, 7 quarantined"), "{out}");
    for reason in [
        "invalid_json 1",
        "not_an_object 1",
        "missing_timestamp 1",
        "invalid_timestamp 1",
        "missing_type 1",
        "too_large 1",
        "invalid_utf8 1",
    ] {
        assert!(out.contains(reason), "{reason} missing in: {out}");
    }
    let ids = sql_rows(&lake, "SELECT id FROM events ORDER BY id");
    assert_eq!(ids, vec![json!({"id": "e1"}), json!({"id": "e2"}), json!({"id": "e3"})]);
    let q = sql_rows(&lake, "SELECT reason, position FROM quarantine ORDER BY position");
    let got: Vec<(String, u64)> = q.iter().map(|r| (r["reason"].as_str().unwrap().to_owned(), r["position"].as_u64().unwrap())).collect();
    assert_eq!(
        got,
        vec![
            ("invalid_json".into(), 2),
            ("not_an_object".into(), 3),
            ("missing_timestamp".into(), 5),
            ("invalid_timestamp".into(), 6),
            ("missing_type".into(), 7),
            ("too_large".into(), 8),
            ("invalid_utf8".into(), 11),
        ]
    );
    let status = tracelake_ok(&["status", "--lake", &lake]);
    assert!(status.contains("events:      3 in 1 partition(s)") && status.contains("quarantined: 7"), "{status}");
    let tables = status.lines().find(|l| l.starts_with("tables:")).expect(&status);
    let files = |table: &str| {
        let dir = std::path::Path::new(&lake).join(table);
        parquet_files(&dir).iter().map(|f| std::fs::metadata(f).unwrap().len()).collect::<Vec<_>>()
    };
    let (events, quarantine) = (files("events"), files("quarantine"));
    assert_eq!((events.len(), quarantine.len()), (1, 1), "{status}");
    assert!(tables.starts_with("tables:      events v1 1 file(s) ") && tables.contains(", quarantine v1 1 file(s) "), "{tables}");
    assert!(tables.contains(&format!("events v1 1 file(s) {}", human(events[0]))), "the bytes of the files: {tables}");
}

/// As `status` prints sizes.
fn human(bytes: u64) -> String {
    if bytes < 1000 { format!("{bytes} B") } else { format!("{:.1} kB", bytes as f64 / 1000.0) }
}

#[test]
fn planted_secrets_never_reach_a_parquet_file() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let input = dir.path().join("secrets.jsonl");
    let key = "sk-plantedSECRET0123456789abcdef";
    let gh = format!("ghp_{}", "PlantedGithubToken01".repeat(2));
    let pw = "hunter2-planted-pw";
    let ts = 1_767_225_600_000_i64;
    write_lines(&input, &[
        json!({"id": "m", "ts": ts, "agent": "main", "session": "s", "type": "msg.in", "payload": {"content": format!("my key is {key}")}}).to_string(),
        json!({"id": "c", "ts": ts + 1, "agent": "main", "session": "s", "type": "tool.call", "payload": {"toolName": "exec", "params": {"command": format!("git push https://bot:{pw}@github.com/x.git"), "env": {"TOKEN": gh}}}}).to_string(),
        json!({"id": "r", "ts": ts + 2, "timestamp": ts + 2, "agent": "main", "session": "agent:main:s", "type": "conversation.tool_result", "payload": {"data": {"name": "exec", "isError": true, "result": {"content": [{"type": "text", "text": format!("fatal: PASSWORD={pw} rejected for {key}")}]}}}}).to_string(),
        format!("{{\"broken\": \"{key}\""),
    ]);
    tracelake_ok(&["import", "--lake", &lake, input.to_str().unwrap()]);
    let strings = all_strings(&dir.path().join("lake"));
    assert!(strings.iter().any(|s| s.contains("[REDACTED")), "redaction markers are there");
    for secret in [key, gh.as_str(), pw] {
        assert!(!strings.iter().any(|s| s.contains(secret)), "{secret} found in a Parquet file");
    }
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3);
    assert_eq!(parquet_rows(&dir.path().join("lake/quarantine")), 1);
}

#[test]
fn names_from_events_never_become_paths() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let input = dir.path().join("evil.jsonl");
    write_lines(
        &input,
        &[
            json!({"ts": 1_767_225_600_000_i64, "agent": "../../x", "session": "../../../etc/passwd", "type": "../../y", "payload": {}})
                .to_string(),
            json!({"ts": 1_767_225_600_001_i64, "agent": "/tmp/abs", "session": "..\\..\\z", "type": "msg.in", "payload": {}}).to_string(),
        ],
    );
    tracelake_ok(&["import", "--lake", &lake, input.to_str().unwrap()]);
    let mut entries: Vec<String> = walk(dir.path()).iter().map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string()).collect();
    entries.retain(|e| e != "evil.jsonl");
    for entry in &entries {
        assert!(entry.starts_with("lake/"), "{entry} is outside the lake");
        assert!(!entry.contains("..") && !entry.contains("passwd") && !entry.contains("abs"), "{entry}");
    }
    assert!(entries.iter().any(|e| e.starts_with("lake/events/date=2026-01-01/part-")), "{entries:?}");
    let rows = sql_rows(&lake, "SELECT agent FROM events ORDER BY agent");
    assert_eq!(rows, vec![json!({"agent": "../../x"}), json!({"agent": "/tmp/abs"})], "the names themselves are kept");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn reimporting_the_same_content_is_skipped_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let retail = realworld("tau-retail.events.jsonl");
    tracelake_ok(&["import", "--lake", &lake, retail.to_str().unwrap()]);
    let first_files = parquet_files(&dir.path().join("lake/events"));

    let again = tracelake_ok(&["import", "--lake", &lake, retail.to_str().unwrap()]);
    assert!(again.contains("skipped") && again.contains("--force"), "{again}");
    assert_eq!(parquet_files(&dir.path().join("lake/events")), first_files, "nothing written or rewritten");

    // The same content under another name, through standard input, is recognized too.
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["import", "--lake", &lake, "-"])
        .stdin(std::fs::File::open(&retail).unwrap())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&piped.stdout).contains("skipped -"), "{piped:?}");
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3160);

    let forced = tracelake_ok(&["import", "--lake", &lake, "--force", retail.to_str().unwrap()]);
    assert!(forced.contains("3160 events"), "{forced}");
    assert_eq!(sql_rows(&lake, "SELECT count(*) AS n FROM events")[0]["n"], 3160, "a forced import replaces, never duplicates");
    assert!(first_files.iter().all(|f| f.exists()), "the replaced files stay for --as-of");
    tracelake_ok(&["vacuum", "--lake", &lake, "--retain", "0s"]);
    assert!(first_files.iter().all(|f| !f.exists()), "a vacuum deletes the replaced files");
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3160);
}

#[test]
fn appending_keeps_old_files_and_stdin_works() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let before: Vec<_> =
        parquet_files(&dir.path().join("lake/events")).into_iter().map(|f| (f.clone(), std::fs::read(&f).unwrap())).collect();
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["import", "--lake", &lake, "-"])
        .stdin(std::fs::File::open(realworld("tau-airline.events.jsonl")).unwrap())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&piped.stdout).contains("imported -: 5598 events"), "{piped:?}");
    for (file, bytes) in before {
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "{} was rewritten", file.display());
    }
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3160 + 5598);
}

#[test]
fn leftovers_of_an_interrupted_import_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    // What a crash between writing files and committing the manifest leaves behind: its
    // files, and its marker, which nobody holds any more.
    let committed = parquet_files(&dir.path().join("lake/events"));
    let partition = committed[0].parent().unwrap();
    std::fs::copy(&committed[0], partition.join("part-deadbeefdeadbeef-00001.parquet")).unwrap();
    std::fs::write(partition.join(".part-deadbeefdeadbeef-00002.parquet.tmp"), b"half").unwrap();
    std::fs::write(dir.path().join("lake/_state/writers/deadbeefdeadbeef"), b"").unwrap();
    // A file of a writer nobody knows: not proven uncommitted, so never deleted.
    std::fs::copy(&committed[0], partition.join("part-0123456789abcdef-00001.parquet")).unwrap();
    let copied: usize = read_parquet(&committed[0]).iter().map(RecordBatch::num_rows).sum();
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3160 + 2 * copied);
    let count = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT count(*) AS n FROM events"]);
    assert_eq!(count.trim(), "n\n3160", "readers see committed files only");

    let out = tracelake_ok(&["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()]);
    assert!(out.contains("removed 2 leftover file(s)"), "{out}");
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 3160 + 5598 + copied, "the known leftover is gone, the unknown file kept");
    assert!(!partition.join(".part-deadbeefdeadbeef-00002.parquet.tmp").exists());
    assert!(partition.join("part-0123456789abcdef-00001.parquet").exists());
    let count = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT count(*) AS n FROM events"]);
    assert_eq!(count.trim(), "n\n8758");
}

#[test]
fn a_missing_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = tracelake(&["import", "--lake", &lake_arg(dir.path()), "/nonexistent/events.jsonl"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/events.jsonl") && err.contains("No such file"), "{err}");
}

#[test]
fn a_file_that_grew_imports_only_its_new_lines_and_one_that_changed_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let all: Vec<String> = std::fs::read_to_string(realworld("tau-retail.events.jsonl")).unwrap().lines().map(str::to_owned).collect();
    let log = dir.path().join("agent.log.jsonl");
    let log_arg = log.to_str().unwrap();
    write_lines(&log, &all[..2000]);
    tracelake_ok(&["import", "--lake", &lake, log_arg]);

    let mut grown = all.clone();
    grown.push("not json".into());
    write_lines(&log, &grown);
    let out = tracelake_ok(&["import", "--lake", &lake, log_arg]);
    assert!(out.contains("lines 2001–3161"), "says what it took: {out}");
    let rows = sql_rows(&lake, "SELECT count(*) AS n, count(DISTINCT id) AS ids FROM events");
    assert_eq!((rows[0]["n"].as_i64(), rows[0]["ids"].as_i64()), (Some(3160), Some(3160)), "every event once");
    let bad = sql_rows(&lake, "SELECT position FROM quarantine");
    assert_eq!(bad[0]["position"].as_i64(), Some(3161), "line numbers count from the file's start");
    assert!(
        tracelake_ok(&["import", "--lake", &lake, log_arg]).contains("the same content was imported"),
        "the same content again is skipped"
    );

    write_lines(&log, &all[..100]);
    let changed = tracelake(&["import", "--lake", &lake, log_arg]);
    let stderr = String::from_utf8_lossy(&changed.stderr);
    assert_eq!(changed.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("has changed since it was imported") && stderr.contains("--force"), "{stderr}");
    assert_eq!(sql_rows(&lake, "SELECT count(*) AS n FROM events")[0]["n"].as_i64(), Some(3160), "nothing imported");
    tracelake_ok(&["import", "--lake", &lake, "--force", log_arg]);
}

#[test]
fn a_directory_imports_its_files_and_other_inputs_get_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let lake = lake_arg(dir.path());
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let all: Vec<String> = std::fs::read_to_string(realworld("tau-retail.events.jsonl")).unwrap().lines().map(str::to_owned).collect();
    write_lines(&logs.join("a.jsonl"), &all[..1000]);
    write_lines(&logs.join("b.jsonl"), &all[1000..]);
    std::fs::write(logs.join("notes.txt"), "not events").unwrap();
    let out = tracelake_ok(&["import", "--lake", &lake, logs.to_str().unwrap()]);
    assert_eq!(out.lines().count(), 2, "one line per file: {out}");
    assert_eq!(sql_rows(&lake, "SELECT count(*) AS n FROM events")[0]["n"].as_i64(), Some(3160));

    let cases = [
        ("events.jsonl.gz", vec![0x1f, 0x8b, 8, 0], "gunzip -c"),
        ("events.jsonl.zst", vec![0x28, 0xb5, 0x2f, 0xfd], "zstd -dc"),
        ("events.json", b"  [\n {\"ts\": 1, \"type\": \"msg.in\"}\n]\n".to_vec(), "jq -c '.[]'"),
    ];
    for (name, bytes, hint) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).unwrap();
        let out = tracelake(&["import", "--lake", &lake, file.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(hint) && stderr.lines().count() == 1, "{name}: {stderr}");
    }
    let rows = sql_rows(&lake, "SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM quarantine) AS bad");
    assert_eq!((rows[0]["events"].as_i64(), rows[0]["bad"].as_i64()), (Some(3160), Some(0)), "nothing imported from them");
}
