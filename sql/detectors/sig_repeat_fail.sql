-- SIG-REPEAT-FAIL (spec §7.5): the same failure (tool, stable params, normalized error)
-- in another session. Sessions are counted in the order of their first such failure,
-- over the whole lake history (`failure_history`: earlier runs); the second is high, the
-- third and later critical. Each session is reported once, at its first occurrence.
WITH combined AS (
    SELECT *, true AS is_new FROM failure_occurrences
    UNION ALL
    SELECT *, false AS is_new FROM failure_history
),
first_per_session AS (
    SELECT *, row_number() OVER (PARTITION BY fingerprint, session ORDER BY first_ts, is_new) AS nth
    FROM combined
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY fingerprint ORDER BY first_ts, session) AS session_count
    FROM first_per_session
    WHERE nth = 1
)
SELECT
    'SIG-REPEAT-FAIL' AS signal, CASE WHEN session_count >= 3 THEN 'critical' ELSE 'high' END AS severity,
    chain_id, agent, session, start_idx, start_idx + 1 AS end_idx, start_event_id, end_event_id, first_ts AS occurred_at,
    'Same failure repeated across ' || CAST(session_count AS VARCHAR) || ' sessions: ' || coalesce(tool_name, '?') || ' — ' || substr(coalesce(error, ''), 1, 80) AS summary,
    json_object('toolName', tool_name, 'fingerprint', fingerprint, 'count', session_count) AS evidence,
    fingerprint
FROM ranked
WHERE session_count >= 2 AND is_new
