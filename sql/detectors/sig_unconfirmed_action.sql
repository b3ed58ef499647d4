-- signal: SIG-UNCONFIRMED-ACTION
-- severity: high
-- SIG-UNCONFIRMED-ACTION: a tool call that changes state (`is_consequential_tool`: create,
-- update, modify, cancel, delete, book, pay, transfer, send …, never a read such as get
-- or search, nor a handoff; `toolPatterns.consequential` in the config) that the user did
-- not agree to: nothing confirmed ("yes", "go ahead", "ja, mach das") since the agent last
-- spoke (or since the chain began, when it never did); an agent message that only
-- acknowledges a confirmation ("I will proceed now, one moment") asks nothing and keeps
-- it. A consent covers the action agreed to, once: a second call of the same tool in the
-- same turn, or any such call after one failed (a retry with other parameters, another
-- action), was agreed to by nobody.
-- Positions are numbered across chains (chain_no · 2³² + idx), so that one running
-- maximum over all chains, in chain order, finds the agent's last message, the user's
-- last confirmation and the last failed action before each event without a window
-- partition per chain.
WITH acting AS (
    SELECT chain_no FROM chain_events WHERE type = 'tool.call' AND is_consequential_tool(tool_name) GROUP BY chain_no
),
-- The events of the chains that change state (most change nothing). Not filtered by type
-- here: a filter would run before the join and copy the texts of every chain.
positioned AS (
    SELECT c.*,
        CAST(c.chain_no AS BIGINT) * 4294967296 + c.idx AS pos,
        c.type = 'msg.out' AND c.prev_type = 'msg.in' AND coalesce(is_confirmation(c.prev_content), false)
            AND NOT coalesce(is_question(c.content), false) AS acknowledges
    FROM acting a JOIN chain_events c ON c.chain_no = a.chain_no
),
marked AS (
    SELECT *,
        max(CASE WHEN type = 'msg.out' AND NOT acknowledges THEN pos END) OVER w AS agent_spoke_at,
        max(CASE WHEN type = 'msg.in' AND is_confirmation(content) THEN pos END) OVER w AS user_confirmed_at,
        max(CASE WHEN type = 'tool.call' AND next_failed AND is_consequential_tool(tool_name) THEN pos END) OVER w AS action_failed_at
    FROM positioned
    WINDOW w AS (ORDER BY chain_no, idx ROWS UNBOUNDED PRECEDING)
),
actions AS (
    SELECT *,
        -- Where the turn began: the agent's last message in this chain, or the chain's start.
        greatest(coalesce(agent_spoke_at, -1), pos - idx) AS turn_at,
        lag(pos) OVER (PARTITION BY chain_no, tool_name ORDER BY idx) AS same_action_at
    FROM marked
    WHERE type = 'tool.call' AND is_consequential_tool(tool_name)
),
unconfirmed AS (
    SELECT *,
        CASE
            WHEN coalesce(user_confirmed_at, -1) < turn_at THEN 'changed state before the user agreed'
            WHEN action_failed_at < pos AND action_failed_at >= turn_at THEN 'retried a failed action the user had not agreed to'
            WHEN same_action_at >= turn_at THEN 'repeated an action the user had agreed to once'
        END AS why
    FROM actions
)
SELECT
    'SIG-UNCONFIRMED-ACTION' AS signal, 'high' AS severity, u.chain_id, u.agent, u.session,
    coalesce(p.idx, u.idx) AS start_idx, u.idx AS end_idx, coalesce(p.id, u.id) AS start_event_id, u.id AS end_event_id,
    u.ts AS occurred_at,
    'Action without user confirmation: ' || coalesce(u.tool_name, '?') || ' ' || u.why AS summary,
    json_object('toolName', u.tool_name, 'params', u.tool_params, 'agentMessage', substr(p.content, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM unconfirmed u
LEFT JOIN chain_events p ON p.chain_no = u.chain_no AND p.idx = u.agent_spoke_at - (u.pos - u.idx)
WHERE u.why IS NOT NULL
