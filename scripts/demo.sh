#!/usr/bin/env bash
# make demo: the main job end to end, as a DuckDB user does it. It makes a
# folder repository and a working catalog, and writes with the real DuckDB
# CLI (scripts/duckdb: DuckDB 1.5.5 with DuckDB's ducklake and sqlite
# extensions, installed by make pyenv) running plain SQL against the ATTACH
# line fdl printed; then commits, pushes, tags from "CI", shows a refused
# push, checks out a release, verifies, retires old catalogs with gc and
# reads the ref log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$ROOT/bin:$PATH"
DUCKDB="$ROOT/scripts/duckdb"
"$DUCKDB" -c "SELECT 1" >/dev/null || { echo "demo: the real DuckDB is missing: run make pyenv" >&2; exit 1; }

DEMO=$(mktemp -d "${TMPDIR:-/tmp}/fdl-demo.XXXXXX")
trap 'rm -rf "$DEMO"' EXIT
cd "$DEMO"
export FDL_AUTHOR="demo"
say() { printf '\n\033[1m$'; printf ' %q' "$@"; printf '\033[0m\n'; "$@"; }
# attach_of FILE: the ATTACH line fdl printed (in FILE), exactly as printed.
attach_of() { grep "ATTACH OR REPLACE '" "$1" | sed 's/^ *//'; }
# sql ATTACH SQL: what a DuckDB user runs: the printed ATTACH line, then SQL.
sql() {
	printf '\n\033[1m$ duckdb\033[0m\n%s\n%s\n' "$1" "$2" | sed '3,$s/^/  /'
	"$DUCKDB" -c "$1 $2"
}

# Some data to load: 100,000 sales in a CSV file.
CSV="COPY (SELECT i AS id, ['north','south','east','west'][1 + i % 4] AS region, (i % 500) / 4.0 AS amount FROM range(100000) t(i)) TO 'sales.csv'"
printf '\n\033[1m$ duckdb -c "%s"\033[0m\n' "$CSV"
"$DUCKDB" -c "$CSV"

say fdl init sales-repo
say fdl checkout sales-repo work | tee checkout.txt
WORK=$(attach_of checkout.txt)

sql "$WORK" "CREATE TABLE lake.sales AS SELECT * FROM 'sales.csv';
SELECT region, count(*) AS orders, sum(amount) AS total FROM lake.sales GROUP BY region ORDER BY region;"
say fdl -C work status
say fdl -C work commit -m "Load 2025 sales"
say fdl -C work push

sql "$WORK" "DELETE FROM lake.sales WHERE region = 'west' AND amount > 100;
CREATE VIEW lake.totals AS SELECT region, sum(amount) AS total FROM sales GROUP BY region;"
say fdl -C work commit -m "Drop refunded western orders; add totals view"
say fdl -C work push

# CI tags a release without a checkout.
say fdl tag 2025-final --repo sales-repo
say fdl -C work log
say fdl --repo sales-repo show 2025-final | tee show.txt

# A reader queries the release with the line fdl show printed.
sql "$(attach_of show.txt)" "SELECT * FROM sales_repo_2025_final.totals ORDER BY region;
SELECT count(*) AS orders_at_first_load FROM sales_repo_2025_final.sales AT (VERSION => 1);"

# Another writer started from the first version: its push is refused (exit 3).
say fdl checkout sales-repo late --rev main~1 | tee late.txt
sql "$(attach_of late.txt)" "INSERT INTO lake.sales VALUES (999999, 'north', 1.00);"
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

# Old catalogs go, history stays: two more versions (DuckLake's own
# maintenance rewrites the table's file without the deleted rows; the old
# file stays for the versions that read it), then keep the last 2 of main
# (the tag keeps its own).
sql "$WORK" "CALL ducklake_rewrite_data_files('lake', delete_threshold => 0);"
say fdl -C work commit -m "Compact sales"
say fdl -C work push
sql "$WORK" "INSERT INTO lake.sales SELECT 100000 + i, 'north', 1.00 FROM range(10) t(i);"
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
