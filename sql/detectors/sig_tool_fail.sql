-- SIG-TOOL-FAIL (spec §7.2): a tool call fails and the agent answers without a successful
-- recovery attempt (another tool, or the same tool with clearly different parameters)
-- between the failure and its answer.
WITH failed AS (
    SELECT * FROM tool_attempts WHERE failed
),
-- The agent's first message after each failure.
answered AS (
    SELECT f.chain_no, f.call_idx, min(o.idx) AS answer_idx
    FROM failed f
    JOIN chain_events o ON o.chain_no = f.chain_no AND o.idx > f.result_idx
    WHERE o.type = 'msg.out'
    GROUP BY f.chain_no, f.call_idx
),
recovered AS (
    SELECT DISTINCT f.chain_no, f.call_idx
    FROM failed f
    JOIN answered a ON a.chain_no = f.chain_no AND a.call_idx = f.call_idx
    JOIN tool_attempts r ON r.chain_no = f.chain_no AND r.call_idx > f.result_idx AND r.call_idx < a.answer_idx
    WHERE NOT coalesce(r.failed, false)
        AND ((r.tool_name IS DISTINCT FROM f.tool_name)
            OR param_similarity(coalesce(r.tool_params, 'null'), coalesce(f.tool_params, 'null')) < 0.5)
)
SELECT
    'SIG-TOOL-FAIL' AS signal, 'low' AS severity, f.chain_id, f.agent, f.session,
    f.call_idx AS start_idx, f.result_idx AS end_idx, f.call_id AS start_event_id, f.result_id AS end_event_id, f.ts AS occurred_at,
    'Unrecovered tool failure: ' || coalesce(f.tool_name, '?') || ' — ' || substr(coalesce(f.error, ''), 1, 100) AS summary,
    json_object('toolName', f.tool_name, 'params', f.tool_params, 'error', f.error) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM failed f
JOIN answered a ON a.chain_no = f.chain_no AND a.call_idx = f.call_idx
LEFT JOIN recovered r ON r.chain_no = f.chain_no AND r.call_idx = f.call_idx
WHERE r.chain_no IS NULL
