-- SIG-TOOL-FAIL (spec §7.2): a tool call fails and the agent answers without a successful
-- recovery attempt (another tool, or the same tool with clearly different parameters).
WITH scanned AS (
    SELECT *,
        unrecovered_failure(type, tool_name, tool_params, failed) OVER w AS unrecovered,
        lead(id) OVER w AS result_id, lead(tool_error) OVER w AS result_error
    FROM chain_events
    WINDOW w AS (PARTITION BY chain_id ORDER BY idx)
)
SELECT
    'SIG-TOOL-FAIL' AS signal, 'low' AS severity, chain_id, agent, session,
    idx AS start_idx, idx + 1 AS end_idx, id AS start_event_id, result_id AS end_event_id, ts AS occurred_at,
    'Unrecovered tool failure: ' || coalesce(tool_name, '?') || ' — ' || substr(coalesce(result_error, ''), 1, 100) AS summary,
    json_object('toolName', tool_name, 'params', tool_params, 'error', result_error) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM scanned
WHERE unrecovered
