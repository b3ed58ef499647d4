#!/usr/bin/env bash
# `tracelake compact` on a lake of many small `collect` commits: one client sends OTLP/JSON
# requests one after another, each answered once committed, so each is a commit of its own
# (its events spread over two days); then `compact` merges each partition's files, and
# `vacuum --retain 0s` deletes the replaced ones. The rows must be the same throughout.
#   scripts/bench_compact.sh [REQUESTS]   (default 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
requests="${1:-2000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracelake-target}"
bin="$CARGO_TARGET_DIR/release/tracelake"
cargo build --release --quiet --bin tracelake
work="${BENCH_DIR:-$(mktemp -d)}"; mkdir -p "$work"
lake="$work/compact-lake"; rm -rf "$lake"
port=$(free_port)
echo "compact: $requests collect commits; $(nproc) cores, $(date -u +%Y-%m-%d)"
"$bin" collect --lake "$lake" --listen "127.0.0.1:$port" --commit-ms 1 > "$work/collect.out" 2> "$work/collect.err" &
wait_for_port "$port"
python3 - "$port" "$requests" <<'PY'
import json, sys, time, urllib.request
port, n = int(sys.argv[1]), int(sys.argv[2])
day = 86_400 * 10**9
start = (int(time.time()) // 86_400 - 2) * day
t0 = time.time(); t_block = t0
for i in range(n):
    ts = start + (i % 2) * day + i * 10**6
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"tool_{i % 7}",
             "gen_ai.tool.call.id": f"call-{i}", "gen_ai.conversation.id": f"conv-{i % 50}"}
    span = {"traceId": f"{i + 1:032x}", "spanId": f"{i + 1:016x}", "name": "execute_tool",
            "startTimeUnixNano": str(ts), "endTimeUnixNano": str(ts + 5 * 10**5),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}
    body = json.dumps({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                                          "scopeSpans": [{"spans": [span]}]}]}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", body, {"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
    if (i + 1) % 1000 == 0:
        # A commit should cost what it changes, not what the lake already holds.
        now = time.time()
        print(f"requests {i - 998}-{i + 1}: {(now - t_block):.2f} ms each"); t_block = now
print(f"sent {n} requests, one commit each, in {time.time() - t0:.1f} s")
PY
pkill -TERM -f "tracelake collect --lake $lake" || true
while pgrep -f "tracelake collect --lake $lake" >/dev/null; do sleep 0.2; done

rows() { "$bin" sql --lake "$lake" --format csv "SELECT count(*), count(DISTINCT id), sum(CAST(ts AS BIGINT)) FROM events" | tail -1; }
files() { find "$lake/events" -name '*.parquet' -not -path '*_delta_log*' | wc -l; }
start=$(date +%s.%N); before=$(rows); took=$(echo "$(date +%s.%N) - $start" | bc)
echo "before:  $(files) events files; rows, ids, checksum: $before (the query: $took s)"
/usr/bin/time -f "compact: %e s, peak RSS %M KB" "$bin" compact --lake "$lake"
start=$(date +%s.%N); after=$(rows); took=$(echo "$(date +%s.%N) - $start" | bc)
echo "after:   events files on disk $(files) (the replaced ones kept); rows, ids, checksum: $after (the query: $took s)"
"$bin" status --lake "$lake" | grep -E '^(tables|revision|replaced):'
/usr/bin/time -f "vacuum: %e s" "$bin" vacuum --lake "$lake" --retain 0s | tail -1
echo "vacuumed: $(files) events files on disk; rows, ids, checksum: $(rows)"
[ "$before" = "$after" ] && [ "$after" = "$(rows)" ] && echo "same rows throughout"
