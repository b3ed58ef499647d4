-- signal: SIG-ERROR-ENDING
-- severity: high
-- enabled: no
-- SIG-ERROR-ENDING: the chain ends on a failure the agent never answered: a tool call
-- that failed (followed by nothing, or only by calls that change nothing, such as a
-- `think` tool), or a run error. Spec §7.2 leaves a failure with no answer after it out of
-- SIG-TOOL-FAIL; this is that case, seen from the end of the conversation. Only chains
-- that end (`session.end`, `run.end`, `run.error`) count: without an end, the agent may
-- still be at work.
WITH last_turn AS (
    SELECT chain_no, last_idx FROM chain_endings
)
SELECT
    'SIG-ERROR-ENDING' AS signal, 'high' AS severity, c.chain_id, c.agent, c.session,
    CASE WHEN c.prev_type = 'tool.call' THEN c.idx - 1 ELSE c.idx END AS start_idx, c.chain_len - 1 AS end_idx,
    CASE WHEN c.prev_type = 'tool.call' THEN c.prev_id ELSE c.id END AS start_event_id, c.id AS end_event_id,
    CASE WHEN c.prev_type = 'tool.call' THEN c.prev_ts ELSE c.ts END AS occurred_at,
    'Chain ended on an unanswered failure: ' || coalesce(c.tool_name, c.type) || ' — ' || clip(coalesce(c.tool_error, c.content, ''), 100) AS summary,
    json_object('toolName', c.tool_name, 'error', substr(coalesce(c.tool_error, c.content), 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM last_turn t
JOIN chain_events c ON c.chain_no = t.chain_no AND c.idx = t.last_idx
WHERE (c.type = 'tool.result' AND c.failed) OR c.type = 'run.error'
