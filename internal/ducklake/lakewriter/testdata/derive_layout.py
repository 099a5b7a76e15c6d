#!/usr/bin/env python3
"""Derive the table layout of a new DuckLake 1.1 catalog from the
extension's source, for TestCreate11MatchesExtensionSource.

    derive_layout.py GIT_DIR COMMIT > layout-1.1.json

GIT_DIR is a clone of github.com/duckdb/ducklake (bare is fine). The
script reads, at COMMIT, the CREATE TABLE statements a new catalog gets:
src/storage/ducklake_metadata_manager.cpp GetCreateTableStatements (with
GetDataFileTableStatement / GetDeleteFileTableStatement), as overridden by
src/metadata_manager/ducklake_metadata_manager_v1_1.cpp
(DuckLakeMetadataManagerV1_1: its own data/delete file statements and one
more table appended). It runs them, with {METADATA_CATALOG} replaced, in a
DuckDB database attached as "cat" and prints, per table, what the Go test's
layoutOf lists: DuckDB's CREATE statement, the columns (index, name, type,
nullability, default) and the constraints. Run it with the DuckDB the Go
binding has (scripts/pyenv.sh: .venv/duckdb-2.0/bin/python) so that both
print CREATE statements alike.
"""
import json
import re
import subprocess
import sys

import duckdb


def show(git_dir, commit, path):
    return subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def body(src, signature):
    """The text of the function whose definition starts with signature."""
    i = src.index(signature)
    j = src.index("{", i)
    depth = 0
    for k in range(j, len(src)):
        if src[k] == "{":
            depth += 1
        elif src[k] == "}":
            depth -= 1
            if depth == 0:
                return src[j + 1:k]
    raise ValueError(signature)


LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def literals(text):
    """The concatenation of the C++ string literals in text."""
    return "".join(bytes(m.group(1), "utf-8").decode("unicode_escape") for m in LITERAL.finditer(text))


def main():
    git_dir, commit = sys.argv[1], sys.argv[2]
    base = show(git_dir, commit, "src/storage/ducklake_metadata_manager.cpp")
    v11 = show(git_dir, commit, "src/metadata_manager/ducklake_metadata_manager_v1_1.cpp")
    data_file = literals(body(v11, "string DuckLakeMetadataManagerV1_1<Base>::GetDataFileTableStatement()"))
    delete_file = literals(body(v11, "string DuckLakeMetadataManagerV1_1<Base>::GetDeleteFileTableStatement()"))
    create = body(base, "string DuckLakeMetadataManager::GetCreateTableStatements()")
    statements = []
    for arg in re.findall(r"statements\.push_back\((.*?)\);\n", create, re.S):
        if "GetDataFileTableStatement()" in arg:
            statements.append(data_file)
        elif "GetDeleteFileTableStatement()" in arg:
            statements.append(delete_file)
        else:
            statements.append(literals(arg))
    # The 1.1 manager appends to the base statements.
    appended = body(v11, "string DuckLakeMetadataManagerV1_1<Base>::GetCreateTableStatements()")
    statements.append(literals(appended.split("result +=", 1)[1]))
    con = duckdb.connect()
    con.execute("ATTACH ':memory:' AS cat")
    for s in statements:
        con.execute(s.replace("{METADATA_CATALOG}", "cat.main"))
    out = {}
    for name, sql in con.execute("SELECT table_name, sql FROM duckdb_tables() WHERE database_name = 'cat'").fetchall():
        out[name] = ["sql: " + sql]
    for row in con.execute("""SELECT table_name, column_index, column_name, data_type, is_nullable, column_default
            FROM duckdb_columns() WHERE database_name = 'cat' ORDER BY table_name, column_index""").fetchall():
        out[row[0]].append("column: " + " ".join("NULL" if v is None else str(v).lower() if isinstance(v, bool) else str(v) for v in row[1:]))
    for row in con.execute("""SELECT table_name, constraint_type, constraint_column_names::VARCHAR, constraint_text
            FROM duckdb_constraints() WHERE database_name = 'cat' ORDER BY ALL""").fetchall():
        out[row[0]].append("constraint: " + " ".join(str(v) for v in row[1:]))
    json.dump({"source": f"duckdb/ducklake {commit}", "tables": out}, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
