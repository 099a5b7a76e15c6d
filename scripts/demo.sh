#!/usr/bin/env bash
# make demo: the main job end to end, on a DuckLake catalog built here (no
# ../shared needed). It makes a folder repository, a working catalog,
# writes snapshots the way a DuckDB user would, commits, pushes, tags from
# "CI", checks out a release and verifies everything.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$PATH"
go build -o bin/lakewrite ./internal/cmd/lakewrite

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/fdl-demo.XXXXXX")
trap 'rm -rf "$DEMO"' EXIT
cd "$DEMO"
export FDL_AUTHOR="demo"
# catalog DIR: the working catalog fdl made in DIR (SQLite or DuckDB form).
catalog() { ls "$1"/ducklake.sqlite "$1"/ducklake.duckdb 2>/dev/null | head -n 1; }
say() { printf '\n\033[1m$'; printf ' %q' "$@"; printf '\033[0m\n'; "$@"; }

say fdl init sales-repo
say fdl checkout sales-repo work

# A DuckDB user would now ATTACH the printed line and run SQL. The ducklake
# extension cannot be downloaded here, so fdl's spec-following writer makes
# the same snapshots and Parquet files (in sales-repo/data/).
lakewrite "$(catalog work)" create-table main sales "id:int64,region:varchar,amount:decimal(9,2)"
lakewrite "$(catalog work)" insert main sales \
  "SELECT i AS id, ['north','south','east','west'][1 + i % 4] AS region, (i % 500) / 4.0 AS amount FROM range(100000) t(i)"
say fdl -C work status
say fdl -C work commit -m "Load 2025 sales"
say fdl -C work push

lakewrite "$(catalog work)" delete main sales "region = 'west' AND amount > 100"
lakewrite "$(catalog work)" create-view main totals "SELECT region, sum(amount) AS total FROM sales GROUP BY region"
say fdl -C work commit -m "Drop refunded western orders; add totals view"
say fdl -C work push

# CI tags a release without a checkout.
say fdl tag 2025-final --repo sales-repo
say fdl -C work log
say fdl --repo sales-repo show 2025-final

# Another writer started from the first version: its push is refused (exit 3).
fdl checkout sales-repo late --rev main~1 >/dev/null
lakewrite "$(catalog late)" insert main sales "SELECT 999999 AS id, 'north' AS region, 1.00 AS amount"
fdl -C late commit -m "late change" >/dev/null
set +e
say fdl -C late push
code=$?
set -e
echo "(exit code $code: refused, main did not move)"

say fdl checkout sales-repo release --rev 2025-final
say fdl --repo sales-repo verify
say ls sales-repo sales-repo/versions
echo "(HEAD.lock and refs/heads/main.lock are the lock files of compare-and-swap; listings never show them)"

# Old catalogs go, history stays: two more versions (one compacts the
# table's files), then keep the last 2 of main (the tag keeps its own).
lakewrite "$(catalog work)" compact main sales
say fdl -C work commit -m "Compact sales"
say fdl -C work push
lakewrite "$(catalog work)" insert main sales "SELECT 100000 + i AS id, 'north' AS region, 1.00 AS amount FROM range(10) t(i)"
say fdl -C work commit -m "Late north orders"
say fdl -C work push
say fdl retention --repo sales-repo --keep-last 2
say fdl gc --repo sales-repo
say fdl gc --repo sales-repo --yes
say fdl -C work log
say fdl --repo sales-repo verify --data
say fdl reflog main --repo sales-repo
echo
echo "Demo done: repository at $DEMO/sales-repo (removed on exit)."
