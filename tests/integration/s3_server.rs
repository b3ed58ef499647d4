//! A real S3-compatible server per test: moto's server (from PyPI, pinned in
//! `tests/s3/requirements.txt`) on a random loopback port, with one bucket.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::python_venv;

pub const BUCKET: &str = "tracelake-test";

pub struct S3Server {
    pub port: u16,
    child: Child,
}

impl S3Server {
    pub fn start() -> Self {
        static PYTHON: OnceLock<std::path::PathBuf> = OnceLock::new();
        let python = PYTHON.get_or_init(|| python_venv("tests/s3/requirements.txt"));
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting moto_server");
        let server = S3Server { port, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while request(port, "PUT", &format!("/{BUCKET}")).is_none() {
            assert!(Instant::now() < deadline, "moto_server did not start on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A lake URL in the bucket.
    pub fn lake(&self, prefix: &str) -> String {
        format!("s3://{BUCKET}/{prefix}")
    }

    /// The tracelake binary, with this server's endpoint and test credentials.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tracelake"));
        command.args(args).env_remove("TRACELAKE_LAKE").env_remove("TRACELAKE_CONFIG");
        self.with_credentials(command)
    }

    /// `command` with this server's endpoint and test credentials.
    pub fn with_credentials(&self, mut command: Command) -> Command {
        command
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", self.endpoint())
            .env("AWS_ALLOW_HTTP", "true");
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs tracelake and requires success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tracelake {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The rows of a query over the lake at `lake`.
    pub fn sql_rows(&self, lake: &str, query: &str) -> Vec<serde_json::Value> {
        crate::common::json_lines(&self.ok(&["sql", "--lake", lake, "--format", "ndjson", query]))
    }

    /// Uploads every file under the local directory `dir` to `prefix`, at the same relative paths.
    pub fn upload_dir(&self, dir: &std::path::Path, prefix: &str) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let relative = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                let body = std::fs::read(&path).unwrap();
                let sent = send(self.port, "PUT", &format!("/{BUCKET}/{prefix}/{relative}"), &body);
                assert!(sent.is_some(), "uploading {relative}");
            }
        }
    }

    /// The keys under `prefix` in the bucket.
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let body = request(self.port, "GET", &format!("/{BUCKET}?list-type=2&prefix={prefix}")).unwrap_or_default();
        body.split("<Key>").skip(1).filter_map(|k| k.split("</Key>").next()).map(str::to_owned).collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bare HTTP/1.1 request with no body (moto does not check signatures); the response
/// body when the status is 2xx.
fn request(port: u16, method: &str, path: &str) -> Option<String> {
    send(port, method, path, &[])
}

/// A bare HTTP/1.1 request with `body`; the response body when the status is 2xx.
fn send(port: u16, method: &str, path: &str, body: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let length = body.len();
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n").ok()?;
    stream.write_all(body).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split(' ').nth(1)?;
    status.starts_with('2').then(|| response.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default())
}
