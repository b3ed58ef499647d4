#!/usr/bin/env bash
# Import throughput by cores: tracelake on 1..N cores (taskset), DuckDB on all of them,
# and optionally an earlier tracelake binary, on one generated file.
#   scripts/bench_import_cores.sh [EVENTS] [CORES...]   (default 10000000, then 16 8 4 2 1)
#   BASE=/path/to/earlier/tracelake scripts/bench_import_cores.sh …   (side by side at all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
events="${1:-10000000}"; shift || true
cores=("${@:-16 8 4 2 1}"); cores=(${cores[@]})
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
bin="${TRACELAKE:-}"
[ -n "$bin" ] || { cargo build --release --quiet; bin="$CARGO_TARGET_DIR/release/tracelake"; }
work="${BENCH_DIR:-$(mktemp -d)}"
input="$work/bench-$events.jsonl"
[ -f "$input" ] || "$bin" generate --events "$events" --seed 1 --output "$input" >/dev/null
echo "input: $events events, $(stat -L -c %s "$input") bytes, $(nproc) cores, $(date -u +%Y-%m-%d)"
cat "$input" > /dev/null  # warm the page cache

measure() {  # label, cores, command…
    local label="$1" n="$2"; shift 2
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.log" taskset -c "0-$((n - 1))" "$@" > /dev/null
    read -r secs user sys kb < "$work/time.log"
    awk -v l="$label" -v c="$n" -v s="$secs" -v cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" -v kb="$kb" -v e="$events" \
        'BEGIN { printf "%-10s %2d cores %8.2f s %10.0f events/s %7.1f s CPU %7.0f MB peak RSS\n", l, c, s, e / s, cpu, kb / 1024 }'
}

all=$(nproc)
for n in "${cores[@]}"; do
    [ "$n" -le "$all" ] || continue
    rm -rf "$work/lake"; measure tracelake "$n" "$bin" import --lake "$work/lake" "$input"
done
if [ -n "${BASE:-}" ]; then
    rm -rf "$work/lake"; measure base "$all" "$BASE" import --lake "$work/lake" "$input"
fi
python3 -c 'import duckdb' 2>/dev/null || pip install --quiet duckdb
rm -rf "$work/duck"
measure duckdb "$all" python3 -c "
import duckdb
duckdb.connect().execute('''
COPY (SELECT *, strftime(to_timestamp(coalesce(ts, \"timestamp\") / 1000) AT TIME ZONE 'UTC', '%Y-%m-%d') AS date
      FROM read_json('$input', format = 'newline_delimited', union_by_name = true, maximum_object_size = 16777216))
TO '$work/duck' (FORMAT parquet, PARTITION_BY (date), COMPRESSION zstd)''')
"
