#!/usr/bin/env bash
# Export throughput by cores: `tracelake export` pinned (taskset) to 1..N cores while a
# local `nats-server -js` holding generated events runs on the cores above them, so that
# the exporter's cores are its own. Runs alternate over the core counts; each exports the
# whole stream into a new lake and must find every event.
#   scripts/bench_export_cores.sh [EVENTS] [RUNS] [CORES...]   (defaults 1000000, 3, then 2)
#   TRACELAKE=path runs a given binary; NATS_SERVER=path a given server.
# Publishing needs the Python package nats-py (scripts/publish_jsonl.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
events="${1:-1000000}"; runs="${2:-3}"; shift 2 || shift $#
cores=("${@:-2}"); cores=(${cores[@]})
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
bin="${TRACELAKE:-}"
[ -n "$bin" ] || { cargo build --release --quiet --bin tracelake; bin="$CARGO_TARGET_DIR/release/tracelake"; }
server="${NATS_SERVER:-nats-server}"
work="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$work"
input="$work/gen-$events.jsonl"
[ -f "$input" ] || "$bin" generate --events "$events" --seed 1 --output "$input" > /dev/null

all=$(nproc)
max=0; for n in "${cores[@]}"; do [ "$n" -gt "$max" ] && max=$n; done
[ "$max" -lt "$all" ] || { echo "the exporter on $max cores leaves none of $all to the server" >&2; exit 2; }
port=$(free_port)
rm -rf "$work/js-store"
taskset -c "$max-$((all - 1))" "$server" -js -a 127.0.0.1 -p "$port" -sd "$work/js-store" > "$work/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
wait_for_port "$port"
url="nats://127.0.0.1:$port"
taskset -c "$max-$((all - 1))" python3 scripts/publish_jsonl.py "$url" openclaw-events "$input"
echo "stream: $events events; exporter on 0..C-1 of $all cores, nats-server on $max..$((all - 1)); $(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for _ in $(seq "$runs"); do
    for n in "${cores[@]}"; do
        rm -rf "$work/lake"
        before=$(ticks "$pid")
        /usr/bin/time -f "%e %U %S %M" -o "$work/time" taskset -c "0-$((n - 1))" "$bin" export --lake "$work/lake" --nats-url "$url" > "$work/export.out"
        after=$(ticks "$pid")
        read -r secs user sys kb < "$work/time"
        got=$("$bin" sql --lake "$work/lake" --format csv "SELECT count(*) FROM events" | tail -1)
        [ "$got" = "$events" ] || { echo "exported $got events of $events" >&2; cat "$work/export.out" >&2; exit 1; }
        awk -v c="$n" -v s="$secs" -v user="$user" -v sys="$sys" -v kb="$kb" -v e="$events" \
            -v srv="$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')" \
            'BEGIN { printf "export on %2d cores %7.2f s %9.0f events/s  %6.1f s CPU  %5.0f MB peak RSS  server %5.1f s CPU\n", c, s, e / s, user + sys, kb / 1024, srv }'
    done
done
