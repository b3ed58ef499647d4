#!/usr/bin/env bash
# Analysis time and peak RSS: `tracelake analyze --full` vs the same chain and detector
# work in DuckDB (scripts/duckdb_analyze.py), over the same imported lake.
#   scripts/bench_analyze.sh [EVENTS]   (default 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
events="${1:-1000000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
cargo build --release --quiet
bin="$CARGO_TARGET_DIR/release/tracelake"
work="${BENCH_DIR:-$(mktemp -d)}"
input="$work/bench-$events.jsonl"
lake="$work/lake-$events"
[ -f "$input" ] || "$bin" generate --events "$events" --seed 1 --output "$input" >/dev/null
[ -d "$lake" ] || "$bin" import --lake "$lake" "$input" >/dev/null
config="$work/all-signals.json"
echo '{"output":{"maxFindings":100000000},"signals":{"SIG-TOOL-FAIL":{"enabled":true},"SIG-REPEAT-FAIL":{"enabled":true},"SIG-UNVERIFIED-CLAIM":{"enabled":true},"SIG-UNANSWERED":{"enabled":true},"SIG-ERROR-ENDING":{"enabled":true}}}' > "$config"
echo "lake: $events events, $(nproc) cores, $(date -u +%Y-%m-%d)"

measure() {  # label, command…
    local label="$1"; shift
    local log="$work/time.log"
    /usr/bin/time -f "%e %M" -o "$log" "$@" > "$work/$label.out"
    read -r secs kb < "$log"
    printf "%-10s %8.2f s %8.0f MB peak RSS\n" "$label" "$secs" "$((kb / 1024))"
}

measure tracelake "$bin" analyze --lake "$lake" --config "$config" --full --format json
python3 -c "
import json, collections, sys
found = collections.Counter(f['signal']['signal'] for f in json.load(open(sys.argv[1]))['findings'])
print('  tracelake findings:', dict(sorted(found.items())))" "$work/tracelake.out"
measure duckdb python3 scripts/duckdb_analyze.py "$lake"
sed 's/^/  /' "$work/duckdb.out"
