//! A real `nats-server -js` per test: random port, temporary store directory.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsServer {
    pub port: u16,
    store: tempfile::TempDir,
    child: Option<Child>,
}

impl NatsServer {
    pub fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut server = NatsServer { port, store: tempfile::tempdir().unwrap(), child: None };
        server.restart();
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Starts the server (again), on the same port and store.
    pub fn restart(&mut self) {
        self.kill();
        let store: PathBuf = self.store.path().to_path_buf();
        let child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd"])
            .arg(&store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nats-server must be installed (apt-get install nats-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not start on port {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Publishes JSONL lines to `stream` on OpenClaw subjects (creating the stream).
    pub fn publish(&self, stream: &str, lines: &[String]) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let n = rt
            .block_on(tracelake::ingest::nats::publish_lines(&self.url(), stream, "openclaw.events", lines.iter().map(String::as_str)))
            .unwrap();
        assert_eq!(n as usize, lines.len());
    }

    /// Creates an empty stream.
    pub fn create_stream(&self, stream: &str) {
        self.publish(stream, &[]);
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
