-- SIG-DISSATISFIED (spec §7.4): the chain's last user message, among its last three
-- events, is dissatisfied (and not satisfied), and no later agent message resolves it.
WITH last_in AS (
    SELECT chain_no, max(idx) AS idx FROM chain_events WHERE type = 'msg.in' GROUP BY chain_no
),
candidates AS (
    SELECT e.*
    FROM chain_events e
    JOIN last_in l ON e.chain_no = l.chain_no AND e.idx = l.idx
    WHERE e.idx >= e.chain_len - 3
        AND is_dissatisfaction(e.content) AND NOT coalesce(is_satisfaction(e.content), false)
),
resolved AS (
    SELECT DISTINCT r.chain_no
    FROM chain_events r JOIN candidates d ON r.chain_no = d.chain_no
    WHERE r.type = 'msg.out' AND r.idx > d.idx AND is_resolution(r.content)
)
SELECT
    'SIG-DISSATISFIED' AS signal, 'high' AS severity, d.chain_id, d.agent, d.session,
    d.idx AS start_idx, d.chain_len - 1 AS end_idx, d.id AS start_event_id, last.id AS end_event_id, d.ts AS occurred_at,
    'Session ended with user dissatisfaction: ''' || substr(d.content, 1, 80) || '''' AS summary,
    json_object('userMessage', d.content) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM candidates d
JOIN chain_events last ON last.chain_no = d.chain_no AND last.idx = d.chain_len - 1
WHERE d.chain_no NOT IN (SELECT chain_no FROM resolved)
