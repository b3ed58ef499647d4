//! `tracelake demo` writes only into a lake of its own.

use std::process::Command;

use crate::common::{realworld, tracelake, tracelake_ok};

fn count(lake: &str) -> String {
    tracelake_ok(&["sql", "--lake", lake, "--format", "csv", "SELECT count(*) AS n FROM events"])
}

#[test]
fn the_demo_never_writes_into_a_lake_it_did_not_make() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    let real = real.to_str().unwrap();
    tracelake_ok(&["import", "--lake", real, realworld("tau-retail.events.jsonl").to_str().unwrap()]);
    let before = count(real);

    // As the README suggests: the lake exported for every command.
    let out = Command::new(env!("CARGO_BIN_EXE_tracelake")).arg("demo").env("TRACELAKE_LAKE", real).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not a lake the demo made") && stderr.contains("NEW_DIR"), "says what to do: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert_eq!(count(real), before, "the real lake is untouched");

    let folder = dir.path().join("notes");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("todo.txt"), "x").unwrap();
    assert_eq!(tracelake(&["demo", "--lake", folder.to_str().unwrap()]).status.code(), Some(1), "a folder of other files is no demo lake");
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1, "nothing written there");
}

#[test]
fn the_demo_makes_a_new_lake_and_may_run_again_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("demo");
    let lake = lake.to_str().unwrap();
    let first = tracelake_ok(&["demo", "--lake", lake]);
    assert!(first.contains("Failing tools") && first.contains("Explore it"), "{first}");
    let events = count(lake);
    assert_ne!(events, "n\n0\n");
    tracelake_ok(&["demo", "--lake", lake]);
    assert_eq!(count(lake), events, "the sample is imported once");
}
