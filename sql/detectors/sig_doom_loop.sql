-- signal: SIG-DOOM-LOOP
-- severity: high
-- SIG-DOOM-LOOP (spec §7.3): three or more consecutive failing attempts of the same tool
-- with parameters over 0.8 similar to the first; five or more are critical.
WITH attempts AS (
    SELECT *, doom_loop_id(chain_no, tool_name, tool_params, failed, 3, 0.8) OVER (PARTITION BY chain_shard ORDER BY chain_no, call_idx) AS loop_id
    FROM tool_attempts
),
loops AS (
    SELECT chain_id, agent, session, loop_id, count(*) AS loop_size,
        min(call_idx) AS start_idx, max(result_idx) AS end_idx,
        first_value(call_id ORDER BY call_idx) AS start_event_id,
        last_value(result_id ORDER BY call_idx) AS end_event_id,
        min(ts) AS occurred_at,
        first_value(tool_name ORDER BY call_idx) AS tool_name,
        first_value(tool_params ORDER BY call_idx) AS tool_params,
        first_value(error ORDER BY call_idx) AS first_error
    FROM attempts
    WHERE loop_id IS NOT NULL
    GROUP BY chain_no, chain_id, agent, session, loop_id
)
SELECT
    'SIG-DOOM-LOOP' AS signal, CASE WHEN loop_size >= 5 THEN 'critical' ELSE 'high' END AS severity,
    chain_id, agent, session, start_idx, end_idx, start_event_id, end_event_id, occurred_at,
    'Doom loop: ' || CAST(loop_size AS VARCHAR) || '× ' || coalesce(tool_name, '?') || ' with similar params, all failing' AS summary,
    json_object('toolName', tool_name, 'loopSize', loop_size, 'firstError', first_error, 'params', tool_params) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM loops
