-- signal: SIG-CORRECTION
-- severity: medium
-- SIG-CORRECTION (spec §7.1): the user corrects the agent right after it spoke; "nein"
-- in answer to a question is an answer, not a correction, nor is a user correcting their
-- own earlier input ("my mistake, the id is …"), nor a reply that thanks, reassures or
-- closes ("No problem", "No, that's all for now, thanks!").
SELECT
    'SIG-CORRECTION' AS signal, 'medium' AS severity, chain_id, agent, session,
    idx - 1 AS start_idx, idx AS end_idx, prev_id AS start_event_id, id AS end_event_id, prev_ts AS occurred_at,
    'User corrected agent after: ''' || clip(coalesce(prev_content, ''), 80) || '''' AS summary,
    json_object('agentMessage', prev_content, 'userCorrection', content) AS evidence,
    CAST(NULL AS VARCHAR) AS fingerprint
FROM chain_events
WHERE type = 'msg.in' AND prev_type = 'msg.out'
    AND is_correction(content)
    AND NOT (coalesce(is_question(prev_content), false) AND coalesce(is_short_negative(content), false))
    AND NOT coalesce(is_self_correction(content), false)
    AND NOT coalesce(is_satisfaction(content), false)
    AND NOT coalesce(is_closing(content), false)
