#!/usr/bin/env python3
"""The analysis workload in DuckDB, over the same Parquet lake, for the benchmark.

Chains (dedup, boundaries, cap) and the seven detectors written in DuckDB SQL with plain
window functions and regular expressions (the language packs' en + de + common patterns).
Where tracelake uses a Rust function, this uses the nearest SQL: parameters compare by
equality instead of similarity (doom loop, recovery), the failure fingerprint keeps every
parameter, and claims are matched per message instead of per sentence. That is less work
than tracelake does, so the comparison does not flatter tracelake.

    scripts/duckdb_analyze.py LAKE     prints seconds, chain events and findings per signal
"""
import json
import pathlib
import sys
import time

import duckdb

ROOT = pathlib.Path(__file__).resolve().parent.parent


def category(name):
    patterns = []
    for code in ("common", "en", "de"):
        pack = json.loads((ROOT / "udfs" / "lang" / f"{code}.json").read_text())
        patterns += pack.get(name, [])
    return "(?i)(" + "|".join(patterns) + ")" if patterns else "(?!)"


def q(pattern):
    return "'" + pattern.replace("'", "''") + "'"


CHAINS = """
CREATE TEMP TABLE chain_events AS
WITH keyed AS (
    SELECT *, epoch_ms(ts) AS ts_ms,
        CASE
            WHEN type IN ('msg.in', 'msg.out') THEN coalesce(substr(content, 1, 200), '')
            WHEN type = 'tool.call' THEN coalesce(tool_name, '') || '|' || coalesce(tool_params, '{{}}')
            WHEN type = 'tool.result' THEN coalesce(tool_name, '')
            ELSE ''
        END AS dedup_key,
        CASE WHEN type IN ('msg.in', 'msg.out', 'tool.call', 'tool.result') THEN 1000 ELSE 1 END AS dedup_window_ms
    FROM read_parquet('{lake}/events/date=*/*.parquet', hive_partitioning = true)
),
neighbours AS (
    SELECT *,
        lag(ts_ms) OVER w AS prev_ts_ms, lag(stream_seq) OVER w AS prev_seq,
        lead(ts_ms) OVER w AS next_ts_ms, lead(stream_seq) OVER w AS next_seq
    FROM keyed
    WINDOW w AS (PARTITION BY agent, session, type, dedup_key ORDER BY ts_ms, stream_seq)
),
deduped AS (
    SELECT * FROM neighbours
    WHERE NOT (coalesce(next_ts_ms - ts_ms < dedup_window_ms AND next_seq > stream_seq, false)
        OR coalesce(ts_ms - prev_ts_ms < dedup_window_ms AND prev_seq > stream_seq, false))
),
ordered AS (
    SELECT *, lag(type) OVER w AS prev_type, lag(ts_ms) OVER w AS prev_event_ts_ms
    FROM deduped WINDOW w AS (PARTITION BY session, agent ORDER BY ts_ms, stream_seq)
),
segmented AS (
    SELECT *, sum(CASE
            WHEN prev_type IS NULL THEN 1
            WHEN type = 'session.start' OR prev_type = 'session.end' THEN 1
            WHEN prev_type = 'run.end' AND type = 'run.start' AND ts_ms - prev_event_ts_ms > 300000 THEN 1
            WHEN ts_ms - prev_event_ts_ms > {gap_ms} THEN 1
            ELSE 0
        END) OVER (PARTITION BY session, agent ORDER BY ts_ms, stream_seq ROWS UNBOUNDED PRECEDING) AS segment
    FROM ordered
),
positioned AS (
    SELECT *, row_number() OVER (PARTITION BY session, agent, segment ORDER BY ts_ms, stream_seq) - 1 AS pos
    FROM segmented
),
sized AS (
    SELECT *, pos // 1000 AS piece, pos % 1000 AS idx,
        count(*) OVER (PARTITION BY session, agent, segment, pos // 1000) AS chain_len,
        min(ts_ms) OVER (PARTITION BY session, agent, segment, pos // 1000) AS chain_start_ms
    FROM positioned
)
SELECT md5(session || '|' || agent || '|' || chain_start_ms) AS chain_id, idx, chain_len, agent, session, id, ts,
    type, content, tool_name, tool_params, tool_error,
    (tool_error IS NOT NULL OR coalesce(tool_is_error, false)) AS failed
FROM sized WHERE chain_len >= 2;

CREATE TEMP TABLE tool_attempts AS
SELECT * FROM (
    SELECT chain_id, agent, session, idx AS call_idx, id AS call_id, ts, tool_name, tool_params, type,
        lead(type) OVER w AS next_type, lead(id) OVER w AS result_id,
        lead(failed) OVER w AS failed, lead(tool_error) OVER w AS error
    FROM chain_events WINDOW w AS (PARTITION BY chain_id ORDER BY idx)
) WHERE type = 'tool.call' AND next_type = 'tool.result';
"""

DETECTORS = {
    "SIG-CORRECTION": """
        SELECT count(*) FROM (
            SELECT *, lag(type) OVER w AS prev_type, lag(content) OVER w AS prev_content
            FROM chain_events WINDOW w AS (PARTITION BY chain_id ORDER BY idx)
        ) WHERE type = 'msg.in' AND prev_type = 'msg.out' AND regexp_matches(content, {correction})
            AND NOT (coalesce(regexp_matches(prev_content, {question}), false)
                AND length(trim(content)) <= 10 AND regexp_matches(trim(content), {short_negative}))""",
    "SIG-TOOL-FAIL": """
        WITH fails AS (SELECT * FROM tool_attempts WHERE failed),
        answer AS (
            SELECT f.chain_id, f.call_idx, min(o.idx) AS out_idx
            FROM fails f JOIN chain_events o ON o.chain_id = f.chain_id AND o.type = 'msg.out' AND o.idx > f.call_idx + 1
            GROUP BY ALL
        ),
        recovered AS (
            SELECT DISTINCT a.chain_id, a.call_idx
            FROM answer a JOIN fails f USING (chain_id, call_idx)
            JOIN tool_attempts t ON t.chain_id = a.chain_id AND t.call_idx > a.call_idx + 1 AND t.call_idx < a.out_idx
            WHERE NOT t.failed AND (t.tool_name IS DISTINCT FROM f.tool_name OR t.tool_params IS DISTINCT FROM f.tool_params)
        )
        SELECT count(*) FROM answer a ANTI JOIN recovered r USING (chain_id, call_idx)""",
    "SIG-DOOM-LOOP": """
        WITH islands AS (
            SELECT *, row_number() OVER (PARTITION BY chain_id ORDER BY call_idx)
                - row_number() OVER (PARTITION BY chain_id, tool_name, tool_params, failed ORDER BY call_idx) AS island
            FROM tool_attempts
        )
        SELECT count(*) FROM (
            SELECT chain_id, island FROM islands WHERE failed
            GROUP BY chain_id, tool_name, tool_params, island HAVING count(*) >= 3
        )""",
    "SIG-DISSATISFIED": """
        WITH last_in AS (SELECT chain_id, max(idx) AS idx FROM chain_events WHERE type = 'msg.in' GROUP BY chain_id),
        candidates AS (
            SELECT e.* FROM chain_events e JOIN last_in l USING (chain_id, idx)
            WHERE e.idx >= e.chain_len - 3 AND regexp_matches(e.content, {dissatisfaction})
                AND NOT regexp_matches(e.content, {satisfaction})
        ),
        resolved AS (
            SELECT DISTINCT r.chain_id FROM chain_events r JOIN candidates d USING (chain_id)
            WHERE r.type = 'msg.out' AND r.idx > d.idx AND regexp_matches(r.content, {resolution})
        )
        SELECT count(*) FROM candidates ANTI JOIN resolved USING (chain_id)""",
    "SIG-REPEAT-FAIL": """
        WITH fails AS (
            SELECT *, md5(coalesce(tool_name, '') || '|' || coalesce(tool_params, '{{}}') || '|' ||
                regexp_replace(regexp_replace(regexp_replace(regexp_replace(coalesce(error, 'error'),
                    '\\d{{4}}-\\d{{2}}-\\d{{2}}[T ]\\d{{2}}:\\d{{2}}:\\d{{2}}[.\\dZ]*', '<TIMESTAMP>', 'g'),
                    '(?i)\\bpid[= ]\\d+', 'pid=<PID>', 'g'), '(?i)\\bseq[= ]\\d+', 'seq=<SEQ>', 'g'),
                    '/tmp/\\S+', '/tmp/<PATH>', 'g')) AS fingerprint
            FROM tool_attempts WHERE failed
        ),
        firsts AS (SELECT fingerprint, session, min(ts) AS first_ts FROM fails GROUP BY ALL),
        ranked AS (SELECT *, row_number() OVER (PARTITION BY fingerprint ORDER BY first_ts, session) AS n FROM firsts)
        SELECT count(*) FROM ranked WHERE n >= 2""",
    "SIG-HALLUCINATION": """
        WITH claims AS (
            SELECT * FROM chain_events
            WHERE type = 'msg.out' AND regexp_matches(content, {completion_claim}) AND NOT regexp_matches(content, {question})
        ),
        last_results AS (
            SELECT c.chain_id, c.idx, max(r.idx) AS result_idx
            FROM claims c JOIN chain_events r ON r.chain_id = c.chain_id AND r.type = 'tool.result' AND r.idx < c.idx
            GROUP BY ALL
        )
        SELECT count(*) FROM last_results l JOIN chain_events r ON r.chain_id = l.chain_id AND r.idx = l.result_idx
        WHERE r.failed""",
    "SIG-UNVERIFIED-CLAIM": """
        WITH claims AS (
            SELECT * FROM chain_events
            WHERE type = 'msg.out' AND regexp_matches(content, {system_state_claim}) AND NOT regexp_matches(content, {opinion})
        ),
        before AS (
            SELECT c.chain_id, c.idx,
                max(CASE WHEN e.type = 'msg.in' THEN e.idx END) AS last_in,
                max(CASE WHEN e.type = 'tool.call' THEN e.idx END) AS last_call
            FROM claims c LEFT JOIN chain_events e ON e.chain_id = c.chain_id AND e.idx < c.idx
            GROUP BY ALL
        )
        SELECT count(*) FROM before WHERE last_call IS NULL OR (last_in IS NOT NULL AND last_call < last_in)""",
}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lake = sys.argv[1]
    names = ["correction", "question", "short_negative", "dissatisfaction", "satisfaction", "resolution",
             "completion_claim", "system_state_claim", "opinion"]
    patterns = {name: q(category(name)) for name in names}
    started = time.monotonic()
    con = duckdb.connect()
    con.execute(CHAINS.format(lake=lake, gap_ms=30 * 60_000))
    events = con.execute("SELECT count(*) FROM chain_events").fetchone()[0]
    counts = {signal: con.execute(sql.format(**patterns)).fetchone()[0] for signal, sql in DETECTORS.items()}
    elapsed = time.monotonic() - started
    print(f"duckdb: {elapsed:.2f} s, {events} chain events")
    for signal, n in counts.items():
        print(f"  {signal:22} {n}")


if __name__ == "__main__":
    main()
