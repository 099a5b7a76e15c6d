#!/usr/bin/env python3
"""writer: one pipeline process for fdl's concurrent-writer acceptance test.

    writer.py ATTACH_FILE W N

Attaches the working catalog with the line in ATTACH_FILE (exactly as fdl
printed it), creates its own table t_W, then makes N snapshots: each inserts
row (W, i) into the shared table t and into t_W, i = 0..N-1, in one
transaction. A transaction that conflicts with another writer's (DuckLake's
optimistic concurrency) or finds the SQLite file busy is retried, as a
pipeline would; so is one DuckDB 1.5.5 fails with "Failed to load DuckLake -
Table entry "t_N" does not have any columns" (a race in the extension when
processes create tables at once in one SQLite catalog, seen without fdl
too); each such retry is printed. Any other error ends the process with
status 1.
"""
import os
import sys
import time

import duckdb


def main():
    attach, w, n = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
    env = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    con = duckdb.connect(":memory:", config={
        "extension_directory": os.path.join(env, "extensions"),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": True,
        # scripts/pyenv.sh LOADs each extension once, with DuckDB's signature
        # check, when it installs it; checking again at every start hashes
        # every extension loaded (0.2 s of CPU each, most of a short run).
        "allow_unsigned_extensions": True,
    })
    for st in duckdb.extract_statements(attach):
        con.execute(st.query if hasattr(st, "query") else str(st))

    def retry(sql):
        for attempt in range(200):
            try:
                con.execute("BEGIN TRANSACTION")
                con.execute(sql)
                con.execute("COMMIT")
                return
            except Exception as e:  # noqa: BLE001
                try:
                    con.execute("ROLLBACK")
                except Exception:  # noqa: BLE001
                    pass
                msg = str(e).lower()
                if "does not have any columns" in msg:
                    print(f"writer {w}: retried after DuckDB's error: {e}".replace("\n", " "))
                    continue
                if "conflict" in msg or "busy" in msg or "locked" in msg:
                    time.sleep(0.01 * (1 + attempt % 10))
                    continue
                print(f"writer {w}: {e}", file=sys.stderr)
                sys.exit(1)
        print(f"writer {w}: gave up after 200 attempts: {sql}", file=sys.stderr)
        sys.exit(1)

    retry(f"CREATE TABLE lake.t_{w} (i INTEGER, payload VARCHAR)")
    for i in range(n):
        retry(f"INSERT INTO lake.t VALUES ({w}, {i}, 'w{w} row {i}'); "
              f"INSERT INTO lake.t_{w} VALUES ({i}, repeat('x', {i % 50}))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
