#!/usr/bin/env python3
"""Writes COPIES copies of a file of real events to standard output, each copy's sessions,
event ids and message texts made its own (a suffix), so that a lake of real traffic's
shape (long, unique texts) can be made at any size:

    python3 scripts/replicate_traces.py tests/data/realworld/tau-airline.events.jsonl 180 > real1m.jsonl
"""

import json
import sys


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, copies = sys.argv[1], int(sys.argv[2])
    with open(path, encoding="utf-8") as f:
        events = [json.loads(line) for line in f if line.strip()]
    out = sys.stdout
    for n in range(copies):
        for event in events:
            copy = dict(event, id=f"{event['id']}-{n}", session=f"{event['session']}-{n}", ts=event["ts"] + n * 1000)
            payload = dict(event.get("payload") or {})
            if "sessionId" in payload:
                payload["sessionId"] = copy["session"]
            if isinstance(payload.get("content"), str):
                payload["content"] = f"{payload['content']} (#{n})"
            copy["payload"] = payload
            out.write(json.dumps(copy) + "\n")


if __name__ == "__main__":
    main()
