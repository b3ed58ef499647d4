-- What the conversations hold beyond failures (the cortex's threads, decisions and
-- mood): views over `cortex_messages`, the messages in which a cortex pattern of the
-- chosen language packs found something (written by `analyze`, one row per message, see
-- cortex_messages.sql).

-- The mood of every user and agent message: the mood pattern that matched last, else
-- `neutral`. A message both OpenClaw schemas published counts once, as in
-- `cortex_messages`: the later copy (copies grouped by the same hash).
CREATE OR REPLACE VIEW moods AS
SELECT e.agent, e.session, e.id AS event_id, e.ts,
    CASE WHEN e.type = 'msg.in' THEN coalesce(e."from", 'user') ELSE e.agent END AS who,
    coalesce(c.mood, 'neutral') AS mood
FROM (
    SELECT *,
        schema IN ('A', 'B') AND lead(ts_ms) OVER copies - ts_ms < 1000 AS is_copy
    FROM (
        SELECT *, CAST(to_timestamp_millis(ts) AS BIGINT) AS ts_ms, key_hash(agent, session, type, content) AS copy_key
        FROM events
        WHERE type IN ('msg.in', 'msg.out') AND content IS NOT NULL
    )
    WINDOW copies AS (PARTITION BY copy_key ORDER BY ts, stream_seq)
) e
LEFT JOIN cortex_messages c ON c.agent = e.agent AND c.session = e.session AND c.event_id = e.id
WHERE NOT coalesce(e.is_copy, false);

-- What was decided: the decision phrase with 50 characters before and 100 after (`what`),
-- the message (`why`), `high` impact on a keyword of `cortex.highImpactKeywords`; the same
-- `what` of an agent kept once within `cortex.dedupeWindowHours`.
CREATE OR REPLACE VIEW decisions AS
SELECT agent, session, event_id, ts, what, why, impact, who
FROM (
    SELECT agent, session, event_id, ts, decision AS what, clip(content, 300) AS why,
        CASE WHEN regexp_like(decision, ${high_impact}, 'i') THEN 'high' ELSE 'medium' END AS impact,
        who,
        first_in_window(CAST(to_timestamp_millis(ts) AS BIGINT), ${dedupe_window_ms})
            OVER (PARTITION BY agent, lower(decision) ORDER BY ts, stream_seq) AS kept
    FROM cortex_messages
    WHERE decision IS NOT NULL
)
WHERE kept;

-- The signals of the thread tracker, one row per message and kind, in the order a message
-- is read: its topic first (so that its decision can join the thread it opens), then
-- its decision, its wait and its closure.
CREATE OR REPLACE VIEW cortex_signals AS
SELECT agent, session, event_id, ts, stream_seq, 1 AS step, 'topic' AS kind, topic AS text, content, mood
FROM cortex_messages WHERE topic IS NOT NULL
UNION ALL SELECT agent, session, event_id, ts, stream_seq, 2, 'decision', decision, content, mood
FROM cortex_messages WHERE decision IS NOT NULL
UNION ALL SELECT agent, session, event_id, ts, stream_seq, 3, 'wait', waiting_for, content, mood
FROM cortex_messages WHERE waiting_for IS NOT NULL
UNION ALL SELECT agent, session, event_id, ts, stream_seq, 4, 'closure', content AS closure_text, content, mood
FROM cortex_messages WHERE closes;

-- The threads of work of each agent (`thread_of`): opened by a topic, joined by the
-- decisions and waits that share two words with its title, closed by a closure that does.
-- `status` is `closed` when a closure came after its last topic; `waiting_for` the last
-- wait of an open thread; `mood` the last mood other than neutral among its signals;
-- `priority` `high` when its title or a decision holds a high-impact keyword. Closed
-- threads idle for `cortex.pruneDays` before the agent's latest message drop out, and at
-- most `cortex.maxThreads` per agent stay, open ones first, then the latest.
CREATE OR REPLACE VIEW threads AS
WITH placed AS (
    SELECT *, thread_of(kind, text, event_id) OVER (PARTITION BY agent ORDER BY ts, stream_seq, step) AS thread_ids
    FROM cortex_signals
),
members AS (
    SELECT agent, session, event_id, ts, kind, text, content, mood, unnest(thread_ids) AS thread FROM placed
),
gathered AS (
    SELECT agent, thread,
        array_agg(text ORDER BY ts) FILTER (WHERE kind = 'topic') AS titles,
        array_agg(content ORDER BY ts) FILTER (WHERE event_id = thread) AS openers,
        array_agg(text ORDER BY ts) FILTER (WHERE kind = 'decision') AS decisions,
        array_agg(text ORDER BY ts DESC) FILTER (WHERE kind = 'wait') AS waits,
        array_agg(mood ORDER BY ts DESC) FILTER (WHERE mood <> 'neutral') AS moods,
        max(ts) FILTER (WHERE kind = 'topic') AS last_topic,
        max(ts) FILTER (WHERE kind = 'closure') AS last_closure,
        max(ts) FILTER (WHERE kind = 'wait') AS last_wait,
        min(ts) AS created,
        max(ts) AS last_activity
    FROM members
    GROUP BY agent, thread
),
described AS (
    SELECT agent, thread AS id, titles[1] AS title,
        CASE WHEN last_closure >= last_topic THEN 'closed' ELSE 'open' END AS status,
        CASE WHEN regexp_like(titles[1] || ' ' || coalesce(array_to_string(decisions, ' '), ''), ${high_impact}, 'i')
            THEN 'high' ELSE 'medium' END AS priority,
        clip(openers[1], 200) AS summary,
        decisions,
        CASE WHEN last_closure >= last_topic OR last_closure >= last_wait THEN NULL ELSE waits[1] END AS waiting_for,
        coalesce(moods[1], 'neutral') AS mood,
        created, last_activity
    FROM gathered
),
latest AS (SELECT agent, max(ts) AS latest FROM events WHERE type IN ('msg.in', 'msg.out') GROUP BY agent)
SELECT id, agent, title, status, priority, summary, decisions, waiting_for, mood, created, last_activity
FROM (
    SELECT d.*, row_number() OVER (PARTITION BY d.agent ORDER BY d.status = 'open' DESC, d.last_activity DESC, d.id) AS kept
    FROM described d JOIN latest l ON l.agent = d.agent
    WHERE d.status = 'open' OR d.last_activity >= l.latest - INTERVAL '${prune_days} days'
)
WHERE kept <= ${max_threads};
