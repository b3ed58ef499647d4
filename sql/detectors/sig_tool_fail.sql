-- signal: SIG-TOOL-FAIL
-- severity: low
-- SIG-TOOL-FAIL (spec §7.2): a tool call fails and the agent answers without a successful
-- recovery attempt (another tool, or the same tool with clearly different parameters)
-- between the failure and its answer. `unrecovered_failure` scans each chain from every
-- failed attempt to the agent's next message. A call that changes nothing (`think`, an
-- echo: `is_noop_tool`) is no attempt at all, so it recovers nothing.
WITH attempts AS (
    SELECT *,
        unrecovered_failure(
            chain_no,
            CASE WHEN type = 'tool.call' AND is_noop_tool(tool_name) THEN 'tool.noop' ELSE type END,
            tool_name, tool_params, next_type, next_failed
        ) OVER (ORDER BY chain_no, idx) AS unrecovered
    FROM chain_events
)
SELECT
    'SIG-TOOL-FAIL' AS signal, 'low' AS severity, chain_id, agent, session,
    idx AS start_idx, idx + 1 AS end_idx, id AS start_event_id, next_id AS end_event_id, ts AS occurred_at,
    'Unrecovered tool failure: ' || coalesce(tool_name, '?') || ' — ' || substr(coalesce(next_tool_error, ''), 1, 100) AS summary,
    json_object('toolName', tool_name, 'params', tool_params, 'error', next_tool_error) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM attempts
WHERE unrecovered
