-- signal: SIG-UNGROUNDED-VALUE
-- severity: medium
-- SIG-UNGROUNDED-VALUE: a value from nowhere. An id, amount or date passed to a call that
-- changed state, that neither the user nor any tool gave earlier in the session; or a
-- figure the agent states (an amount, an id) that no user message, tool result or tool
-- argument of the session holds. A sum or difference of two known figures is grounded
-- (a refund of $184.19 for $54.20 and $129.99), as is a date the user named in words;
-- rates ("$50 per bag") come from the agent's instructions and are not checked
-- (`ungrounded_value`).
WITH marked AS (
    SELECT *,
        ungrounded_value(
            key_hash(agent, session), type, content, tool_params, tool_result, tool_error,
            type = 'tool.call' AND coalesce(is_consequential_tool(tool_name), false) AND NOT coalesce(next_failed, true)
        ) OVER (PARTITION BY chain_shard ORDER BY chain_no, idx) AS value
    FROM chain_events
)
SELECT
    'SIG-UNGROUNDED-VALUE' AS signal, 'medium' AS severity, chain_id, agent, session,
    idx AS start_idx, idx AS end_idx, id AS start_event_id, id AS end_event_id, ts AS occurred_at,
    CASE WHEN type = 'tool.call'
        THEN 'Value from nowhere: ' || coalesce(tool_name, '?') || ' was called with ' || value || ', which neither the user nor a tool gave'
        ELSE 'Value from nowhere: the agent stated ' || value || ', which no message, tool result or argument of the session holds'
    END AS summary,
    json_object('value', value, 'toolName', tool_name, 'params', tool_params, 'agentMessage', substr(content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM marked
WHERE value IS NOT NULL
