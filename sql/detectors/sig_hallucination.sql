-- SIG-HALLUCINATION (spec §7.6): the agent claims completion ("Done ✅", "erledigt") while
-- the last tool result before that message failed.
WITH scanned AS (
    SELECT *,
        max(CASE WHEN type = 'tool.result' THEN idx END)
            OVER (PARTITION BY chain_id ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS last_result_idx
    FROM chain_events
),
claims AS (
    SELECT * FROM scanned WHERE type = 'msg.out' AND last_result_idx IS NOT NULL AND is_completion_claim(content)
)
SELECT
    'SIG-HALLUCINATION' AS signal, 'critical' AS severity, c.chain_id, c.agent, c.session,
    c.last_result_idx - 1 AS start_idx, c.idx AS end_idx,
    coalesce(call.id, r.id) AS start_event_id, c.id AS end_event_id, coalesce(call.ts, r.ts) AS occurred_at,
    'Agent claimed completion despite tool failure: ''' || substr(c.content, 1, 100) || '''' AS summary,
    json_object('agentClaim', substr(c.content, 1, 300), 'precedingError', substr(r.tool_error, 1, 200), 'toolName', r.tool_name) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM claims c
JOIN chain_events r ON r.chain_id = c.chain_id AND r.idx = c.last_result_idx
LEFT JOIN chain_events call ON call.chain_id = c.chain_id AND call.idx = c.last_result_idx - 1
WHERE r.failed
