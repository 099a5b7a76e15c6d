#!/usr/bin/env bash
# What the digest of published rows (docs/spec.md §24) adds to a commit:
# `fdl commit` of one new snapshot on a DuckDB working catalog whose base
# is a large pushed version (internal/cmd/benchgen), with the fdl of this
# tree beside another build (FDL_BEFORE, e.g. one built from the commit
# before the digest), in the same run; then the same on a SQLite working
# catalog with this tree's fdl. Each figure is the best of REPEAT runs
# (default 3); peak RSS from /usr/bin/time.
#
#   FDL_BEFORE=/path/to/old/fdl scripts/bench-digest.sh [MIB...]   (default: 64 256)
#
# Environment: REPEAT, SQLITE=0 (DuckDB working catalogs only), BENCH_DIR (generated catalogs big<MIB>.duckdb there
# are reused; default a temporary folder, removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/benchgen ./internal/cmd/benchgen
go build -o bin/lakewrite ./internal/cmd/lakewrite
go build -o bin/fdl ./cmd/fdl
AFTER="$PWD/bin/fdl"
BEFORE=${FDL_BEFORE:-}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(64 256)
REPEAT=${REPEAT:-3}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-digest.XXXXXX")
BENCH_DIR=${BENCH_DIR:-$OUT}
trap 'rm -rf "$OUT"' EXIT

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
  [ -n "${BEST[$1]:-}" ] || return 0
  printf '  %-44s %7.2f s  %7.1f MiB\n' "$1" "${BEST[$1]}" "$(echo "${BEST_KIB[$1]} / 1024" | bc -l)"
}
snapshot() { # one new snapshot in the working catalog file $1
  ./bin/lakewrite "$1" create-table main bench "i:int32" >/dev/null
}
# commits FDL LABEL FORMAT: REPEAT commits of one snapshot, best kept and
# printed.
commits() {
  local fdl=$1 label=$2 format=$3 file=ducklake.duckdb
  [ "$format" = duckdb ] || file=ducklake.sqlite
  for _ in $(seq "$REPEAT"); do
    rm -rf "$d/wd"
    "$fdl" -q checkout "$d/repo" "$d/wd" --catalog-format "$format" >/dev/null
    snapshot "$d/wd/$file"
    sync
    run "$fdl" -C "$d/wd" commit -m bench2
    best "$label"
  done
  report "$label"
}

for mib in "${SIZES[@]}"; do
  big="$BENCH_DIR/big$mib.duckdb"
  [ -f "$big" ] || ./bin/benchgen "$big" "$mib"
  d="$OUT/$mib"
  mkdir -p "$d"
  "$AFTER" -q init "$d/repo" >/dev/null
  "$AFTER" -q checkout "$d/repo" "$d/setup" --from "$big" --catalog-format duckdb >/dev/null
  "$AFTER" -q -C "$d/setup" commit -m bench >/dev/null
  "$AFTER" -q -C "$d/setup" push >/dev/null
  rm -rf "$d/setup"
  echo "== catalog of $(( $(stat -c %s "$big") / 1048576 )) MiB (best of $REPEAT runs; wall seconds, peak RSS)"
  BEST=() BEST_KIB=()
  [ -z "$BEFORE" ] || commits "$BEFORE" "commit, DuckDB form, before (FDL_BEFORE)" duckdb
  commits "$AFTER" "commit, DuckDB form, with the digest" duckdb
  [ -z "$BEFORE" ] || [ "${SQLITE:-1}" = 0 ] || commits "$BEFORE" "commit, SQLite, before (FDL_BEFORE)" sqlite
  [ "${SQLITE:-1}" = 0 ] || commits "$AFTER" "commit, SQLite, with the digest" sqlite
  rm -rf "$d"
done
