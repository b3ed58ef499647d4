-- SIG-REPEAT-FAIL (spec §7.5): the same failure (tool, stable params, normalized error)
-- in another session. Sessions are counted in the order of their first such failure;
-- the second is high, the third and later critical. Each session is reported once, at
-- its first occurrence.
WITH fails AS (
    SELECT *, fail_fingerprint(tool_name, tool_params, coalesce(error, 'error')) AS fingerprint
    FROM tool_attempts
    WHERE failed
),
per_session AS (
    SELECT fingerprint, session,
        min(ts) AS first_ts,
        first_value(chain_id ORDER BY ts, call_idx) AS chain_id,
        first_value(agent ORDER BY ts, call_idx) AS agent,
        first_value(call_idx ORDER BY ts, call_idx) AS start_idx,
        first_value(call_id ORDER BY ts, call_idx) AS start_event_id,
        first_value(result_id ORDER BY ts, call_idx) AS end_event_id,
        first_value(tool_name ORDER BY ts, call_idx) AS tool_name,
        first_value(error ORDER BY ts, call_idx) AS error
    FROM fails
    GROUP BY fingerprint, session
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY fingerprint ORDER BY first_ts, session) AS session_count
    FROM per_session
)
SELECT
    'SIG-REPEAT-FAIL' AS signal, CASE WHEN session_count >= 3 THEN 'critical' ELSE 'high' END AS severity,
    chain_id, agent, session, start_idx, start_idx + 1 AS end_idx, start_event_id, end_event_id, first_ts AS occurred_at,
    'Same failure repeated across ' || CAST(session_count AS VARCHAR) || ' sessions: ' || coalesce(tool_name, '?') || ' — ' || substr(coalesce(error, ''), 1, 80) AS summary,
    json_object('toolName', tool_name, 'fingerprint', fingerprint, 'count', session_count) AS evidence,
    fingerprint
FROM ranked
WHERE session_count >= 2
