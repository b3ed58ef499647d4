#!/usr/bin/env bash
# Two builds of tracelake side by side: the same findings, failures and reports, and
# `analyze --full` times, alternating runs on copies of one lake.
#
#   scripts/compare_builds.sh BASE_BIN NEW_BIN GENERATED.jsonl [ROUNDS]
#
# GENERATED.jsonl: e.g. `tracelake generate --events 1000000 --seed 1 --output g.jsonl`.
# Reports are compared with ids, times and data file names left out.
set -euo pipefail
base="$(realpath "$1")" new="$(realpath "$2")" generated="$(realpath "$3")" rounds="${4:-3}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

ids() { "$new" sql --lake "$1" --format csv "SELECT count(*), md5(string_agg(finding_id || signal || severity || summary, ',' ORDER BY finding_id)) FROM findings" | tail -1; }
rows() { "$new" sql --lake "$1" --format csv "SELECT count(*) FROM $2" | tail -1; }
# Ids, times and file names vary from run to run; everything else must not.
stable() { python3 -m json.tool "$1" | sed -E 's/"[A-Za-z_]*([Ii]d|At|_at|seconds|durationMs)": *("[^"]*"|[0-9.e-]+)/"\1":X/g; s/part-[0-9a-f]+-/part-X-/g'; }

"$new" import --lake lake "$generated" > /dev/null
for round in $(seq "$rounds"); do
    for who in base new; do
        bin="$base"; [ "$who" = new ] && bin="$new"
        rm -rf copy && cp -r lake copy
        /usr/bin/time -f "$who: %e s, %M KB" "$bin" analyze --lake copy --full --format json > /dev/null 2> time.txt
        tail -1 time.txt
        ids copy > "$who.generated"
    done
done
cmp -s base.generated new.generated && echo "generated: the same findings ($(cat new.generated))" || echo "generated: FINDINGS DIFFER"

for trace in "$repo"/tests/data/realworld/*.events.jsonl; do
    name="$(basename "$trace" .events.jsonl)"
    for who in base new; do
        bin="$base"; [ "$who" = new ] && bin="$new"
        rm -rf "$who.lake"
        "$bin" import --lake "$who.lake" "$trace" > /dev/null
        "$bin" analyze --lake "$who.lake" --format json > "$who.report.json"
        { ids "$who.lake"; rows "$who.lake" failures; } > "$who.counts"
        stable "$who.report.json" > "$who.report.stable"
    done
    cmp -s base.counts new.counts && echo "$name: the same findings and failures ($(paste -sd' ' new.counts))" || echo "$name: FINDINGS DIFFER"
    cmp -s base.report.stable new.report.stable && echo "$name: the same report" || { echo "$name: REPORTS DIFFER"; diff base.report.stable new.report.stable | head -20; }
done
