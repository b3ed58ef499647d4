-- SIG-UNVERIFIED-CLAIM (spec §7.7, off by default): the agent states a system fact (disk
-- usage, service state, file existence, counts) without any tool call since the user's
-- last message. Opinions and code blocks do not count.
WITH scanned AS (
    SELECT *,
        max(CASE WHEN type = 'msg.in' THEN idx END) OVER before AS last_in,
        max(CASE WHEN type = 'tool.call' THEN idx END) OVER before AS last_call,
        lag(id, 2) OVER w AS id_2_before, lag(ts, 2) OVER w AS ts_2_before,
        first_value(id) OVER w AS first_id, first_value(ts) OVER w AS first_ts
    FROM chain_events
    WINDOW w AS (PARTITION BY chain_id ORDER BY idx),
        before AS (PARTITION BY chain_id ORDER BY idx ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
SELECT
    'SIG-UNVERIFIED-CLAIM' AS signal, 'medium' AS severity, chain_id, agent, session,
    greatest(idx - 2, 0) AS start_idx, idx AS end_idx,
    coalesce(id_2_before, first_id) AS start_event_id, id AS end_event_id, coalesce(ts_2_before, first_ts) AS occurred_at,
    'Agent made factual claim without tool verification: ''' || substr(content, 1, 100) || '''' AS summary,
    json_object('agentClaim', substr(content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM scanned
WHERE type = 'msg.out' AND is_system_state_claim(content)
    AND (last_call IS NULL OR (last_in IS NOT NULL AND last_call < last_in))
