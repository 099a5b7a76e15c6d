#!/usr/bin/env bash
# End-to-end benchmark for issue 2: freeze (commit) + push + fresh checkout
# of a generated DuckLake catalog, against cp + sha256sum of the same file,
# in the same run, at two sizes to show peak memory does not grow with the
# catalog. Usage: scripts/bench-e2e.sh [MIB...]   (default: 64 256)
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/fdl ./cmd/fdl
go build -o bin/benchgen ./internal/cmd/benchgen
FDL="$PWD/bin/fdl"
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(64 256)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench.XXXXXX")
trap 'rm -rf "$OUT"' EXIT

# measure LABEL CMD...: wall seconds and peak RSS (MiB) of one command.
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$@" >/dev/null 2>"$OUT/err" || { cat "$OUT/err"; exit 1; }
  read -r secs kib <"$OUT/time"
  printf '%-28s %8.2f s %8.1f MiB peak RSS\n' "$label" "$secs" "$(echo "$kib / 1024" | bc -l)"
  echo "$secs" >"$OUT/last"
}

for mib in "${SIZES[@]}"; do
  d="$OUT/$mib"; mkdir -p "$d"
  ./bin/benchgen "$d/big.duckdb" "$mib"
  size=$(stat -c %s "$d/big.duckdb")
  echo "== catalog of $((size / 1048576)) MiB ($size bytes)"
  sync
  measure "cp + sha256sum" sh -c "cp '$d/big.duckdb' '$d/copy.duckdb' && sha256sum '$d/copy.duckdb'"
  base=$(cat "$OUT/last")
  "$FDL" init "$d/repo" >/dev/null
  measure "checkout --from (freeze)" "$FDL" checkout "$d/repo" "$d/w" --from "$d/big.duckdb"
  measure "commit (freeze)" "$FDL" -C "$d/w" commit -m bench
  t1=$(cat "$OUT/last")
  measure "push" "$FDL" -C "$d/w" push
  t2=$(cat "$OUT/last")
  measure "fresh checkout (sha256)" "$FDL" checkout "$d/repo" "$d/fresh"
  t3=$(cat "$OUT/last")
  total=$(echo "$t1 + $t2 + $t3" | bc -l)
  printf 'freeze+push+checkout %.2f s = %.1f x (cp + sha256sum %.2f s)\n' "$total" "$(echo "$total / $base" | bc -l)" "$base"
  rm -rf "$d"
done
