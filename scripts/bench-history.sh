#!/usr/bin/env bash
# History at scale: fdl's history commands on a repository of N versions
# (default 10,000: an hourly job's year), each figure beside its anchor
# measured in the same run.
#
#   scripts/bench-history.sh [N] [REPS]      default: 10000 versions, best of 3
#
# The repositories are built through fdl's library by internal/cmd/histgen
# (N-2 retired versions with records, markers and history packs, and 2
# real versions pushed with Repo.Push, the head holding a real catalog),
# once on a folder and once on S3 (versitygw on 127.0.0.1, started with
# scripts/test-servers.sh unless FDL_TEST_S3_URL names a server). The S3
# figures go through internal/cmd/latencyproxy, which holds each request
# 20 ms (LATENCY) as a cloud region would, and counts the requests.
#
# Figures: full `fdl log` on the folder against `git log` of N commits
# (goal <= 2x); on S3, cold (a new process each time): full log (goal
# <= 3 s), `log -n 20` (<= 0.5 s), `show main~100`, `show main@SEQ` of a
# version 100 back, and an accepted and a refused push of a new version
# (<= 1 s plus the upload; the anchor is the SDK's upload of the same
# catalog through the proxy).
#
# FDL_BEFORE=/path/to/an/older/fdl measures that binary too, on the same
# repositories (its S3 figures once, not best of REPS: they can take
# minutes each; BEFORE_S3=0 skips them). FDL_BIN measures another binary
# in place of this tree's.
# FDL_BENCH_CACHE keeps histgen's working catalog between runs (default
# ${TMPDIR:-/tmp}/fdl-bench-history-N.duckdb; making it takes minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
REPS=${2:-3}
LATENCY=${LATENCY:-20ms}
mkdir -p bin
for c in histgen latencyproxy lakewrite; do go build -o "bin/$c" "./internal/cmd/$c"; done
go build -o bin/fdl ./cmd/fdl
go build -o bin/s3xfer ./scripts/s3xfer
FDL=${FDL_BIN:-$PWD/bin/fdl}
BEFORE=${FDL_BEFORE:-}
CACHE=${FDL_BENCH_CACHE:-${TMPDIR:-/tmp}/fdl-bench-history-$N.duckdb}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-history.XXXXXX")
started= proxy_pid=
cleanup() {
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null
  rm -rf "$OUT"
  if [[ -n $started ]]; then scripts/test-servers.sh stop; fi
}
trap cleanup EXIT

# now: seconds since the epoch, to the millisecond.
now() { date +%s.%3N; }
# timed RC CMD...: run CMD (its output to $OUT/last.out), which must exit
# with RC; print the wall seconds.
timed() {
  local want=$1 t0 rc=0; shift
  t0=$(now)
  "$@" >"$OUT/last.out" 2>"$OUT/last.err" || rc=$?
  if [[ $rc != "$want" ]]; then
    echo "bench: '$*' exited $rc, want $want:" >&2
    cat "$OUT/last.err" >&2
    exit 1
  fi
  echo "$(now) - $t0" | bc -l | xargs printf '%.3f'
}
# best RC CMD...: the smallest of REPS timed runs.
best() {
  local b= t i
  for i in $(seq 1 "$REPS"); do
    t=$(timed "$@")
    if [[ -z $b ]] || (($(echo "$t < $b" | bc -l))); then b=$t; fi
  done
  echo "$b"
}
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.1fx'; }

echo "== building a repository of $N versions on a folder (histgen)"
FOLDER=$OUT/folder
TMPDIR=/dev/shm ./bin/histgen -n "$N" -cache "$CACHE" "$FOLDER"

echo "== git: $N commits (git fast-import)"
GIT=$OUT/git
git init -q -b main "$GIT"
awk -v n="$N" 'BEGIN {
  t = 1700000000
  for (i = 1; i <= n; i++) {
    msg = sprintf("hourly load %d\n\nrows from the source system up to %d\n", i, t + i * 3600)
    printf "commit refs/heads/main\ncommitter loader <loader@example.org> %d +0000\ndata %d\n%s\n", t + i * 3600, length(msg), msg
  }
}' | git -C "$GIT" fast-import --quiet
git -C "$GIT" log --oneline | wc -l | xargs echo "git commits:"

git_s=$(best 0 git -C "$GIT" log)
log_s=$(best 0 "$FDL" --repo "$FOLDER" log)
logn_s=$(best 0 "$FDL" --repo "$FOLDER" log -n 20)
printf '\n%-44s %10s %10s %s\n' "folder store" "fdl" "anchor" "ratio (goal)"
printf '%-44s %9ss %9ss %s\n' "full log of $N vs git log of $N commits" "$log_s" "$git_s" "$(ratio "$log_s" "$git_s") (<= 2x)"
printf '%-44s %9ss\n' "log -n 20" "$logn_s"
if [[ -n $BEFORE ]]; then
  blog_s=$(best 0 "$BEFORE" --repo "$FOLDER" log)
  blogn_s=$(best 0 "$BEFORE" --repo "$FOLDER" log -n 20)
  printf '%-44s %9ss %9ss %s\n' "before: full log" "$blog_s" "$git_s" "$(ratio "$blog_s" "$git_s")"
  printf '%-44s %9ss\n' "before: log -n 20" "$blogn_s"
fi

echo
echo "== S3 through a $LATENCY-per-request proxy"
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
S3=$bucket/bench-history-$$?$query
TMPDIR=/dev/shm ./bin/histgen -n "$N" -cache "$CACHE" "$S3"
./bin/latencyproxy -delay "$LATENCY" -target "$endpoint" -addr-file "$OUT/proxy.addr" &
proxy_pid=$!
for _ in $(seq 1 50); do [[ -s $OUT/proxy.addr ]] && break; sleep 0.1; done
PROXY=http://$(cat "$OUT/proxy.addr")
SLOW=$bucket/bench-history-$$?${query/endpoint=$endpoint/endpoint=$PROXY}
reqs() { curl -s "$PROXY/.latencyproxy/count"; }
reset() { curl -s -X POST "$PROXY/.latencyproxy/reset" >/dev/null; }
# s3 LABEL RC CMD...: best of REPS (or once, with ONCE=1), with the
# requests of the last run.
s3() {
  local label=$1 t n; shift
  reset
  if [[ ${ONCE:-} == 1 ]]; then t=$(timed "$@"); else t=$(best "$@"); fi
  n=$(reqs)
  [[ ${ONCE:-} == 1 ]] || n=$((n / REPS))
  printf '%-44s %9ss %6s requests %s\n' "$label" "$t" "$n" "${GOAL:-}"
}

# A new version on top of main in working directory DIR (not timed).
prepare() {
  local bin=$1 dir=$2
  "$bin" -q checkout "$SLOW" "$dir" --catalog-format duckdb >/dev/null
  ./bin/lakewrite "$dir/ducklake.duckdb" inline main loads "SELECT 42 AS k" >/dev/null
  "$bin" -q -C "$dir" commit -m "bench push" >/dev/null
}

measure_s3() {
  local bin=$1 who=$2
  local back=$((N - 100))
  GOAL="(<= 3 s)" s3 "$who: full log, cold" 0 "$bin" --repo "$SLOW" log
  GOAL="(<= 0.5 s)" s3 "$who: log -n 20" 0 "$bin" --repo "$SLOW" log -n 20
  GOAL= s3 "$who: show main~100" 0 "$bin" --repo "$SLOW" show main~100
  GOAL= s3 "$who: show main@$back" 0 "$bin" --repo "$SLOW" show "main@$back"
  prepare "$bin" "$OUT/$who-a"
  prepare "$bin" "$OUT/$who-b"
  local size
  size=$(stat -c %s "$(ls "$OUT/$who-a"/.fdl/versions/*/ducklake.duckdb)")
  cp "$(ls "$OUT/$who-a"/.fdl/versions/*/ducklake.duckdb)" "$OUT/cat.duckdb"
  local up
  up=$(timed 0 ./bin/s3xfer upload "$SLOW" "xfer/ducklake.duckdb" "$OUT/cat.duckdb")
  GOAL="(<= 1 s + upload: the SDK uploads the $((size / 1024)) KiB catalog in ${up}s)" ONCE=1 s3 "$who: accepted push" 0 "$bin" -C "$OUT/$who-a" push
  GOAL="(<= 1 s)" ONCE=1 s3 "$who: refused push" 3 "$bin" -C "$OUT/$who-b" push
}

printf '%-44s %10s\n' "" "fdl"
measure_s3 "$FDL" now
if [[ -n $BEFORE && ${BEFORE_S3:-1} == 1 ]]; then
  REPS_SAVE=$REPS
  REPS=1 measure_s3 "$BEFORE" before
  REPS=$REPS_SAVE
fi
