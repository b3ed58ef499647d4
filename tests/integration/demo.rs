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

/// The commands `text` prints for the user to run next (lines that hold `tracelake …`).
fn printed_commands(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.find("tracelake sql --lake ").or_else(|| l.find("tracelake report --lake ")).map(|at| l[at..].to_owned()))
        .collect()
}

/// Runs a printed command as a shell would, with this build's binary.
fn run_printed(command: &str) -> std::process::Output {
    let command = command.replacen("tracelake", env!("CARGO_BIN_EXE_tracelake"), 1);
    Command::new("sh").arg("-c").arg(&command).env_remove("TRACELAKE_LAKE").output().unwrap()
}

#[test]
fn the_commands_the_demo_and_analyze_print_work_when_pasted() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("my demo");
    let out = tracelake_ok(&["demo", "--lake", lake.to_str().unwrap()]);
    let commands = printed_commands(&out);
    assert!(commands.len() >= 3, "the findings, explore and report hints: {out}");
    for command in commands {
        let command = command.replace("report.html", &dir.path().join("report.html").display().to_string());
        let ran = run_printed(&command);
        assert!(ran.status.success(), "{command}: {}", String::from_utf8_lossy(&ran.stderr));
    }
    assert!(dir.path().join("report.html").exists());

    let temporary = tracelake_ok(&["demo"]);
    let temporary_lake = temporary.split("lake at ").nth(1).and_then(|rest| rest.lines().next()).expect("the lake is named");
    let commands = printed_commands(&temporary);
    assert!(commands.iter().all(|c| !c.contains(temporary_lake)), "no command points at the temporary lake: {commands:?}");
    let rows = temporary.split("Events by type and schema:").nth(1).unwrap().split("Failing tools").next().unwrap();
    let shown = rows.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| type")).count();
    assert!(rows.contains(&format!("{shown} rows")), "the count is of the rows shown: {rows}");
}
