#!/usr/bin/env bash
# Export throughput and peak RSS from a local JetStream holding generated events, beside
# the floor (the exporter's consumer receiving every message and dropping it) and a
# baseline that fetches one message per sequence number. Each line also gives the CPU
# the server used meanwhile: on a machine it shares with the exporter, that is the
# part of the cores no exporter can have.
#   scripts/bench_export.sh [EVENTS] [BASELINE_EVENTS]   (defaults 1000000 and 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
events="${1:-1000000}"
baseline_events="${2:-100000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
cargo build --release --quiet --examples --bin tracelake
rel="$CARGO_TARGET_DIR/release"
floor_target="$CARGO_TARGET_DIR/jetstream-floor"
CARGO_TARGET_DIR="$floor_target" cargo build --release --quiet --manifest-path scripts/jetstream_floor/Cargo.toml
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

# The server's CPU seconds (user + system) so far, or since $1 of them.
server_cpu() { awk -v hz="$(getconf CLK_TCK)" -v since="${1:-0}" '{ printf "%.2f", ($14 + $15) / hz - since }' "/proc/$server/stat"; }

for consumer in ordered push; do
    before=$(server_cpu)
    "$floor_target/release/jetstream-floor" "$url" openclaw-events "$consumer"
    echo "  server CPU meanwhile: $(server_cpu "$before") s"
done

rm -rf "$work/lake"
before=$(server_cpu)
/usr/bin/time -f "%e %M" -o "$work/time.log" "$rel/tracelake" export --lake "$work/lake" --nats-url "$url" > "$work/export.out"
read -r secs kb < "$work/time.log"
cat "$work/export.out"
awk -v s="$secs" -v kb="$kb" -v n="$events" 'BEGIN { printf "tracelake export: %.2f s, %.0f events/s, %.0f MB peak RSS\n", s, n / s, kb / 1024 }'
echo "  server CPU meanwhile: $(server_cpu "$before") s"

rm -rf "$work/baseline-lake"
/usr/bin/time -f "%e %M" -o "$work/time.log" "$rel/examples/export_per_sequence" "$url" openclaw-events "$work/baseline-lake" "$baseline_events"
read -r secs kb < "$work/time.log"
awk -v s="$secs" -v kb="$kb" -v n="$baseline_events" 'BEGIN { printf "per-sequence baseline (%d events): %.2f s, %.0f events/s, %.0f MB peak RSS\n", n, s, n / s, kb / 1024 }'
