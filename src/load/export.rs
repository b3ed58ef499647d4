//! Exporting a JetStream stream into the lake, exactly once.
//!
//! Messages are read in stream order from just after the cursor. Every commit writes the
//! buffered events as Parquet files (fsynced, renamed into place) and then, in one atomic
//! commit, names those files and moves the cursor to the last sequence they hold.
//! A crash before the commit leaves only uncommitted files, which the next writer
//! removes; the next run starts again after the old cursor. So every event lands once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::LoadError;
use super::decode::{Chunk, Decode, RawEvent, decode_in_order, decode_message};
use crate::ingest::lines::Line;
use crate::ingest::nats::{MessageStream, NatsError, NatsSource, StartAt};
use crate::ingest::{Decoder, QuarantineReason};
use crate::lake::LakeError;
use crate::lake::commit::{RunKind, RunLock, begin, commit};
use crate::lake::event_sink::EventSink;
use crate::lake::layout::Lake;
use crate::lake::live_writers::RegisteredWriter;
use crate::lake::state::{ExportRun, ExportState};

#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub stream: String,
    pub filter_subjects: Vec<String>,
    /// Start from the first message, replacing every event exported before.
    pub full: bool,
    /// Start at this time (ms since the epoch), replacing every event exported before.
    pub since_ms: Option<i64>,
    /// Commit after this many messages.
    pub commit_every: usize,
    /// …or after this much time.
    pub commit_interval: Duration,
    /// Messages per decode chunk.
    pub chunk_messages: usize,
    /// How long to wait for a message before taking the stream as caught up.
    pub idle: Duration,
    pub max_event_bytes: usize,
    pub buffer_bytes: usize,
    pub threads: usize,
}

impl ExportOptions {
    pub fn new(stream: &str) -> Self {
        Self {
            stream: stream.to_owned(),
            filter_subjects: Vec::new(),
            full: false,
            since_ms: None,
            commit_every: 250_000,
            commit_interval: Duration::from_secs(10),
            chunk_messages: 1024,
            idle: Duration::from_secs(2),
            max_event_bytes: crate::ingest::DEFAULT_MAX_EVENT_BYTES,
            buffer_bytes: 24 << 20,
            threads: std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
        }
    }
}

/// What one export run did.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportSummary {
    pub events: u64,
    pub quarantined: BTreeMap<QuarantineReason, u64>,
    pub bytes: u64,
    pub files: usize,
    pub seconds: f64,
    /// The first stream sequence this run exported (0: none).
    pub first_sequence: u64,
    pub cursor: u64,
    pub stream_last_sequence: u64,
    /// The run stopped early because it was asked to (Ctrl-C).
    pub stopped: bool,
}

/// Progress callbacks: messages received and bytes.
pub trait ExportProgress: Sync {
    fn advance(&self, messages: u64, bytes: u64);
}

impl<F: Fn(u64, u64) + Sync> ExportProgress for F {
    fn advance(&self, messages: u64, bytes: u64) {
        self(messages, bytes);
    }
}

/// Exports new messages of the stream into `lake`, until the stream is caught up or
/// `stop` is set.
pub async fn export(
    lake: &Lake,
    source: &mut NatsSource,
    decoder: &Decoder,
    opts: &ExportOptions,
    stop: Arc<AtomicBool>,
    progress: &dyn ExportProgress,
) -> Result<ExportSummary, LoadError> {
    let started = Instant::now();
    let started_at = chrono::Utc::now().to_rfc3339();
    let stream_last_sequence = source.last_sequence().await?;
    let _run = RunLock::acquire(lake, RunKind::Export)?;
    let cursor = resume_cursor(lake, opts)?;
    let mut summary = ExportSummary {
        events: 0,
        quarantined: BTreeMap::new(),
        bytes: 0,
        files: 0,
        seconds: 0.0,
        first_sequence: 0,
        cursor,
        stream_last_sequence,
        stopped: false,
    };
    if stream_last_sequence > cursor || opts.since_ms.is_some() {
        let start = match opts.since_ms {
            Some(ms) => StartAt::Time(ms),
            None if cursor == 0 => StartAt::First,
            None => StartAt::Sequence(cursor + 1),
        };
        let messages =
            source.messages(start, &opts.filter_subjects).await.map_err(|source| LoadError::ExportInterrupted { cursor, source })?;
        export_messages(lake, messages, decoder, opts, stop, progress, &mut summary).await?;
    }
    summary.seconds = started.elapsed().as_secs_f64();
    record_run(lake, started_at, &summary)?;
    Ok(summary)
}

/// The cursor the export resumes after: 0 when it starts over (`--full`, `--since`, a
/// first export), which forgets what was exported before; its files are kept for time
/// travel until a vacuum.
fn resume_cursor(lake: &Lake, opts: &ExportOptions) -> Result<u64, LoadError> {
    // Only exports change the export state, and no other export runs.
    let (manifest, _) = begin(lake)?;
    let rebuild = opts.full || opts.since_ms.is_some();
    match &manifest.export {
        Some(state) if !rebuild && (state.stream != opts.stream || state.filter_subjects != opts.filter_subjects) => {
            Err(LoadError::FilterChanged {
                stream: state.stream.clone(),
                old: state.filter_subjects.clone(),
                new: opts.filter_subjects.clone(),
            })
        }
        Some(state) if !rebuild => Ok(state.cursor),
        _ => {
            commit::<_, LakeError>(lake, |manifest| {
                manifest.export = Some(ExportState {
                    stream: opts.stream.clone(),
                    filter_subjects: opts.filter_subjects.clone(),
                    ..ExportState::default()
                });
                Ok(())
            })?;
            Ok(0)
        }
    }
}

/// Receives `messages` on a task of their own while this thread decodes them in order and
/// commits every `commit_every` messages or `commit_interval`, counting into `summary`.
async fn export_messages(
    lake: &Lake,
    mut messages: MessageStream,
    decoder: &Decoder,
    opts: &ExportOptions,
    stop: Arc<AtomicBool>,
    progress: &dyn ExportProgress,
    summary: &mut ExportSummary,
) -> Result<(), LoadError> {
    let (tx, rx) = mpsc::channel::<Chunk>(opts.threads * 4);
    let receive_opts = opts.clone();
    let stream_last_sequence = summary.stream_last_sequence;
    let receiver = tokio::spawn(async move { receive(&mut messages, &receive_opts, stream_last_sequence, &stop, &tx).await });
    let writer = RegisteredWriter::start(lake)?;
    let committer = Committer::new(
        lake,
        summary.cursor,
        EventSink::new(lake.clone(), writer.id().clone(), opts.buffer_bytes, opts.threads.div_ceil(2)),
    );
    let written = tokio::task::block_in_place(|| write_chunks(committer, rx, decoder, opts, progress, summary));
    let received = receiver.await.map_err(LoadError::ExportReceiver)?;
    summary.cursor = written?;
    writer.finish()?;
    summary.stopped = received.map_err(|source| LoadError::ExportInterrupted { cursor: summary.cursor, source })?;
    Ok(())
}

/// Decodes the received chunks in order into `committer`'s sink, committing as it goes.
/// Returns the cursor committed last.
fn write_chunks(
    mut committer: Committer<'_>,
    mut rx: mpsc::Receiver<Chunk>,
    decoder: &Decoder,
    opts: &ExportOptions,
    progress: &dyn ExportProgress,
    summary: &mut ExportSummary,
) -> Result<u64, LakeError> {
    let chunks = std::iter::from_fn(|| rx.blocking_recv());
    let source_name = format!("nats:{}", opts.stream);
    let decode: &Decode<()> = &|raw| decode_message(decoder, &source_name, raw);
    let mut since_commit = 0usize;
    let mut last_commit = Instant::now();
    decode_in_order(chunks, decode, opts.threads, |decoded| {
        summary.bytes += decoded.bytes;
        let messages = decoded.ready_events + decoded.later.len() as u64;
        progress.advance(messages, decoded.bytes);
        since_commit += messages as usize;
        if summary.first_sequence == 0 {
            summary.first_sequence = decoded.first_position;
        }
        summary.events += decoded.ready_events;
        for batch in decoded.batches? {
            committer.sink.push_batch(batch)?;
        }
        for line in decoded.later.into_iter().filter_map(Result::err) {
            *summary.quarantined.entry(line.reason).or_default() += 1;
            committer.sink.push_quarantined(line)?;
        }
        committer.last_position = decoded.last_position;
        if since_commit >= opts.commit_every || last_commit.elapsed() >= opts.commit_interval {
            summary.files += committer.commit()?;
            since_commit = 0;
            last_commit = Instant::now();
        }
        Ok::<(), LakeError>(())
    })?;
    summary.files += committer.commit()?;
    Ok(committer.cursor)
}

/// Records what the run did as the export's last run.
fn record_run(lake: &Lake, started_at: String, summary: &ExportSummary) -> Result<(), LakeError> {
    commit::<_, LakeError>(lake, |manifest| {
        if let Some(state) = manifest.export.as_mut() {
            state.last_run = Some(ExportRun {
                started_at: started_at.clone(),
                finished_at: chrono::Utc::now().to_rfc3339(),
                events: summary.events,
                quarantined: summary.quarantined.values().sum(),
                first_sequence: summary.first_sequence,
                last_sequence: state.cursor,
            });
        }
        Ok(())
    })
}

/// Writes what is buffered and moves the cursor, in that order.
struct Committer<'a> {
    lake: &'a Lake,
    /// The cursor committed so far.
    cursor: u64,
    sink: EventSink,
    last_position: u64,
}

impl<'a> Committer<'a> {
    fn new(lake: &'a Lake, cursor: u64, sink: EventSink) -> Self {
        Self { lake, cursor, sink, last_position: 0 }
    }

    /// Returns the number of files committed.
    fn commit(&mut self) -> Result<usize, LakeError> {
        let files = self.sink.flush_all()?;
        if self.last_position <= self.cursor && files.is_empty() {
            return Ok(0);
        }
        let cursor = self.cursor.max(self.last_position);
        commit::<_, LakeError>(self.lake, |manifest| {
            // Exports to a lake on object storage do not exclude each other: of two that
            // read the stream from one cursor, only the first commits (or one that started
            // over took the export state away meanwhile).
            let Some(state) = manifest.export.as_mut().filter(|state| state.cursor == self.cursor) else {
                return Err(LakeError::Concurrent { lake: self.lake.location(), run: "export" });
            };
            state.files.extend(files.iter().map(|f| self.lake.relative(&f.path)));
            state.cursor = cursor;
            Ok(())
        })?;
        self.cursor = cursor;
        Ok(files.len())
    }
}

/// Receives messages into chunks until the stream is caught up, `stop` is set, or the
/// stream fails. Returns whether it stopped because it was asked to.
async fn receive(
    messages: &mut crate::ingest::nats::MessageStream,
    opts: &ExportOptions,
    stream_last_sequence: u64,
    stop: &AtomicBool,
    tx: &mpsc::Sender<Chunk>,
) -> Result<bool, NatsError> {
    let mut chunk = Chunk::default();
    let flush_every = Duration::from_millis(200);
    let mut chunk_started = Instant::now();
    let mut seen_any = false;
    let mut last_sequence = 0;
    // Messages the server said were still to come, after the last one received.
    let mut pending = 0;
    let outcome = loop {
        if stop.load(Ordering::Relaxed) {
            break Ok(true);
        }
        let wait = if chunk.events.is_empty() { opts.idle } else { flush_every.min(opts.idle) };
        match messages.next(wait).await {
            // A redelivered message (after a reconnect) is already in this run: never twice.
            Ok(Some(message)) if message.sequence <= last_sequence => {}
            Ok(Some(message)) => {
                seen_any = true;
                last_sequence = message.sequence;
                pending = message.pending;
                chunk.bytes += message.payload.len() as u64;
                chunk.last_position = message.sequence;
                let caught_up = message.pending == 0 || message.sequence >= stream_last_sequence;
                let line = if message.payload.len() > opts.max_event_bytes {
                    Line::TooLong { prefix: message.payload[..opts.max_event_bytes].to_vec(), len: message.payload.len() as u64 }
                } else {
                    Line::Complete(message.payload)
                };
                chunk.events.push(RawEvent { position: message.sequence, line, subject: Some(message.subject) });
                if caught_up {
                    break Ok(false);
                }
                if chunk.events.len() >= opts.chunk_messages || chunk_started.elapsed() >= flush_every {
                    if tx.send(std::mem::take(&mut chunk)).await.is_err() {
                        break Ok(true);
                    }
                    chunk_started = Instant::now();
                }
            }
            // Nothing within the idle time although the server said more was coming.
            Ok(None) if seen_any && pending > 0 && chunk.events.is_empty() => {
                break Err(NatsError::StoppedSending { pending });
            }
            // Nothing more within the idle time: caught up (a filter may match nothing more).
            Ok(None) if chunk.events.is_empty() || !seen_any => break Ok(false),
            Ok(None) => {
                if tx.send(std::mem::take(&mut chunk)).await.is_err() {
                    break Ok(true);
                }
                chunk_started = Instant::now();
            }
            Err(e) => break Err(e),
        }
    };
    if !chunk.events.is_empty() {
        let _ = tx.send(chunk).await;
    }
    outcome
}
