#!/usr/bin/env bash
# The reader's catalog cache on S3 behind a slow link: fdl attach of a
# large catalog, first (download into the cache) and second (from the
# cache), against the attach that streams the catalog to check it and
# keeps nothing; then the real DuckDB's first query through each printed
# line: the cached line (catalog on local disk) against the remote one
# (DuckDB reads the catalog over S3, range by range).
#
#   scripts/bench-attach.sh [MIB] [REPS]     default: 50 MiB, best of 3
#
# The catalog is made by internal/cmd/benchgen (data files registered, no
# Parquet written: the query is answered from the catalog, as DuckLake
# answers count(*) from its file statistics). Every request goes through
# internal/cmd/latencyproxy, which holds it LATENCY (default 20ms) as a
# cloud region would, and counts it. Uses the S3 server in FDL_TEST_S3_URL
# (with AWS_* credentials), or starts versitygw on 127.0.0.1 with
# scripts/test-servers.sh and stops it after. The real DuckDB is the one
# of FDL_PYENV (default .venv: scripts/pyenv.sh), DuckDB 1.5 with httpfs.
set -euo pipefail
cd "$(dirname "$0")/.."
MIB=${1:-50}
REPS=${2:-3}
LATENCY=${LATENCY:-20ms}
PYENV=${FDL_PYENV:-$PWD/.venv}
PY=$PYENV/duckdb-1.5/bin/python
RUNNER=$PWD/scripts/realduck.py
[[ -x $PY ]] || { echo "bench-attach: no DuckDB 1.5 at $PYENV/duckdb-1.5 (make pyenv)" >&2; exit 1; }
mkdir -p bin
for c in benchgen latencyproxy; do go build -o "bin/$c" "./internal/cmd/$c"; done
go build -o bin/fdl ./cmd/fdl
go build -o bin/s3xfer ./scripts/s3xfer
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-attach.XXXXXX")
started= proxy_pid=
cleanup() {
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null
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
query=${FDL_TEST_S3_URL#*\?}
bucket=${FDL_TEST_S3_URL%%\?*}
endpoint=$(tr '&' '\n' <<<"$query" | sed -n 's/^endpoint=//p')
./bin/s3xfer mkbucket "$FDL_TEST_S3_URL"
REPO=$bucket/bench-attach-$$?$query

# The repository, written directly (not timed).
./bin/benchgen "$OUT/big.duckdb" "$MIB" >/dev/null
./bin/fdl -q init "$REPO" >/dev/null
./bin/fdl -q checkout "$REPO" "$OUT/w" --from "$OUT/big.duckdb" --catalog-format duckdb >/dev/null
./bin/fdl -q -C "$OUT/w" commit -m bench >/dev/null
# benchgen's data path is a local folder: published as a single-machine
# setup would (the query reads only the catalog).
FDL_ALLOW_LOCAL_DATA=1 ./bin/fdl -q -C "$OUT/w" push >/dev/null
size=$(./bin/fdl --json --repo "$REPO" show main --no-verify | sed -n 's/.*"size": \([0-9]*\).*/\1/p' | head -1)

./bin/latencyproxy -delay "$LATENCY" -target "$endpoint" -addr-file "$OUT/proxy.addr" &
proxy_pid=$!
for _ in $(seq 1 50); do [[ -s $OUT/proxy.addr ]] && break; sleep 0.1; done
PROXY=http://$(cat "$OUT/proxy.addr")
SLOW=$bucket/bench-attach-$$?${query/endpoint=$endpoint/endpoint=$PROXY}
reqs() { curl -s "$PROXY/.latencyproxy/count"; }
reset() { curl -s -X POST "$PROXY/.latencyproxy/reset" >/dev/null; }
now() { date +%s.%3N; }
# run VAR CMD...: run CMD (stdout to $OUT/VAR.out), set VAR_s (wall
# seconds) and VAR_n (requests through the proxy).
run() {
  local var=$1 t0 t1; shift
  reset
  t0=$(now)
  "$@" >"$OUT/$var.out" 2>"$OUT/$var.err" || { echo "bench-attach: '$*' failed:" >&2; cat "$OUT/$var.err" >&2; exit 1; }
  t1=$(now)
  printf -v "${var}_s" '%.2f' "$(echo "$t1 - $t0" | bc -l)"
  printf -v "${var}_n" '%s' "$(reqs)"
}
best() { if [[ -z $1 ]] || (( $(echo "$2 < $1" | bc -l) )); then echo "$2"; else echo "$1"; fi; }

Q="SELECT count(*) FROM lake.wide"
echo "catalog: $((size / 1048576)) MiB ($size bytes); S3 through a $LATENCY-per-request proxy; best of $REPS; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A B N
for rep in $(seq 1 "$REPS"); do
  export FDL_CACHE=$OUT/cache$rep
  run plain ./bin/fdl -q attach main --as lake --repo "$SLOW" --cache=false
  run first ./bin/fdl -q attach main --as lake --repo "$SLOW"
  run second ./bin/fdl -q attach main --as lake --repo "$SLOW"
  remote=$(cat "$OUT/plain.out") cached=$(cat "$OUT/second.out")
  [[ $cached == *"$FDL_CACHE"* ]] || { echo "bench-attach: the second line does not name the cache: $cached" >&2; exit 1; }
  run danchor "$PY" "$RUNNER" "LOAD ducklake; LOAD httpfs; SELECT 42"
  run dremote "$PY" "$RUNNER" "$remote $Q"
  run dcached "$PY" "$RUNNER" "$cached $Q"
  cmp -s "$OUT/dremote.out" "$OUT/dcached.out" || { echo "bench-attach: the two lines answer differently" >&2; exit 1; }
  printf 'rep %d: attach (no cache) %ss %s req; first --cache %ss %s req; second --cache %ss %s req; DuckDB: start+LOAD %ss, first query remote line %ss %s req, cached line %ss %s req\n' \
    "$rep" "$plain_s" "$plain_n" "$first_s" "$first_n" "$second_s" "$second_n" "$danchor_s" "$dremote_s" "$dremote_n" "$dcached_s" "$dcached_n"
  for v in plain first second danchor dremote dcached; do
    s=${v}_s n=${v}_n
    B[$v]=$(best "${B[$v]:-}" "${!s}")
    N[$v]=${!n}
  done
  rm -rf "$FDL_CACHE"
done
printf '\n%-52s %8s %9s\n' "" "best s" "requests"
printf '%-52s %8s %9s\n' "fdl attach, no cache (streams the catalog to check)" "${B[plain]}" "${N[plain]}"
printf '%-52s %8s %9s\n' "fdl attach --cache, first (downloads into the cache)" "${B[first]}" "${N[first]}"
printf '%-52s %8s %9s\n' "fdl attach --cache, second (from the cache)" "${B[second]}" "${N[second]}"
printf '%-52s %8s %9s\n' "DuckDB: start + LOAD ducklake, httpfs (anchor)" "${B[danchor]}" "${N[danchor]}"
printf '%-52s %8s %9s\n' "DuckDB: ATTACH + first query, remote line" "${B[dremote]}" "${N[dremote]}"
printf '%-52s %8s %9s\n' "DuckDB: ATTACH + first query, cached line" "${B[dcached]}" "${N[dcached]}"
printf 'query: %s -> %s\n' "$Q" "$(cat "$OUT/dcached.out")"
