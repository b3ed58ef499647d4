"""Reads every table of a tracelake lake as a Delta table, as any Delta reader would.

Prints, as JSON, each table's version, rows, rows per date partition, and the values of
its key column (events: id, findings: finding_id). `--version N` reads version N.
`--engine duckdb` reads a local lake with DuckDB's delta extension (`delta_scan`) instead
of delta-rs's Python package; it prints no version.
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
parser.add_argument("--engine", choices=["deltalake", "duckdb"], default="deltalake")
args = parser.parse_args()


def duckdb_reader():
    """A DuckDB connection with the delta extension of the `duckdb-extension-delta` package
    loaded from its file (DuckDB would otherwise download it)."""
    import duckdb
    import duckdb_extension_delta

    extension = os.path.join(
        os.path.dirname(duckdb_extension_delta.__file__), "extensions", f"v{duckdb.__version__}", "delta.duckdb_extension"
    )
    con = duckdb.connect()
    con.execute(f"LOAD '{extension}'")
    return con


def read_with_duckdb(con, path):
    if not os.path.isdir(os.path.join(path, "_delta_log")):
        return None
    return con.execute(f"SELECT * FROM delta_scan('{path}')").to_arrow_table(), None


options = {k: v for k, v in os.environ.items() if k.startswith("AWS_")} if args.lake.startswith("s3://") else None
con = duckdb_reader() if args.engine == "duckdb" else None
out = {}
for name in TABLES:
    if args.table and name != args.table:
        continue
    path = f"{args.lake.rstrip('/')}/{name}"
    if con is not None:
        read = read_with_duckdb(con, path)
        if read is None:
            continue
        data, version = read
    else:
        try:
            table = DeltaTable(path, version=args.version, storage_options=options)
        except TableNotFoundError:
            continue
        data, version = table.to_pyarrow_table(), table.version()
    entry = {
        "version": version,
        "rows": data.num_rows,
        "by_date": dict(Counter(data.column("date").to_pylist())),
    }
    if name in KEYS:
        entry["keys"] = sorted(data.column(KEYS[name]).to_pylist())
    out[name] = entry
json.dump(out, sys.stdout)
sys.stdout.flush()
# Arrow's and DuckDB's native thread pools can abort the interpreter's teardown
# ("terminate called without an active exception") after all output is written.
os._exit(0)
