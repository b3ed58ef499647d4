#!/usr/bin/env python3
"""Mutated event lines for robustness runs: bit-level (flipped bits, dropped or repeated
bytes) and token-level (a JSON token replaced by an edge value: huge and tiny numbers,
deep nesting, lone surrogates, duplicate keys, invalid UTF-8, a byte-order mark).

    python3 scripts/mutate.py --lines 100000 --seed 1 SOURCE.jsonl > mutated.jsonl
    tracelake import --lake /tmp/mutlake mutated.jsonl   # must exit 0: bad lines are quarantined
"""

import argparse
import random
import re
import sys

EDGE_TOKENS = [
    b"1e400", b"-1e400", b"1e-400", b"123456789012345678901234567890", b"-0", b"0.0000000000000000000001",
    b"NaN", b"Infinity", b"null", b"true", b"[]", b"{}", b'""',
    b"[" * 5000 + b"]" * 5000, b'{"a":' * 3000 + b"1" + b"}" * 3000,
    b'"\\ud800"', b'"\\udfff\\ud800"', b'"\\u0000"', b'"\xff\xfe"', b'"\xc3\x28"',
    b'"' + b"x" * 100000 + b'"', b"\xef\xbb\xbf",
]
TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|[{}\[\],:]')


def bit_mutation(line: bytes, rng: random.Random) -> bytes:
    data = bytearray(line)
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        i = rng.randrange(len(data))
        kind = rng.random()
        if kind < 0.6:
            data[i] ^= 1 << rng.randrange(8)
        elif kind < 0.8:
            del data[i]
        else:
            data[i:i] = data[i:i + rng.randint(1, 16)]
    return bytes(data).replace(b"\n", b" ")


def token_mutation(line: bytes, rng: random.Random) -> bytes:
    tokens = list(TOKEN.finditer(line))
    if not tokens:
        return line
    data = line
    for _ in range(rng.randint(1, 3)):
        tokens = list(TOKEN.finditer(data))
        t = rng.choice(tokens)
        kind = rng.random()
        if kind < 0.7:
            replacement = rng.choice(EDGE_TOKENS)
        elif kind < 0.85:
            # A duplicate key: the object's first member repeated.
            replacement = t.group(0) + b',"id":1,"id":"dup"' if t.group(0) == b"{" else t.group(0)
        else:
            replacement = b""
        data = data[:t.start()] + replacement + data[t.end():]
    return data.replace(b"\n", b" ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sources", nargs="+")
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    lines = [l.rstrip(b"\n") for s in args.sources for l in open(s, "rb") if l.strip()]
    out = sys.stdout.buffer
    for n in range(args.lines):
        line = rng.choice(lines)
        mutated = bit_mutation(line, rng) if n % 2 == 0 else token_mutation(line, rng)
        out.write(mutated + b"\n")


if __name__ == "__main__":
    main()
