#!/usr/bin/env bash
# `tracelake collect` under load: a local generator sends tool spans over OTLP/HTTP at a
# steady rate; halfway through the receiver is killed (kill -9) and started again, the
# generator sending every unanswered request again. Afterwards every acknowledged span
# must be in the lake exactly once (two events a span), and nothing else.
#   scripts/bench_collect.sh [SECONDS] [SPANS_PER_SECOND] [CLIENTS]   (defaults 60, 50000, 64)
# Each client sends 500 spans a request and waits for the answer, as an OpenTelemetry
# SDK's batch exporter does; a request is answered once committed (every 200 ms), so the
# rate needs enough clients in flight.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
seconds="${1:-60}"
rate="${2:-50000}"
clients="${3:-64}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
rel="$CARGO_TARGET_DIR/release"
# LOAD=PATH takes another build of the generator: the release build of the examples builds
# DataFusion a second time, while `cargo rustc --example otlp_load -- -C opt-level=3` (dev
# profile, dependencies optimized) takes seconds.
if [ -n "${LOAD:-}" ]; then
    cargo build --release --quiet --bin tracelake
else
    cargo build --release --quiet --example otlp_load --bin tracelake
    LOAD="$rel/examples/otlp_load"
fi
work="${BENCH_DIR:-$(mktemp -d)}"
lake="$work/collect-lake"; rm -rf "$lake"
port=$(free_port)
echo "collect: $seconds s at $rate spans/s from $clients clients, kill -9 at $((seconds / 2)) s; $(nproc) cores, $(date -u +%Y-%m-%d)"

start_collect() {
    /usr/bin/time -f "%M" -o "$work/rss-$1.log" "$rel/tracelake" collect --lake "$lake" --listen "127.0.0.1:$port" \
        > "$work/collect-$1.out" 2> "$work/collect-$1.err" &
    wait_for_port "$port"
}

start_collect 1
"$LOAD" --url "http://127.0.0.1:$port" --seconds "$seconds" --rate "$rate" --clients "$clients" > "$work/load.json" &
load=$!
sleep $((seconds / 2))
pkill -9 -x tracelake || true
sleep 1
start_collect 2
wait $load
pkill -TERM -x tracelake
while pgrep -x tracelake >/dev/null; do sleep 0.2; done
sleep 0.5

cat "$work/load.json"
cat "$work/collect-2.out"
counts=$("$rel/tracelake" sql --lake "$lake" --format csv \
    "SET datafusion.runtime.memory_limit = '8G'; SELECT count(*) AS events, count(DISTINCT id) AS distinct_ids, count(DISTINCT span_id) AS spans FROM events" | tail -1)
echo "in the lake (events, distinct event ids, spans): $counts"
python3 - "$work/load.json" "$counts" "$work/rss-1.log" "$work/rss-2.log" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))
events, ids, spans = map(int, sys.argv[2].split(","))
rss = [int(open(p).read().split()[-1]) / 1024 for p in sys.argv[3:5]]
print(f"acknowledged {load['spans']} spans in {load['seconds']} s ({load['spans_per_s']} spans/s, {load['retries']} requests sent again)")
print(f"peak RSS: {rss[0]:.0f} MB before the kill, {rss[1]:.0f} MB after")
lost, duplicated = load["spans"] - spans, events - ids
print(f"lost spans: {lost}, duplicated events: {duplicated}, events per acknowledged span: {events / max(load['spans'], 1):.3f}")
sys.exit(0 if lost == 0 and duplicated == 0 and events == 2 * load["spans"] else 1)
PY
