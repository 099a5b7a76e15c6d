#!/usr/bin/env python3
"""Run SQL with the real DuckDB and DuckDB's own extensions.

Run it with the python of an environment scripts/pyenv.sh made
(.venv/duckdb-1.5/bin/python or .venv/duckdb-2.0/bin/python). Extensions
come only from that environment's extensions/ folder: autoinstall is off,
so a missing extension is an error, never a download.

    realduck.py [--json] [--database FILE] [-f FILE | SQL ...]

SQL comes from -f FILE, the arguments, or standard input. Statements run in
order; each query (SELECT, CALL, PRAGMA, EXPLAIN) prints its rows as tab-separated lines (NULL
for null), or with --json one JSON object per statement:
{"sql": ..., "columns": [...], "rows": [[...], ...]} (values that JSON lacks
are strings). On the first error it prints "realduck: statement N: <error>"
on stderr and exits 1.
"""
import argparse
import json
import os
import sys

import duckdb


def text(v):
    if v is None:
        return "NULL"
    return str(v)


def main():
    ap = argparse.ArgumentParser(description="run SQL with the real DuckDB")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--database", default=":memory:")
    ap.add_argument("-f", "--file")
    ap.add_argument("sql", nargs="*")
    a = ap.parse_args()
    if a.file:
        with open(a.file) as f:
            sql = f.read()
    elif a.sql:
        sql = " ".join(a.sql)
    else:
        sql = sys.stdin.read()
    env = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    config = {
        "extension_directory": os.path.join(env, "extensions"),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": True,
    }
    con = duckdb.connect(a.database, config=config)
    for i, st in enumerate(duckdb.extract_statements(sql), 1):
        q = st.query if hasattr(st, "query") else str(st)
        try:
            cur = con.execute(q)
            cols = [d[0] for d in cur.description] if cur.description else None
            rows = cur.fetchall() if cols is not None else []
        except Exception as e:  # noqa: BLE001 - every DuckDB error is reported the same way
            print(f"realduck: statement {i}: {e}\n  {q.strip()}", file=sys.stderr)
            return 1
        kind = getattr(getattr(st, "type", None), "name", "SELECT")
        if cols is None or kind not in ("SELECT", "CALL", "PRAGMA", "EXPLAIN"):
            continue
        if a.json:
            print(json.dumps({"sql": q.strip(), "columns": cols, "rows": [list(r) for r in rows]}, default=str))
        else:
            for r in rows:
                print("\t".join(text(v) for v in r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
