#!/usr/bin/env bash
# Transfers at the limit: commit (freeze), push and a fresh checkout of a
# generated DuckLake catalog on a folder store, each against the anchor
# measured in the same run: cp + sync + openssl dgst -sha256 of the same
# file (copy it, make it durable, hash it: what any tool moving a
# checksummed file must do). The catalog's data files lie in the
# repository's data/ folder (benchgen -data: one empty file per data
# file), so the push's data check has every file to find. Peak RSS is
# printed for every command, at two sizes, to show memory does not grow
# with the catalog. Each figure is the best of REPEAT runs (default 3):
# the machine may be shared.
#
#   scripts/bench-e2e.sh [MIB...]        (default: 64 256)
#
# Environment: FDL_BIN (the fdl binary to measure; default: built from
# this tree), REPEAT (runs per figure), BENCH_DIR (work folder, default a
# temporary one, removed at the end), OTHER_FS (a folder on another file
# system than BENCH_DIR: adds a push whose working directory is there, so
# the catalog is copied instead of linked; default /dev/shm when it is
# another file system).
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/benchgen ./internal/cmd/benchgen
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
if [ -n "${BENCH_DIR:-}" ]; then
  mkdir -p "$BENCH_DIR"
  OUT=$(mktemp -d "$(cd "$BENCH_DIR" && pwd)/e2e.XXXXXX")
else
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-e2e.XXXXXX")
fi
OTHER=""
if [ -n "${OTHER_FS:-/dev/shm}" ] && [ -d "${OTHER_FS:-/dev/shm}" ] &&
  [ "$(stat -c %d "${OTHER_FS:-/dev/shm}")" != "$(stat -c %d "$OUT")" ]; then
  OTHER=$(mktemp -d "${OTHER_FS:-/dev/shm}/fdl-bench-e2e.XXXXXX")
fi
trap 'rm -rf "$OUT" ${OTHER:+"$OTHER"}' EXIT

# run CMD...: one timed run; sets SECS and KIB (wall seconds, peak RSS).
run() {
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$@" >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; exit 1; }
  read -r SECS KIB <"$OUT/time"
}

# best LABEL: keep the smallest SECS (and its RSS) of the runs so far.
declare -A BEST BEST_KIB
best() {
  if [ -z "${BEST[$1]:-}" ] || [ "$(echo "$SECS < ${BEST[$1]}" | bc -l)" = 1 ]; then
    BEST[$1]=$SECS
    BEST_KIB[$1]=$KIB
  fi
}

# report LABEL [ANCHOR]: print the best figure, its peak RSS and its ratio
# to the anchor's.
report() {
  local s=${BEST[$1]} k=${BEST_KIB[$1]}
  if [ -n "${2:-}" ]; then
    printf '  %-34s %7.2f s  %7.1f MiB  %5.2f x anchor\n' "$1" "$s" "$(echo "$k / 1024" | bc -l)" "$(echo "$s / ${BEST[$2]}" | bc -l)"
  else
    printf '  %-34s %7.2f s  %7.1f MiB\n' "$1" "$s" "$(echo "$k / 1024" | bc -l)"
  fi
}

# fresh DIR [W]: a new repository at DIR/repo keeping the data/ folder of
# the last one, and a working directory W (default DIR/w) holding
# DIR/big.duckdb (checked out --from, so its one snapshot is new).
fresh() {
  local d=$1 w=${2:-$1/w}
  mv "$d/repo/data" "$d/data"
  rm -rf "$d/repo" "$w" "$d/fresh"
  "$FDL" -q init "$d/repo" >/dev/null
  rm -rf "$d/repo/data"
  mv "$d/data" "$d/repo/data"
  "$FDL" -q checkout "$d/repo" "$w" --from "$d/big.duckdb" --catalog-format duckdb >/dev/null
}

for mib in "${SIZES[@]}"; do
  d="$OUT/$mib"
  mkdir -p "$d"
  # The catalog's data_path is the repository's data/ folder.
  "$FDL" -q init "$d/repo" >/dev/null
  ./bin/benchgen -data "$d/repo/data" "$d/big.duckdb" "$mib"
  size=$(stat -c %s "$d/big.duckdb")
  files=$(find "$d/repo/data" -type f | wc -l)
  echo "== catalog of $((size / 1048576)) MiB ($size bytes), $files data files in the repository"
  BEST=() BEST_KIB=()
  for _ in $(seq "$REPEAT"); do
    sync
    run sh -c "cp '$d/big.duckdb' '$d/copy.duckdb' && sync && openssl dgst -sha256 '$d/copy.duckdb'"
    best anchor
    rm -f "$d/copy.duckdb"
    fresh "$d"
    sync
    run "$FDL" -C "$d/w" commit -m bench
    best commit
    sync
    run "$FDL" -C "$d/w" push
    best push
    sync
    run "$FDL" checkout "$d/repo" "$d/fresh" --catalog-format duckdb
    best checkout
    if [ -n "$OTHER" ]; then
      fresh "$d" "$OTHER/w"
      "$FDL" -q -C "$OTHER/w" commit -m bench >/dev/null
      sync
      run "$FDL" -C "$OTHER/w" push
      best "push (another file system)"
      rm -rf "$OTHER/w"
    fi
  done
  echo "  (best of $REPEAT runs; wall seconds, peak RSS; anchor: cp + sync + openssl dgst -sha256)"
  report anchor
  report "commit" anchor
  report "push" anchor
  report "checkout" anchor
  [ -z "$OTHER" ] || report "push (another file system)" anchor
  rm -rf "$d"
done
