#!/usr/bin/env bash
# Which DuckLake formats does each published DuckDB release's ducklake
# extension attach READ_ONLY? Establishes the readers.ducklake_extension
# table of docs/spec.md §6 (internal/ducklake/meta/formats.go) with DuckDB Labs'
# own builds from PyPI (duckdb + duckdb-extension-ducklake of one release).
#
#   scripts/ducklake-readers.sh [DIR] [RELEASE...]
#
# DIR (default: a new temporary folder) gets one virtual environment per
# release (default: 1.3.2 1.4.4 1.5.0 1.5.1 1.5.2 1.5.5). For each release
# it prints the format a new lake gets, then tries a READ_ONLY ATTACH of the
# real catalogs of ../shared/testdata/catalogs (0.1, 0.3, 0.4) and of a 1.0
# and a 0.2 lake made here, one line each. Needs PyPI; not run by the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-$(mktemp -d)}
shift || true
RELEASES=("$@")
[[ ${#RELEASES[@]} -gt 0 ]] || RELEASES=(1.3.2 1.4.4 1.5.0 1.5.1 1.5.2 1.5.5)
CATS=../shared/testdata/catalogs
mkdir -p "$DIR/cats"
for f in dltest-v01 wikigrams-v0.3 dltest-v04; do
	gunzip -c "$CATS/$f.ducklake.gz" >"$DIR/cats/$f.ducklake"
done

env_for() {
	local v=$1 venv=$DIR/v$1
	if [[ ! -x $venv/bin/python ]]; then
		python3 -m venv "$venv" >/dev/null
		"$venv/bin/pip" install -q "duckdb==$v" "duckdb-extension-ducklake==$v" >&2
	fi
	echo "$venv"
}

# make_lake RELEASE NAME: a lake with one table, written by that release.
make_lake() {
	local venv
	venv=$(env_for "$1")
	"$venv/bin/python" - "$venv" "$DIR/cats/$2.ducklake" "$DIR/cats/$2.data/" <<'PY'
import duckdb, glob, os, sys
venv, path, data = sys.argv[1:]
ext = glob.glob(os.path.join(venv, "lib/python3*/site-packages/duckdb_extension_ducklake/extensions/*/ducklake.duckdb_extension"))[0]
c = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
c.execute(f"LOAD '{ext}'")
if not os.path.exists(path):
    c.execute(f"ATTACH 'ducklake:{path}' AS n (DATA_PATH '{data}')")
    c.execute("CREATE TABLE n.t AS SELECT 1 AS i")
PY
}
make_lake 1.3.2 made-v0.2
make_lake 1.5.5 made-v1.0

for v in "${RELEASES[@]}"; do
	venv=$(env_for "$v")
	"$venv/bin/python" - "$venv" "$DIR/cats" <<'PY'
import duckdb, glob, os, shutil, sys, tempfile
venv, cats = sys.argv[1:]
ext = glob.glob(os.path.join(venv, "lib/python3*/site-packages/duckdb_extension_ducklake/extensions/*/ducklake.duckdb_extension"))[0]
def con():
    c = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    c.execute(f"LOAD '{ext}'")
    return c
tmp = tempfile.mkdtemp()
c = con()
c.execute(f"ATTACH 'ducklake:{tmp}/new.ducklake' AS n (DATA_PATH '{tmp}/d/')")
wrote = c.execute("SELECT value FROM __ducklake_metadata_n.ducklake_metadata WHERE key = 'version'").fetchall()[0][0]
print(f"DuckDB {duckdb.__version__}: a new lake is DuckLake {wrote}")
for f in ["dltest-v01", "made-v0.2", "wikigrams-v0.3", "dltest-v04", "made-v1.0"]:
    cp = os.path.join(tmp, f + ".ducklake")
    shutil.copy(os.path.join(cats, f + ".ducklake"), cp)
    try:
        con().execute(f"ATTACH 'ducklake:{cp}' AS l (READ_ONLY)")
        print(f"  {f}: attached READ_ONLY")
    except Exception as e:
        print(f"  {f}: refused: {str(e).splitlines()[0][:140]}")
PY
done
