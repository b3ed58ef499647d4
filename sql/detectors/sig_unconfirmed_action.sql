-- signal: SIG-UNCONFIRMED-ACTION
-- severity: high
-- SIG-UNCONFIRMED-ACTION: a call that changed state (it did not fail) that the user did
-- not agree to, or the same call made again after it took effect (`consequential_calls` in
-- sql/chain_views.sql says what agreeing is). A call that failed changed nothing: it is
-- SIG-UNCONFIRMED-ATTEMPT's. The summary ends with the call's parameters: one session
-- often makes the same kind of call several times (four cancellations), each a finding of
-- its own.
SELECT
    'SIG-UNCONFIRMED-ACTION' AS signal, 'high' AS severity, chain_id, agent, session,
    start_idx, idx AS end_idx, start_event_id, id AS end_event_id, ts AS occurred_at,
    'Action without user confirmation: ' || coalesce(tool_name, '?') || ' changed state ' || why
        || coalesce(': ' || clip(tool_params, 100), '') AS summary,
    json_object('toolName', tool_name, 'params', tool_params, 'agentMessage', substr(agent_message, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM consequential_calls
WHERE why IS NOT NULL AND NOT failed
