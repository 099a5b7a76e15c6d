#!/usr/bin/env bash
# Benchmark of SQLite working catalogs: a fresh `fdl checkout` (DuckDB
# version -> SQLite, ducklake.ConvertToSQLite), `fdl status` and `fdl commit`
# of a SQLite working catalog (SQLite -> DuckDB, Freeze) of generated
# catalogs, against plain baselines in the same run: cp + sha256sum of the
# DuckDB catalog, DuckDB's EXPORT DATABASE of it to CSV (reads every row),
# and sqlite3's VACUUM INTO of the SQLite catalog (writes every row). Time
# and peak RSS from /usr/bin/time.
#
#   scripts/bench-sqlite.sh [MIB...]     (default: 64 256)
#
# BENCH_DIR (default: a temporary folder, removed at the end) holds the
# generated catalogs as big<MIB>.duckdb; existing ones are reused and kept.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/fdl ./cmd/fdl
go build -o bin/benchgen ./internal/cmd/benchgen
FDL="$PWD/bin/fdl"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(64 256)
if [ -n "${BENCH_DIR:-}" ]; then
  mkdir -p "$BENCH_DIR"
  BENCH_DIR=$(cd "$BENCH_DIR" && pwd)
  OUT=$(mktemp -d "$BENCH_DIR/run.XXXXXX")
else
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-sqlite.XXXXXX")
  BENCH_DIR=$OUT
fi
trap 'rm -rf "$OUT"' EXIT

# measure LABEL CMD...: wall seconds and peak RSS (MiB) of one command.
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$@" >/dev/null 2>"$OUT/err" || { cat "$OUT/err"; exit 1; }
  read -r secs kib <"$OUT/time"
  printf '%-34s %8.2f s %8.1f MiB peak RSS\n' "$label" "$secs" "$(echo "$kib / 1024" | bc -l)"
}

for mib in "${SIZES[@]}"; do
  big="$BENCH_DIR/big$mib.duckdb"
  [ -f "$big" ] || ./bin/benchgen "$big" "$mib"
  d="$OUT/$mib"; mkdir -p "$d"
  size=$(stat -c %s "$big")
  echo "== catalog of $((size / 1048576)) MiB ($size bytes)"
  # A pushed version of the catalog (set-up, not measured).
  "$FDL" -q init "$d/repo" >/dev/null
  "$FDL" -q checkout "$d/repo" "$d/setup" --from "$big" --catalog-format duckdb >/dev/null
  "$FDL" -q -C "$d/setup" commit -m bench >/dev/null
  "$FDL" -q -C "$d/setup" push >/dev/null
  rm -rf "$d/setup"
  sync
  measure "cp + sha256sum (DuckDB file)" sh -c "cp '$big' '$d/copy.duckdb' && sha256sum '$d/copy.duckdb'"
  rm -f "$d/copy.duckdb"
  measure "DuckDB EXPORT DATABASE to CSV" ./bin/benchgen -csv "$big" "$d/csv"
  rm -rf "$d/csv"
  measure "checkout (DuckDB -> SQLite)" "$FDL" checkout "$d/repo" "$d/w"
  echo "   ducklake.sqlite: $(( $(stat -c %s "$d/w/ducklake.sqlite") / 1048576 )) MiB"
  measure "sqlite3 VACUUM INTO (SQLite copy)" sqlite3 "$d/w/ducklake.sqlite" "VACUUM INTO '$d/vacuum.sqlite'"
  rm -f "$d/vacuum.sqlite"
  # One new snapshot, so there is something to commit.
  sqlite3 "$d/w/ducklake.sqlite" "INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, strftime('%Y-%m-%d %H:%M:%f+00', 'now'), schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1"
  measure "status (reads the SQLite catalog)" "$FDL" -C "$d/w" status
  measure "commit (SQLite -> DuckDB)" "$FDL" -C "$d/w" commit -m bench2
  rm -rf "$d"
done
