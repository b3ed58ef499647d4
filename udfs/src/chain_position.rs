//! `chain_position(agent, session, type, ts_ms, gap_ms, max_events) OVER (ORDER BY <(agent,
//! session) key>, ts_ms, stream_seq)`: where each event sits in its conversation chain
//! (spec §6). The rows of each (agent, session) must be together and in time order.
//!
//! A (session, agent) stream of events is cut into segments at `session.start`, after
//! `session.end`, at a `run.end` → `run.start` pause over five minutes and at an inactivity
//! gap over `gap_ms`; a segment longer than `max_events` is cut into pieces of that size.
//! Each piece is a chain. Returns a struct per event:
//! `{chain_no, idx, len, start_ms, piece}` — the chain's number (dense and ascending in
//! window order, from 0 in each window partition), the event's position in it, the
//! chain's length and first event time, and which piece of its segment the chain is.
//!
//! One linear scan over the ordered rows; written as a window function because the rules
//! look at the previous event and the chain's length looks ahead to its end.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Int64Array, StructArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Int64Type};
use datafusion::common::Result;
use datafusion::logical_expr::{PartitionEvaluator, WindowUDF};

use crate::strings::Texts;
use crate::window_function::Kind::{Integer, Text};
use crate::window_function::{Param, Params, WindowFunction};

/// A run that ends and a new one that starts more than this later begin a new chain.
const RUN_PAUSE_MS: i64 = 5 * 60 * 1000;

const FIELDS: [&str; 5] = ["chain_no", "idx", "len", "start_ms", "piece"];

/// The `chain_position` window function.
pub fn udf() -> WindowUDF {
    WindowFunction::udf(
        "chain_position",
        Params(
            &[
                Param("agent", Text),
                Param("session", Text),
                Param("type", Text),
                Param("ts_ms", Integer),
                Param("gap_ms", Integer),
                Param("max_events", Integer),
            ],
            None,
        ),
        DataType::Struct(fields()),
        false,
        || Box::new(ChainPositionEvaluator),
        crate::docs::doc(
            "The chain of each event (spec §6 boundaries): `{chain_no, idx, len, start_ms, piece}`.",
            "chain_position(agent, session, type, ts_ms, gap_ms, max_events) OVER (ORDER BY <(agent, session) key>, ts_ms, stream_seq)",
            &[("gap_ms", "the gap that ends a chain"), ("max_events", "the most events a chain holds")],
        ),
    )
}

fn fields() -> Fields {
    FIELDS.iter().map(|name| Field::new(*name, DataType::Int64, false)).collect()
}

#[derive(Debug)]
struct ChainPositionEvaluator;

impl PartitionEvaluator for ChainPositionEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let [agents, sessions, types, ts, gap, cap] = values else { unreachable!("the signature takes six arguments") };
        let ts = cast(ts, &DataType::Int64)?;
        let ts = ts.as_primitive::<Int64Type>();
        let gap_ms = cast(gap, &DataType::Int64)?.as_primitive::<Int64Type>().value(0);
        let cap = cast(cap, &DataType::Int64)?.as_primitive::<Int64Type>().value(0).max(1);

        let (agents, sessions, types) = (Texts::of(agents)?, Texts::of(sessions)?, Texts::of(types)?);
        let mut pos_in_segment = vec![0i64; n];
        for i in 1..n {
            let prev_type = types.get(i - 1);
            let kind = types.get(i);
            let pause = ts.value(i) - ts.value(i - 1);
            let starts_segment = agents.get(i) != agents.get(i - 1)
                || sessions.get(i) != sessions.get(i - 1)
                || kind == Some("session.start")
                || prev_type == Some("session.end")
                || (prev_type == Some("run.end") && kind == Some("run.start") && pause > RUN_PAUSE_MS)
                || pause > gap_ms;
            pos_in_segment[i] = if starts_segment { 0 } else { pos_in_segment[i - 1] + 1 };
        }

        let mut chain_no = Vec::with_capacity(n);
        let mut idx = Vec::with_capacity(n);
        let mut len = vec![0i64; n];
        let mut start_ms = Vec::with_capacity(n);
        let mut piece = Vec::with_capacity(n);
        let mut chain = -1;
        let mut chain_start = 0usize;
        for (i, &pos) in pos_in_segment.iter().enumerate() {
            if pos % cap == 0 {
                len[chain_start..i].fill((i - chain_start) as i64);
                chain += 1;
                chain_start = i;
            }
            chain_no.push(chain);
            idx.push(pos % cap);
            piece.push(pos / cap);
            start_ms.push(ts.value(chain_start));
        }
        len[chain_start..n].fill((n - chain_start) as i64);

        let columns: Vec<ArrayRef> =
            [chain_no, idx, len, start_ms, piece].into_iter().map(|v| Arc::new(Int64Array::from(v)) as ArrayRef).collect();
        Ok(Arc::new(StructArray::try_new(fields(), columns, None)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};

    fn positions(rows: &[(&str, &str, i64)], gap_ms: i64, cap: i64) -> Vec<[i64; 5]> {
        let n = rows.len();
        let text = |values: Vec<&str>| Arc::new(StringArray::from(values)) as ArrayRef;
        let values = [
            text(vec!["main"; n]),
            text(rows.iter().map(|r| r.0).collect()),
            text(rows.iter().map(|r| r.1).collect()),
            Arc::new(rows.iter().map(|r| r.2).collect::<Int64Array>()) as ArrayRef,
            Arc::new(Int64Array::from(vec![gap_ms; n])) as ArrayRef,
            Arc::new(Int64Array::from(vec![cap; n])) as ArrayRef,
        ];
        let out = ChainPositionEvaluator.evaluate_all(&values, n).unwrap();
        let out = out.as_struct();
        (0..n).map(|i| std::array::from_fn(|f| out.column(f).as_primitive::<Int64Type>().value(i))).collect()
    }

    #[test]
    fn chains_start_at_boundaries_and_carry_length_and_start() {
        let rows = [
            ("s1", "msg.in", 1_000),
            ("s1", "msg.out", 2_000),
            ("s1", "session.end", 3_000),
            ("s1", "msg.in", 4_000),                // after session.end
            ("s1", "msg.out", 4_000 + 31 * 60_000), // inactivity gap
            ("s2", "msg.in", 5_000),                // other session
            ("s2", "run.end", 6_000),
            ("s2", "run.start", 6_000 + 5 * 60_000 + 1), // run pause over five minutes
        ];
        let p = positions(&rows, 30 * 60_000, 1000);
        let chain_no: Vec<i64> = p.iter().map(|r| r[0]).collect();
        assert_eq!(chain_no, [0, 0, 0, 1, 2, 3, 3, 4]);
        let idx: Vec<i64> = p.iter().map(|r| r[1]).collect();
        assert_eq!(idx, [0, 1, 2, 0, 0, 0, 1, 0]);
        let len: Vec<i64> = p.iter().map(|r| r[2]).collect();
        assert_eq!(len, [3, 3, 3, 1, 1, 2, 2, 1]);
        assert_eq!(p[2][3], 1_000, "start_ms is the chain's first event time");
    }

    #[test]
    fn long_segments_are_cut_into_pieces_of_the_cap() {
        let rows: Vec<(&str, &str, i64)> = (0..7).map(|i| ("s", "msg.in", i)).collect();
        let p = positions(&rows, 60_000, 3);
        let summary: Vec<(i64, i64, i64, i64)> = p.iter().map(|r| (r[0], r[1], r[2], r[4])).collect();
        assert_eq!(summary, [(0, 0, 3, 0), (0, 1, 3, 0), (0, 2, 3, 0), (1, 0, 3, 1), (1, 1, 3, 1), (1, 2, 3, 1), (2, 0, 1, 2)]);
    }
}
