-- signal: SIG-HALLUCINATION
-- severity: critical
-- SIG-HALLUCINATION (spec §7.6): the agent claims completion ("Done ✅", "erledigt") while
-- the last tool result before that message failed. The failure must be in the same turn
-- (after the user's last message): a claim that answers a new user message is not about
-- an older failure. `is_completion_claim` leaves out questions and messages that own up
-- to a failure ("X worked. However, I could not update Y").
WITH claims AS (
    SELECT * FROM chain_events WHERE type = 'msg.out' AND is_completion_claim(content)
),
-- With each claim, the last tool result and the last user message before it.
last_results AS (
    SELECT c.chain_id, c.chain_no, c.idx, c.agent, c.session, c.id, c.content,
        max(CASE WHEN r.type = 'tool.result' THEN r.idx END) AS result_idx,
        max(CASE WHEN r.type = 'msg.in' THEN r.idx END) AS user_idx
    FROM claims c JOIN chain_events r ON r.chain_no = c.chain_no AND r.type IN ('tool.result', 'msg.in') AND r.idx < c.idx
    GROUP BY c.chain_id, c.chain_no, c.idx, c.agent, c.session, c.id, c.content
)
SELECT
    'SIG-HALLUCINATION' AS signal, 'critical' AS severity, c.chain_id, c.agent, c.session,
    c.result_idx - 1 AS start_idx, c.idx AS end_idx,
    coalesce(r.prev_id, r.id) AS start_event_id, c.id AS end_event_id, coalesce(r.prev_ts, r.ts) AS occurred_at,
    'Agent claimed completion despite tool failure: ''' || clip(c.content, 100) || '''' AS summary,
    json_object('agentClaim', substr(c.content, 1, 300), 'precedingError', substr(r.tool_error, 1, 200), 'toolName', r.tool_name) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM last_results c
JOIN chain_events r ON r.chain_no = c.chain_no AND r.idx = c.result_idx
WHERE r.failed AND c.result_idx > coalesce(c.user_idx, -1)
