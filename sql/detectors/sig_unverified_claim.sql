-- SIG-UNVERIFIED-CLAIM (spec §7.7, off by default): the agent states a system fact (disk
-- usage, service state, file existence, counts) without any tool call since the user's
-- last message. Opinions and code blocks do not count.
WITH claims AS (
    SELECT * FROM chain_events WHERE type = 'msg.out' AND is_system_state_claim(content)
),
-- With each claim, the last user message and the last tool call before it.
checked AS (
    SELECT c.chain_id, c.chain_no, c.idx, c.agent, c.session, c.id, c.content,
        max(CASE WHEN e.type = 'msg.in' THEN e.idx END) AS last_in,
        max(CASE WHEN e.type = 'tool.call' THEN e.idx END) AS last_call
    FROM claims c LEFT JOIN chain_events e ON e.chain_no = c.chain_no AND e.idx < c.idx
    GROUP BY c.chain_id, c.chain_no, c.idx, c.agent, c.session, c.id, c.content
)
SELECT
    'SIG-UNVERIFIED-CLAIM' AS signal, 'medium' AS severity, c.chain_id, c.agent, c.session,
    s.idx AS start_idx, c.idx AS end_idx, s.id AS start_event_id, c.id AS end_event_id, s.ts AS occurred_at,
    'Agent made factual claim without tool verification: ''' || substr(c.content, 1, 100) || '''' AS summary,
    json_object('agentClaim', substr(c.content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM checked c
JOIN chain_events s ON s.chain_no = c.chain_no AND s.idx = greatest(c.idx - 2, 0)
WHERE c.last_call IS NULL OR (c.last_in IS NOT NULL AND c.last_call < c.last_in)
