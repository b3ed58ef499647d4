-- signal: SIG-DISSATISFIED
-- severity: high
-- SIG-DISSATISFIED (spec §7.4): the chain's last user message, among its last three
-- events, is dissatisfied (and not satisfied), and no later agent message resolves it.
WITH candidates AS (
    SELECT * FROM chain_events
    WHERE type = 'msg.in' AND idx >= chain_len - 3
        AND is_dissatisfaction(content) AND NOT coalesce(is_satisfaction(content), false)
),
-- What follows each candidate (at most two events, the chain's last ones).
later AS (
    SELECT d.chain_no, d.idx,
        bool_or(a.type = 'msg.in') AS user_spoke_again,
        bool_or(a.type = 'msg.out' AND coalesce(is_resolution(a.content), false)) AS resolved,
        max(CASE WHEN a.idx = a.chain_len - 1 THEN a.id END) AS last_id
    FROM candidates d
    JOIN chain_events a ON a.chain_no = d.chain_no AND a.idx > d.idx
    WHERE a.idx >= a.chain_len - 2
    GROUP BY d.chain_no, d.idx
)
SELECT
    'SIG-DISSATISFIED' AS signal, 'high' AS severity, d.chain_id, d.agent, d.session,
    d.idx AS start_idx, d.chain_len - 1 AS end_idx, d.id AS start_event_id, coalesce(l.last_id, d.id) AS end_event_id,
    d.ts AS occurred_at,
    'Session ended with user dissatisfaction: ''' || clip(d.content, 80) || '''' AS summary,
    json_object('userMessage', d.content) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM candidates d
LEFT JOIN later l ON l.chain_no = d.chain_no AND l.idx = d.idx
WHERE NOT coalesce(l.user_spoke_again, false) AND NOT coalesce(l.resolved, false)
