//! Deterministic synthetic traces: sessions of several agents, interleaved in time as on a
//! live stream, published in schema A, schema B or both (duplicates that deduplication
//! must remove), with failure patterns of every signal injected at known places.
//!
//! The generator counts what it injected, so tests can assert the detectors find exactly that.

mod render;
mod scenario;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::io::Write;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use scenario::SessionPlan;

/// 2026-01-05T08:00:00Z: where generated time starts.
const START_MS: i64 = 1_767_600_000_000;
/// How many sessions run at once.
const CONCURRENT_SESSIONS: usize = 6;

#[derive(Debug, Clone)]
pub struct GenerateOptions {
    pub events: u64,
    pub seed: u64,
}

/// What a generated file holds, by construction.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Expected {
    pub seed: u64,
    pub events: u64,
    pub sessions: u64,
    pub events_by_type: BTreeMap<String, u64>,
    pub events_by_schema: BTreeMap<String, u64>,
    /// Findings the detectors must report with default settings (plus SIG-UNVERIFIED-CLAIM,
    /// which is off by default), per signal.
    pub findings: BTreeMap<String, u64>,
    /// Per signal and severity.
    pub severities: BTreeMap<String, BTreeMap<String, u64>>,
    /// Decisions the cortex patterns find (the `decisions` view's rows).
    pub decisions: u64,
}

/// Writes exactly `opts.events` JSONL lines to `out` and returns what they hold.
pub fn generate(opts: &GenerateOptions, out: &mut dyn Write) -> std::io::Result<Expected> {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut expected = Expected { seed: opts.seed, events: opts.events, ..Expected::default() };
    let mut planner = scenario::Planner::default();
    // Active sessions ordered by the time of their next event.
    let mut active: BinaryHeap<Reverse<(i64, u64)>> = BinaryHeap::new();
    let mut sessions: BTreeMap<u64, (Vec<render::Line>, usize)> = BTreeMap::new();
    let mut planned: u64 = 0;
    let mut written: u64 = 0;
    let mut next_id: u64 = 0;
    let mut clock = START_MS;

    while written < opts.events {
        while sessions.len() < CONCURRENT_SESSIONS && planned < opts.events {
            let remaining = opts.events - planned;
            let start = clock + rng.random_range(1_000..60_000);
            let mut plan = planner.next(&mut rng, next_id, start, remaining);
            let mut lines = render::render(&mut rng, &plan);
            if lines.len() as u64 > remaining {
                plan = SessionPlan::filler(&mut rng, next_id, start, remaining as usize);
                lines = render::render(&mut rng, &plan);
            }
            planned += lines.len() as u64;
            plan.count_findings(&mut expected);
            expected.sessions += 1;
            lines.sort_by_key(|l| l.ts);
            active.push(Reverse((lines[0].ts, next_id)));
            sessions.insert(next_id, (lines, 0));
            next_id += 1;
        }
        let Some(Reverse((ts, id))) = active.pop() else {
            break;
        };
        clock = clock.max(ts);
        let (lines, pos) = sessions.get_mut(&id).expect("active session");
        let line = &lines[*pos];
        *expected.events_by_type.entry(line.event_type.clone()).or_default() += 1;
        *expected.events_by_schema.entry(line.schema.to_owned()).or_default() += 1;
        out.write_all(line.json.as_bytes())?;
        out.write_all(b"\n")?;
        written += 1;
        *pos += 1;
        if *pos < lines.len() {
            active.push(Reverse((lines[*pos].ts, id)));
        } else {
            sessions.remove(&id);
        }
    }
    Ok(expected)
}
