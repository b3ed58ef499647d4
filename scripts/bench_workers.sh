#!/usr/bin/env bash
# `analyze --full` and a chain query over the whole lake, embedded vs. with two local
# `tracelake worker`s (a pool of 4 GiB each; the chain query embedded gets 8 GiB), on
# the same lake, runs alternated. On one machine the workers share its cores, so this
# measures the overhead of distribution, not a speed-up.
#   scripts/bench_workers.sh [EVENTS] [RUNS]   (defaults 10000000, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
events="${1:-10000000}"
runs="${2:-3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
# TRACELAKE_BIN runs another build (e.g. a debug one) instead of building the release.
bin="${TRACELAKE_BIN:-$CARGO_TARGET_DIR/release/tracelake}"
[ -n "${TRACELAKE_BIN:-}" ] || cargo build --release --quiet --bin tracelake
work="${BENCH_DIR:-/tmp/tracelake-bench-workers}"
mkdir -p "$work"
[ -f "$work/gen-$events.jsonl" ] || "$bin" generate --events "$events" --seed 1 --output "$work/gen-$events.jsonl" > /dev/null
lake="$work/lake-$events"
echo "binary: $bin"
[ -d "$lake" ] || "$bin" import --lake "$lake" "$work/gen-$events.jsonl" > /dev/null

pids=()
workers=()
for n in 1 2; do
    "$bin" worker --listen 127.0.0.1:0 --memory-limit 4G 2> "$work/worker-$n.log" &
    pids+=($!)
    for _ in $(seq 100); do grep -q http:// "$work/worker-$n.log" 2>/dev/null && break; sleep 0.1; done
    workers+=("$(grep -o 'http://[0-9.:]*' "$work/worker-$n.log")")
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
list="$(IFS=,; echo "${workers[*]}")"
echo "$events events, $(nproc) cores, $(date -u +%Y-%m-%d); workers $list"

# The chain views over every event need more than the default pool of 1 GiB at 10M.
chain_query="SET datafusion.runtime.memory_limit = '8G'; SELECT count(*) AS attempts, sum(CASE WHEN failed THEN 1 ELSE 0 END) AS failed FROM tool_attempts"
# A window per session: shuffled by session, it runs on the workers.
session_query="SET datafusion.runtime.memory_limit = '8G'; SELECT count(*) FILTER (WHERE idx = 1) AS sessions, max(idx) AS longest FROM (SELECT row_number() OVER (PARTITION BY agent, session ORDER BY ts, stream_seq) AS idx FROM events)"
measure() { # name, then the command
    local name="$1"; shift
    /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > "$work/$name.out"
    read -r wall rss user sys < "$work/time"
    printf '%-28s %8s s  %6.2f s CPU  %6d MiB peak RSS (this process)\n' "$name" "$wall" "$(awk "BEGIN { print $user + $sys }")" $((rss / 1024))
}
for run in $(seq "$runs"); do
    measure "analyze embedded" "$bin" analyze --lake "$lake" --full --format json
    measure "analyze 2 workers" "$bin" analyze --lake "$lake" --full --format json --workers "$list"
    measure "chain query embedded" "$bin" sql --lake "$lake" --format csv "$chain_query"
    measure "chain query 2 workers" "$bin" sql --lake "$lake" --format csv --workers "$list" "$chain_query"
    measure "session window embedded" "$bin" sql --lake "$lake" --format csv "$session_query"
    measure "session window 2 workers" "$bin" sql --lake "$lake" --format csv --workers "$list" "$session_query"
done
ids() { python3 -c 'import json,sys; print(sorted(f["id"] for f in json.load(open(sys.argv[1]))["findings"]) == sorted(f["id"] for f in json.load(open(sys.argv[2]))["findings"]))' "$@"; }
echo "same findings: $(ids "$work/analyze embedded.out" "$work/analyze 2 workers.out")"
for q in "chain query" "session window"; do
    cmp -s "$work/$q embedded.out" "$work/$q 2 workers.out" && echo "same $q result" || echo "$q results DIFFER"
done
for n in 1 2; do echo "worker $n peak RSS: $(grep VmHWM "/proc/${pids[$((n - 1))]}/status" | awk '{print int($2/1024)}') MiB"; done
