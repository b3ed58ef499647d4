//! The chain-reconstructor tests of spec §14.3 (20), over the `chains` and `chain_events`
//! views.

use serde_json::{Value, json};
use tracelake::engine::sql::SqlParams;
use tracelake::engine::{EngineOptions, open_session, run_statements};
use tracelake::ingest::Decoder;
use tracelake::lake::Lake;
use tracelake::load::import::{ImportOptions, ImportSource, import_source};
use tracelake::redact::Redactor;

use crate::trace::Trace;

/// Rows of `sql` over a lake holding `lines`, as JSON objects.
fn query(lines: &str, params: SqlParams, sql: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.jsonl");
    std::fs::write(&input, lines).unwrap();
    let lake = Lake::new(dir.path().join("lake"));
    std::fs::create_dir_all(lake.root()).unwrap();
    if !lines.is_empty() {
        import_source(&lake, &Decoder::new(Redactor::builtin()), &ImportSource::File(input), &ImportOptions::default(), &|_| {}).unwrap();
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let opts = EngineOptions { sql_params: params, ..EngineOptions::default() };
        let ctx = open_session(&lake, Redactor::builtin(), &opts).await.unwrap();
        let mut rows = Vec::new();
        run_statements(&ctx, sql, |_, batches| {
            let mut buf = Vec::new();
            let mut writer = datafusion::arrow::json::LineDelimitedWriter::new(&mut buf);
            for b in &batches {
                writer.write(b).unwrap();
            }
            writer.finish().unwrap();
            rows.extend(String::from_utf8(buf).unwrap().lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
            Ok(())
        })
        .await
        .unwrap();
        rows
    })
}

fn chains(t: &Trace) -> Vec<Value> {
    chains_with(&t.lines(), SqlParams::default())
}

fn chains_with(lines: &str, params: SqlParams) -> Vec<Value> {
    query(
        lines,
        params,
        "SELECT chain_id, agent, session, n_events, n_msg_in, n_msg_out, n_tool_call, n_tool_result, boundary_type, \
        CAST(start_ts AS BIGINT) AS start_ms FROM chains ORDER BY start_ts, agent",
    )
}

fn sizes(chains: &[Value]) -> Vec<i64> {
    chains.iter().map(|c| c["n_events"].as_i64().unwrap()).collect()
}

#[test]
fn groups_by_session_and_agent() {
    let mut t = Trace::new();
    t.session("s1", "main").user("a").agent("b").session("s2", "main").user("c").agent("d");
    let c = chains(&t);
    assert_eq!(c.len(), 2);
    assert_eq!((c[0]["session"].as_str(), c[1]["session"].as_str()), (Some("s1"), Some("s2")));
}

#[test]
fn same_session_different_agents_are_separate_chains() {
    let mut t = Trace::new();
    t.session("s", "main").user("a").agent("b").session("s", "forge").user("c").agent("d");
    let c = chains(&t);
    assert_eq!(c.iter().map(|c| c["agent"].as_str().unwrap()).collect::<Vec<_>>(), ["main", "forge"]);
}

#[test]
fn orders_events_by_time() {
    let mut t = Trace::new();
    t.user("first").agent("second").user("third");
    t.events.reverse(); // published out of order
    let rows = query(&t.lines(), SqlParams::default(), "SELECT content FROM chain_events ORDER BY idx");
    let texts: Vec<&str> = rows.iter().map(|r| r["content"].as_str().unwrap()).collect();
    assert_eq!(texts, ["first", "second", "third"]);
}

#[test]
fn session_start_begins_a_new_chain() {
    let mut t = Trace::new();
    t.user("a").agent("b").event("session.start", json!({})).user("c").agent("d");
    assert_eq!(sizes(&chains(&t)), [2, 3]);
}

#[test]
fn session_end_closes_the_chain() {
    let mut t = Trace::new();
    t.user("a").agent("b").event("session.end", json!({})).user("c").agent("d");
    let c = chains(&t);
    assert_eq!(sizes(&c), [3, 2]);
    assert_eq!(c[0]["boundary_type"], "lifecycle");
}

#[test]
fn an_inactivity_gap_over_30_minutes_splits() {
    let mut t = Trace::new();
    t.user("a").agent("b").wait_minutes(31).user("c").agent("d");
    assert_eq!(sizes(&chains(&t)), [2, 2]);
}

#[test]
fn a_gap_under_30_minutes_does_not_split() {
    let mut t = Trace::new();
    t.user("a").agent("b").wait_minutes(29).user("c").agent("d");
    assert_eq!(sizes(&chains(&t)), [4]);
}

#[test]
fn run_end_then_run_start_after_5_minutes_splits() {
    let mut t = Trace::new();
    t.user("a").event("run.end", json!({})).wait_minutes(6).event("run.start", json!({})).user("b");
    assert_eq!(sizes(&chains(&t)), [2, 2]);
}

#[test]
fn run_end_then_run_start_within_5_minutes_does_not_split() {
    let mut t = Trace::new();
    t.user("a").event("run.end", json!({})).wait_minutes(4).event("run.start", json!({})).user("b");
    assert_eq!(sizes(&chains(&t)), [4]);
}

#[test]
fn chains_under_two_events_are_dropped() {
    let mut t = Trace::new();
    t.session("s1", "main").user("alone").session("s2", "main").user("a").agent("b");
    let c = chains(&t);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["session"], "s2");
}

#[test]
fn duplicates_within_a_second_are_removed() {
    let mut t = Trace::new();
    t.user("hello").agent("hi");
    let mut lines = t.lines();
    // The same user message from schema B, 700 ms later (the next second).
    let dup = json!({"id": "b-1", "timestamp": 1_700_000_001_700_i64, "agent": "main", "session": "agent:main:test-session",
        "type": "conversation.message.in", "payload": {"text_preview": [{"type": "text", "text": "hello"}]}});
    lines.push_str(&(dup.to_string() + "\n"));
    let rows = query(&lines, SqlParams::default(), "SELECT id, type FROM chain_events ORDER BY idx");
    assert_eq!(rows.len(), 2, "{rows:?}");
}

#[test]
fn the_higher_sequence_wins_a_duplicate() {
    let a = json!({"id": "a-1", "ts": 1_700_000_001_000_i64, "agent": "main", "session": "s", "type": "tool.call", "payload": {"toolName": "exec", "params": {"command": "ls"}}});
    let b = json!({"id": "b-1", "timestamp": 1_700_000_001_400_i64, "agent": "main", "session": "agent:main:s", "type": "conversation.tool_call", "payload": {"data": {"name": "exec", "args": {"command": "ls"}}}});
    let out =
        json!({"id": "o", "ts": 1_700_000_003_000_i64, "agent": "main", "session": "s", "type": "msg.out", "payload": {"content": "ok"}});
    let lines = format!("{b}\n{a}\n{out}\n");
    let rows = query(&lines, SqlParams::default(), "SELECT id FROM chain_events WHERE type = 'tool.call'");
    assert_eq!(rows, [json!({"id": "a-1"})], "line 2 (the later sequence) is kept");
}

#[test]
fn chain_ids_are_deterministic() {
    let mut t = Trace::new();
    t.user("a").agent("b");
    let (first, second) = (chains(&t), chains(&t));
    let id = first[0]["chain_id"].as_str().unwrap().to_owned();
    assert_eq!(id, second[0]["chain_id"].as_str().unwrap());
    assert_eq!(id, tracelake::udfs::chain_id::chain_id("test-session", "main", first[0]["start_ms"].as_i64().unwrap()));
    assert_eq!(id.len(), 16);
}

#[test]
fn counts_per_type() {
    let mut t = Trace::new();
    t.user("a").agent("b").tool_ok("exec", json!({"command": "ls"})).agent("c");
    let c = &chains(&t)[0];
    assert_eq!(
        (c["n_msg_in"].as_i64(), c["n_msg_out"].as_i64(), c["n_tool_call"].as_i64(), c["n_tool_result"].as_i64()),
        (Some(1), Some(2), Some(1), Some(1))
    );
}

#[test]
fn chains_are_capped() {
    let mut t = Trace::new();
    for i in 0..25 {
        t.user(&format!("message {i}"));
    }
    let c = chains_with(&t.lines(), SqlParams { max_chain_events: 10, ..SqlParams::default() });
    assert_eq!(sizes(&c), [10, 10, 5]);
    assert!(c.iter().all(|c| c["boundary_type"] == "memory_cap"));
}

#[test]
fn an_empty_stream_has_no_chains() {
    assert!(chains_with("", SqlParams::default()).is_empty());
}

#[test]
fn one_agent_one_session() {
    let mut t = Trace::new();
    t.user("a").agent("b").user("c").agent("d");
    let c = chains(&t);
    assert_eq!((c.len(), c[0]["boundary_type"].as_str()), (1, Some("gap")));
}

#[test]
fn session_unknown_is_a_session_like_any_other() {
    let lines = [
        json!({"ts": 1_700_000_001_000_i64, "type": "msg.in", "payload": {"content": "a"}}),
        json!({"ts": 1_700_000_002_000_i64, "type": "msg.out", "payload": {"content": "b"}}),
    ]
    .map(|v| v.to_string() + "\n")
    .concat();
    let c = chains_with(&lines, SqlParams::default());
    assert_eq!((c[0]["agent"].as_str(), c[0]["session"].as_str(), c[0]["n_events"].as_i64()), (Some("unknown"), Some("unknown"), Some(2)));
}

#[test]
fn the_gap_is_configurable() {
    let mut t = Trace::new();
    t.user("a").agent("b").wait_minutes(10).user("c").agent("d");
    assert_eq!(sizes(&chains_with(&t.lines(), SqlParams { chain_gap_ms: 5 * 60_000, ..SqlParams::default() })), [2, 2]);
    assert_eq!(sizes(&chains(&t)), [4]);
}

#[test]
fn interleaved_agents_keep_their_own_chains() {
    let mut t = Trace::new();
    for i in 0..4 {
        t.session("s", "main").user(&format!("main {i}"));
        t.session("s", "forge").user(&format!("forge {i}"));
    }
    let c = chains(&t);
    assert_eq!(sizes(&c), [4, 4]);
    let rows = query(&t.lines(), SqlParams::default(), "SELECT agent, content FROM chain_events WHERE agent = 'forge' ORDER BY idx");
    assert!(rows.iter().enumerate().all(|(i, r)| r["content"] == format!("forge {i}")));
}

/// The chain builder's three modes (lazy views, chains materialized in memory, chains
/// built per bucket of sessions with plans made once) give the same chains.
#[test]
fn every_mode_builds_the_same_chains() {
    use datafusion::arrow::array::RecordBatch;
    use futures::TryStreamExt;
    use tracelake::engine::chains::{BucketPlans, Buckets, Increment, Slice, build_chains, define_analysis_events};

    const COLUMNS: &str = "chain_id, agent, session, CAST(idx AS BIGINT) AS idx, id, type, CAST(chain_len AS BIGINT) AS chain_len";
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.jsonl");
    // Generated sessions with breaks, duplicates and long chains, and real traces beside them.
    let mut lines = Vec::new();
    tracelake::generate::generate(&tracelake::generate::GenerateOptions { events: 4000, seed: 7 }, &mut lines).unwrap();
    lines.extend(std::fs::read(crate::common::realworld("tau-retail.events.jsonl")).unwrap());
    std::fs::write(&input, lines).unwrap();
    let lake = Lake::new(dir.path().join("lake"));
    std::fs::create_dir_all(lake.root()).unwrap();
    import_source(&lake, &Decoder::new(Redactor::builtin()), &ImportSource::File(input), &ImportOptions::default(), &|_| {}).unwrap();

    let rows = |batches: &[RecordBatch]| -> Vec<String> {
        let mut rows: Vec<String> = tracelake::engine::batches_json(batches).unwrap().iter().map(Value::to_string).collect();
        rows.sort();
        rows
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let opts = EngineOptions::default();
        let params = &opts.sql_params;
        let ctx = open_session(&lake, Redactor::builtin(), &opts).await.unwrap();
        let select = format!("SELECT {COLUMNS} FROM chain_events");
        let lazy = rows(&ctx.sql(&select).await.unwrap().collect().await.unwrap());
        assert!(lazy.len() > 3000, "{} chain events", lazy.len());
        // Over the lake, chains are built shard by shard of sessions, and numbered apart.
        let numbering = "SELECT count(DISTINCT chain_shard) AS shards, count(DISTINCT chain_no) AS numbers, \
                         count(DISTINCT chain_id) AS chains FROM chain_events";
        let counts = tracelake::engine::query_json(&ctx, numbering).await.unwrap();
        assert!(counts[0]["shards"].as_i64().unwrap() > 10, "{counts:?}");
        assert_eq!(counts[0]["numbers"], counts[0]["chains"], "{counts:?}");

        define_analysis_events(&ctx, &Increment::All, 0, &Slice::All).await.unwrap();
        let buckets = Buckets::split(&ctx, 500).await.unwrap();
        let plans = std::sync::Arc::new(BucketPlans::new(&ctx, params, buckets.schema()).await.unwrap());
        let query = std::sync::Arc::new(plans.plan(&select).await.unwrap());
        let per_bucket: Vec<Vec<RecordBatch>> = buckets
            .run(&ctx, |events| {
                let (plans, query) = (plans.clone(), query.clone());
                async move {
                    let chains = plans.chains(events.read()?).await?;
                    plans.query(&query, &chains).await
                }
            })
            .try_collect()
            .await
            .unwrap();
        assert!(per_bucket.len() > 1, "several buckets");
        let bucketed = rows(&per_bucket.concat());

        build_chains(&ctx, params).await.unwrap();
        let materialized = rows(&ctx.sql(&select).await.unwrap().collect().await.unwrap());

        assert_eq!(lazy, materialized, "lazy views and materialized chains differ");
        assert_eq!(lazy, bucketed, "lazy views and bucketed chains differ");
    });
}
