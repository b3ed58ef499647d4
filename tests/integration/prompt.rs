//! The interactive prompt of `tracelake sql` on a terminal (`script` gives it one), typed
//! into as a user types: line by line, pasted, and with Ctrl-C.

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::tracelake_ok;
use crate::sql_cli::imported_lake;

const PROMPT: &str = "tracelake> ";

struct Prompt {
    child: Child,
    stdin: Option<ChildStdin>,
    shown: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

impl Prompt {
    fn start(lake: &str, home: &std::path::Path) -> Self {
        // `exec`: no shell stays between the terminal and the prompt, to be interrupted by
        // a Ctrl-C meant for the prompt (dash then exits with 130 once the prompt ends).
        let command = format!("exec {} sql --lake {lake}", env!("CARGO_BIN_EXE_tracelake"));
        let mut child = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("HOME", home)
            .env_remove("TRACELAKE_LAKE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script (util-linux) runs a command on a terminal");
        let shown = Arc::new(Mutex::new(Vec::<u8>::new()));
        let reader = std::thread::spawn({
            let shown = Arc::clone(&shown);
            let mut stdout = child.stdout.take().unwrap();
            move || {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = stdout.read(&mut buf) {
                    shown.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            }
        });
        let stdin = child.stdin.take();
        Self { child, stdin, shown, reader: Some(reader) }
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.shown.lock().unwrap()).into_owned()
    }

    /// Waits until `text` was shown `times` times.
    fn wait_for(&self, text: &str, times: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.screen().matches(text).count() < times {
            assert!(Instant::now() < deadline, "no {text:?} (×{times}) on: {}", self.screen());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, bytes: &str) {
        self.stdin.as_mut().unwrap().write_all(bytes.as_bytes()).unwrap();
    }

    /// Waits for the prompt to end (the input typed ends it), then closes the terminal and
    /// returns what was shown. The terminal stays open until then: `script` hangs up on a
    /// program still running when its input closes.
    fn finish(mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the prompt did not end: {}", self.screen());
            std::thread::sleep(Duration::from_millis(20));
        };
        drop(self.stdin.take());
        self.reader.take().unwrap().join().unwrap();
        let screen = self.screen();
        assert!(status.success(), "{status}: {screen}");
        screen
    }
}

impl Drop for Prompt {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

#[test]
fn the_prompt_lists_describes_completes_and_remembers() {
    let (dir, lake) = imported_lake();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let typed = [
        "\\d",
        "\\d tool_attempts",
        "SELECT count(*) AS n FROM chain_ev\t;",
        "\\timing off",
        "SELECT 41 + 1 AS answer;",
        "\\nonsense",
        "\\q",
    ];
    let mut prompt = Prompt::start(&lake, &home);
    // Each line waits for its prompt, as a user would (a completion redraws the line, and
    // with it the prompt).
    let mut prompts = 0;
    for line in typed {
        prompts += 1;
        prompt.wait_for(PROMPT, prompts);
        prompt.send(&format!("{line}\n"));
        prompts += line.matches('\t').count();
    }
    let screen = prompt.finish();
    assert!(screen.contains("views:") && screen.contains("tool_attempts") && screen.contains("events"), "banner: {screen}");
    assert!(screen.contains("| chain_events ") && screen.contains("| view "), "\\d: {screen}");
    assert!(screen.contains("| tool_name ") && screen.contains("| column "), "\\d tool_attempts: {screen}");
    let events = tracelake_ok(&["sql", "--lake", &lake, "--format", "csv", "SELECT count(*) AS n FROM chain_events"]);
    let n = events.lines().nth(1).unwrap();
    assert!(screen.contains(&format!("| {n} ")), "chain_ev completed to chain_events: {screen}");
    assert!(screen.contains("1 row in "), "a query's time is told: {screen}");
    assert!(screen.contains("Timing is off.") && screen.contains("| 42 "), "{screen}");
    let answer_count = screen.rfind("| 42 ").unwrap();
    assert!(screen[answer_count..].contains("1 row\r\n"), "timing off: {screen}");
    assert!(screen.contains("unknown command `\\nonsense`"), "{screen}");
    let history = std::fs::read_to_string(home.join(".tracelake_history")).expect("history kept");
    assert!(history.contains("SELECT 41 + 1 AS answer;") && history.contains("\\d tool_attempts"), "{history}");
}

/// Lines pasted at once (a terminal without bracketed paste sends them as typed ahead)
/// are all kept, and a backslash command on a continuation line runs as one while the
/// statement waits for its end.
#[test]
fn a_pasted_query_keeps_every_line() {
    let (dir, lake) = imported_lake();
    let mut prompt = Prompt::start(&lake, dir.path());
    prompt.wait_for(PROMPT, 1);
    prompt.send("SELECT 1 AS first_col,\n  2 AS second_col;\nSELECT 3 AS third_col\n\\timing off\n;\n\\q\n");
    let screen = prompt.finish();
    assert!(screen.contains("| first_col | second_col |"), "{screen}");
    assert!(screen.contains("Timing is off.") && screen.contains("| third_col |"), "{screen}");
    let third = screen.rfind("| third_col |").unwrap();
    assert!(screen.find("Timing is off.").unwrap() < third, "the command ran before the statement ended: {screen}");
    assert!(!screen.contains("error"), "{screen}");
}

/// Ctrl-C while a query runs cancels the query and keeps the session, with what it made.
#[test]
fn ctrl_c_cancels_the_query_not_the_session() {
    let (dir, lake) = imported_lake();
    let mut prompt = Prompt::start(&lake, dir.path());
    prompt.wait_for(PROMPT, 1);
    prompt.send("CREATE VIEW kept AS SELECT 7 AS seven;\n");
    prompt.wait_for(PROMPT, 2);
    // It counts for ever, until cancelled.
    prompt.send("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)\nSELECT count(*) FROM r;\n");
    prompt.wait_for("SELECT count(*) FROM r;", 1);
    std::thread::sleep(Duration::from_millis(500));
    prompt.send("\u{3}");
    prompt.wait_for("Query cancelled", 1);
    prompt.wait_for(PROMPT, 3);
    prompt.send("SELECT seven FROM kept;\n\\q\n");
    let screen = prompt.finish();
    assert!(screen.contains("| 7 "), "the view made before the Ctrl-C is still there: {screen}");
}
