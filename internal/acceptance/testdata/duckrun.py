#!/usr/bin/env python3
"""duckrun: the real DuckDB (and DuckDB's own ducklake extension) for fdl's
acceptance tests. Run it with the python of an environment scripts/pyenv.sh
made; extensions load only from that environment (autoinstall off).

    duckrun.py [--observe ALIAS] [--inspect ALIAS] [--snapshots IDS] [--out FILE] SQLFILE

Runs the statements of SQLFILE in order in one in-memory DuckDB ("-" reads
standard input), printing each query's rows as tab-separated lines (NULL
for null), like scripts/realduck.py. On the first error it prints
"duckrun: statement N: <error>" on stderr and exits 1. Then, in the same
connection:

--observe ALIAS  what a writer sees now in the DuckLake database ALIAS, in
                 one transaction: {"snapshot": id, "time": epoch µs,
                 "tables": {"schema.table": [count, hash sum]},
                 "views": {...}} — tables and views as the extension lists
                 them (duckdb_tables(), duckdb_views()).
--inspect ALIAS  what a reader of ALIAS gets: {"snapshots": [[id, µs]...],
                 "head": {snapshot, tables, views} read without time travel,
                 "at": {"<id>": {tables, views}} read with AT (VERSION => id)
                 for each id of --snapshots (comma-separated) the catalog
                 holds; tables and views at a snapshot come from the
                 catalog's ducklake_table / ducklake_view rows visible then.

The JSON goes to --out (default: standard output). A table's hash sum is
sum(hash(row)) as a decimal string ("0" for an empty table).
"""
import re
import argparse
import json
import os
import sys

import duckdb


def connect():
    env = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    return duckdb.connect(":memory:", config={
        "extension_directory": os.path.join(env, "extensions"),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": True,
        # scripts/pyenv.sh LOADs each extension once, with DuckDB's signature
        # check, when it installs it; checking again at every start hashes
        # every extension loaded (0.2 s of CPU each, most of a short run).
        "allow_unsigned_extensions": True,
    })


def text(v):
    return "NULL" if v is None else str(v)


def run_sql(con, sql):
    try:
        statements = duckdb.extract_statements(sql)
    except Exception as e:  # noqa: BLE001
        print(f"duckrun: {e}", file=sys.stderr)
        sys.exit(1)
    for i, st in enumerate(statements, 1):
        q = st.query if hasattr(st, "query") else str(st)
        try:
            cur = con.execute(q)
            cols = cur.description
            rows = cur.fetchall() if cols else []
        except Exception as e:  # noqa: BLE001 - every DuckDB error is reported the same way
            print(f"duckrun: statement {i}: {e}\n  {q.strip()}", file=sys.stderr)
            sys.exit(1)
        kind = getattr(getattr(st, "type", None), "name", "SELECT")
        if cols and kind in ("SELECT", "CALL", "PRAGMA", "EXPLAIN"):
            for r in rows:
                print("\t".join(text(v) for v in r))
    sys.stdout.flush()


def ident(s):
    return '"' + s.replace('"', '""') + '"'


def lit(s):
    return "'" + s.replace("'", "''") + "'"


def measure(con, alias, schema, name, at=None):
    q = f"SELECT count(*), coalesce(sum(hash(x)), 0)::VARCHAR FROM {ident(alias)}.{ident(schema)}.{ident(name)} AS x"
    if at is not None:
        q += f" AT (VERSION => {int(at)})"
    try:
        n, h = con.execute(q).fetchall()[0]
    except Exception as e:  # noqa: BLE001
        raise RuntimeError(f"{q}: {e}") from None
    return [n, h]


def objects_now(con, alias):
    tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? ORDER BY 1, 2",
                         [alias]).fetchall()
    views = con.execute("SELECT schema_name, view_name FROM duckdb_views() WHERE database_name = ? AND NOT internal ORDER BY 1, 2",
                        [alias]).fetchall()
    return tables, views


def metadata_catalog(con, alias):
    """The database holding alias's DuckLake tables: the METADATA_CATALOG an
    fdl line names (__ducklake_metadata_<alias>_<8 hex digits>), else the
    extension's default name."""
    names = [r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()]
    base = "__ducklake_metadata_" + alias
    for n in names:
        if re.fullmatch(re.escape(base) + r"_[0-9a-f]{8}", n):
            return n
    return base


def objects_at(con, alias, snap):
    meta = ident(metadata_catalog(con, alias))
    vis = lambda t: f"{t}.begin_snapshot <= {snap} AND ({t}.end_snapshot IS NULL OR {t}.end_snapshot > {snap})"
    tables = con.execute(f"""SELECT s.schema_name, t.table_name FROM {meta}.ducklake_table t
        JOIN {meta}.ducklake_schema s ON s.schema_id = t.schema_id AND {vis('s')}
        WHERE {vis('t')} ORDER BY 1, 2""").fetchall()
    views = con.execute(f"""SELECT s.schema_name, v.view_name FROM {meta}.ducklake_view v
        JOIN {meta}.ducklake_schema s ON s.schema_id = v.schema_id AND {vis('s')}
        WHERE {vis('v')} ORDER BY 1, 2""").fetchall()
    return tables, views


def state(con, alias, tables, views, at=None):
    return {
        "tables": {f"{s}.{n}": measure(con, alias, s, n, at) for s, n in tables},
        "views": {f"{s}.{n}": measure(con, alias, s, n, at) for s, n in views},
    }


def observe(con, alias):
    con.execute("BEGIN TRANSACTION")
    snap = con.execute(f"SELECT id FROM ducklake_current_snapshot({lit(alias)})").fetchall()[0][0]
    us = con.execute(f"SELECT epoch_us(snapshot_time) FROM {ident(alias)}.snapshots() WHERE snapshot_id = ?", [snap]).fetchall()[0][0]
    out = {"snapshot": snap, "time": us}
    out.update(state(con, alias, *objects_now(con, alias)))
    con.execute("COMMIT")
    return out


def inspect(con, alias, wanted):
    snaps = con.execute(f"SELECT snapshot_id, epoch_us(snapshot_time) FROM {ident(alias)}.snapshots() ORDER BY 1").fetchall()
    head = con.execute(f"SELECT id FROM ducklake_current_snapshot({lit(alias)})").fetchall()[0][0]
    tables, views = objects_now(con, alias)
    out = {"snapshots": [list(s) for s in snaps], "head": {"snapshot": head}, "at": {}}
    out["head"].update(state(con, alias, tables, views))
    # what the catalog's rows say is visible at the head (compared with
    # the extension's own listing by the Go side)
    mt, mv = objects_at(con, alias, head)
    out["head"]["catalog_tables"] = [f"{s}.{n}" for s, n in mt]
    out["head"]["catalog_views"] = [f"{s}.{n}" for s, n in mv]
    have = {s for s, _ in snaps}
    for s in wanted:
        if s in have:
            out["at"][str(s)] = state(con, alias, *objects_at(con, alias, s), at=s)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--observe")
    ap.add_argument("--inspect")
    ap.add_argument("--snapshots", default="")
    ap.add_argument("--out")
    ap.add_argument("sqlfile")
    a = ap.parse_args()
    sql = sys.stdin.read() if a.sqlfile == "-" else open(a.sqlfile).read()
    con = connect()
    run_sql(con, sql)
    res = None
    try:
        if a.observe:
            res = observe(con, a.observe)
        elif a.inspect:
            wanted = [int(s) for s in a.snapshots.split(",") if s]
            res = inspect(con, a.inspect, wanted)
    except Exception as e:  # noqa: BLE001
        print(f"duckrun: reading {a.observe or a.inspect}: {e}", file=sys.stderr)
        return 1
    if res is not None:
        data = json.dumps(res)
        if a.out:
            with open(a.out, "w") as f:
                f.write(data)
        else:
            print(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
