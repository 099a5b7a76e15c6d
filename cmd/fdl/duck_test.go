package main

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// duckCmd is the script command "duck [-inline] CATALOG SQL...": run the SQL
// statements in order with the real DuckDB (1.5.5 and DuckDB's own ducklake
// extension, from the environment scripts/pyenv.sh made; $DUCK_PYTHON and
// $DUCK_RUNNER) on the working catalog CATALOG (a .duckdb or .sqlite file),
// attached as "lake" and made the default database, as a pipeline would.
// Each statement is its own transaction, so its own snapshot. Query rows go
// to the script's stdout (tab-separated), DuckDB's errors to its stderr.
//
// Data inlining is off (DATA_INLINING_ROW_LIMIT 0: every insert writes a
// Parquet file, which the scripts about data files count on) unless -inline
// is given, which keeps the extension's default. When the catalog's
// data_path is not a local folder (a repository on an object store: this
// DuckDB has no httpfs loaded), the files are written through a local
// mirror ($DATA/<digest of data_path>, with DATA_PATH and
// OVERRIDE_DATA_PATH) and then copied to the repository's data/, where the
// catalog's relative paths resolve.
func duckCmd(ts *testscript.TestScript, neg bool, args []string) {
	inline := false
	if len(args) > 0 && args[0] == "-inline" {
		inline, args = true, args[1:]
	}
	if len(args) < 2 {
		ts.Fatalf("usage: duck [-inline] CATALOG SQL...")
	}
	catalog := ts.MkAbs(args[0])
	attach, mirror, dataPath, err := lakeAttach(catalog, func(string) string { return ts.Getenv("DATA") }, inline)
	ts.Check(err)
	sql := attach + "\nUSE lake;\n" + strings.Join(args[1:], ";\n") + ";\n"
	err = ts.Exec(ts.Getenv("DUCK_PYTHON"), ts.Getenv("DUCK_RUNNER"), sql)
	if err == nil && mirror != "" {
		err = uploadMirror(context.Background(), filepath.Dir(catalog), mirror, dataPath)
	}
	if (err != nil) != neg {
		ts.Fatalf("duck: %v", err)
	}
}
