-- Views over the (materialized) chain events: chains, tool attempts, failure occurrences,
-- how chains end, and the state changes the user did not agree to.
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
SELECT chain_id, chain_shard, chain_no, agent, session, idx AS call_idx, idx + 1 AS result_idx, id AS call_id, next_id AS result_id, ts,
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

-- Calls that change state (`is_consequential_tool`: create, update, modify, cancel, delete,
-- book, pay, transfer, send …, never a read such as get or search, nor a handoff;
-- `toolPatterns.consequential` in the config), each with `why` the user did not agree to
-- it (NULL when they did), whether the call `failed` and the agent's last message before
-- it, `agent_message` (what the user agreed to, or should have). `unconfirmed_calls` holds
-- those the user did not agree to (SIG-UNCONFIRMED-ACTION reports those that took effect,
-- SIG-UNCONFIRMED-ATTEMPT those that failed). Agreeing is a confirmation ("yes", "that
-- works", "ja, mach das") since the agent last spoke (or since the chain began, when it
-- never did); an agent message that only acknowledges a confirmation ("I will proceed
-- now, one moment") asks nothing and keeps it. A consent covers the actions agreed to,
-- however many ("cancel both"), but not the same call again once it took effect. A call
-- that failed changed nothing, so it uses up no consent: a retry with other parameters
-- is still covered.
-- Positions are numbered across chains (chain_no · 2³² + idx), so that one running
-- maximum over all chains, in chain order, finds the agent's last message and the user's
-- last confirmation before each event without a window partition per chain.
CREATE OR REPLACE VIEW consequential_calls AS
WITH acting AS (
    SELECT chain_no FROM chain_events WHERE type = 'tool.call' AND is_consequential_tool(tool_name) GROUP BY chain_no
),
-- The events of the chains that change state (most change nothing). Not filtered by type
-- here: a filter would run before the join and copy the texts of every chain. Where the
-- agent spoke (not to acknowledge a confirmation) and where the user confirmed are
-- conditions of CASEs, so that the text tests run on the messages of their kind alone.
positioned AS (
    SELECT c.*, CAST(c.chain_no AS BIGINT) * 4294967296 + c.idx AS pos
    FROM acting a JOIN chain_events c ON c.chain_no = a.chain_no
),
spoken AS (
    SELECT *,
        CASE WHEN type = 'msg.out' THEN
            CASE WHEN prev_type = 'msg.in' AND is_confirmation(prev_content) AND NOT coalesce(is_question(content), false) THEN NULL ELSE pos END
        END AS spoke_at,
        CASE WHEN type = 'msg.in' AND is_confirmation(content) THEN pos END AS confirmed_at
    FROM positioned
),
marked AS (
    SELECT *,
        max(spoke_at) OVER w AS agent_spoke_at,
        max(confirmed_at) OVER w AS user_confirmed_at
    FROM spoken
    WINDOW w AS (PARTITION BY chain_shard ORDER BY chain_no, idx ROWS UNBOUNDED PRECEDING)
),
actions AS (
    SELECT *,
        coalesce(next_failed, false) AS call_failed,
        -- Where the turn began: the agent's last message in this chain, or the chain's start.
        greatest(coalesce(agent_spoke_at, -1), pos - idx) AS turn_at,
        max(CASE WHEN NOT coalesce(next_failed, false) THEN pos END) OVER (
            PARTITION BY chain_no, tool_name, tool_params ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS same_call_done_at
    FROM marked
    WHERE type = 'tool.call' AND is_consequential_tool(tool_name)
),
judged AS (
    SELECT *,
        CASE
            WHEN coalesce(user_confirmed_at, -1) < turn_at THEN 'before the user agreed'
            WHEN same_call_done_at >= turn_at THEN 'again after it took effect once'
        END AS why
    FROM actions
)
SELECT u.chain_id, u.chain_no, u.agent, u.session, u.idx, u.id, u.ts, u.tool_name, u.tool_params, u.next_tool_error,
    u.call_failed AS failed, u.why,
    coalesce(p.idx, u.idx) AS start_idx, coalesce(p.id, u.id) AS start_event_id, p.content AS agent_message
FROM judged u
LEFT JOIN chain_events p ON p.chain_no = u.chain_no AND p.idx = u.agent_spoke_at - (u.pos - u.idx);

CREATE OR REPLACE VIEW unconfirmed_calls AS
SELECT * FROM consequential_calls WHERE why IS NOT NULL;
