#!/usr/bin/env bash
# The real DuckDB, for the tests and the demo: installs DuckDB and DuckDB's
# own extensions from PyPI into project-local virtual environments, and the
# extensions into a project-local extension directory, so nothing is
# downloaded when a test or the demo runs (autoinstall stays off).
#
#   scripts/pyenv.sh            install (idempotent: a stamp records the pins)
#   scripts/pyenv.sh path       print the root of the environments
#
# FDL_PYENV (default: <repo>/.venv) holds one environment per DuckDB release:
#   duckdb-1.5/  duckdb + duckdb-cli 1.5.5 (and pytz, which the Python client
#                needs to return TIMESTAMP WITH TIME ZONE values, as
#                ducklake_expire_snapshots does) with the ducklake, sqlite_scanner,
#                httpfs, aws and azure extensions 1.5.5 (DuckDB Labs'
#                signed binaries, as wheels: duckdb-extension-<name>)
#   duckdb-1.5.1/ duckdb 1.5.1 with the ducklake and sqlite_scanner extensions
#                1.5.1: the last release whose ducklake extension reads
#                DuckLake 0.4 (fdl checkout --format 0.4 makes such lakes)
#   duckdb-2.0/  duckdb 2.0.0, and each DuckDB 2.0 extension that PyPI serves
#                (duckdb-core-ext-<name>); EXTENSIONS lists the ones present
#   duckdb-1.3.2/, duckdb-1.4.4/, duckdb-1.5.1/  older releases with their
#                ducklake and sqlite extensions, which write DuckLake 0.2,
#                0.3 and 0.4 (the migration tests' writers)
# Each has extensions/ (DuckDB's extension_directory). scripts/realduck.py
# runs SQL in one of them; scripts/duckdb runs the 1.5 CLI.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${FDL_PYENV:-$PWD/.venv}
PYTHON=${PYTHON:-python3}

if [[ ${1:-} == path ]]; then
	echo "$ROOT"
	exit 0
fi

V15=1.5.5
V20=2.0.0
EXT15=(ducklake sqlite_scanner httpfs aws)
EXTRA15=(azure)
EXT20=(ducklake sqlite httpfs aws)

# install_ext VENV NAME...: install each extension the environment has as a
# wheel into VENV/extensions, through DuckDB's own INSTALL of a local file.
install_ext() {
	local venv=$1
	shift
	"$venv/bin/python" - "$venv/extensions" "$@" <<'PY'
import importlib, importlib.resources, pathlib, sys
import duckdb
extdir, names = sys.argv[1], sys.argv[2:]
con = duckdb.connect(config={"extension_directory": extdir, "autoinstall_known_extensions": False})
ver = con.sql("PRAGMA version").fetchall()[0][0]
have = []
for name in names:
    for mod in (f"duckdb_extension_{name}", f"duckdb_core_ext_{name}"):
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        base = pathlib.Path(str(importlib.resources.files(m)))
        files = list(base.rglob(f"{name}.duckdb_extension")) or list(base.rglob("*.duckdb_extension"))
        files = [f for f in files if ver in str(f)] or files
        if not files:
            continue
        con.execute(f"FORCE INSTALL '{files[0]}'")
        con.execute(f"LOAD {files[0].stem}")
        have.append(files[0].stem)
        break
print("\n".join(have))
PY
}

# make_env DIR STAMP PACKAGES...: a fresh virtual environment with exactly
# these packages, unless DIR/.stamp already says STAMP.
make_env() {
	local dir=$1 stamp=$2
	shift 2
	if [[ -f $dir/.stamp && $(cat "$dir/.stamp") == "$stamp" ]]; then
		return 1
	fi
	rm -rf "$dir"
	"$PYTHON" -m venv "$dir"
	"$dir/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
	return 0
}

mkdir -p "$ROOT"
pins15=(duckdb==$V15 duckdb-cli==$V15 duckdb-extensions==$V15 pytz)
for e in "${EXT15[@]}"; do pins15+=("duckdb-extension-${e//_/-}==$V15"); done
if make_env "$ROOT/duckdb-1.5" "${pins15[*]}" "${pins15[@]}"; then
	echo "installing DuckDB $V15 and its extensions (PyPI) into $ROOT/duckdb-1.5" >&2
	install_ext "$ROOT/duckdb-1.5" "${EXT15[@]}" >"$ROOT/duckdb-1.5/EXTENSIONS"
	echo "${pins15[*]}" >"$ROOT/duckdb-1.5/.stamp"
fi
for e in "${EXT15[@]}"; do
	grep -qx "$e" "$ROOT/duckdb-1.5/EXTENSIONS" || {
		echo "pyenv: extension $e missing from $ROOT/duckdb-1.5 (remove the folder and rerun)" >&2
		exit 1
	}
done
# Extensions added to the 1.5 environment later are installed into it as
# they are (an environment made before keeps its other packages): azure,
# for the tests that run printed lines against Azure (Azurite).
for e in "${EXTRA15[@]}"; do
	if ! grep -qx "$e" "$ROOT/duckdb-1.5/EXTENSIONS"; then
		echo "installing DuckDB's $e extension $V15 (PyPI) into $ROOT/duckdb-1.5" >&2
		"$ROOT/duckdb-1.5/bin/pip" install --quiet --disable-pip-version-check "duckdb-extension-${e//_/-}==$V15" >&2
		install_ext "$ROOT/duckdb-1.5" "$e" >>"$ROOT/duckdb-1.5/EXTENSIONS"
		grep -qx "$e" "$ROOT/duckdb-1.5/EXTENSIONS" || {
			echo "pyenv: extension $e could not be installed into $ROOT/duckdb-1.5" >&2
			exit 1
		}
	fi
done

# DuckDB 2.0: the core is on PyPI; its extensions only where PyPI serves
# them (duckdb-core-ext-<name>). Those that are not served are left out and
# EXTENSIONS says which are present; the tests that need one skip with that
# reason (they never download at run time).
if make_env "$ROOT/duckdb-2.0" "duckdb==$V20" "duckdb==$V20"; then
	echo "installing DuckDB $V20 (PyPI) into $ROOT/duckdb-2.0" >&2
	for e in "${EXT20[@]}"; do
		"$ROOT/duckdb-2.0/bin/pip" install --quiet --disable-pip-version-check "duckdb-core-ext-$e==$V20" >/dev/null 2>&1 ||
			echo "  duckdb-core-ext-$e==$V20 is not served: DuckDB 2.0 runs without $e" >&2
	done
	install_ext "$ROOT/duckdb-2.0" "${EXT20[@]}" >"$ROOT/duckdb-2.0/EXTENSIONS"
	echo "duckdb==$V20" >"$ROOT/duckdb-2.0/.stamp"
fi

# The older releases whose ducklake extension writes an older DuckLake format
# (1.3.2: 0.2, 1.4.4: 0.3, 1.5.1: 0.4), with the sqlite extension: the
# migration tests write lakes with them, and check that what each reads from
# its own catalog is what DuckDB 1.5.5 reads from fdl's migrated copy; 1.5.1
# also runs the ATTACH lines fdl prints for 0.4 catalogs.
for v in 1.3.2 1.4.4 1.5.1; do
	pins=(duckdb==$v duckdb-extensions==$v pytz duckdb-extension-ducklake==$v duckdb-extension-sqlite-scanner==$v)
	if make_env "$ROOT/duckdb-$v" "${pins[*]}" "${pins[@]}"; then
		echo "installing DuckDB $v and its ducklake and sqlite extensions (PyPI) into $ROOT/duckdb-$v" >&2
		install_ext "$ROOT/duckdb-$v" ducklake sqlite_scanner >"$ROOT/duckdb-$v/EXTENSIONS"
		echo "${pins[*]}" >"$ROOT/duckdb-$v/.stamp"
	fi
	for e in ducklake sqlite_scanner; do
		grep -qx "$e" "$ROOT/duckdb-$v/EXTENSIONS" || {
			echo "pyenv: extension $e missing from $ROOT/duckdb-$v (remove the folder and rerun)" >&2
			exit 1
		}
	done
done
echo "$ROOT"
