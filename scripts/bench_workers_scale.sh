#!/usr/bin/env bash
# `analyze --full` embedded and with 1, 2, 4 … local workers on one lake, each worker
# pinned to cores of its own (`taskset`), so that on one machine every worker stands for a
# node of CORES cores; the coordinating process runs on all cores. Runs alternate; after
# each run the findings in the lake are hashed, so every run is checked against the
# embedded one id for id. Each run's `--verbose` account (stage times; the workers' plan
# with what each node did) is left in BENCH_DIR as NAME.err.
#   scripts/bench_workers_scale.sh [EVENTS] [RUNS] [CORES] [WORKERS...]
#   (defaults 10000000, 2, 4, then 1 2 4; TRACELAKE=path runs a given binary)
set -euo pipefail
cd "$(dirname "$0")/.."
events="${1:-10000000}"; runs="${2:-2}"; cores="${3:-4}"; shift 3 || shift $#
counts=("${@:-1 2 4}"); counts=(${counts[@]})
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
bin="${TRACELAKE:-}"
[ -n "$bin" ] || { cargo build --release --quiet --bin tracelake; bin="$CARGO_TARGET_DIR/release/tracelake"; }
work="${BENCH_DIR:-/tmp/tracelake-bench-scale}"
mkdir -p "$work"
input="$work/gen-$events.jsonl"
lake="$work/lake-$events"
[ -f "$input" ] || "$bin" generate --events "$events" --seed 1 --output "$input" > /dev/null
[ -d "$lake" ] || "$bin" import --lake "$lake" "$input" > /dev/null
all=$(nproc)
max=0; for n in "${counts[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
[ $((max * cores)) -le "$all" ] || { echo "$max workers of $cores cores need $((max * cores)) cores; this machine has $all" >&2; exit 2; }

pids=(); urls=()
for i in $(seq 0 $((max - 1))); do
    taskset -c "$((i * cores))-$((i * cores + cores - 1))" "$bin" worker --listen 127.0.0.1:0 --memory-limit 8G 2> "$work/worker-$i.log" &
    pids+=($!)
    for _ in $(seq 100); do grep -q http:// "$work/worker-$i.log" 2>/dev/null && break; sleep 0.1; done
    urls+=("$(grep -o 'http://[0-9.:]*' "$work/worker-$i.log")")
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
echo "$events events, $all cores, $cores cores per worker, $(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

ticks() { # CPU seconds used so far by the given processes
    local total=0; for p in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
    awk -v t="$total" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }'
}
findings() { "$bin" sql --lake "$lake" --format csv "SELECT count(*) || ' ' || md5(string_agg(finding_id, ',' ORDER BY finding_id)) FROM findings" | tail -1; }
measure() { # name, workers used (0: embedded), then the command
    local name="$1" k="$2"; shift 2
    local used=("${pids[@]:0:$k}") before=0 after=0
    [ "$k" -eq 0 ] || before=$(ticks "${used[@]}")
    /usr/bin/time -f "%e %M %U %S" -o "$work/time" "$@" > /dev/null 2> "$work/$name.err"
    [ "$k" -eq 0 ] || after=$(ticks "${used[@]}")
    read -r wall rss user sys < "$work/time"
    printf '%-26s %7s s  coordinator %6.1f s CPU %6d MiB  workers %6.1f s CPU  findings %s\n' \
        "$name" "$wall" "$(awk "BEGIN { print $user + $sys }")" $((rss / 1024)) "$(awk "BEGIN { print $after - $before }")" "$(findings)"
}
for _ in $(seq "$runs"); do
    measure "embedded, $all cores" 0 "$bin" analyze --lake "$lake" --full --format json --verbose
    measure "embedded, $cores cores" 0 taskset -c "0-$((cores - 1))" "$bin" analyze --lake "$lake" --full --format json --verbose
    for k in "${counts[@]}"; do
        list="$(IFS=,; echo "${urls[*]:0:$k}")"
        measure "$k worker(s)" "$k" "$bin" analyze --lake "$lake" --full --format json --workers "$list" --verbose
    done
done
for i in $(seq 0 $((max - 1))); do echo "worker $i peak RSS: $(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/${pids[$i]}/status") MiB"; done
