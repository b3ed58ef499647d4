-- Views over the (materialized) chain events: chains, tool attempts, failure occurrences
-- and how chains end.
-- ${max_chain_events} is filled in from the config.

-- One row per chain.
CREATE OR REPLACE VIEW chains AS
SELECT
    chain_id, agent, session,
    min(ts) AS start_ts, max(ts) AS end_ts, count(*) AS n_events,
    sum(CASE WHEN type = 'msg.in' THEN 1 ELSE 0 END) AS n_msg_in,
    sum(CASE WHEN type = 'msg.out' THEN 1 ELSE 0 END) AS n_msg_out,
    sum(CASE WHEN type = 'tool.call' THEN 1 ELSE 0 END) AS n_tool_call,
    sum(CASE WHEN type = 'tool.result' THEN 1 ELSE 0 END) AS n_tool_result,
    max(CASE WHEN idx = 0 THEN id END) AS first_event_id,
    max(CASE WHEN idx = chain_len - 1 THEN id END) AS last_event_id,
    CASE
        WHEN max(piece) > 0 OR count(*) = ${max_chain_events} THEN 'memory_cap'
        WHEN max(CASE WHEN idx = 0 THEN type END) = 'session.start'
            OR max(CASE WHEN idx = chain_len - 1 THEN type END) = 'session.end' THEN 'lifecycle'
        ELSE 'gap'
    END AS boundary_type
FROM chain_events
GROUP BY chain_id, agent, session;

-- Tool attempts: a tool.call directly followed by its tool.result.
CREATE OR REPLACE VIEW tool_attempts AS
SELECT chain_id, chain_no, agent, session, idx AS call_idx, idx + 1 AS result_idx, id AS call_id, next_id AS result_id, ts,
    tool_name, tool_params, next_failed AS failed, next_tool_error AS error
FROM chain_events
WHERE type = 'tool.call' AND next_type = 'tool.result';

-- The first failure of each kind in each session: (fingerprint, session) with where it
-- happened. Kept in the lake (`failures`) so later runs compare against all history.
CREATE OR REPLACE VIEW failure_occurrences AS
WITH fails AS (
    SELECT *,
        fail_fingerprint(tool_name, tool_params, coalesce(error, 'error')) AS fingerprint
    FROM tool_attempts
    WHERE failed
),
ranked AS (
    SELECT *, group_row_number(fingerprint, session)
            OVER (PARTITION BY key_hash(fingerprint, session) % 32 ORDER BY fingerprint, session, ts, call_idx, chain_no) AS nth
    FROM fails
)
SELECT fingerprint, session, agent, ts AS first_ts, chain_id, call_idx AS start_idx,
    call_id AS start_event_id, result_id AS end_event_id, tool_name, error
FROM ranked
WHERE nth = 1;

-- Each chain that ended (its last event is session.end, run.end or run.error), with its
-- last turn: the last message or tool event among its last eight events, calls that
-- change nothing (`is_noop_tool`) left out. Narrow rows: most chains end, and their
-- tails are most of a short chain.
CREATE OR REPLACE VIEW chain_endings AS
WITH ended AS (
    SELECT chain_no, type AS end_type FROM chain_events
    WHERE type IN ('session.end', 'run.end', 'run.error') AND idx = chain_len - 1
)
SELECT e.chain_no, e.end_type, max(c.idx) AS last_idx
FROM ended e
JOIN (
    SELECT chain_no, idx FROM chain_events
    WHERE idx >= chain_len - 8 AND type IN ('msg.in', 'msg.out', 'tool.call', 'tool.result', 'run.error')
        AND NOT (type IN ('tool.call', 'tool.result') AND coalesce(is_noop_tool(tool_name), false))
) c ON c.chain_no = e.chain_no
GROUP BY e.chain_no, e.end_type;
