-- signal: SIG-UNANSWERED
-- severity: medium
-- enabled: no
-- SIG-UNANSWERED: the session ended on a user message the agent never answered: a
-- question, a request or a confirmation ("yes, please go ahead"), not a goodbye, a
-- thank-you or a dismissal ("forget it", SIG-DISSATISFIED's). Only chains that end with
-- `session.end` count: without it, the agent may still be working on the answer.
-- The text tests run on the joined rows alone: `text` is the last turn's content, named
-- through both sides of the join, so the optimizer cannot move the tests below it, where
-- they would run on every user message of every chain.
WITH last_turn AS (
    SELECT c.chain_id, c.agent, c.session, c.idx, c.chain_len, c.id, c.ts, c.content,
        CASE WHEN c.idx = t.last_idx THEN c.content END AS text
    FROM chain_endings t
    JOIN chain_events c ON c.chain_no = t.chain_no AND c.idx = t.last_idx
    WHERE t.end_type = 'session.end' AND c.type = 'msg.in'
)
SELECT
    'SIG-UNANSWERED' AS signal, 'medium' AS severity, chain_id, agent, session,
    idx AS start_idx, chain_len - 1 AS end_idx, id AS start_event_id, id AS end_event_id, ts AS occurred_at,
    'Session ended without an answer to: ''' || clip(content, 80) || '''' AS summary,
    json_object('userMessage', substr(content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM last_turn
WHERE (coalesce(is_question(text), false) OR coalesce(is_request(text), false) OR coalesce(is_confirmation(text), false))
    AND NOT coalesce(is_closing(text), false)
    AND NOT coalesce(is_satisfaction(text), false)
    AND NOT coalesce(is_dissatisfaction(text), false)
