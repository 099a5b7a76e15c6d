#!/usr/bin/env bash
# fdl mirror at scale, beside the copies it replaces (docs/performance.md,
# "Mirrors"):
#
#   scripts/bench-mirror.sh [N]      default: 10,000 versions
#
# The repositories are those of scripts/bench-history.sh, built by
# internal/cmd/histgen (N-2 retired versions with records, markers and
# history packs, 2 real versions pushed with Repo.Push), once on a folder
# and once on S3 (versitygw on 127.0.0.1: FDL_TEST_S3_URL, from
# scripts/test-servers.sh).
#
# Folder: `fdl mirror` to a new folder against `cp -r` of the same folder
# then `sync` (goal <= 1.3x); then a mirror with nothing new.
# S3: `fdl mirror` to a new prefix against `s3xfer copy` (a listing, then a
# GET and a PUT of each object, 8 at a time: a plain object-by-object
# copy; goal <= 1.3x); then, through internal/cmd/latencyproxy (20 ms a
# request, as a cloud region; it counts the requests), a mirror with
# nothing new and one after a new version was pushed.
# FDL_BENCH_CACHE keeps histgen's working catalog between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
LATENCY=${LATENCY:-20ms}
mkdir -p bin
for c in histgen latencyproxy lakewrite; do go build -o "bin/$c" "./internal/cmd/$c"; done
go build -o bin/fdl ./cmd/fdl
go build -o bin/s3xfer ./scripts/s3xfer
FDL=$PWD/bin/fdl
CACHE=${FDL_BENCH_CACHE:-${TMPDIR:-/tmp}/fdl-bench-history-$N.duckdb}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-mirror.XXXXXX")
proxy_pid=
cleanup() {
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null
  rm -rf "$OUT"
}
trap cleanup EXIT
now() { date +%s.%3N; }
# timed CMD...: run CMD (output to $OUT/last.out); print the wall seconds.
timed() {
  local t0
  t0=$(now)
  if ! "$@" >"$OUT/last.out" 2>"$OUT/last.err"; then
    echo "bench: '$*' failed:" >&2
    cat "$OUT/last.err" >&2
    exit 1
  fi
  echo "$(now) - $t0" | bc -l | xargs printf '%.3f'
}
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2fx'; }

echo "== a repository of $N versions on a folder (histgen)"
SRC=$OUT/folder
TMPDIR=/dev/shm ./bin/histgen -n "$N" -cache "$CACHE" "$SRC" >/dev/null
objects=$(find "$SRC" -type f | wc -l)
bytes=$(du -sb "$SRC" | cut -f1)
echo "$objects files, $bytes bytes"
sync
cp_s=$(timed sh -c "cp -r '$SRC' '$OUT/cp' && sync")
mirror_s=$(timed "$FDL" mirror "$SRC" "$OUT/mirror")
again_s=$(timed "$FDL" mirror "$SRC" "$OUT/mirror")
printf '%-48s %9s %9s %s\n' "folder" "fdl" "anchor" "ratio (goal)"
printf '%-48s %8ss %8ss %s\n' "mirror to a new folder vs cp -r + sync" "$mirror_s" "$cp_s" "$(ratio "$mirror_s" "$cp_s") (<= 1.3x)"
printf '%-48s %8ss\n' "mirror again, nothing new" "$again_s"

echo
echo "== S3"
query=${FDL_TEST_S3_URL#*\?}
bucket=${FDL_TEST_S3_URL%%\?*}
endpoint=$(tr '&' '\n' <<<"$query" | sed -n 's/^endpoint=//p')
./bin/s3xfer mkbucket "$FDL_TEST_S3_URL"
name=bench-mirror-$$
S3SRC=$bucket/$name-src?$query
TMPDIR=/dev/shm ./bin/histgen -n "$N" -cache "$CACHE" "$S3SRC" >/dev/null
copy_s=$(timed ./bin/s3xfer copy "$S3SRC" "$name-copy")
s3mirror_s=$(timed "$FDL" mirror "$S3SRC" "$bucket/$name-mirror?$query")
printf '%-48s %9s %9s %s\n' "S3 (loopback)" "fdl" "anchor" "ratio (goal)"
printf '%-48s %8ss %8ss %s\n' "mirror to a new prefix vs object-by-object copy" "$s3mirror_s" "$copy_s" "$(ratio "$s3mirror_s" "$copy_s") (<= 1.3x)"

./bin/latencyproxy -delay "$LATENCY" -target "$endpoint" -addr-file "$OUT/proxy.addr" &
proxy_pid=$!
for _ in $(seq 1 50); do [[ -s $OUT/proxy.addr ]] && break; sleep 0.1; done
PROXY=http://$(cat "$OUT/proxy.addr")
slow() { echo "$bucket/$1?${query/endpoint=$endpoint/endpoint=$PROXY}"; }
reqs() { curl -s "$PROXY/.latencyproxy/count"; }
reset() { curl -s -X POST "$PROXY/.latencyproxy/reset" >/dev/null; }
reset
t=$(timed "$FDL" mirror "$(slow "$name-src")" "$(slow "$name-mirror")")
printf '%-48s %8ss %6s requests\n' "mirror again, nothing new ($LATENCY a request)" "$t" "$(reqs)"
"$FDL" -q checkout "$(slow "$name-src")" "$OUT/w" --catalog-format duckdb >/dev/null
./bin/lakewrite "$OUT/w/ducklake.duckdb" inline main loads "SELECT 42 AS k" >/dev/null
"$FDL" -q -C "$OUT/w" commit -m "bench mirror" >/dev/null
"$FDL" -q -C "$OUT/w" push >/dev/null
reset
t=$(timed "$FDL" mirror "$(slow "$name-src")" "$(slow "$name-mirror")")
printf '%-48s %8ss %6s requests\n' "mirror of one new version ($LATENCY a request)" "$t" "$(reqs)"
