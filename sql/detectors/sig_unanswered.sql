-- SIG-UNANSWERED: the session ended on a user message the agent never answered: a
-- question, a request or a confirmation ("yes, please go ahead"), not a goodbye, a
-- thank-you or a dismissal ("forget it", SIG-DISSATISFIED's). Only chains that end with
-- `session.end` count: without it, the agent may still be working on the answer.
WITH ended AS (
    SELECT chain_no FROM chain_events WHERE type = 'session.end' AND idx = chain_len - 1
),
-- The last message or tool event among the chain's last eight, calls that change nothing
-- left out (narrow rows: most chains end, and their tails are most of a short chain).
last_turn AS (
    SELECT c.chain_no, max(c.idx) AS last_idx
    FROM ended e
    JOIN (
        SELECT chain_no, idx FROM chain_events
        WHERE idx >= chain_len - 8 AND type IN ('msg.in', 'msg.out', 'tool.call', 'tool.result', 'run.error')
            AND NOT (type IN ('tool.call', 'tool.result') AND coalesce(is_noop_tool(tool_name), false))
    ) c ON c.chain_no = e.chain_no
    GROUP BY c.chain_no
)
SELECT
    'SIG-UNANSWERED' AS signal, 'medium' AS severity, c.chain_id, c.agent, c.session,
    c.idx AS start_idx, c.chain_len - 1 AS end_idx, c.id AS start_event_id, c.id AS end_event_id, c.ts AS occurred_at,
    'Session ended without an answer to: ''' || substr(c.content, 1, 80) || '''' AS summary,
    json_object('userMessage', substr(c.content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM last_turn t
JOIN chain_events c ON c.chain_no = t.chain_no AND c.idx = t.last_idx
WHERE c.type = 'msg.in'
    AND (coalesce(is_question(c.content), false) OR coalesce(is_request(c.content), false) OR coalesce(is_confirmation(c.content), false))
    AND NOT coalesce(is_closing(c.content), false)
    AND NOT coalesce(is_satisfaction(c.content), false)
    AND NOT coalesce(is_dissatisfaction(c.content), false)
