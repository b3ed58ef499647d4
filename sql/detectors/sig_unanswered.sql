-- signal: SIG-UNANSWERED
-- severity: medium
-- enabled: no
-- SIG-UNANSWERED: the session ended on a user message the agent never answered: a
-- question, a request or a confirmation ("yes, please go ahead"), not a goodbye, a
-- thank-you or a dismissal ("forget it", SIG-DISSATISFIED's). Only chains that end with
-- `session.end` count: without it, the agent may still be working on the answer.
WITH last_turn AS (
    SELECT chain_no, last_idx FROM chain_endings WHERE end_type = 'session.end'
)
SELECT
    'SIG-UNANSWERED' AS signal, 'medium' AS severity, c.chain_id, c.agent, c.session,
    c.idx AS start_idx, c.chain_len - 1 AS end_idx, c.id AS start_event_id, c.id AS end_event_id, c.ts AS occurred_at,
    'Session ended without an answer to: ''' || clip(c.content, 80) || '''' AS summary,
    json_object('userMessage', substr(c.content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM last_turn t
JOIN chain_events c ON c.chain_no = t.chain_no AND c.idx = t.last_idx
WHERE c.type = 'msg.in'
    AND (coalesce(is_question(c.content), false) OR coalesce(is_request(c.content), false) OR coalesce(is_confirmation(c.content), false))
    AND NOT coalesce(is_closing(c.content), false)
    AND NOT coalesce(is_satisfaction(c.content), false)
    AND NOT coalesce(is_dissatisfaction(c.content), false)
