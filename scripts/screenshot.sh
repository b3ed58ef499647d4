#!/usr/bin/env bash
# The README's screenshot: the demo's HTML report in headless Chromium, written to docs/report.png.
# Needs chromium, and an emoji font so that emoji in agent messages show (fonts-noto-color-emoji).
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${TRACELAKE_BIN:-${CARGO_TARGET_DIR:-target}/release/tracelake}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$bin" import --lake "$work/lake" data/sample.events.jsonl > /dev/null
"$bin" analyze --lake "$work/lake" > /dev/null
"$bin" report --lake "$work/lake" --format html --output "$work/report.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1100 \
    --screenshot="$PWD/docs/report.png" "file://$work/report.html" 2> /dev/null
echo "wrote docs/report.png"
