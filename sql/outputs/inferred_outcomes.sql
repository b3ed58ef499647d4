-- Outcomes inferred from what the user says next, as a reviewer reads a conversation,
-- for sessions without a known outcome (`--outcomes inferred`).
--
-- An episode is a user's message and the agent's work until the user's next message,
-- whose words (per the chosen language packs) say how the episode went: a correction,
-- complaint or flat "no" means `rework`; leaving to come back later, or writing again
-- before the agent answered at all, means `partial`; thanks, approval or a new request
-- means `success`; anything else, or no next message, `unknown`. `evidence_event_id` is
-- the message that tells.
CREATE OR REPLACE VIEW inferred_outcomes AS
WITH turns AS (
    SELECT session, id, type, content,
        sum(CASE WHEN type = 'msg.in' THEN 1 ELSE 0 END) OVER (PARTITION BY session ORDER BY ts, stream_seq ROWS UNBOUNDED PRECEDING) AS episode
    FROM events
    WHERE type IN ('msg.in', 'msg.out')
),
episodes AS (
    SELECT session, episode,
        max(CASE WHEN type = 'msg.in' THEN id END) AS opening_id,
        max(CASE WHEN type = 'msg.in' THEN content END) AS opening,
        count(*) FILTER (WHERE type = 'msg.out') AS answers
    FROM turns
    WHERE episode > 0
    GROUP BY session, episode
),
next AS (
    SELECT e.session, e.episode, e.answers, n.opening_id AS next_id, n.opening AS next_text
    FROM episodes e LEFT JOIN episodes n ON n.session = e.session AND n.episode = e.episode + 1
)
SELECT session, episode,
    CASE
        WHEN next_id IS NULL THEN 'unknown'
        WHEN is_correction(next_text) OR is_dissatisfaction(next_text) OR is_short_negative(next_text) THEN 'rework'
        WHEN is_deferral(next_text) OR answers = 0 THEN 'partial'
        WHEN is_satisfaction(next_text) OR is_closing(next_text) OR is_request(next_text) THEN 'success'
        ELSE 'unknown'
    END AS outcome,
    next_id AS evidence_event_id
FROM next;

-- Per session: `failure` when an episode needed rework or was left partial, `success`
-- when one succeeded and none failed; sessions where nothing tells have no row.
CREATE OR REPLACE VIEW inferred_session_outcomes AS
SELECT session,
    CASE WHEN bool_or(outcome IN ('rework', 'partial')) THEN 'failure' ELSE 'success' END AS outcome
FROM inferred_outcomes
WHERE outcome <> 'unknown'
GROUP BY session;
