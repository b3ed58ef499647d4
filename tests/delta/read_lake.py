"""Reads every table of a tracelake lake as a Delta table, as any Delta reader would.

Prints, as JSON, each table's version, rows, rows per date partition, and the values of
its key column (events: id, findings: finding_id). `--version N` reads version N.
"""

import argparse
import json
import os
import sys
from collections import Counter

from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError

TABLES = ["events", "quarantine", "findings", "failures", "classifications", "outputs", "outcomes", "session_risk", "cortex_messages"]
KEYS = {"events": "id", "findings": "finding_id"}

parser = argparse.ArgumentParser()
parser.add_argument("lake", help="a directory, or an s3:// URL (credentials and endpoint from AWS_* variables)")
parser.add_argument("--table")
parser.add_argument("--version", type=int)
args = parser.parse_args()

options = {k: v for k, v in os.environ.items() if k.startswith("AWS_")} if args.lake.startswith("s3://") else None
out = {}
for name in TABLES:
    if args.table and name != args.table:
        continue
    try:
        table = DeltaTable(f"{args.lake.rstrip('/')}/{name}", version=args.version, storage_options=options)
    except TableNotFoundError:
        continue
    data = table.to_pyarrow_table()
    entry = {
        "version": table.version(),
        "rows": data.num_rows,
        "by_date": dict(Counter(data.column("date").to_pylist())),
    }
    if name in KEYS:
        entry["keys"] = sorted(data.column(KEYS[name]).to_pylist())
    out[name] = entry
json.dump(out, sys.stdout)
