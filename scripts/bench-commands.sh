#!/usr/bin/env bash
# What a small catalog costs each fdl command: the daily loop of a
# pipeline on a folder repository, each command's CPU time (user + system)
# and wall time beside its anchor, measured in the same run: the real
# DuckDB CLI (scripts/duckdb, DuckDB 1.5 with its ducklake extension)
# attaching the same working catalog and reading one table, the least a
# user's own step in the loop costs.
#
#   scripts/bench-commands.sh [ROUNDS]      default: 6 rounds
#
# The session: fdl init, fdl checkout (a new lake, SQLite working
# catalog), then ROUNDS rounds of (DuckDB inserts rows, fdl status, fdl
# commit, fdl push, fdl pull in a second working directory), then fdl log, fdl verify --data, fdl diff of the first
# and last versions, fdl show, fdl attach, and fdl checkout of the second
# version (DuckDB and SQLite forms). Each figure is the median of its
# runs (one run for the commands run once); CPU and peak RSS from
# /usr/bin/time. FDL_BIN measures another fdl binary (an older build, for
# a before/after).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-6}
if [[ -n ${FDL_BIN:-} ]]; then
  FDL=$(cd "$(dirname "$FDL_BIN")" && pwd)/$(basename "$FDL_BIN")
else
  mkdir -p bin
  go build -o bin/fdl ./cmd/fdl
  FDL=$PWD/bin/fdl
fi
DUCKDB=$PWD/scripts/duckdb
if ! "$DUCKDB" -c "SELECT 1" >/dev/null 2>&1; then
  echo "bench-commands: the DuckDB CLI is not installed; run: make pyenv" >&2
  exit 1
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/fdl-bench-commands.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
TIMES=$OUT/times.tsv
: >"$TIMES"

# run NAME CMD...: run CMD (which must succeed) under /usr/bin/time and
# append NAME, wall s, user s, sys s, peak KiB to $TIMES.
run() {
  local name=$1; shift
  if ! /usr/bin/time -o "$OUT/t" -f "%e %U %S %M" "$@" >"$OUT/last.out" 2>"$OUT/last.err"; then
    echo "bench-commands: '$*' failed:" >&2
    cat "$OUT/last.err" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$name" "$(tail -n 1 "$OUT/t" | tr ' ' '\t')" >>"$TIMES"
}

cd "$OUT"
run "fdl init" "$FDL" -q init repo
run "fdl checkout (new lake, SQLite)" "$FDL" -q checkout repo wd
attach="ATTACH 'ducklake:sqlite:$OUT/wd/ducklake.sqlite' AS lake (META_JOURNAL_MODE 'WAL', META_BUSY_TIMEOUT 5000);"
"$DUCKDB" -c "$attach CREATE TABLE lake.events (id BIGINT, name VARCHAR, happened TIMESTAMP);" >/dev/null
for r in $(seq "$ROUNDS"); do
  "$DUCKDB" -c "$attach INSERT INTO lake.events SELECT range + $((r * 1000)), 'e' || range, TIMESTAMP '2026-01-01' + INTERVAL (range) MINUTE FROM range(100);" >/dev/null
  run "anchor: DuckDB attaches and reads" "$DUCKDB" -c "$attach SELECT count(*) FROM lake.events;"
  run "fdl status" "$FDL" -q -C wd status
  run "fdl commit" "$FDL" -q -C wd commit -m "round $r"
  run "fdl push" "$FDL" -q -C wd push
  # Another working directory, checked out after the first push, pulls
  # each later one.
  if [[ $r == 1 ]]; then
    "$FDL" -q checkout repo wd2 >/dev/null
  else
    run "fdl pull (SQLite)" "$FDL" -q -C wd2 pull
  fi
done
run "fdl log" "$FDL" -q --repo repo log
run "fdl verify --data" "$FDL" -q --repo repo verify --data
run "fdl diff main@1 main" "$FDL" -q --repo repo diff main@1 main
run "fdl show main" "$FDL" -q --repo repo show main
run "fdl attach main" "$FDL" -q --repo repo attach main
run "fdl checkout main@2 (DuckDB form)" "$FDL" -q checkout repo old-duck --rev main@2 --catalog-format duckdb
run "fdl checkout main@2 (SQLite)" "$FDL" -q checkout repo old-lite --rev main@2 --catalog-format sqlite

# The report: per name, its runs, median wall, median CPU, peak RSS, and
# the median CPU against the anchor's.
python3 - "$TIMES" "$ROUNDS" <<'EOF'
import sys, statistics
rows = {}
order = []
for line in open(sys.argv[1]):
    name, wall, user, sys_, kib = line.rstrip("\n").split("\t")
    if name not in rows:
        rows[name] = []
        order.append(name)
    rows[name].append((float(wall), float(user) + float(sys_), int(kib)))
anchor = "anchor: DuckDB attaches and reads"
a = statistics.median(c for _, c, _ in rows[anchor])
print(f"== what a small catalog costs each command ({sys.argv[2]} rounds of 100 rows; medians)")
print(f"  {'command':40} {'runs':>4} {'wall s':>7} {'CPU s':>6} {'x anchor':>8} {'peak MiB':>8}")
for name in [anchor] + [n for n in order if n != anchor]:
    v = rows[name]
    wall = statistics.median(w for w, _, _ in v)
    cpu = statistics.median(c for _, c, _ in v)
    peak = max(k for _, _, k in v) / 1024
    print(f"  {name:40} {len(v):>4} {wall:>7.3f} {cpu:>6.3f} {cpu / a:>8.2f} {peak:>8.0f}")
EOF
