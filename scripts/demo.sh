#!/usr/bin/env bash
# make demo: the main job end to end, on a DuckLake catalog built here (no
# ../shared needed). It makes a folder repository, a working catalog,
# writes snapshots the way a DuckDB user would, commits, pushes, tags from
# "CI", checks out a release and verifies everything.
set -euo pipefail
cd "$(dirname "$0")/.."
FDL="$PWD/bin/fdl"
go build -o bin/lakewrite ./internal/cmd/lakewrite
LAKEWRITE="$PWD/bin/lakewrite"

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/fdl-demo.XXXXXX")
trap 'rm -rf "$DEMO"' EXIT
cd "$DEMO"
export FDL_AUTHOR="demo"
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

say "$FDL" init sales-repo
say "$FDL" checkout sales-repo work

# A DuckDB user would now ATTACH the printed line and run SQL. The ducklake
# extension cannot be downloaded here, so fdl's spec-following writer makes
# the same snapshots and Parquet files (in sales-repo/data/).
"$LAKEWRITE" work/ducklake.duckdb create-table main sales "id:int64,region:varchar,amount:decimal(9,2)"
"$LAKEWRITE" work/ducklake.duckdb insert main sales \
  "SELECT i AS id, ['north','south','east','west'][1 + i % 4] AS region, (i % 500) / 4.0 AS amount FROM range(100000) t(i)"
say "$FDL" -C work status
say "$FDL" -C work commit -m "Load 2025 sales"
say "$FDL" -C work push

"$LAKEWRITE" work/ducklake.duckdb delete main sales "region = 'west' AND amount > 100"
"$LAKEWRITE" work/ducklake.duckdb create-view main totals "SELECT region, sum(amount) AS total FROM sales GROUP BY region"
say "$FDL" -C work commit -m "Drop refunded western orders; add totals view"
say "$FDL" -C work push

# CI tags a release without a checkout.
say "$FDL" tag 2025-final --repo sales-repo
say "$FDL" -C work log
say "$FDL" --repo sales-repo show 2025-final

# Another writer started from the first version: its push is refused (exit 3).
"$FDL" checkout sales-repo late --rev main~1 >/dev/null
"$LAKEWRITE" late/ducklake.duckdb insert main sales "SELECT 999999 AS id, 'north' AS region, 1.00 AS amount"
"$FDL" -C late commit -m "late change" >/dev/null
set +e
say "$FDL" -C late push
code=$?
set -e
echo "(exit code $code: refused, main did not move)"

say "$FDL" checkout sales-repo release --rev 2025-final
say "$FDL" --repo sales-repo verify
say ls sales-repo sales-repo/versions
echo
echo "Demo done: repository at $DEMO/sales-repo (removed on exit)."
