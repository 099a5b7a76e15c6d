#!/usr/bin/env bash
# The SQLite working catalog against the DuckDB form of the same catalog,
# in the same run: a fresh `fdl checkout` (a pushed version converted to
# SQLite, ducklake.ConvertToSQLite), `fdl status` after 10 new snapshots,
# `fdl commit` of them (SQLite back to a DuckDB file, FreezeOnto), and
# `fdl pull` of that commit, once pushed, into another working directory
# at the version before (ducklake.PullSQLite), each beside the same command
# on a DuckDB working catalog. The new snapshots
# are written by DuckDB's own ducklake extension (scripts/duckdb, after
# make pyenv: nine CREATE TABLEs and a one-row INSERT), else by fdl's
# writer (lakewrite). Floors of
# the two engines on the same rows are printed too: SQLite's VACUUM INTO
# of the SQLite catalog (SQLite writing every row), and DuckDB's COPY FROM
# DATABASE of the DuckDB catalog (DuckDB writing every row). Each figure
# is the best of REPEAT runs (default 3); peak RSS from /usr/bin/time.
#
#   scripts/bench-sqlite.sh [MIB...]     (default: 64 256)
#
# Environment: FDL_BIN (the fdl binary to measure; default: built from
# this tree), REPEAT, BENCH_DIR (default: a temporary folder, removed at
# the end; generated catalogs big<MIB>[-c<COLUMNS>].duckdb there are
# reused), COLUMNS (varchar columns of benchgen's table, default 16; 2
# gives more data files and statistics rows for the same size).
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/benchgen ./internal/cmd/benchgen
go build -o bin/lakewrite ./internal/cmd/lakewrite
# FDL_BIN: measure another fdl binary (an older build, for a before/after).
if [ -n "${FDL_BIN:-}" ]; then
  FDL=$(cd "$(dirname "$FDL_BIN")" && pwd)/$(basename "$FDL_BIN")
else
  go build -o bin/fdl ./cmd/fdl
  FDL="$PWD/bin/fdl"
fi
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(64 256)
REPEAT=${REPEAT:-3}
COLUMNS=${COLUMNS:-16}
if [ -n "${BENCH_DIR:-}" ]; then
  mkdir -p "$BENCH_DIR"
  BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
  OUT=$(mktemp -d "$BENCH_DIR/sqlite.XXXXXX")
else
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-sqlite.XXXXXX")
  BENCH_DIR=$OUT
fi
trap 'rm -rf "$OUT"' EXIT
DUCKDB=""
if scripts/duckdb -c "SELECT 1" >/dev/null 2>&1; then
  DUCKDB="$PWD/scripts/duckdb"
fi

run() {
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$@" >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }
  read -r SECS KIB <"$OUT/time"
}
declare -A BEST BEST_KIB
best() {
  if [ -z "${BEST[$1]:-}" ] || [ "$(echo "$SECS < ${BEST[$1]}" | bc -l)" = 1 ]; then
    BEST[$1]=$SECS
    BEST_KIB[$1]=$KIB
  fi
}
report() {
  local s=${BEST[$1]} k=${BEST_KIB[$1]}
  if [ -n "${2:-}" ]; then
    printf '  %-40s %7.2f s  %7.1f MiB  %6.2f x %s\n' "$1" "$s" "$(echo "$k / 1024" | bc -l)" "$(echo "$s / ${BEST[$2]}" | bc -l)" "$2"
  else
    printf '  %-40s %7.2f s  %7.1f MiB\n' "$1" "$s" "$(echo "$k / 1024" | bc -l)"
  fi
}

# snapshots WD R: ten new snapshots in the working catalog of WD, in
# tables named after the run R (each run's wd pushes its commit, and the
# next run checks out that head).
snapshots() {
  local cat=$1/ducklake.duckdb attach t=bench_r$2

  if [ -f "$1/ducklake.sqlite" ]; then
    cat=$1/ducklake.sqlite
    attach="ATTACH 'ducklake:sqlite:$cat' AS lake (META_JOURNAL_MODE 'WAL', META_BUSY_TIMEOUT 5000);"
  else
    attach="ATTACH 'ducklake:$cat' AS lake;"
  fi
  if [ -n "$DUCKDB" ]; then
    local sql="INSTALL ducklake; LOAD ducklake; $attach"
    for i in $(seq 9); do sql="$sql CREATE TABLE lake.${t}_$i (i INTEGER);"; done
    sql="$sql INSERT INTO lake.${t}_1 VALUES (1);"
    "$DUCKDB" -c "$sql" >/dev/null
  else
    for i in $(seq 9); do ./bin/lakewrite "$cat" create-table main "${t}_$i" "i:int32" >/dev/null; done
    ./bin/lakewrite "$cat" inline main "${t}_1" "SELECT 1 AS i" >/dev/null
  fi
}

for mib in "${SIZES[@]}"; do
  big="$BENCH_DIR/big$mib-c$COLUMNS.duckdb"
  [ -f "$big" ] || ./bin/benchgen -columns "$COLUMNS" "$big" "$mib"
  d="$OUT/$mib"
  mkdir -p "$d"
  size=$(stat -c %s "$big")
  # A pushed version of the catalog (set-up, not measured).
  "$FDL" -q init "$d/repo" >/dev/null
  "$FDL" -q checkout "$d/repo" "$d/setup" --from "$big" --catalog-format duckdb >/dev/null
  "$FDL" -q -C "$d/setup" commit -m bench >/dev/null
  "$FDL" -q -C "$d/setup" push >/dev/null
  rm -rf "$d/setup"
  writer="fdl's writer"
  [ -z "$DUCKDB" ] || writer="DuckDB's ducklake extension"
  echo "== catalog of $((size / 1048576)) MiB ($size bytes, $COLUMNS columns), new snapshots by $writer"
  BEST=() BEST_KIB=()
  for r in $(seq "$REPEAT"); do
    rm -rf "$d/wd" "$d/ws" "$d/pd" "$d/ps" "$d/floor"*
    # Working directories that pull the version wd pushes (set-up).
    "$FDL" -q checkout "$d/repo" "$d/pd" --catalog-format duckdb >/dev/null
    "$FDL" -q checkout "$d/repo" "$d/ps" --catalog-format sqlite >/dev/null
    sync
    run "$FDL" checkout "$d/repo" "$d/wd" --catalog-format duckdb
    best "checkout, DuckDB form"
    sync
    run "$FDL" checkout "$d/repo" "$d/ws" --catalog-format sqlite
    best "checkout, SQLite"
    snapshots "$d/wd" "$r"
    snapshots "$d/ws" "$r"
    run "$FDL" -C "$d/wd" status
    best "status, DuckDB form (10 new snapshots)"
    run "$FDL" -C "$d/ws" status
    best "status, SQLite (10 new snapshots)"
    sync
    run "$FDL" -C "$d/wd" commit -m bench2
    best "commit, DuckDB form"
    sync
    run "$FDL" -C "$d/ws" commit -m bench2
    best "commit, SQLite"
    "$FDL" -q -C "$d/wd" push >/dev/null
    sync
    run "$FDL" -C "$d/pd" pull
    best "pull of that commit, DuckDB form"
    sync
    run "$FDL" -C "$d/ps" pull
    best "pull of that commit, SQLite"
    run sqlite3 "$d/ws/ducklake.sqlite" "VACUUM INTO '$d/floor.sqlite'"
    best "floor: SQLite VACUUM INTO"
    if [ -n "$DUCKDB" ]; then
      run "$DUCKDB" -c "ATTACH '$d/wd/ducklake.duckdb' AS s (READ_ONLY); ATTACH '$d/floor.duckdb' AS f; COPY FROM DATABASE s TO f;"
      best "floor: DuckDB COPY FROM DATABASE"
    fi
  done
  echo "  (best of $REPEAT runs; wall seconds, peak RSS)"
  echo "  SQLite catalog: $(( $(stat -c %s "$d/ws/ducklake.sqlite") / 1048576 )) MiB"
  report "checkout, DuckDB form"
  report "checkout, SQLite" "checkout, DuckDB form"
  report "status, DuckDB form (10 new snapshots)"
  report "status, SQLite (10 new snapshots)"
  report "commit, DuckDB form"
  report "commit, SQLite" "commit, DuckDB form"
  report "pull of that commit, DuckDB form"
  report "pull of that commit, SQLite" "pull of that commit, DuckDB form"
  report "floor: SQLite VACUUM INTO" "checkout, DuckDB form"
  [ -z "$DUCKDB" ] || report "floor: DuckDB COPY FROM DATABASE" "commit, DuckDB form"
  rm -rf "$d"
done
