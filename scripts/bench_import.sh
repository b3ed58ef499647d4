#!/usr/bin/env bash
# Import throughput and peak RSS: tracelake vs DuckDB on the same generated file.
#   scripts/bench_import.sh [EVENTS]   (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
events="${1:-1000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/tracelake"
work="${BENCH_DIR:-$(mktemp -d)}"
input="$work/bench-$events.jsonl"
[ -f "$input" ] || "$bin" generate --events "$events" --seed 1 --output "$input" >/dev/null
bytes=$(stat -L -c %s "$input")
echo "input: $events events, $bytes bytes, $(nproc) cores, $(date -u +%Y-%m-%d)"
cat "$input" > /dev/null  # warm the page cache for both contenders

measure() {  # label, command…
    local label="$1"; shift
    local log="$work/time.log"
    /usr/bin/time -f "%e %M" -o "$log" "$@" > /dev/null
    read -r secs kb < "$log"
    awk -v l="$label" -v s="$secs" -v kb="$kb" -v n="$events" \
        'BEGIN { printf "%-10s %8.2f s %10.0f events/s %8.0f MB peak RSS\n", l, s, n / s, kb / 1024 }'
}

rm -rf "$work/lake"
measure tracelake "$bin" import --lake "$work/lake" "$input"
rm -rf "$work/duck"
measure duckdb python3 -c "
import duckdb, sys
duckdb.connect().execute('''
COPY (SELECT *, strftime(to_timestamp(coalesce(ts, \"timestamp\") / 1000) AT TIME ZONE 'UTC', '%Y-%m-%d') AS date
      FROM read_json('$input', format = 'newline_delimited', union_by_name = true, maximum_object_size = 16777216))
TO '$work/duck' (FORMAT parquet, PARTITION_BY (date), COMPRESSION zstd)''')
"
du -sh "$work/lake/events" "$work/duck" | sed 's/^/size: /'
