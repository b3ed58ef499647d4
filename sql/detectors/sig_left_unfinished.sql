-- signal: SIG-LEFT-UNFINISHED
-- severity: medium
-- SIG-LEFT-UNFINISHED: the conversation ended with its task unfinished. Either the user's
-- last message leaves to come back later ("I'll get back to you once I have the details",
-- `is_deferral`): what the agent needed was not there, and nothing was done; or the
-- session ended while the agent was at work: its last turn a tool call or result it never
-- reported on (the session was cut off, or the agent went silent). A handoff
-- (`is_handoff_tool`) ends a conversation on purpose, and calls that change nothing
-- (`is_noop_tool`) are no work; only chains that end with `session.end` count for the
-- second, since without it the agent may still be at work. SIG-ERROR-ENDING (off by
-- default) reports the endings on a failed call too.
-- Both look only at a chain's last eight events, where its ending is: a user who came
-- back, or an agent that reported its work, spoke after them.
WITH tail AS (
    SELECT chain_no, chain_id, agent, session, idx, id, ts, chain_len, type, content, tool_name
    FROM chain_events
    WHERE idx >= chain_len - 8
),
deferred AS (
    SELECT d.chain_id, d.agent, d.session, d.idx, d.id, d.ts, d.chain_len,
        'Left unfinished: the user left to come back later: ''' || clip(d.content, 80) || '''' AS summary,
        json_object('userMessage', substr(d.content, 1, 300)) AS evidence
    FROM tail d
    -- A CASE, so that the patterns run on the user's messages only.
    WHERE CASE WHEN d.type = 'msg.in' THEN coalesce(is_deferral(d.content), false) ELSE false END
        AND NOT EXISTS (SELECT 1 FROM tail u WHERE u.chain_no = d.chain_no AND u.type = 'msg.in' AND u.idx > d.idx)
),
cut_off AS (
    SELECT c.chain_id, c.agent, c.session, c.idx, c.id, c.ts, c.chain_len,
        'Left unfinished: the session ended while the agent was at work, after ' || coalesce(c.tool_name, '?') AS summary,
        json_object('toolName', c.tool_name, 'lastEvent', c.type) AS evidence
    FROM chain_endings t
    JOIN tail c ON c.chain_no = t.chain_no AND c.idx = t.last_idx
    WHERE t.end_type = 'session.end' AND c.type IN ('tool.call', 'tool.result')
        AND NOT coalesce(is_handoff_tool(c.tool_name), false)
)
SELECT
    'SIG-LEFT-UNFINISHED' AS signal, 'medium' AS severity, chain_id, agent, session,
    idx AS start_idx, chain_len - 1 AS end_idx, id AS start_event_id, id AS end_event_id, ts AS occurred_at,
    summary, evidence, CAST(NULL AS VARCHAR) AS fingerprint
FROM (SELECT * FROM deferred UNION ALL SELECT * FROM cut_off)
