-- The user's and the agent's messages in which a cortex pattern of the chosen language
-- packs found something: a decision (its context), a wait, a topic, a closure or a mood
-- other than neutral. `analyze` writes these rows from each bucket's events for the
-- messages no analysis saw before (`fresh` in `analysis_events`), so the patterns run once per
-- message, and a full and an incremental analysis write the same. `cortex_matches` tells
-- in one pass the many messages no pattern matches, before the functions run.
-- The functions run below the window that finds copies, once per message: a test of
-- their results above the window cannot be pushed below it, so they are not run again
-- in a filter. Copies are grouped by the 64-bit hash of (agent, session, type, content),
-- which sorts as one number, not four texts.
SELECT agent, session, event_id, ts, stream_seq, who, content, decision, waiting_for, topic, closes, mood
FROM (
    SELECT *,
        -- A message both OpenClaw schemas published (the same text within a second, as
        -- the chains see it) counts once: the later copy.
        schema IN ('A', 'B') AND lead(ts_ms) OVER copies - ts_ms < 1000 AS is_copy
    FROM (
        SELECT agent, session, id AS event_id, ts, stream_seq, schema,
            CAST(to_timestamp_millis(ts) AS BIGINT) AS ts_ms,
            key_hash(agent, session, type, content) AS copy_key,
            CASE WHEN type = 'msg.in' THEN coalesce("from", 'user') ELSE agent END AS who,
            content,
            decision_context(content) AS decision,
            wait_context(content) AS waiting_for,
            topic_title(content) AS topic,
            is_closure(content) AS closes,
            mood(content) AS mood
        FROM analysis_events
        WHERE type IN ('msg.in', 'msg.out') AND cortex_matches(content) ${fresh}
    )
    WINDOW copies AS (PARTITION BY copy_key ORDER BY ts, stream_seq)
)
WHERE NOT coalesce(is_copy, false)
    AND (decision IS NOT NULL OR waiting_for IS NOT NULL OR topic IS NOT NULL OR closes OR mood <> 'neutral')
