-- signal: SIG-REPEAT-FAIL
-- severity: high
-- scope: lake
-- enabled: no
-- SIG-REPEAT-FAIL (spec §7.5): the same failure (tool, stable params, normalized error)
-- in another session. Sessions are counted in the order of their first such failure,
-- over the whole lake history (`failure_history`: earlier runs); the second is high, the
-- third and later critical. Each session is reported once, at its first occurrence.
-- Off by default: on the development set it does not separate failed sessions from
-- successful ones (README, Detection quality).
-- The sessions are ranked on the narrow key columns alone; a run's occurrences hold each
-- (fingerprint, session) once, so the details are joined back by that pair.
WITH combined AS (
    SELECT fingerprint, session, first_ts, true AS is_new, key_hash(fingerprint) % 32 AS shard FROM failure_occurrences
    UNION ALL
    SELECT fingerprint, session, first_ts, false AS is_new, key_hash(fingerprint) % 32 AS shard FROM failure_history
),
-- Numbered within each (fingerprint, session) and each fingerprint; shards of fingerprints
-- are worked on in parallel.
first_per_session AS (
    SELECT *, group_row_number(fingerprint, session) OVER (PARTITION BY shard ORDER BY fingerprint, session, first_ts, is_new) AS nth
    FROM combined
),
ranked AS (
    SELECT fingerprint, session, is_new,
        group_row_number(fingerprint) OVER (PARTITION BY shard ORDER BY fingerprint, first_ts, session) AS session_count
    FROM first_per_session
    WHERE nth = 1
)
SELECT
    'SIG-REPEAT-FAIL' AS signal, CASE WHEN r.session_count >= 3 THEN 'critical' ELSE 'high' END AS severity,
    o.chain_id, o.agent, o.session, o.start_idx, o.start_idx + 1 AS end_idx, o.start_event_id, o.end_event_id, o.first_ts AS occurred_at,
    'Same failure repeated across ' || CAST(r.session_count AS VARCHAR) || ' sessions: ' || coalesce(o.tool_name, '?') || ' — ' || clip(coalesce(o.error, ''), 80) AS summary,
    json_object('toolName', o.tool_name, 'fingerprint', o.fingerprint, 'count', r.session_count) AS evidence,
    o.fingerprint
FROM ranked r
JOIN failure_occurrences o ON (o.fingerprint IS NOT DISTINCT FROM r.fingerprint) AND (o.session IS NOT DISTINCT FROM r.session)
WHERE r.session_count >= 2 AND r.is_new
