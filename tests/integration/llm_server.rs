//! A local OpenAI-compatible `/chat/completions` server for tests: it records every
//! request and answers as the test's handler says.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// How the server answers one request.
pub enum Reply {
    /// 200 with this text as the assistant message.
    Content(String),
    /// This status and a short body.
    Status(u16),
    /// Waits, then answers.
    After(Duration, Box<Reply>),
}

impl Reply {
    pub fn content(text: impl Into<String>) -> Self {
        Reply::Content(text.into())
    }
}

/// One request as it reached the server.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

impl Received {
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or_default()
    }
    pub fn system(&self) -> &str {
        self.body["messages"][0]["content"].as_str().unwrap_or_default()
    }
    pub fn user(&self) -> &str {
        self.body["messages"][1]["content"].as_str().unwrap_or_default()
    }
    pub fn is_triage(&self) -> bool {
        self.system().starts_with("You are a signal triage system")
    }
}

type Handler = dyn Fn(usize, &Received) -> Reply + Send + Sync;

pub struct LlmServer {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl LlmServer {
    /// Starts a server whose `handler` gets the request number (from 0) and the request.
    pub fn start(handler: impl Fn(usize, &Received) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, handler) = (Arc::clone(&log), Arc::clone(&handler));
                std::thread::spawn(move || serve(stream, &log, &*handler));
            }
        });
        Self { url, received }
    }

    /// A server that classifies everything with `answer` and keeps everything in triage.
    pub fn answering(answer: Value) -> Self {
        Self::start(
            move |_, r| {
                if r.is_triage() { Reply::content(r#"{"keep": true, "reason": "real"}"#) } else { Reply::content(answer.to_string()) }
            },
        )
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Received>>, handler: &Handler) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let (mut length, mut authorization) = (0usize, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or_default();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "authorization" => authorization = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let request = Received { path, authorization, body: serde_json::from_slice(&body).unwrap_or(Value::Null) };
    let n = {
        let mut log = log.lock().unwrap();
        log.push(request.clone());
        log.len() - 1
    };
    let mut reply = handler(n, &request);
    while let Reply::After(wait, next) = reply {
        std::thread::sleep(wait);
        reply = *next;
    }
    let (status, body) = match reply {
        Reply::Content(text) => (200, json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}).to_string()),
        Reply::Status(status) => (status, json!({"error": {"message": "test error"}}).to_string()),
        Reply::After(..) => unreachable!("waited above"),
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
