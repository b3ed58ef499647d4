-- Conversation chains (spec §6), rebuilt with window queries over `analysis_events`
-- (the events of this run: all of them, or the sessions touched since the last run).
-- ${chain_gap_ms} and ${max_chain_events} are filled in from the config.

-- Events published by both OpenClaw schemas (A and B) appear twice: same type, agent and
-- session, less than a second apart, same content (messages: the first 200 characters),
-- tool and params (calls), tool (results), or the exact time (everything else); other
-- sources (spans, transcripts) publish each event once. Keys are compared by their
-- 64-bit hash (`dedup_key`), which keeps the rows that are sorted narrow. Of such a pair
-- the one with the higher sequence stays (`superseded` compares each event with those
-- around it in time). The window has the same order as the chains' below, so the events
-- are sorted once: by the 64-bit hash of (agent, session), then time and sequence, which
-- groups each (agent, session). The three are packed into one `sort_key`, so that the
-- sort compares one value per pair of rows, not three columns. (Windows ordered by it
-- name a frame of rows: the default range frame needs a numeric order.)
-- The windows are partitioned by `chain_shard`: a hash of (agent, session) where chains are
-- built over the whole lake, so that the shards run on every core or worker, and 0 where a
-- bucket of sessions is built at a time. A session's events are always in one shard.
CREATE OR REPLACE VIEW deduped_events AS
WITH keyed AS (
    SELECT *,
        CAST(ts AS BIGINT) AS ts_ms,
        dedup_key(type, content, tool_name, tool_params) AS dedup_key,
        CASE WHEN schema NOT IN ('A', 'B') THEN 0
             WHEN type IN ('msg.in', 'msg.out', 'tool.call', 'tool.result') THEN 1000 ELSE 1 END AS dedup_window_ms,
        sort_key(key_hash(agent, session), CAST(ts AS BIGINT), stream_seq) AS chain_order,
        ${chain_shard} AS chain_shard
    FROM analysis_events
),
marked AS (
    SELECT *,
        superseded(ts_ms, stream_seq, dedup_window_ms, agent, session, type, dedup_key) OVER (PARTITION BY chain_shard ORDER BY chain_order ROWS UNBOUNDED PRECEDING) AS is_copy
    FROM keyed
)
SELECT * FROM marked WHERE NOT is_copy;

-- Each (session, agent) is cut into chains by `chain_position` (session.start, after
-- session.end, a run.end → run.start pause over 5 minutes, an inactivity gap over
-- chainGapMinutes, and pieces of at most the cap). Chains under 2 events go. Every event
-- also carries its neighbours in the chain (prev_*, next_*), so detectors that look one
-- step back or ahead need no window of their own. Chains are numbered in each shard from
-- 2²⁴ · shard on: `chain_no` is unique among the chains built together and ascends in
-- chain order (shard, then session, then time).
CREATE OR REPLACE VIEW chain_events AS
WITH positioned AS (
    SELECT *,
        chain_position(agent, session, type, ts_ms, ${chain_gap_ms}, ${max_chain_events}) OVER w AS pos,
        lag(type) OVER w AS lag_type, lag(content) OVER w AS lag_content,
        lag(id) OVER w AS lag_id, lag(ts) OVER w AS lag_ts,
        lead(type) OVER w AS lead_type, lead(id) OVER w AS lead_id,
        lead(tool_error) OVER w AS lead_tool_error,
        lead(tool_error IS NOT NULL OR coalesce(tool_is_error, false)) OVER w AS lead_failed
    FROM deduped_events
    WINDOW w AS (PARTITION BY chain_shard ORDER BY chain_order ROWS UNBOUNDED PRECEDING)
),
chained AS (
    SELECT *, chain_shard * 16777216 + pos['chain_no'] AS chain_no, pos['idx'] AS idx, pos['len'] AS chain_len,
        pos['start_ms'] AS chain_start_ms, pos['piece'] AS piece
    FROM positioned
)
SELECT
    chain_id(session, agent, chain_start_ms) AS chain_id,
    chain_shard, chain_no, idx, chain_len, agent, session, id, ts, ts_ms, type, content, tool_name, tool_params, tool_result, tool_error,
    (tool_error IS NOT NULL OR coalesce(tool_is_error, false)) AS failed,
    piece, stream_seq,
    CASE WHEN idx > 0 THEN lag_type END AS prev_type,
    CASE WHEN idx > 0 THEN lag_content END AS prev_content,
    CASE WHEN idx > 0 THEN lag_id END AS prev_id,
    CASE WHEN idx > 0 THEN lag_ts END AS prev_ts,
    CASE WHEN idx < chain_len - 1 THEN lead_type END AS next_type,
    CASE WHEN idx < chain_len - 1 THEN lead_id END AS next_id,
    CASE WHEN idx < chain_len - 1 THEN lead_tool_error END AS next_tool_error,
    CASE WHEN idx < chain_len - 1 THEN lead_failed END AS next_failed
FROM chained
WHERE chain_len >= 2;
