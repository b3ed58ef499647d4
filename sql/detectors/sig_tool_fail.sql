-- signal: SIG-TOOL-FAIL
-- severity: low
-- enabled: no
-- SIG-TOOL-FAIL (spec §7.2): a tool call fails, the agent answers, and the session never
-- recovers: no later call of the same tool succeeds, no call succeeds before the agent's
-- answer, and the agent's first attempt after its answer (often after asking the user for
-- other details) fails too. The spec looks for a recovery only before the answer; an agent
-- that asks the user and then succeeds has recovered (`unrecovered_failure` scans each
-- session). Off by default: on the development set it does not separate failed sessions
-- from successful ones (README, Detection quality). A lookup that finds nothing
-- (a read-only tool, `is_read_tool`, answering "not found", `is_not_found`) is normal
-- service unless the same lookup misses again. A call that changes nothing (`think`, an
-- echo: `is_noop_tool`) is no attempt at all, so it recovers nothing.
WITH attempts AS (
    SELECT *,
        unrecovered_failure(
            key_hash(agent, session),
            CASE WHEN type = 'tool.call' AND is_noop_tool(tool_name) THEN 'tool.noop' ELSE type END,
            tool_name, tool_params, next_type, next_failed,
            coalesce(is_read_tool(tool_name) AND is_not_found(next_tool_error), false)
        ) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx) AS unrecovered
    FROM chain_events
)
SELECT
    'SIG-TOOL-FAIL' AS signal, 'low' AS severity, chain_id, agent, session,
    idx AS start_idx, idx + 1 AS end_idx, id AS start_event_id, next_id AS end_event_id, ts AS occurred_at,
    'Unrecovered tool failure: ' || coalesce(tool_name, '?') || ' — ' || clip(coalesce(next_tool_error, ''), 100) AS summary,
    json_object('toolName', tool_name, 'params', tool_params, 'error', next_tool_error) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM attempts
WHERE unrecovered
