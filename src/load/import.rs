//! Importing JSONL files of raw events into the lake.
//!
//! A reader thread splits the input into chunks of lines, decoder threads normalize and
//! redact them, and the calling thread buffers and writes the Parquet files. The import
//! is committed (its files named by the lake's state) only at the end, so a crash leaves
//! nothing behind that the next writer does not sweep away.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::PathBuf;
use std::thread;
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::LoadError;
use super::decode::{Chunk, Decode, DecodedEvent, RawEvent, decode_in_order};
use crate::ingest::lines::{BoundedLines, Line};
use crate::ingest::otel::Assembler;
use crate::ingest::{Decoder, LineEvents, LineSpans, QuarantineReason};
use crate::lake::LakeError;
use crate::lake::commit::{RunKind, RunLock, begin, commit};
use crate::lake::event_sink::EventSink;
use crate::lake::layout::Lake;
use crate::lake::live_writers::RegisteredWriter;
use crate::lake::state::{ImportRecord, Manifest};

const CHUNK_LINES: usize = 2048;
const READ_BUFFER: usize = 1 << 20;

/// Where raw events come from.
#[derive(Debug, Clone)]
pub enum ImportSource {
    File(PathBuf),
    Stdin,
}

impl ImportSource {
    /// `-` means standard input.
    pub fn from_arg(arg: &str) -> Self {
        if arg == "-" { Self::Stdin } else { Self::File(PathBuf::from(arg)) }
    }

    pub fn name(&self) -> String {
        match self {
            Self::File(p) => p.display().to_string(),
            Self::Stdin => "-".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Import again even when the same content was imported before (replacing it).
    pub force: bool,
    pub max_event_bytes: usize,
    /// Bytes of events buffered before the largest partition is written out.
    pub buffer_bytes: usize,
    /// Decoder threads; files are written on half as many.
    pub threads: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            force: false,
            max_event_bytes: crate::ingest::DEFAULT_MAX_EVENT_BYTES,
            buffer_bytes: 24 << 20,
            threads: thread::available_parallelism().map_or(2, std::num::NonZero::get),
        }
    }
}

/// What one import did.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportSummary {
    pub source: String,
    pub lines: u64,
    pub events: u64,
    pub quarantined: BTreeMap<QuarantineReason, u64>,
    pub bytes: u64,
    pub files: usize,
    pub seconds: f64,
    /// Leftover files of an earlier crashed writer that were removed first.
    pub swept: usize,
    /// Lines of a file that grew that an earlier import took (not read again).
    pub lines_before: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ImportOutcome {
    Imported(ImportSummary),
    /// The same content was imported before; nothing was written.
    AlreadyImported {
        source: String,
        previous: Box<ImportRecord>,
    },
}

/// Imports one source. `progress` is called with the number of input bytes consumed.
pub fn import_source(
    lake: &Lake,
    decoder: &Decoder,
    source: &ImportSource,
    opts: &ImportOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<ImportOutcome, LoadError> {
    let started = Instant::now();
    let started_at = chrono::Utc::now();
    let _run = RunLock::acquire(lake, RunKind::Import)?;
    // Only imports change the import records, and no other import runs: they stay as read here.
    let (manifest, swept) = begin(lake)?;
    let name = source.name();
    let ReadPlan { quick, path, start } = match plan_read(&manifest, source, opts.force)? {
        Planned::Read(plan) => plan,
        Planned::Known(previous) => return Ok(ImportOutcome::AlreadyImported { source: name, previous: Box::new(previous.clone()) }),
    };
    let max_event_bytes = if start.one_document { MAX_DOCUMENT_BYTES } else { opts.max_event_bytes };
    let opts = &ImportOptions { max_event_bytes, ..opts.clone() };
    let writer = RegisteredWriter::start(lake)?;
    let mut sink = EventSink::new(lake.clone(), writer.id().clone(), opts.buffer_bytes, opts.threads.div_ceil(2));
    let (lines_before, bytes_before) = (start.lines, start.bytes);
    let counts = decode_and_write(open_reader(source, start.bytes)?, &name, decoder, opts, start, &mut sink, progress)?;
    let files = sink.flush_all()?;
    if let Some(previous) = manifest.find_import(&counts.sha256)
        && !opts.force
    {
        // Standard input can be recognized only after reading it: drop what was written.
        let previous = Box::new(previous.clone());
        drop(writer);
        begin(lake)?;
        return Ok(ImportOutcome::AlreadyImported { source: name, previous });
    }
    let record = ImportRecord {
        writer_id: writer.id().as_str().to_owned(),
        source: name.clone(),
        sha256: counts.sha256,
        quick: quick.unwrap_or_default(),
        path,
        bytes: bytes_before + counts.bytes,
        lines: counts.lines,
        events: counts.events,
        quarantined: counts.quarantined.values().sum(),
        started_at: started_at.to_rfc3339(),
        finished_at: chrono::Utc::now().to_rfc3339(),
        files: files.iter().map(|f| lake.relative(&f.path)).collect(),
    };
    commit_record(lake, &manifest, record)?;
    writer.finish()?;
    Ok(ImportOutcome::Imported(ImportSummary {
        source: name,
        lines: counts.lines - lines_before,
        events: counts.events,
        quarantined: counts.quarantined,
        bytes: counts.bytes,
        files: files.len(),
        seconds: started.elapsed().as_secs_f64(),
        swept,
        lines_before,
    }))
}

/// What to read of a source, or the earlier import of the same content.
enum Planned<'m> {
    Known(&'m ImportRecord),
    Read(ReadPlan),
}

/// A source to read: its quick fingerprint and absolute path (a file's), and where to start.
struct ReadPlan {
    quick: Option<String>,
    path: Option<String>,
    start: Start,
}

fn plan_read<'m>(manifest: &'m Manifest, source: &ImportSource, force: bool) -> Result<Planned<'m>, LoadError> {
    let ImportSource::File(file) = source else {
        return Ok(Planned::Read(ReadPlan { quick: None, path: None, start: Start::default() }));
    };
    // A full hash before importing costs a pass over the file; the quick fingerprint
    // finds the candidates, and only those are hashed first to confirm.
    let quick = quick_fingerprint(file)?;
    if !force
        && manifest.imports.iter().any(|r| r.quick == quick)
        && let Some(previous) = manifest.find_import(&hash_file(file)?)
    {
        return Ok(Planned::Known(previous));
    }
    // A file imported before from the same path: read only what was added at its end.
    let path = std::fs::canonicalize(file).map_err(|e| LakeError::io(file, e))?.display().to_string();
    let mut start = Start::default();
    if !force && let Some(previous) = manifest.imports.iter().rev().find(|r| r.path.as_deref() == Some(path.as_str())) {
        start = grown_from(file, previous)?
            .ok_or_else(|| LoadError::SourceChanged { source_name: source.name(), imported_at: previous.finished_at.clone() })?;
    }
    // A file that is one JSON document over many lines (a pretty-printed conversation or
    // OTLP export) is read as one line.
    start.one_document = start.bytes == 0 && is_json_document(file)?;
    Ok(Planned::Read(ReadPlan { quick: Some(quick), path: Some(path), start }))
}

/// The source, read from byte `from`.
fn open_reader(source: &ImportSource, from: u64) -> Result<Box<dyn Read + Send>, LakeError> {
    match source {
        ImportSource::File(path) => {
            let mut file = File::open(path).map_err(|e| LakeError::io(path, e))?;
            io::Seek::seek(&mut file, io::SeekFrom::Start(from)).map_err(|e| LakeError::io(path, e))?;
            Ok(Box::new(file))
        }
        ImportSource::Stdin => Ok(Box::new(io::stdin())),
    }
}

/// Commits the import's record, and so its files, in place of an earlier import of the
/// same content. `read` is the state the import started from.
fn commit_record(lake: &Lake, read: &Manifest, record: ImportRecord) -> Result<(), LakeError> {
    let read_from = last_import_of(read, record.path.as_deref());
    commit(lake, |manifest| {
        // Imports into a lake on object storage do not exclude each other: one of the same
        // file that committed meanwhile would make this one's rows count twice.
        if last_import_of(manifest, record.path.as_deref()) != read_from {
            return Err(LakeError::Concurrent { lake: lake.location(), run: "import" });
        }
        manifest.imports.retain(|r| r.sha256 != record.sha256);
        manifest.imports.push(record.clone());
        Ok(())
    })
}

/// The writer of the last import of the file at `path`, if any.
fn last_import_of(manifest: &Manifest, path: Option<&str>) -> Option<String> {
    manifest.imports.iter().rev().find(|r| path.is_some() && r.path.as_deref() == path).map(|r| r.writer_id.clone())
}

/// Where reading a source starts: past what an earlier import of the same file took, with
/// the hash of those bytes, so that the new record's hash is the whole file's; and whether
/// the source is one JSON document over many lines, read as one line.
#[derive(Default)]
struct Start {
    bytes: u64,
    lines: u64,
    hasher: Sha256,
    one_document: bool,
}

/// How `file` continues `previous` (an import of the same path), or `None` when it changed
/// otherwise: shorter, or other bytes where the earlier content was, or the earlier
/// content ended inside a line.
fn grown_from(file: &std::path::Path, previous: &ImportRecord) -> Result<Option<Start>, LakeError> {
    let size = std::fs::metadata(file).map_err(|e| LakeError::io(file, e))?.len();
    if size <= previous.bytes {
        return Ok(None);
    }
    let (hasher, last) = hash_prefix(file, previous.bytes)?;
    let same = hex::encode(hasher.clone().finalize()) == previous.sha256 && last.is_none_or(|b| b == b'\n');
    Ok(same.then_some(Start { bytes: previous.bytes, lines: previous.lines, hasher, one_document: false }))
}

/// Size, and sha256 of the first and the last MiB, hex.
pub fn quick_fingerprint(path: &std::path::Path) -> Result<String, LakeError> {
    use std::io::{Seek, SeekFrom};
    const PART: u64 = 1 << 20;
    let mut file = File::open(path).map_err(|e| LakeError::io(path, e))?;
    let size = file.metadata().map_err(|e| LakeError::io(path, e))?.len();
    let mut hasher = Sha256::new();
    hasher.update(size.to_le_bytes());
    let mut buf = vec![0u8; PART as usize];
    for offset in [0, size.saturating_sub(PART)] {
        file.seek(SeekFrom::Start(offset)).map_err(|e| LakeError::io(path, e))?;
        let n = file.read(&mut buf).map_err(|e| LakeError::io(path, e))?;
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// sha256 of a file's content, hex.
pub fn hash_file(path: &std::path::Path) -> Result<String, LakeError> {
    Ok(hex::encode(hash_prefix(path, u64::MAX)?.0.finalize()))
}

/// The sha256 of the first `limit` bytes of a file (so far: more may be fed to it), and
/// the last of those bytes.
fn hash_prefix(path: &std::path::Path, limit: u64) -> Result<(Sha256, Option<u8>), LakeError> {
    let mut file = File::open(path).map_err(|e| LakeError::io(path, e))?.take(limit);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; READ_BUFFER];
    let mut last = None;
    loop {
        let n = file.read(&mut buf).map_err(|e| LakeError::io(path, e))?;
        if n == 0 {
            return Ok((hasher, last));
        }
        hasher.update(&buf[..n]);
        last = Some(buf[n - 1]);
    }
}

struct Counts {
    lines: u64,
    events: u64,
    bytes: u64,
    quarantined: BTreeMap<QuarantineReason, u64>,
    sha256: String,
}

/// Reads `reader`, decodes its lines on the decoder threads and writes their events; returns what it counted.
fn decode_and_write(
    reader: Box<dyn Read + Send>,
    source: &str,
    decoder: &Decoder,
    opts: &ImportOptions,
    start: Start,
    sink: &mut EventSink,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Counts, LoadError> {
    let chunks = LineChunks {
        lines: BoundedLines::new(
            BufReader::with_capacity(
                READ_BUFFER,
                OneLine { inner: HashingReader { inner: reader, hasher: start.hasher }, enabled: start.one_document, ended: false },
            ),
            opts.max_event_bytes,
        ),
        line_no: start.lines,
        error: None,
    };
    let mut counts = Counts { lines: 0, events: 0, bytes: 0, quarantined: BTreeMap::new(), sha256: String::new() };
    let mut assembler = Assembler::default();
    let decode: &Decode<LineSpans> = &|raw| {
        decoder.decode_events(&raw.line, source, raw.position).map(|line| match line {
            LineEvents::One(event) => DecodedEvent::Ready(event),
            LineEvents::Many(events) => DecodedEvent::ReadyMany(events),
            LineEvents::Spans(spans) => DecodedEvent::Later(spans),
        })
    };
    let chunks = decode_in_order(chunks, decode, opts.threads, |decoded| {
        counts.bytes += decoded.bytes;
        progress(decoded.bytes);
        counts.events += decoded.ready_events;
        for batch in decoded.batches? {
            sink.push_batch(batch)?;
        }
        for result in decoded.later {
            match result {
                Ok(spans) => {
                    for event in spans.events(&mut assembler) {
                        counts.events += 1;
                        sink.push(event)?;
                    }
                }
                Err(line) => {
                    *counts.quarantined.entry(line.reason).or_default() += 1;
                    sink.push_quarantined(line)?;
                }
            }
        }
        Ok::<(), LakeError>(())
    })?;
    if let Some(error) = chunks.error {
        return Err(LoadError::Read { source_name: source.to_owned(), error });
    }
    counts.lines = chunks.line_no;
    counts.sha256 = hex::encode(chunks.lines.into_inner().into_inner().inner.hasher.finalize());
    Ok(counts)
}

/// Chunks of lines from a reader; a read error ends the chunks and is kept in `error`.
struct LineChunks<R> {
    lines: BoundedLines<BufReader<OneLine<HashingReader<R>>>>,
    line_no: u64,
    error: Option<io::Error>,
}

impl<R: Read> Iterator for LineChunks<R> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        let mut chunk = Chunk { events: Vec::with_capacity(CHUNK_LINES), ..Chunk::default() };
        while chunk.events.len() < CHUNK_LINES {
            let line = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            };
            self.line_no += 1;
            chunk.bytes += 1 + match &line {
                Line::Complete(b) => b.len() as u64,
                Line::TooLong { len, .. } => *len,
            };
            chunk.last_position = self.line_no;
            let blank = matches!(&line, Line::Complete(b) if b.iter().all(u8::is_ascii_whitespace));
            if !blank {
                chunk.events.push(RawEvent { position: self.line_no, line, subject: None });
            }
        }
        (chunk.bytes > 0).then_some(chunk)
    }
}

/// Hashes everything read through it.
struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// When `enabled`, gives what it reads as one line: line breaks (which in JSON are only
/// ever whitespace) as spaces, and one at the end.
struct OneLine<R> {
    inner: R,
    enabled: bool,
    ended: bool,
}

impl<R: Read> Read for OneLine<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if self.enabled {
            for b in &mut buf[..n] {
                if matches!(*b, b'\n' | b'\r') {
                    *b = b' ';
                }
            }
            if n == 0 && !buf.is_empty() && !self.ended {
                self.ended = true;
                buf[0] = b'\n';
                return Ok(1);
            }
        }
        Ok(n)
    }
}

/// The largest JSON document (a file that is one JSON value over many lines) imported.
const MAX_DOCUMENT_BYTES: usize = 256 << 20;

/// Whether `path` holds one JSON document over many lines, not JSON Lines: it begins with
/// `{` or `[` and its first line is not JSON by itself.
fn is_json_document(path: &std::path::Path) -> Result<bool, LakeError> {
    let mut head = Vec::new();
    File::open(path).and_then(|f| f.take(1 << 20).read_to_end(&mut head)).map_err(|e| LakeError::io(path, e))?;
    let head = head.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&head);
    let Some(first) = head.iter().position(|b| !b.is_ascii_whitespace()) else { return Ok(false) };
    if !matches!(head[first], b'{' | b'[') {
        return Ok(false);
    }
    // A first line longer than what was read is a long line of JSON Lines.
    let Some(end) = head[first..].iter().position(|b| *b == b'\n') else { return Ok(false) };
    Ok(serde_json::from_slice::<serde::de::IgnoredAny>(&head[first..first + end]).is_err())
}
