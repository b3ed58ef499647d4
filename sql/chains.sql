-- Conversation chains (spec §6), rebuilt with window queries over `analysis_events`
-- (the events of this run: all of them, or the sessions touched since the last run).
-- ${chain_gap_ms} and ${max_chain_events} are filled in from the config.

-- Events published by both schemas appear twice: same type, agent and session, less than
-- a second apart, same content (messages), tool and params (calls), tool (results), or the
-- exact time (everything else). Of such a pair the one with the higher sequence stays.
-- Neighbours are compared by time difference, not by second bucket, so a pair that
-- straddles a second boundary is caught too.
CREATE OR REPLACE VIEW deduped_events AS
WITH keyed AS (
    SELECT *,
        CAST(ts AS BIGINT) AS ts_ms,
        CASE
            WHEN type IN ('msg.in', 'msg.out') THEN coalesce(substr(content, 1, 200), '')
            WHEN type = 'tool.call' THEN coalesce(tool_name, '') || '|' || coalesce(tool_params, '{}')
            WHEN type = 'tool.result' THEN coalesce(tool_name, '')
            ELSE ''
        END AS dedup_key,
        CASE WHEN type IN ('msg.in', 'msg.out', 'tool.call', 'tool.result') THEN 1000 ELSE 1 END AS dedup_window_ms
    FROM analysis_events
),
neighbours AS (
    SELECT *,
        lag(ts_ms) OVER w AS prev_ts_ms, lag(stream_seq) OVER w AS prev_seq,
        lead(ts_ms) OVER w AS next_ts_ms, lead(stream_seq) OVER w AS next_seq
    FROM keyed
    WINDOW w AS (PARTITION BY agent, session, type, dedup_key ORDER BY ts_ms, stream_seq)
)
SELECT * FROM neighbours
WHERE NOT (
    (next_ts_ms IS NOT NULL AND next_ts_ms - ts_ms < dedup_window_ms AND next_seq > stream_seq)
    OR (prev_ts_ms IS NOT NULL AND ts_ms - prev_ts_ms < dedup_window_ms AND prev_seq > stream_seq)
);

-- Each (session, agent) is cut into segments at session.start, after session.end, at a
-- run.end → run.start pause over 5 minutes and at an inactivity gap over chainGapMinutes;
-- a segment longer than the cap is cut into pieces of the cap. Chains under 2 events go.
CREATE OR REPLACE VIEW chain_events AS
WITH ordered AS (
    SELECT *,
        lag(type) OVER w AS prev_type,
        lag(ts_ms) OVER w AS prev_event_ts_ms
    FROM deduped_events
    WINDOW w AS (PARTITION BY session, agent ORDER BY ts_ms, stream_seq)
),
segmented AS (
    SELECT *,
        sum(CASE
            WHEN prev_type IS NULL THEN 1
            WHEN type = 'session.start' OR prev_type = 'session.end' THEN 1
            WHEN prev_type = 'run.end' AND type = 'run.start' AND ts_ms - prev_event_ts_ms > 300000 THEN 1
            WHEN ts_ms - prev_event_ts_ms > ${chain_gap_ms} THEN 1
            ELSE 0
        END) OVER (PARTITION BY session, agent ORDER BY ts_ms, stream_seq ROWS UNBOUNDED PRECEDING) AS segment
    FROM ordered
),
positioned AS (
    SELECT *, CAST(row_number() OVER (PARTITION BY session, agent, segment ORDER BY ts_ms, stream_seq) AS BIGINT) - 1 AS pos
    FROM segmented
),
pieces AS (
    SELECT *, pos / ${max_chain_events} AS piece, pos % ${max_chain_events} AS idx
    FROM positioned
),
sized AS (
    SELECT *,
        count(*) OVER (PARTITION BY session, agent, segment, piece) AS chain_len,
        min(ts_ms) OVER (PARTITION BY session, agent, segment, piece) AS chain_start_ms
    FROM pieces
)
SELECT
    chain_id(session, agent, chain_start_ms) AS chain_id,
    idx, chain_len, agent, session, id, ts, ts_ms, type, content, tool_name, tool_params, tool_error,
    (tool_error IS NOT NULL OR coalesce(tool_is_error, false)) AS failed,
    piece, stream_seq
FROM sized
WHERE chain_len >= 2;
