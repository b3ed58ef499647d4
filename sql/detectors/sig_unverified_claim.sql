-- signal: SIG-UNVERIFIED-CLAIM
-- severity: medium
-- enabled: no
-- SIG-UNVERIFIED-CLAIM (spec §7.7, off by default): the agent states a system fact (disk
-- usage, service state, file existence, counts) without any tool call since the user's
-- last message. Opinions and code blocks do not count. The finding starts two events
-- before the claim, or at the chain's start.
WITH marked AS (
    SELECT *,
        tool_call_since_user(chain_no, type) OVER w AS verified,
        lag(id, 2) OVER w AS id_2_back, lag(ts, 2) OVER w AS ts_2_back
    FROM chain_events
    WINDOW w AS (PARTITION BY chain_shard ORDER BY chain_no, idx)
)
SELECT
    'SIG-UNVERIFIED-CLAIM' AS signal, 'medium' AS severity, chain_id, agent, session,
    greatest(idx - 2, 0) AS start_idx, idx AS end_idx,
    CASE WHEN idx >= 2 THEN id_2_back ELSE coalesce(prev_id, id) END AS start_event_id, id AS end_event_id,
    CASE WHEN idx >= 2 THEN ts_2_back ELSE coalesce(prev_ts, ts) END AS occurred_at,
    'Agent made factual claim without tool verification: ''' || clip(content, 100) || '''' AS summary,
    json_object('agentClaim', substr(content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM marked
WHERE type = 'msg.out' AND NOT verified AND is_system_state_claim(content)
