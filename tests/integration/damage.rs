//! Damaged lakes and interrupted writers: readers see exactly the committed files, no
//! command deletes a file it cannot prove uncommitted, and `repair` rebuilds the lake's state.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{parquet_files, parquet_rows, realworld, tracelake, tracelake_ok};
use crate::delta::delta_event_rows;

fn count(lake: &str) -> String {
    let out = tracelake_ok(&["sql", "--lake", lake, "--format", "csv", "SELECT count(*) AS n FROM events"]);
    out.trim().trim_start_matches("n\n").to_owned()
}

fn stderr_of(args: &[&str]) -> String {
    let out = tracelake(args);
    assert!(!out.status.success(), "tracelake {args:?} must fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn imported_lake(dir: &Path) -> (String, Vec<std::path::PathBuf>) {
    let lake = dir.join("lake").display().to_string();
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let files = parquet_files(&dir.join("lake"));
    (lake, files)
}

#[test]
fn a_lake_without_the_log_of_its_commits_is_reported_and_never_swept() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, files) = imported_lake(dir.path());
    std::fs::remove_dir_all(dir.path().join("lake/events/_delta_log")).unwrap();

    for args in [
        vec!["sql", "--lake", &lake, "SELECT count(*) FROM events"],
        vec!["status", "--lake", &lake],
        vec!["analyze", "--lake", &lake],
        vec!["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()],
    ] {
        let err = stderr_of(&args);
        assert!(
            err.contains("damaged")
                && err.contains("no Delta log of its events table")
                && err.contains(&format!("`tracelake repair --lake {lake}`")),
            "{args:?}: {err}"
        );
    }
    assert_eq!(parquet_files(&dir.path().join("lake")), files, "no file was deleted");

    let refused = tracelake(&["repair", "--lake", &lake]);
    assert!(!refused.status.success(), "without a terminal, repair asks for --yes");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--yes"));
    let repaired = tracelake_ok(&["repair", "--lake", &lake, "--yes"]);
    assert!(repaired.contains("which holds the lake's state, is missing") && repaired.contains("rows)"), "{repaired}");
    assert_eq!(count(&lake), "3160");
    tracelake_ok(&["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()]);
    assert_eq!(count(&lake), "8758");
    assert!(tracelake_ok(&["repair", "--lake", &lake]).contains("nothing to repair"));
}

#[test]
fn a_committed_file_that_is_gone_is_named_and_nothing_else_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, files) = imported_lake(dir.path());
    let events: Vec<_> = files.iter().filter(|f| f.to_string_lossy().contains("/events/")).collect();
    let gone = events[0];
    std::fs::remove_file(gone).unwrap();
    let name = gone.file_name().unwrap().to_str().unwrap();

    for args in [
        vec!["sql", "--lake", &lake, "SELECT count(*) FROM events"],
        vec!["analyze", "--lake", &lake],
        vec!["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()],
    ] {
        let err = stderr_of(&args);
        assert!(err.contains("missing") && err.contains(name), "{args:?}: {err}");
    }
    let left: Vec<_> = files.iter().filter(|f| *f != gone).cloned().collect();
    assert_eq!(parquet_files(&dir.path().join("lake")), left, "no other file was deleted");

    let repaired = tracelake_ok(&["repair", "--lake", &lake, "--yes"]);
    assert!(repaired.contains(name), "{repaired}");
    let n: usize = count(&lake).parse().unwrap();
    assert!(n > 0 && n < 3160, "what is left is readable: {n}");
}

#[test]
fn a_corrupt_data_file_is_named_and_repair_moves_it_aside() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, files) = imported_lake(dir.path());
    let event_file = files.iter().find(|f| f.to_string_lossy().contains("/events/")).unwrap();
    std::fs::write(event_file, b"not parquet at all").unwrap();
    let name = event_file.file_name().unwrap().to_str().unwrap();
    let err = stderr_of(&["sql", "--lake", &lake, "SELECT count(*) FROM events"]);
    assert!(err.contains(name), "the error names the file: {err}");
    assert_eq!(err.matches(name).count(), 1, "once: {err}");
    assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "one error: {err}");
    let repaired = tracelake_ok(&["repair", "--lake", &lake, "--yes"]);
    assert!(repaired.contains("_state/damaged"), "{repaired}");
    assert!(dir.path().join("lake/_state/damaged").read_dir().unwrap().count() == 1);
    assert!(count(&lake).parse::<usize>().unwrap() < 3160);
}

#[test]
fn a_data_file_with_a_damaged_page_is_named_and_repair_moves_it_aside() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, files) = imported_lake(dir.path());
    let event_file = files.iter().find(|f| f.to_string_lossy().contains("/events/")).unwrap();
    // The pages garbled, the footer kept: the file opens, its columns do not read.
    let mut bytes = std::fs::read(event_file).unwrap();
    let half = bytes.len() / 2;
    bytes[4..half].fill(0x55);
    std::fs::write(event_file, bytes).unwrap();
    let name = event_file.file_name().unwrap().to_str().unwrap();

    let err = stderr_of(&["analyze", "--lake", &lake]);
    assert!(err.contains("do not read as Parquet") && err.contains(name) && err.contains("tracelake repair"), "{err}");
    assert_eq!(err.matches(name).count(), 1, "once: {err}");
    assert_eq!(err.lines().filter(|l| !l.trim().is_empty()).count(), 1, "one error: {err}");
    assert!(!err.contains("External:"), "the reader's innermost words, without its wrappers: {err}");
    let repaired = tracelake_ok(&["repair", "--lake", &lake, "--yes"]);
    assert!(repaired.contains("_state/damaged") && repaired.contains(name), "{repaired}");
    tracelake_ok(&["analyze", "--lake", &lake]);
    assert!(count(&lake).parse::<usize>().unwrap() < 3160);
}

#[test]
fn a_killed_import_leaves_nothing_readers_see_and_the_next_writer_sweeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, _) = imported_lake(dir.path());
    let big = dir.path().join("big.jsonl");
    tracelake_ok(&["generate", "--events", "300000", "--seed", "3", "--output", big.to_str().unwrap()]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracelake"))
        .args(["import", "--lake", &lake, big.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it has written data files of its own, before it commits.
    let before = parquet_files(&dir.path().join("lake")).len();
    let deadline = Instant::now() + Duration::from_secs(60);
    while parquet_files(&dir.path().join("lake")).len() == before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(parquet_files(&dir.path().join("lake")).len() > before, "the import wrote files before it was killed");

    assert_eq!(count(&lake), "3160", "a reader sees the committed state only");
    assert_eq!(delta_event_rows(&lake), 3160, "so does a Delta reader");
    let out = tracelake_ok(&["import", "--lake", &lake, realworld("tau-airline.events.jsonl").to_str().unwrap()]);
    assert!(out.contains("leftover file(s)"), "{out}");
    assert_eq!(count(&lake), "8758");
    assert_eq!(parquet_rows(&dir.path().join("lake/events")), 8758, "the killed import's files are gone");
    assert_eq!(delta_event_rows(&lake), 8758);
}

#[test]
fn queries_cannot_write_into_the_lake_and_detector_files_cannot_write_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let (lake, files) = imported_lake(dir.path());
    let insert = stderr_of(&["sql", "--lake", &lake, "INSERT INTO events SELECT * FROM events LIMIT 1"]);
    assert!(insert.contains("written only by tracelake import"), "{insert}");
    let into_lake = format!("COPY (SELECT 1 AS x) TO '{lake}/events/date=2026-01-01/x.parquet'");
    let copy = stderr_of(&["sql", "--lake", &lake, &into_lake]);
    assert!(copy.contains("written only by tracelake import"), "{copy}");
    assert_eq!(parquet_files(&dir.path().join("lake")), files, "nothing was written into the lake");
    assert_eq!(count(&lake), "3160");

    // Elsewhere, where the user asks, `sql` may write.
    let outside = dir.path().join("out.parquet");
    tracelake_ok(&["sql", "--lake", &lake, &format!("COPY (SELECT 1 AS x) TO '{}'", outside.display())]);
    assert!(outside.is_file());

    let detectors = dir.path().join("detectors");
    std::fs::create_dir(&detectors).unwrap();
    let stolen = dir.path().join("stolen.parquet");
    std::fs::write(detectors.join("sig_copy.sql"), format!("COPY (SELECT * FROM events) TO '{}'", stolen.display())).unwrap();
    let out = tracelake(&["analyze", "--lake", &lake, "--detectors", detectors.to_str().unwrap()]);
    assert!(!stolen.exists(), "a detector file wrote a file: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sig_copy"), "the detector is named: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_folder_that_holds_no_lake_is_named_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("my-jsonl-folder");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("a.jsonl"), "{}\n").unwrap();
    let missing = dir.path().join("typo");
    for lake in [&folder, &missing] {
        let lake = lake.to_str().unwrap();
        for args in [
            vec!["status", "--lake", lake],
            vec!["analyze", "--lake", lake],
            vec!["sql", "--lake", lake, "SELECT 1"],
            vec!["report", "--lake", lake],
            vec!["score", "--lake", lake],
        ] {
            let out = tracelake(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(stderr.contains("tracelake import --lake"), "{args:?} says how to make one: {stderr}");
        }
    }
    let import = tracelake(&["import", "--lake", folder.to_str().unwrap(), realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert_eq!(import.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("new or empty directory"), "{stderr}");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1, "nothing written into the folder");
    assert!(!missing.exists(), "no directory made");
}

#[test]
fn a_folder_with_a_sub_folder_named_like_a_table_is_no_lake() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("outcomes")).unwrap();
    std::fs::write(dir.path().join("outcomes/labels.csv"), "a,b\n").unwrap();
    std::fs::write(dir.path().join("README.md"), "x\n").unwrap();
    let lake = dir.path().to_str().unwrap();
    let import = tracelake(&["import", "--lake", lake, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert_eq!(import.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("holds other files and no lake"), "{stderr}");
    let status = tracelake(&["status", "--lake", lake]);
    assert!(String::from_utf8_lossy(&status.stderr).contains("holds no lake"), "{status:?}");
    let mut left: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(left, ["README.md", "outcomes"], "nothing written beside the user's files");
}
