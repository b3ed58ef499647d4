#!/usr/bin/env bash
# Export throughput and peak RSS from a local JetStream holding generated events, beside
# a baseline that fetches one message per sequence number.
#   scripts/bench_export.sh [EVENTS] [BASELINE_EVENTS]   (defaults 1000000 and 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
events="${1:-1000000}"
baseline_events="${2:-100000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
cargo build --release --quiet --examples --bin tracelake
rel="$CARGO_TARGET_DIR/release"
work="${BENCH_DIR:-$(mktemp -d)}"
input="$work/bench-$events.jsonl"
[ -f "$input" ] || "$rel/tracelake" generate --events "$events" --seed 1 --output "$input" >/dev/null

port=$(free_port)
store="$work/js-store"; rm -rf "$store"
nats-server -js -a 127.0.0.1 -p "$port" -sd "$store" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
wait_for_port "$port"
url="nats://127.0.0.1:$port"
"$rel/examples/publish" "$url" openclaw-events "$input"
echo "stream: $events events, $(nproc) cores, $(date -u +%Y-%m-%d)"

rm -rf "$work/lake"
/usr/bin/time -f "%e %M" -o "$work/time.log" "$rel/tracelake" export --lake "$work/lake" --nats-url "$url" > "$work/export.out"
read -r secs kb < "$work/time.log"
cat "$work/export.out"
awk -v s="$secs" -v kb="$kb" -v n="$events" 'BEGIN { printf "tracelake export: %.2f s, %.0f events/s, %.0f MB peak RSS\n", s, n / s, kb / 1024 }'

rm -rf "$work/baseline-lake"
/usr/bin/time -f "%e %M" -o "$work/time.log" "$rel/examples/export_per_sequence" "$url" openclaw-events "$work/baseline-lake" "$baseline_events"
read -r secs kb < "$work/time.log"
awk -v s="$secs" -v kb="$kb" -v n="$baseline_events" 'BEGIN { printf "per-sequence baseline (%d events): %.2f s, %.0f events/s, %.0f MB peak RSS\n", n, s, n / s, kb / 1024 }'
