#!/usr/bin/env python3
"""catalogshape: the shape of a DuckLake catalog file, as the database that
holds it reports it, for comparing the empty catalog fdl makes with the one
DuckDB's ducklake extension makes.

    catalogshape.py duckdb|sqlite FILE

Prints JSON: {"tables": {name: {"columns": [[name, type, nullable,
default]...], "keys": [...]}}, "rows": {name: [[values as text]...]}}.
DuckDB files are read with DuckDB (duckdb_columns, duckdb_constraints);
SQLite files with Python's sqlite3 (PRAGMA table_info, index_list), as
declared. Rows are every table's rows, sorted, as text.
"""
import json
import sqlite3
import sys

import duckdb


def duck(path):
    con = duckdb.connect(":memory:")
    con.execute(f"ATTACH '{path}' AS c (READ_ONLY)")
    out = {}
    for t, c, typ, nullable, default in con.execute(
            "SELECT table_name, column_name, data_type, is_nullable, column_default FROM duckdb_columns() "
            "WHERE database_name = 'c' ORDER BY table_name, column_index").fetchall():
        out.setdefault(t, {"columns": [], "keys": []})["columns"].append([c, typ, nullable, default])
    for t, kind, cols in con.execute(
            "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
            "WHERE database_name = 'c' ORDER BY 1, 2, 3").fetchall():
        out[t]["keys"].append(f"{kind}({', '.join(cols)})")
    rows = {}
    for t in out:
        rows[t] = sorted([[None if v is None else str(v) for v in r] for r in con.execute(f'SELECT * FROM c."{t}"').fetchall()],
                         key=lambda r: [x or "" for x in r])
    return out, rows


def lite(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out, rows = {}, {}
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
        info = con.execute(f"PRAGMA table_info('{t}')").fetchall()
        cols = [[c[1], c[2], not c[3], c[4]] for c in info]
        keys = [f"PRIMARY KEY({c[1]})" for c in info if c[5]]
        for idx in con.execute(f"PRAGMA index_list('{t}')").fetchall():
            names = [r[2] for r in con.execute(f"PRAGMA index_info('{idx[1]}')").fetchall()]
            keys.append(f"INDEX unique={idx[2]} origin={idx[3]}({', '.join(names)})")
        out[t] = {"columns": cols, "keys": sorted(keys)}
        rows[t] = sorted([[None if v is None else str(v) for v in r] for r in con.execute(f'SELECT * FROM "{t}"').fetchall()],
                         key=lambda r: [x or "" for x in r])
    return out, rows


def main():
    form, path = sys.argv[1], sys.argv[2]
    tables, rows = duck(path) if form == "duckdb" else lite(path)
    print(json.dumps({"tables": tables, "rows": rows}))


if __name__ == "__main__":
    main()
