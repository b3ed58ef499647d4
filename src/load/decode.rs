//! Decoding raw events on several threads while keeping their order.
//!
//! A producer thread pulls chunks of raw events from an iterator (a file reader, or a
//! channel fed by the stream consumer), decoder threads turn them into events and those
//! into record batches, and the calling thread receives the decoded chunks in input order,
//! so that "everything up to position N" is a meaningful cursor.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread;

use datafusion::arrow::error::ArrowError;

use crate::ingest::lines::Line;
use crate::ingest::{Decoder, QuarantinedLine};
use crate::lake::event_sink::{DayBatch, day_batches};
use crate::model::Event;

/// One raw event: its position (line number or stream sequence), its bytes, and the
/// NATS subject it came on.
pub struct RawEvent {
    pub position: u64,
    pub line: Line,
    pub subject: Option<String>,
}

/// Raw events read together, and how many input bytes they took.
#[derive(Default)]
pub struct Chunk {
    pub events: Vec<RawEvent>,
    pub bytes: u64,
    /// The last input position this chunk covers (which may be past its last event).
    pub last_position: u64,
}

/// What decoding one raw event gives; events borrow from the raw event.
// Returned once per event and consumed at once: boxing the event would cost an allocation
// per event.
#[allow(clippy::large_enum_variant)]
pub enum DecodedEvent<'a, T> {
    /// Events complete in themselves.
    Ready(Event<'a>),
    ReadyMany(Vec<Event<'static>>),
    /// Something the calling thread completes, in input order (spans put together across lines).
    Later(T),
}

/// A decoded chunk. Its complete events are record batches already, built on the decoder
/// thread while the events are still in its cache, and dropped there.
pub struct Decoded<T> {
    /// The complete events, a batch per day.
    pub batches: Result<Vec<DayBatch>, ArrowError>,
    pub ready_events: u64,
    /// What the calling thread completes, and quarantined lines, in input order.
    pub later: Vec<Result<T, QuarantinedLine>>,
    pub bytes: u64,
    /// The chunk's first input position, and its last (which may be past its last event).
    pub first_position: u64,
    pub last_position: u64,
}

/// Decodes one raw event as a stream message: one OpenClaw event.
pub fn decode_message<'a, T>(decoder: &Decoder, source: &str, raw: &'a RawEvent) -> Result<DecodedEvent<'a, T>, QuarantinedLine> {
    match &raw.line {
        Line::Complete(bytes) => decoder.decode(bytes, source, raw.position, raw.subject.as_deref()),
        too_long @ Line::TooLong { .. } => decoder.decode_line(too_long, source, raw.position),
    }
    .map(DecodedEvent::Ready)
}

/// How a raw event is decoded.
pub type Decode<'d, T> = dyn for<'a> Fn(&'a RawEvent) -> Result<DecodedEvent<'a, T>, QuarantinedLine> + Sync + 'd;

/// Decodes `chunks` with `decode` on `threads` threads and calls `each` with every decoded
/// chunk, in input order. Stops at the first error of `each` (returned) and gives the
/// iterator back when the input is exhausted.
pub fn decode_in_order<I, T, E>(
    chunks: I,
    decode: &Decode<T>,
    threads: usize,
    mut each: impl FnMut(Decoded<T>) -> Result<(), E>,
) -> Result<I, E>
where
    I: Iterator<Item = Chunk> + Send,
    T: Send,
{
    let threads = threads.max(1);
    let (raw_tx, raw_rx) = sync_channel::<(u64, Chunk)>(threads * 2);
    let (done_tx, done_rx) = sync_channel::<(u64, Decoded<T>)>(threads * 2);
    let raw_rx = Arc::new(Mutex::new(raw_rx));
    let stop = AtomicBool::new(false);

    thread::scope(|scope| {
        let stop = &stop;
        let producer = spawn_named(scope, "tracelake-read", move || {
            let mut chunks = chunks;
            for (index, chunk) in (0u64..).zip(chunks.by_ref()) {
                if stop.load(Ordering::Relaxed) || raw_tx.send((index, chunk)).is_err() {
                    break;
                }
            }
            chunks
        });
        for _ in 0..threads {
            let rx = Arc::clone(&raw_rx);
            let tx = done_tx.clone();
            spawn_named(scope, "tracelake-decode", move || decode_chunks(&rx, decode, &tx));
        }
        drop(done_tx);

        let mut waiting: BTreeMap<u64, Decoded<T>> = BTreeMap::new();
        let mut next = 0u64;
        let mut failed = None;
        for (index, decoded) in done_rx {
            if failed.is_some() {
                continue; // drain, so the other threads can finish
            }
            waiting.insert(index, decoded);
            while let Some(decoded) = waiting.remove(&next) {
                next += 1;
                if let Err(e) = each(decoded) {
                    failed = Some(e);
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        let chunks = producer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match failed {
            Some(e) => Err(e),
            None => Ok(chunks),
        }
    })
}

/// Starts a scoped thread named `name` (what `top -H` and a profiler show), failing as
/// `Scope::spawn` does when the system cannot start one.
pub fn spawn_named<'scope, T: Send + 'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> thread::ScopedJoinHandle<'scope, T> {
    thread::Builder::new().name(name.to_owned()).spawn_scoped(scope, f).unwrap_or_else(|e| panic!("starting thread {name}: {e}"))
}

fn decode_chunks<T>(rx: &Mutex<Receiver<(u64, Chunk)>>, decode: &Decode<T>, tx: &SyncSender<(u64, Decoded<T>)>) {
    loop {
        let received = rx.lock().expect("chunk queue").recv();
        let Ok((index, chunk)) = received else { return };
        if tx.send((index, decode_chunk(chunk, decode))).is_err() {
            return;
        }
    }
}

fn decode_chunk<T>(chunk: Chunk, decode: &Decode<T>) -> Decoded<T> {
    let first_position = chunk.events.first().map_or(chunk.last_position, |raw| raw.position);
    let mut ready = Vec::with_capacity(chunk.events.len());
    let mut later = Vec::new();
    for raw in &chunk.events {
        match decode(raw) {
            Ok(DecodedEvent::Ready(event)) => ready.push(event),
            Ok(DecodedEvent::ReadyMany(events)) => ready.extend(events),
            Ok(DecodedEvent::Later(rest)) => later.push(Ok(rest)),
            Err(line) => later.push(Err(line)),
        }
    }
    Decoded {
        batches: day_batches(&ready),
        ready_events: ready.len() as u64,
        later,
        bytes: chunk.bytes,
        first_position,
        last_position: chunk.last_position,
    }
}
