#!/usr/bin/env python3
"""Publishes a JSON Lines file of raw events to a JetStream stream on OpenClaw subjects
({prefix}.{agent}.{type}), creating the stream, and waits until the stream holds them all.
For benchmarks: publishing without waiting for each acknowledgement is fast, and the
stream's message count says when the server has stored everything.

    python3 scripts/publish_jsonl.py NATS_URL STREAM FILE.jsonl [PREFIX]
"""
import asyncio
import json
import sys
import time

import nats
from nats.js.api import StreamConfig


def token(value):
    text = "".join("_" if c in ".*> \t\r\n" else c for c in str(value or ""))
    return text or "unknown"


async def main(url, stream, path, prefix="openclaw.events"):
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name=stream, subjects=[f"{prefix}.>"]))
    started = time.time()
    sent = 0
    with open(path, "rb") as lines:
        for line in lines:
            line = line.rstrip(b"\n")
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                event = {}
            await nc.publish(f"{prefix}.{token(event.get('agent'))}.{token(event.get('type'))}", line)
            sent += 1
            if sent % 50_000 == 0:
                await nc.flush()
    await nc.flush()
    while (await js.stream_info(stream)).state.messages < sent:
        await asyncio.sleep(0.1)
    print(f"published {sent} events to {stream} in {time.time() - started:.1f} s", file=sys.stderr)
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
