-- SIG-DISSATISFIED (spec §7.4): the chain's last user message, among its last three
-- events, is dissatisfied (and not satisfied), and no later agent message resolves it.
WITH last_in AS (
    SELECT chain_id, max(idx) AS idx FROM chain_events WHERE type = 'msg.in' GROUP BY chain_id
),
candidates AS (
    SELECT e.*, c.n_events, c.last_event_id
    FROM chain_events e
    JOIN last_in l ON e.chain_id = l.chain_id AND e.idx = l.idx
    JOIN chains c ON c.chain_id = e.chain_id
    WHERE is_dissatisfaction(e.content) AND NOT coalesce(is_satisfaction(e.content), false)
        AND e.idx >= c.n_events - 3
),
resolved AS (
    SELECT DISTINCT r.chain_id
    FROM chain_events r JOIN candidates d ON r.chain_id = d.chain_id
    WHERE r.type = 'msg.out' AND r.idx > d.idx AND is_resolution(r.content)
)
SELECT
    'SIG-DISSATISFIED' AS signal, 'high' AS severity, chain_id, agent, session,
    idx AS start_idx, n_events - 1 AS end_idx, id AS start_event_id, last_event_id AS end_event_id, ts AS occurred_at,
    'Session ended with user dissatisfaction: ''' || substr(content, 1, 80) || '''' AS summary,
    json_object('userMessage', content) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM candidates
WHERE chain_id NOT IN (SELECT chain_id FROM resolved)
