-- signal: SIG-UNCONFIRMED-ATTEMPT
-- severity: low
-- SIG-UNCONFIRMED-ATTEMPT: a call that would have changed state, made before the user
-- agreed, that failed (`consequential_calls` in sql/chain_views.sql). It changed nothing,
-- so it is no SIG-UNCONFIRMED-ACTION, but an agent that acts before asking shows it here.
SELECT
    'SIG-UNCONFIRMED-ATTEMPT' AS signal, 'low' AS severity, chain_id, agent, session,
    start_idx, idx + 1 AS end_idx, start_event_id, id AS end_event_id, ts AS occurred_at,
    'Attempted without user confirmation: ' || coalesce(tool_name, '?') || ' — ' || clip(coalesce(next_tool_error, ''), 100) AS summary,
    json_object('toolName', tool_name, 'params', tool_params, 'error', next_tool_error, 'agentMessage', substr(agent_message, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM consequential_calls
WHERE failed AND why = 'before the user agreed'
