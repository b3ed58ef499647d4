#!/usr/bin/env bash
# Two builds of tracelake side by side on the lake's writers, alternating runs, each build
# on lakes of its own: `import` of a generated file into a new lake, `analyze --full` on
# fresh copies of the lake it imported, and `collect` under `otlp_load` for some seconds.
#
#   scripts/bench_writers.sh BASE_BIN NEW_BIN LOAD_BIN [EVENTS] [ROUNDS] [COLLECT_SECONDS]
#
# LOAD_BIN: the OTLP load generator, e.g. `cargo rustc --example otlp_load -- -C opt-level=3`
# (target/debug/examples/otlp_load). Defaults: 1,000,000 events, 3 rounds, 20 s.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
base="$(realpath "$1")" new="$(realpath "$2")" load="$(realpath "$3")"
events="${4:-1000000}" rounds="${5:-3}" seconds="${6:-20}"
work="${BENCH_DIR:-$(mktemp -d)}"
echo "$(nproc) cores, $(date -u +%Y-%m-%d), $events events, $rounds rounds, collect $seconds s"
input="$work/generated-$events.jsonl"
[ -f "$input" ] || "$new" generate --events "$events" --seed 1 --output "$input" > /dev/null
cat "$input" > /dev/null # the page cache, warm for both

timed() { # label, command…: wall seconds, CPU seconds and peak RSS
    local label="$1"; shift
    /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" > /dev/null
    read -r wall user sys rss < "$work/time.txt"
    printf '%-22s %6.2f s  %6.2f s CPU  %5d MB\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" $((rss / 1024))
}

for round in $(seq "$rounds"); do
    for who in base new; do
        bin="$base"; [ "$who" = new ] && bin="$new"
        rm -rf "$work/lake-$who"
        timed "import $who" "$bin" import --lake "$work/lake-$who" "$input"
    done
done
for round in $(seq "$rounds"); do
    for who in base new; do
        bin="$base"; [ "$who" = new ] && bin="$new"
        rm -rf "$work/copy" && cp -r "$work/lake-$who" "$work/copy"
        timed "analyze --full $who" "$bin" analyze --lake "$work/copy" --full --format json
    done
done
for round in $(seq "$rounds"); do
    for who in base new; do
        bin="$base"; [ "$who" = new ] && bin="$new"
        lake="$work/collect-$who"; rm -rf "$lake"
        port=$(free_port)
        "$bin" collect --lake "$lake" --listen "127.0.0.1:$port" > /dev/null 2>&1 &
        collector=$!
        wait_for_port "$port"
        "$load" --url "http://127.0.0.1:$port" --seconds "$seconds" --rate 150000 --clients 64 > "$work/load.json"
        kill -TERM "$collector"; wait "$collector" || true
        log_kb=$(du -sk "$lake/events/_delta_log" | cut -f1) state_kb=$(du -sk "$lake/_state" | cut -f1)
        python3 -c "import json, sys; l = json.load(open(sys.argv[1])); print(f'collect {sys.argv[2]:<14} {l[\"spans_per_s\"]} spans/s acknowledged, events log {sys.argv[3]} kB, _state {sys.argv[4]} kB')" \
            "$work/load.json" "$who" "$log_kb" "$state_kb"
    done
done
