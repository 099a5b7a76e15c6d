#!/usr/bin/env python3
"""Run SQL with the real DuckDB and DuckDB's own extensions.

Run it with the python of an environment scripts/pyenv.sh made
(.venv/duckdb-1.5/bin/python or .venv/duckdb-2.0/bin/python). Extensions
come only from that environment's extensions/ folder: autoinstall is off,
so a missing extension is an error, never a download.

    realduck.py [--json] [--database FILE] [-f FILE | SQL ...]
    realduck.py --session [--database FILE]
    realduck.py --serve


SQL comes from -f FILE, the arguments, or standard input. Statements run in
order; each query (SELECT, CALL, PRAGMA, EXPLAIN) prints its rows as tab-separated lines (NULL
for null), or with --json one JSON object per statement:
{"sql": ..., "columns": [...], "rows": [[...], ...]} (values that JSON lacks
are strings). On the first error it prints "realduck: statement N: <error>"
on stderr and exits 1.

With --session it keeps one connection open (a notebook or pipeline that
stays up) and serves requests: each line of standard input is one JSON
string of SQL statements, run in order as above; each answer is one line,
{"results": [<one object per query, as with --json>]} or, at the first
failing statement, {"error": "statement N: <error>"}. It ends at the end
of its input.

With --serve it runs one-shot requests without starting again for each
(the test harness keeps a few such processes): each line of standard
input is one JSON object {"sql": ..., "json": bool, "env": {...}, "cwd":
...}; each is run as one run of the script would run it — a fresh
in-memory DuckDB with the same configuration, in the environment and
working directory given — and answered with one line: {"results": [...]}
(json) or {"text": ...} (the tab-separated lines), or {"error":
"statement N: <error>"}. Anything DuckDB prints goes to standard error,
not into the answers.
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


def run(con, sql, emit):
    """Runs sql's statements in order, calling emit with the result of each
    query as it completes ({"sql", "columns", "rows"}); raises RuntimeError
    naming the failing statement."""
    for i, st in enumerate(duckdb.extract_statements(sql), 1):
        q = st.query if hasattr(st, "query") else str(st)
        try:
            cur = con.execute(q)
            cols = [d[0] for d in cur.description] if cur.description else None
            rows = cur.fetchall() if cols is not None else []
        except Exception as e:  # noqa: BLE001 - every DuckDB error is reported the same way
            raise RuntimeError(f"statement {i}: {e}\n  {q.strip()}") from e
        kind = getattr(getattr(st, "type", None), "name", "SELECT")
        if cols is None or kind not in ("SELECT", "CALL", "PRAGMA", "EXPLAIN"):
            continue
        emit({"sql": q.strip(), "columns": cols, "rows": [list(r) for r in rows]})


def session(con):
    for line in sys.stdin:
        if not line.strip():
            continue
        out = []
        try:
            run(con, json.loads(line), out.append)
            ans = {"results": out}
        except Exception as e:  # noqa: BLE001 - reported to the caller
            ans = {"error": str(e)}
        print(json.dumps(ans, default=str), flush=True)
    return 0


def serve(config):
    # Answers go to a private copy of standard output; file descriptor 1
    # becomes standard error, so nothing DuckDB prints can break a line.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        os.environ.clear()
        os.environ.update(req.get("env") or {})
        out = []
        try:
            os.chdir(req.get("cwd") or "/")
            con = duckdb.connect(":memory:", config=config)
            try:
                run(con, req["sql"], out.append)
            finally:
                con.close()
            if req.get("json"):
                ans = {"results": out}
            else:
                ans = {"text": "".join("\t".join(text(v) for v in r) + "\n" for res in out for r in res["rows"])}
        except Exception as e:  # noqa: BLE001 - reported to the caller
            ans = {"error": str(e)}
        answers.write(json.dumps(ans, default=str) + "\n")
        answers.flush()
    return 0


def main():
    ap = argparse.ArgumentParser(description="run SQL with the real DuckDB")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--session", action="store_true")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--database", default=":memory:")
    ap.add_argument("-f", "--file")
    ap.add_argument("sql", nargs="*")
    a = ap.parse_args()
    env = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    config = {
        "extension_directory": os.path.join(env, "extensions"),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": True,
        # scripts/pyenv.sh LOADs each extension once, with DuckDB's signature
        # check, when it installs it; checking again at every start hashes
        # every extension loaded (0.2 s of CPU each, most of a short run).
        "allow_unsigned_extensions": True,
    }
    if a.serve:
        return serve(config)
    con = duckdb.connect(a.database, config=config)
    if a.session:
        return session(con)
    if a.file:
        with open(a.file) as f:
            sql = f.read()
    elif a.sql:
        sql = " ".join(a.sql)
    else:
        sql = sys.stdin.read()

    def emit(res):
        if a.json:
            print(json.dumps(res, default=str))
        else:
            for r in res["rows"]:
                print("\t".join(text(v) for v in r))

    try:
        run(con, sql, emit)
    except RuntimeError as e:
        print(f"realduck: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
