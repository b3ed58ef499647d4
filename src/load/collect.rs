//! Committing what `tracelake collect` receives: requests of spans, written in groups and
//! acknowledged only once committed. A request whose body was committed before (a client
//! sending it again because the answer was lost) is acknowledged without being written.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

use crate::ingest::otel::{Assembler, Candidate};
use crate::lake::LakeError;
use crate::lake::commit::{RunKind, RunLock, begin, commit};
use crate::lake::event_sink::{EventSink, day_batches};
use crate::lake::layout::Lake;
use crate::lake::live_writers::RegisteredWriter;
use crate::lake::state::CollectState;

/// How many committed requests are remembered to recognize a request sent again.
const REMEMBERED_REQUESTS: usize = 8192;

/// The first 16 hex digits of the sha256 of a request body.
pub fn request_digest(body: &[u8]) -> String {
    hex::encode(&Sha256::digest(body)[..8])
}

/// What a group of requests added.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Committed {
    pub requests: u64,
    pub spans: u64,
    pub events: u64,
    /// Requests that had been committed before.
    pub repeated: u64,
}

/// Writes received spans to the lake, a group of requests per commit.
pub struct CollectWriter {
    lake: Lake,
    _run: RunLock,
    writer: Option<RegisteredWriter>,
    sink: EventSink,
    assembler: Assembler,
    /// The committed state, as of the last commit.
    state: CollectState,
    /// Digests of the requests added since the last commit.
    pending: Vec<String>,
    pending_set: HashSet<String>,
    added: Committed,
}

impl CollectWriter {
    /// Takes the lake's collect lock: one receiver per lake.
    pub fn open(lake: &Lake, buffer_bytes: usize) -> Result<Self, LakeError> {
        let run = RunLock::acquire(lake, RunKind::Collect)?;
        let (manifest, _) = begin(lake)?;
        let writer = RegisteredWriter::start(lake)?;
        // A group's commit writes on every core (`flush_all`); within a group, half of them.
        let sink = EventSink::new(
            lake.clone(),
            writer.id().clone(),
            buffer_bytes,
            std::thread::available_parallelism().map_or(1, |n| n.get().div_ceil(2)),
        );
        Ok(Self {
            lake: lake.clone(),
            _run: run,
            writer: Some(writer),
            sink,
            assembler: Assembler::default(),
            state: manifest.collect.unwrap_or_default(),
            pending: Vec::new(),
            pending_set: HashSet::new(),
            added: Committed::default(),
        })
    }

    /// Adds the events of one request's `spans` (their
    /// [`span_events`](crate::ingest::otel::span_events)), unless a request
    /// with the same body was added before.
    pub fn add(&mut self, digest: String, spans: u64, candidates: Vec<Candidate>) -> Result<(), LakeError> {
        if self.pending_set.contains(&digest) || self.state.recent.contains(&digest) {
            self.added.repeated += 1;
            return Ok(());
        }
        let position = self.state.requests + self.added.requests + 1;
        // Made record batches at once, while the request's events are in this thread's cache.
        let events = self.assembler.add(position, candidates);
        self.added.events += events.len() as u64;
        for batch in day_batches(&events)? {
            self.sink.push_batch(batch)?;
        }
        self.added.requests += 1;
        self.added.spans += spans;
        self.pending_set.insert(digest.clone());
        self.pending.push(digest);
        Ok(())
    }

    /// Commits what was added since the last commit; returns it.
    pub fn commit(&mut self) -> Result<Committed, LakeError> {
        let added = std::mem::take(&mut self.added);
        if self.pending.is_empty() {
            return Ok(added);
        }
        let files = self.sink.flush_all()?;
        let mut state = self.state.clone();
        state.requests += added.requests;
        state.spans += added.spans;
        state.events += added.events;
        state.files.extend(files.iter().map(|f| self.lake.relative(&f.path)));
        state.recent.extend(self.pending.drain(..));
        while state.recent.len() > REMEMBERED_REQUESTS {
            state.recent.pop_front();
        }
        self.pending_set.clear();
        commit::<_, LakeError>(&self.lake, |manifest| {
            // Collectors into a lake on object storage do not exclude each other.
            if manifest.collect.as_ref().unwrap_or(&CollectState::default()) != &self.state {
                return Err(LakeError::Concurrent { lake: self.lake.location(), run: "collect" });
            }
            manifest.collect = Some(state.clone());
            Ok(())
        })?;
        self.state = state;
        Ok(added)
    }

    /// Commits what is left and ends the writer.
    pub fn finish(mut self) -> Result<Committed, LakeError> {
        let last = self.commit()?;
        if let Some(writer) = self.writer.take() {
            writer.finish()?;
        }
        Ok(last)
    }

    /// Everything committed, over every run.
    pub fn totals(&self) -> &CollectState {
        &self.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::otel::{span_events, spans_from_json};

    fn candidates(span: &str) -> Vec<Candidate> {
        let batch = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c",
            "spanId": span, "name": "execute_tool t", "startTimeUnixNano": "1767225600000000000", "endTimeUnixNano": "1767225601000000000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]}]}]}]});
        spans_from_json(&batch).unwrap().iter().flat_map(span_events).collect()
    }

    #[test]
    fn a_request_committed_before_is_not_written_again_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        let mut writer = CollectWriter::open(&lake, 1 << 20).unwrap();
        writer.add("aaaa".into(), 1, candidates("00f067aa0ba902b7")).unwrap();
        writer.add("aaaa".into(), 1, candidates("00f067aa0ba902b7")).unwrap();
        let first = writer.commit().unwrap();
        assert_eq!((first.requests, first.events, first.repeated), (1, 2, 1));
        drop(writer);
        // The answer was lost: the client sends the request again to a new receiver.
        let mut writer = CollectWriter::open(&lake, 1 << 20).unwrap();
        writer.add("aaaa".into(), 1, candidates("00f067aa0ba902b7")).unwrap();
        writer.add("bbbb".into(), 1, candidates("00f067aa0ba902b8")).unwrap();
        let second = writer.finish().unwrap();
        assert_eq!((second.requests, second.events, second.repeated), (1, 2, 1));
        let state = crate::lake::state_log::load(&lake).unwrap().collect.unwrap();
        assert_eq!((state.requests, state.events, state.recent.len()), (2, 4, 2));
    }
}
