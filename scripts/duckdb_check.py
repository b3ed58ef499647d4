#!/usr/bin/env python3
"""Cross-check a tracelake lake with DuckDB.

Reads the lake's Parquet files with DuckDB (hive partitioning), and checks that the row
count and the per-type counts equal those of the JSONL input files, and those that
`tracelake sql` reports. Exits non-zero on any difference.

    scripts/duckdb_check.py --tracelake target/release/tracelake --lake LAKE FILE.jsonl...
"""
import argparse
import collections
import json
import subprocess
import sys

import duckdb

CANONICAL = {
    "conversation.message.in": "msg.in",
    "conversation.message.out": "msg.out",
    "conversation.tool_call": "tool.call",
    "conversation.tool_result": "tool.result",
    "lifecycle.start": "run.start",
    "lifecycle.end": "run.end",
    "lifecycle.error": "run.error",
}


def expected_counts(paths):
    """Per canonical type, over lines that are events (an object with a timestamp and a type)."""
    counts = collections.Counter()
    for path in paths:
        with open(path, "rb") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(event, dict):
                    continue
                ts = event.get("ts", event.get("timestamp"))
                kind = event.get("type") or event.get("legacyType")
                if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts <= 0 or not kind:
                    continue
                counts[CANONICAL.get(kind, kind)] += 1
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracelake", required=True)
    parser.add_argument("--lake", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()

    expected = expected_counts(args.files)
    con = duckdb.connect()
    glob = f"{args.lake}/events/date=*/*.parquet"
    duck = dict(
        con.execute(
            f"SELECT type, count(*) FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY type"
        ).fetchall()
    )
    dates = con.execute(
        f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true) "
        "WHERE strftime(ts AT TIME ZONE 'UTC', '%Y-%m-%d') <> CAST(date AS VARCHAR)"
    ).fetchone()[0]
    out = subprocess.run(
        [args.tracelake, "sql", "--lake", args.lake, "--format", "ndjson",
         "SELECT type, count(*) AS n FROM events GROUP BY type"],
        check=True, capture_output=True, text=True,
    ).stdout
    ours = {row["type"]: row["n"] for row in map(json.loads, out.splitlines())}

    ok = True
    for name, counts in (("duckdb", duck), ("tracelake sql", ours)):
        if counts != dict(expected):
            ok = False
            print(f"MISMATCH {name}: {counts} != input {dict(expected)}", file=sys.stderr)
    if dates:
        ok = False
        print(f"MISMATCH: {dates} rows in a partition other than their date", file=sys.stderr)
    total = sum(expected.values())
    print(f"{'ok' if ok else 'FAILED'}: {total} events, {len(expected)} types; "
          f"duckdb {sum(duck.values())}, tracelake {sum(ours.values())}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
