-- The conditions each session ran under, to be set against its outcome (`tracelake
-- factors`): `session_features`, one row per session in numbers, and `session_factors`,
-- one row per session and factor with the factor's value as text, sizes bucketed.

-- One row per session: the most frequent agent, model, provider and channel; the language
-- of the user's messages (NULL when it cannot be told); its size (user turns, tool calls,
-- distinct tools, seconds from first to last event); its process (failed tool results,
-- where the first came as a share of the session's events, calls that repeat the call
-- before them, tool and params); when it started.
CREATE OR REPLACE VIEW session_features AS
WITH ordered AS (
    SELECT session, type, ts, tool_name,
        type = 'tool.result' AND (tool_error IS NOT NULL OR coalesce(tool_is_error, false)) AS failed_result,
        type = 'tool.call'
            AND tool_name = lag(tool_name) OVER (PARTITION BY session, type = 'tool.call' ORDER BY ts, stream_seq)
            AND tool_params IS NOT DISTINCT FROM lag(tool_params) OVER (PARTITION BY session, type = 'tool.call' ORDER BY ts, stream_seq)
            AS retry,
        row_number() OVER (PARTITION BY session ORDER BY ts, stream_seq) AS nth
    FROM events
),
attributes AS (
    SELECT session, 'agent' AS name, agent AS value FROM events
    UNION ALL SELECT session, 'model', model FROM events WHERE model IS NOT NULL
    UNION ALL SELECT session, 'provider', provider FROM events WHERE provider IS NOT NULL
    UNION ALL SELECT session, 'channel', channel FROM events WHERE channel IS NOT NULL
),
most_frequent AS (
    SELECT session,
        max(value) FILTER (WHERE name = 'agent') AS agent,
        max(value) FILTER (WHERE name = 'model') AS model,
        max(value) FILTER (WHERE name = 'provider') AS provider,
        max(value) FILTER (WHERE name = 'channel') AS channel
    FROM (
        SELECT session, name, value,
            row_number() OVER (PARTITION BY session, name ORDER BY count(*) DESC, value) AS rank
        FROM attributes
        GROUP BY session, name, value
    )
    WHERE rank = 1
    GROUP BY session
),
-- The first 4,000 characters of the user's messages: each message cut where they end,
-- by where it starts in the session's text. The pieces are joined without ORDER BY, which
-- would keep every message of every session in memory at once; the language is told from
-- the text's trigrams, which the pieces' order changes only across their joints.
user_text AS (
    SELECT session, content,
        sum(char_length(content) + 1) OVER (PARTITION BY session ORDER BY ts, stream_seq ROWS UNBOUNDED PRECEDING)
            - char_length(content) - 1 AS start
    FROM events
    WHERE type = 'msg.in' AND content IS NOT NULL
),
languages AS (
    SELECT session, language(string_agg(substr(content, 1, 4000 - start), ' ')) AS language
    FROM user_text
    WHERE start < 4000
    GROUP BY session
),
sizes AS (
    SELECT session,
        count(*) FILTER (WHERE type = 'msg.in') AS user_turns,
        count(*) FILTER (WHERE type = 'tool.call') AS tool_calls,
        CAST(CAST(max(ts) AS BIGINT) - CAST(min(ts) AS BIGINT) AS DOUBLE) / 1000 AS duration_s,
        count(*) FILTER (WHERE failed_result) AS tool_errors,
        CAST(min(nth) FILTER (WHERE failed_result) AS DOUBLE) / count(*) AS first_error_at,
        count(*) FILTER (WHERE retry) AS retries,
        min(ts) AS started_at
    FROM ordered
    GROUP BY session
),
-- Counted from the distinct pairs: `count(DISTINCT …)` per session keeps a set for each
-- session, over a gigabyte at 100,000 sessions.
tools AS (
    SELECT session, count(*) AS distinct_tools
    FROM (SELECT DISTINCT session, tool_name FROM events WHERE type = 'tool.call' AND tool_name IS NOT NULL)
    GROUP BY session
)
SELECT s.session, m.agent, m.model, m.provider, m.channel, l.language, s.user_turns, s.tool_calls,
    coalesce(t.distinct_tools, 0) AS distinct_tools, s.duration_s, s.tool_errors, s.first_error_at, s.retries, s.started_at
FROM sizes s JOIN most_frequent m ON m.session = s.session
    LEFT JOIN languages l ON l.session = s.session
    LEFT JOIN tools t ON t.session = s.session;

-- One row per session and factor. Sizes are `small`, `medium` or `large`, split at the
-- edges of the config's `factors` (by default user turns up to 2, up to 6, more; tool calls
-- up to 2, up to 10, more; distinct tools up to 1, up to 3, more; seconds up to 60, up to
-- 600, more). Tool errors are `0`, `1` or `2+`; the first error `early` (in the first half
-- of the session's events), `late` or `none`; retries `0` or `1+`; the start's `hour`
-- (UTC, `00`–`23`) and `weekday` (`Mon`–`Sun`). Each tool a session called is a factor
-- `tool:NAME` with the value `used`, each signal with a finding in it `signal:ID` with
-- the value `fired`.
CREATE OR REPLACE VIEW session_factors AS
-- One pass over session_features: the factors side by side, unnested into rows.
SELECT session, factor, value FROM (
    SELECT session,
        unnest(make_array('agent', 'model', 'provider', 'channel', 'language', 'user_turns', 'tool_calls', 'distinct_tools',
            'duration', 'tool_errors', 'first_error', 'retries', 'hour', 'weekday')) AS factor,
        unnest(make_array(agent, model, provider, channel, language,
            CASE WHEN user_turns <= ${userTurns.small} THEN 'small' WHEN user_turns <= ${userTurns.medium} THEN 'medium' ELSE 'large' END,
            CASE WHEN tool_calls <= ${toolCalls.small} THEN 'small' WHEN tool_calls <= ${toolCalls.medium} THEN 'medium' ELSE 'large' END,
            CASE WHEN distinct_tools <= ${distinctTools.small} THEN 'small' WHEN distinct_tools <= ${distinctTools.medium} THEN 'medium' ELSE 'large' END,
            CASE WHEN duration_s <= ${durationSeconds.small} THEN 'small' WHEN duration_s <= ${durationSeconds.medium} THEN 'medium' ELSE 'large' END,
            CASE WHEN tool_errors = 0 THEN '0' WHEN tool_errors = 1 THEN '1' ELSE '2+' END,
            CASE WHEN first_error_at IS NULL THEN 'none' WHEN first_error_at <= 0.5 THEN 'early' ELSE 'late' END,
            CASE WHEN retries = 0 THEN '0' ELSE '1+' END,
            lpad(CAST(date_part('hour', started_at) AS VARCHAR), 2, '0'),
            to_char(started_at, '%a'))) AS value
    FROM session_features
)
WHERE value IS NOT NULL
UNION ALL SELECT DISTINCT session, 'tool:' || tool_name, 'used' FROM events WHERE type = 'tool.call' AND tool_name IS NOT NULL
UNION ALL SELECT DISTINCT session, 'signal:' || signal, 'fired' FROM findings;
