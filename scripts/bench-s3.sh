#!/usr/bin/env bash
# Push and checkout of a large catalog to an S3 server on loopback, against
# the same bytes moved by the AWS SDK's transfer manager alone, in the same
# run: wall time, ratio and peak RSS of each.
#
#   scripts/bench-s3.sh [MIB] [REPS]     default: 256 MiB, best of 3
#
# Uses the server in FDL_TEST_S3_URL (with AWS_* credentials), or starts
# versitygw on 127.0.0.1 with scripts/test-servers.sh and stops it after.
set -euo pipefail
cd "$(dirname "$0")/.."
MIB=${1:-256}
REPS=${2:-3}
mkdir -p bin
go build -o bin/fdl ./cmd/fdl
go build -o bin/benchgen ./internal/cmd/benchgen
go build -o bin/s3xfer ./scripts/s3xfer
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-s3.XXXXXX")
started=
cleanup() {
  rm -rf "$OUT"
  if [[ -n $started ]]; then scripts/test-servers.sh stop; fi
}
trap cleanup EXIT
if [[ -z ${FDL_TEST_S3_URL:-} ]]; then
  scripts/test-servers.sh start >/dev/null
  started=1
  # shellcheck disable=SC1091
  source "${FDL_SERVERS_DIR:-${FDL_TOOLS:-$HOME/.cache/fdl-ci}/run}/servers.env"
fi
base=${FDL_TEST_S3_URL%%\?*}
query=${FDL_TEST_S3_URL#*\?}
./bin/s3xfer mkbucket "$FDL_TEST_S3_URL"

# measure VAR CMD...: run CMD, set VAR_s (wall seconds) and VAR_mib (peak RSS).
measure() {
  local var=$1; shift
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$@" >/dev/null 2>"$OUT/err" || { cat "$OUT/err"; exit 1; }
  read -r secs kib <"$OUT/time"
  printf -v "${var}_s" '%s' "$secs"
  printf -v "${var}_mib" '%.0f' "$(echo "$kib / 1024" | bc -l)"
}
best() { # best OLD NEW: the smaller
  if [[ -z $1 ]] || (( $(echo "$2 < $1" | bc -l) )); then echo "$2"; else echo "$1"; fi
}

./bin/benchgen "$OUT/big.duckdb" "$MIB"
echo "catalog: $(( $(stat -c %s "$OUT/big.duckdb") / 1048576 )) MiB; server: $base ($query); best of $REPS"
push_best= up_best= co_best= down_best= ver_best= cos_best=
push_rss=0 up_rss=0 co_rss=0 down_rss=0 ver_rss=0 cos_rss=0
for rep in $(seq 1 "$REPS"); do
  repo="$base/bench-$$-$rep?$query"
  w="$OUT/w$rep"
  ./bin/fdl init "$repo" >/dev/null
  ./bin/fdl checkout "$repo" "$w" --from "$OUT/big.duckdb" >/dev/null
  ./bin/fdl -C "$w" commit -m bench >/dev/null
  # push removes the local version once it is in the store: keep a copy
  # of the frozen catalog for the SDK's upload and the comparisons.
  cat="$OUT/cat$rep.duckdb"
  cp "$(ls "$w"/.fdl/versions/*/ducklake.duckdb)" "$cat"
  size=$(stat -c %s "$cat")
  sync
  measure push ./bin/fdl -q -C "$w" push
  measure up ./bin/s3xfer upload "$repo" "xfer/ducklake.duckdb" "$cat"
  measure ver ./bin/fdl -q --repo "$repo" verify
  measure co ./bin/fdl -q checkout "$repo" "$OUT/fresh$rep" --catalog-format duckdb
  measure cos ./bin/fdl -q checkout "$repo" "$OUT/freshs$rep" --catalog-format sqlite
  measure down ./bin/s3xfer download "$repo" "xfer/ducklake.duckdb" "$OUT/down$rep.duckdb"
  cmp -s "$cat" "$OUT/down$rep.duckdb" || { echo "downloaded bytes differ"; exit 1; }
  # (fdl checkout itself checks the download's sha256 against the record
  # before the file appears; the working catalog is then opened by DuckDB.)
  printf 'rep %d: push %ss (%s MiB RSS), SDK upload %ss (%s MiB); verify %ss (%s MiB), checkout duckdb %ss (%s MiB), checkout sqlite %ss (%s MiB), SDK download %ss (%s MiB)\n' \
    "$rep" "$push_s" "$push_mib" "$up_s" "$up_mib" "$ver_s" "$ver_mib" "$co_s" "$co_mib" "$cos_s" "$cos_mib" "$down_s" "$down_mib"
  push_best=$(best "$push_best" "$push_s"); up_best=$(best "$up_best" "$up_s")
  co_best=$(best "$co_best" "$co_s"); down_best=$(best "$down_best" "$down_s")
  ver_best=$(best "$ver_best" "$ver_s"); cos_best=$(best "$cos_best" "$cos_s")
  (( cos_mib > cos_rss )) && cos_rss=$cos_mib
  (( ver_mib > ver_rss )) && ver_rss=$ver_mib
  (( push_mib > push_rss )) && push_rss=$push_mib
  (( up_mib > up_rss )) && up_rss=$up_mib
  (( co_mib > co_rss )) && co_rss=$co_mib
  (( down_mib > down_rss )) && down_rss=$down_mib
  rm -rf "$w" "$OUT/fresh$rep" "$OUT/freshs$rep" "$OUT/down$rep.duckdb" "$cat"
done
mib=$(echo "$size / 1048576" | bc -l)
printf '\n%-34s %8s %10s %12s\n' "" "best s" "MiB/s" "peak RSS MiB"
printf '%-34s %8.2f %10.0f %12d\n' "fdl push (catalog+records+ref)" "$push_best" "$(echo "$mib / $push_best" | bc -l)" "$push_rss"
printf '%-34s %8.2f %10.0f %12d\n' "SDK transfer manager upload" "$up_best" "$(echo "$mib / $up_best" | bc -l)" "$up_rss"
printf '%-34s %8.2f %10.0f %12d\n' "fdl verify (download+sha256)" "$ver_best" "$(echo "$mib / $ver_best" | bc -l)" "$ver_rss"
printf '%-34s %8.2f %10.0f %12d\n' "fdl checkout, duckdb catalog" "$co_best" "$(echo "$mib / $co_best" | bc -l)" "$co_rss"
printf '%-34s %8.2f %10.0f %12d\n' "fdl checkout, sqlite (default)" "$cos_best" "$(echo "$mib / $cos_best" | bc -l)" "$cos_rss"
printf '%-34s %8.2f %10.0f %12d\n' "SDK transfer manager download" "$down_best" "$(echo "$mib / $down_best" | bc -l)" "$down_rss"
printf 'ratios: push / SDK upload = %.2f; verify / SDK download = %.2f; checkout (duckdb) / SDK download = %.2f; checkout (sqlite) / SDK download = %.2f\n' \
  "$(echo "$push_best / $up_best" | bc -l)" "$(echo "$ver_best / $down_best" | bc -l)" "$(echo "$co_best / $down_best" | bc -l)" "$(echo "$cos_best / $down_best" | bc -l)"
