-- signal: SIG-TERMS-CHANGED
-- severity: medium
-- SIG-TERMS-CHANGED: the user agreed to an action on terms that did not hold, because the
-- agent had not checked them before asking (`consequential_calls` in sql/chain_views.sql
-- says what agreeing is). Either the action was refused and the agent's next message
-- states sums of money the terms it last put to the user did not ("the total is actually
-- $305", "your gift card holds only $42"), or the action went through and the agent's
-- report says the user was charged a sum nobody had mentioned before ("$100 has been
-- charged to your card" for bags whose price was never given; `charges`, per the
-- language packs). A sum follows from those mentioned when it is one of them, the sum or
-- difference of two, or two to nine times one (`unquoted`: two bags at "$50 per bag"
-- are $100). A refusal answered without new sums (another date, a question) is none, and
-- so is a reply after another action of the same turn took effect (the user agreed to
-- two changes, one went through): its new sums are that action's outcome.
WITH agreed AS (
    SELECT chain_id, chain_no, agent, session, idx, tool_name, tool_params, next_tool_error, failed,
        start_idx, start_event_id, agent_message
    FROM consequential_calls
    WHERE why IS NULL
),
-- The first message after each agreed call and, when it is the agent's, the sums it
-- states: any, after a refusal; those charged, after an action that went through.
replies AS (
    SELECT a.chain_no, a.idx, min(m.idx) AS reply_idx, min(CASE WHEN m.type = 'msg.out' THEN m.idx END) AS agent_reply_idx
    FROM agreed a
    JOIN chain_events m ON m.chain_no = a.chain_no AND m.idx > a.idx AND m.type IN ('msg.in', 'msg.out')
    GROUP BY a.chain_no, a.idx
),
stated AS (
    SELECT a.*, m.idx AS reply_idx, m.id AS reply_id, m.ts AS reply_ts, m.content AS reply,
        CASE WHEN a.failed THEN amounts(m.content) ELSE charges(m.content) END AS sums
    FROM agreed a
    JOIN replies r ON r.chain_no = a.chain_no AND r.idx = a.idx AND r.reply_idx = r.agent_reply_idx
    JOIN chain_events m ON m.chain_no = r.chain_no AND m.idx = r.reply_idx
),
-- What the user was told before the call: the agent's last message with sums (the terms
-- of a refused call), and every message (what a charge may follow from). The call's own
-- columns are carried through (`first_value`: one row per call) so that `stated` is read
-- once: a CTE read twice is planned twice, with the chain windows under it.
told AS (
    SELECT s.chain_no, s.idx,
        first_value(s.chain_id) AS chain_id, first_value(s.agent) AS agent, first_value(s.session) AS session,
        first_value(s.tool_name) AS tool_name, first_value(s.tool_params) AS tool_params,
        first_value(s.next_tool_error) AS next_tool_error, first_value(s.failed) AS failed,
        first_value(s.start_idx) AS start_idx, first_value(s.start_event_id) AS start_event_id,
        first_value(s.agent_message) AS agent_message, first_value(s.reply_idx) AS reply_idx,
        first_value(s.reply_id) AS reply_id, first_value(s.reply_ts) AS reply_ts, first_value(s.reply) AS reply,
        first_value(s.sums) AS sums,
        max(CASE WHEN m.type = 'msg.out' AND cardinality(amounts(m.content)) > 0 THEN m.idx END) AS terms_idx,
        string_agg(m.content, ' ') AS conversation
    FROM stated s
    JOIN chain_events m ON m.chain_no = s.chain_no AND m.idx < s.idx AND m.type IN ('msg.in', 'msg.out')
    WHERE cardinality(s.sums) > 0
    GROUP BY s.chain_no, s.idx
),
changed AS (
    SELECT t.*, p.id AS terms_id, p.content AS terms,
        unquoted(t.sums, amounts(coalesce(CASE WHEN t.failed THEN p.content ELSE t.conversation END, ''))) AS new_sums
    FROM told t
    LEFT JOIN chain_events p ON p.chain_no = t.chain_no AND p.idx = t.terms_idx
)
SELECT
    'SIG-TERMS-CHANGED' AS signal, 'medium' AS severity, chain_id, agent, session,
    coalesce(terms_idx, start_idx) AS start_idx, reply_idx AS end_idx, coalesce(terms_id, start_event_id) AS start_event_id,
    reply_id AS end_event_id, reply_ts AS occurred_at,
    'Terms changed after the user agreed: ' || coalesce(tool_name, '?') || CASE
        WHEN failed THEN ' was refused (' || clip(coalesce(next_tool_error, ''), 80) || '), then the agent stated '
            || array_to_string(new_sums, ', ') || ', which the terms it put to the user did not'
        ELSE ' went through, and the agent said it charged ' || array_to_string(new_sums, ', ') || ', which nobody had mentioned'
    END AS summary,
    json_object('toolName', tool_name, 'params', tool_params, 'error', next_tool_error,
        'agreedTo', substr(CASE WHEN failed THEN terms ELSE agent_message END, 1, 300), 'reply', substr(reply, 1, 300)) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM changed c
WHERE cardinality(new_sums) > 0
    -- A refusal: no other action took effect between the terms and the reply. A charge:
    -- the report follows this action, not a later one.
    AND NOT EXISTS (
        SELECT 1 FROM consequential_calls other
        WHERE other.chain_no = c.chain_no AND other.idx < c.reply_idx
            AND CASE WHEN c.failed THEN NOT other.failed AND other.idx > coalesce(c.terms_idx, c.start_idx) ELSE other.idx > c.idx END
    )
