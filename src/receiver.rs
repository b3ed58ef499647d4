//! `tracelake collect`: an OTLP/HTTP receiver (`POST /v1/traces`, protobuf or JSON,
//! optionally gzip) that writes spans' events to the lake.
//!
//! Requests are decoded on the connection's task, then committed in groups by one writer
//! thread ([`CollectWriter`]): a group is every request received within the commit
//! interval of the first. A request is answered only once its group is committed, so an
//! acknowledged span is never lost; a request the client sends again (the answer was lost
//! in a crash) is recognized by its digest and not written twice.

use std::convert::Infallible;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_ENCODING, CONTENT_TYPE, HeaderMap};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, oneshot, watch};

use crate::ingest::Decoder;
use crate::ingest::otel::proto::spans_from_proto;
use crate::ingest::otel::{Candidate, Span, check_times, span_events, spans_from_json};
use crate::lake::{Lake, LakeError};
use crate::load::collect::{CollectWriter, request_digest};

#[derive(Debug, Clone)]
pub struct CollectOptions {
    pub listen: SocketAddr,
    /// How long the first request of a group waits for others before the group is committed.
    pub commit_interval: Duration,
    /// Largest request body, after decompression.
    pub max_body_bytes: usize,
    /// Bytes of events buffered before a partition is written out within a group.
    pub buffer_bytes: usize,
}

impl Default for CollectOptions {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 4318)),
            commit_interval: Duration::from_millis(200),
            max_body_bytes: 64 << 20,
            buffer_bytes: 64 << 20,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error("the collect writer's thread could not be waited for")]
    Writer(#[source] tokio::task::JoinError),
}

/// What one run of the receiver did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CollectSummary {
    pub requests: u64,
    pub spans: u64,
    pub events: u64,
    /// Requests received again after they were committed (not written twice).
    pub repeated: u64,
    /// Requests refused as unreadable.
    pub rejected: u64,
}

/// A decoded request (its spans' events) on its way to the writer, and where its answer goes.
struct Received {
    digest: String,
    spans: u64,
    candidates: Vec<Candidate>,
    committed: oneshot::Sender<Result<(), String>>,
}

struct Shared {
    decoder: Decoder,
    to_writer: mpsc::Sender<Received>,
    max_body_bytes: usize,
    rejected: AtomicU64,
}

/// Receives until `shutdown` completes (then commits what it has), or until the lake
/// fails. `ready` is told the address it listens on.
pub async fn collect(
    lake: &Lake,
    decoder: Decoder,
    opts: &CollectOptions,
    ready: impl FnOnce(SocketAddr),
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<CollectSummary, CollectError> {
    let writer = CollectWriter::open(lake, opts.buffer_bytes)?;
    let listener = tokio::net::TcpListener::bind(opts.listen).await.map_err(|source| CollectError::Listen { addr: opts.listen, source })?;
    let addr = listener.local_addr().map_err(|source| CollectError::Listen { addr: opts.listen, source })?;
    let (to_writer, received) = mpsc::channel(1024);
    let (stop, stopped) = watch::channel(false);
    let interval = opts.commit_interval;
    let runtime = tokio::runtime::Handle::current();
    let writing = std::thread::spawn(move || write_groups(writer, received, stopped, interval, &runtime));
    let shared = Arc::new(Shared { decoder, to_writer, max_body_bytes: opts.max_body_bytes, rejected: AtomicU64::new(0) });
    ready(addr);

    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = service_fn(move |request| handle(request, Arc::clone(&shared)));
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        }
        if writing.is_finished() {
            break;
        }
    }
    let _ = stop.send(true);
    let rejected = shared.rejected.load(Ordering::Relaxed);
    let written = tokio::task::spawn_blocking(move || writing.join())
        .await
        .map_err(CollectError::Writer)?
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    Ok(CollectSummary { rejected, ..written? })
}

/// The writer thread: groups of requests, each committed, then answered.
fn write_groups(
    mut writer: CollectWriter,
    mut received: mpsc::Receiver<Received>,
    mut stopped: watch::Receiver<bool>,
    interval: Duration,
    runtime: &tokio::runtime::Handle,
) -> Result<CollectSummary, LakeError> {
    let mut summary = CollectSummary::default();
    let mut closed = false;
    // The next request; once asked to stop, no new request is taken, and those already
    // sent are still committed.
    let mut next = |deadline: Option<Instant>| {
        runtime.block_on(async {
            loop {
                let wait = async {
                    match deadline {
                        Some(d) => tokio::time::timeout_at(d.into(), received.recv()).await.ok().flatten(),
                        None => received.recv().await,
                    }
                };
                if closed {
                    return wait.await;
                }
                tokio::select! {
                    request = wait => return request,
                    _ = stopped.changed() => {
                        closed = true;
                        received.close();
                    }
                }
            }
        })
    };
    while let Some(first) = next(None) {
        let deadline = Instant::now() + interval;
        // Each request is added as it comes, so that putting spans together overlaps the
        // wait for the rest of the group, and only the files and the commit follow it.
        let mut answers = Vec::new();
        let mut failed = None;
        let mut add = |request: Received| {
            if failed.is_none()
                && let Err(e) = writer.add(request.digest, request.spans, request.candidates)
            {
                failed = Some(e);
            }
            answers.push(request.committed);
        };
        add(first);
        while let Some(request) = next(Some(deadline)) {
            add(request);
        }
        let committed = match failed {
            Some(e) => Err(e),
            None => writer.commit(),
        };
        match committed {
            Ok(added) => {
                summary.requests += added.requests;
                summary.spans += added.spans;
                summary.events += added.events;
                summary.repeated += added.repeated;
                for answer in answers {
                    let _ = answer.send(Ok(()));
                }
            }
            Err(e) => {
                for answer in answers {
                    let _ = answer.send(Err(e.to_string()));
                }
                return Err(e);
            }
        }
    }
    writer.finish()?;
    Ok(summary)
}

async fn handle(request: Request<Incoming>, shared: Arc<Shared>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(match receive(request, &shared).await {
        Ok(response) => response,
        Err((status, message)) => {
            if status == StatusCode::BAD_REQUEST {
                shared.rejected.fetch_add(1, Ordering::Relaxed);
            }
            reply(status, "text/plain; charset=utf-8", Bytes::from(message + "\n"))
        }
    })
}

type Refusal = (StatusCode, String);

async fn receive(request: Request<Incoming>, shared: &Shared) -> Result<Response<Full<Bytes>>, Refusal> {
    if request.uri().path() != "/v1/traces" {
        return Err((StatusCode::NOT_FOUND, format!("{} is not served: send traces to /v1/traces", request.uri().path())));
    }
    if request.method() != Method::POST {
        return Err((StatusCode::METHOD_NOT_ALLOWED, "send traces with POST".into()));
    }
    let headers = request.headers().clone();
    let body = Limited::new(request.into_body(), shared.max_body_bytes)
        .collect()
        .await
        .map_err(|e| (StatusCode::PAYLOAD_TOO_LARGE, format!("reading the request failed: {e}")))?
        .to_bytes();
    let body = decompressed(&headers, body, shared.max_body_bytes)?;
    let json = match headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("") {
        t if t.starts_with("application/x-protobuf") => false,
        t if t.starts_with("application/json") => true,
        other => {
            return Err((
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("content type `{other}`: send application/x-protobuf or application/json"),
            ));
        }
    };
    let digest = request_digest(&body);
    let spans = if json { json_spans(&shared.decoder, &body)? } else { proto_spans(&shared.decoder, &body)? };
    check_times(&spans, shared.decoder.now_ms()).map_err(|e| (StatusCode::BAD_REQUEST, e))?;
    // Spans become events here, on the connections' threads: the writer only puts them
    // together and writes them.
    let candidates = spans.iter().flat_map(span_events).collect();
    let (committed, answer) = oneshot::channel();
    shared
        .to_writer
        .send(Received { digest, spans: spans.len() as u64, candidates, committed })
        .await
        .map_err(|_| (StatusCode::SERVICE_UNAVAILABLE, "the receiver is shutting down: send again later".to_owned()))?;
    match answer.await {
        Ok(Ok(())) if json => Ok(reply(StatusCode::OK, "application/json", Bytes::from_static(b"{}"))),
        // An empty ExportTraceServiceResponse is zero bytes of protobuf.
        Ok(Ok(())) => Ok(reply(StatusCode::OK, "application/x-protobuf", Bytes::new())),
        Ok(Err(e)) => Err((StatusCode::SERVICE_UNAVAILABLE, format!("the lake could not be written: {e}"))),
        Err(_) => Err((StatusCode::SERVICE_UNAVAILABLE, "the receiver stopped: send again later".to_owned())),
    }
}

fn decompressed(headers: &HeaderMap, body: Bytes, limit: usize) -> Result<Bytes, Refusal> {
    match headers.get(CONTENT_ENCODING).and_then(|v| v.to_str().ok()) {
        None | Some("identity") => Ok(body),
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body.as_ref())
                .take(limit as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| (StatusCode::BAD_REQUEST, format!("the gzip body is not valid: {e}")))?;
            if out.len() > limit {
                return Err((StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over {limit} bytes uncompressed")));
            }
            Ok(Bytes::from(out))
        }
        Some(other) => Err((StatusCode::UNSUPPORTED_MEDIA_TYPE, format!("content encoding `{other}`: send gzip or none"))),
    }
}

fn json_spans(decoder: &Decoder, body: &[u8]) -> Result<Vec<Span>, Refusal> {
    let bad = |e: String| (StatusCode::BAD_REQUEST, e);
    let text = std::str::from_utf8(body).map_err(|e| bad(format!("the body is not UTF-8: {e}")))?;
    let text = decoder.scrub_json(text);
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    spans_from_json(&value).map_err(|e| bad(e.to_string()))
}

fn proto_spans(decoder: &Decoder, body: &[u8]) -> Result<Vec<Span>, Refusal> {
    spans_from_proto(body, decoder).map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))
}

fn reply(status: StatusCode, content_type: &str, body: Bytes) -> Response<Full<Bytes>> {
    Response::builder().status(status).header(CONTENT_TYPE, content_type).body(Full::new(body)).expect("a valid response")
}
