//! OpenTelemetry traces from real instrumentation libraries (`tests/otel/agents.py`:
//! pydantic-ai, and the OpenAI SDK instrumented by OpenInference and by OpenLLMetry), read
//! from a file and received by `tracelake collect`.
//!
//! The Python packages are installed once into a virtual environment under the target
//! directory (from PyPI, pinned in `tests/otel/requirements.txt`).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::common::{python_venv, sql_rows, tracelake_ok};

const FLAVOURS: [&str; 3] = ["pydantic-ai", "openinference", "openllmetry"];

/// A Python with the packages of `tests/otel/requirements.txt`, made on first use.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| python_venv("tests/otel/requirements.txt"))
}

/// Runs one flavour of agent, its spans going to `--file PATH` or `--endpoint URL`.
fn run_agent(flavour: &str, target: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otel/agents.py");
    let out = Command::new(python()).arg(script).arg(flavour).args(target).output().unwrap();
    assert!(out.status.success(), "{flavour} agent failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Each session's events as (type, tool or text), in order.
fn conversations(lake: &str) -> Vec<(String, Vec<String>)> {
    let rows = sql_rows(
        lake,
        "SELECT session, type, coalesce(tool_name || ' ' || coalesce(tool_error, tool_params, ''), content, '') AS what \
         FROM events ORDER BY session, ts, stream_seq",
    );
    let mut sessions: Vec<(String, Vec<String>)> = Vec::new();
    for row in rows {
        let session = row["session"].as_str().unwrap().to_owned();
        let line = format!("{} {}", row["type"].as_str().unwrap(), row["what"].as_str().unwrap()).trim().to_owned();
        match sessions.last_mut() {
            Some((s, lines)) if *s == session => lines.push(line),
            _ => sessions.push((session, vec![line])),
        }
    }
    sessions
}

/// What the three agents' sessions must hold. An agent span starts in the same
/// millisecond as its first model call often enough, so `run.start` may come first or
/// second.
fn expected_conversations(sessions: &[(String, Vec<String>)]) {
    let sessions: Vec<(String, Vec<String>)> = sessions
        .iter()
        .map(|(s, lines)| {
            let mut lines = lines.clone();
            if lines.get(1).is_some_and(|l| l == "run.start") {
                lines.swap(0, 1);
            }
            (s.clone(), lines)
        })
        .collect();
    assert_eq!(sessions.len(), 3, "one session per agent: {sessions:#?}");
    let find = |first_message: &str| {
        sessions
            .iter()
            .find(|(_, lines)| lines.iter().any(|l| l == first_message))
            .unwrap_or_else(|| panic!("no session says {first_message:?}: {sessions:#?}"))
    };
    let (_, booking) = find("msg.in Book me flight UA100 please");
    let failed_call = ["tool.call book_flight {\"flight\":\"UA100\"}", "tool.result book_flight flight service unavailable"];
    let mut expected = vec!["run.start", "msg.in Book me flight UA100 please"];
    for _ in 0..3 {
        expected.extend(failed_call);
    }
    expected.extend(["msg.out Your flight UA100 is booked.", "run.end"]);
    assert_eq!(booking, &expected);

    let refunds: Vec<_> = sessions.iter().filter(|(_, lines)| lines.iter().any(|l| l == "msg.in Please refund order W123.")).collect();
    assert_eq!(refunds.len(), 2, "the OpenInference and the OpenLLMetry runs");
    for (session, lines) in refunds {
        let expected = [
            "run.start",
            "msg.in Please refund order W123.",
            "tool.call issue_refund {\"order\":\"W123\"}",
            "tool.result issue_refund Error: refund service timed out",
            "msg.out Done: your refund is on its way.",
            "run.end",
        ];
        assert_eq!(lines, &expected, "session {session}");
    }
    assert!(sessions.iter().any(|(s, _)| s == "refund-conversation-1"), "OpenInference's session.id names the session");
}

#[test]
fn spans_of_real_instrumentation_in_files_become_sessions_and_findings() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    for flavour in FLAVOURS {
        let file = dir.path().join(format!("{flavour}.jsonl"));
        run_agent(flavour, &["--file", file.to_str().unwrap()]);
        let out = tracelake_ok(&["import", "--lake", &lake, file.to_str().unwrap()]);
        assert!(out.contains(" 0 quarantined"), "{out}");
    }
    expected_conversations(&conversations(&lake));
    let ids = sql_rows(&lake, "SELECT count(*) AS n, count(DISTINCT trace_id) AS traces, count(span_id) AS with_span FROM events");
    assert_eq!(ids[0]["n"], ids[0]["with_span"], "every event keeps its span id");

    let config = crate::analyze::write_config(dir.path(), crate::analyze::ALL_FINDINGS);
    tracelake_ok(&["analyze", "--lake", &lake, "--config", &config]);
    let found = sql_rows(
        &lake,
        "SELECT DISTINCT session, signal FROM findings WHERE signal IN ('SIG-TOOL-FAIL', 'SIG-DOOM-LOOP', 'SIG-REPEAT-FAIL')",
    );
    let sessions: std::collections::BTreeSet<&str> = found.iter().map(|r| r["session"].as_str().unwrap()).collect();
    assert_eq!(sessions.len(), 3, "each agent's failing tool is a finding: {found:?}");
}

/// A `tracelake collect` process on a free loopback port.
struct Collector {
    child: Child,
    url: String,
}

impl Collector {
    fn start(lake: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let listen = format!("127.0.0.1:{port}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_tracelake"))
            .args(["collect", "--lake", lake, "--listen", &listen, "--commit-ms", "50"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert!(line.contains("collecting OTLP traces on"), "{line}");
        Self { child, url: format!("http://{listen}") }
    }

    /// Stops it as a service manager would (SIGTERM); returns what it printed.
    fn stop(mut self) -> String {
        // SAFETY: kill(2) on a child process of this test.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let out = std::mem::replace(&mut self.child, Command::new("true").spawn().unwrap()).wait_with_output().unwrap();
        assert!(out.status.success(), "collect failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }
}

#[test]
fn spans_sent_to_collect_land_as_they_do_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").display().to_string();
    let collector = Collector::start(&lake);
    for flavour in FLAVOURS {
        run_agent(flavour, &["--endpoint", &collector.url]);
    }
    let out = collector.stop();
    assert!(out.contains("0 refused"), "{out}");
    expected_conversations(&conversations(&lake));
    let status = tracelake_ok(&["status", "--lake", &lake]);
    assert!(status.contains("collected:") && status.contains("OTLP requests"), "{status}");
}
