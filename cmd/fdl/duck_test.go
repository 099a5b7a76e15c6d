package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/sqlquote"
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
	w, err := lakewriter.Open(context.Background(), catalog)
	ts.Check(err)
	dataPath := w.DataPath()
	ts.Check(w.Close())

	opts := []string{}
	if !inline {
		opts = append(opts, "DATA_INLINING_ROW_LIMIT 0")
	}
	var mirror string
	if strings.Contains(dataPath, "://") {
		sum := sha256.Sum256([]byte(dataPath))
		mirror = filepath.Join(ts.Getenv("DATA"), hex.EncodeToString(sum[:6]))
		ts.Check(os.MkdirAll(mirror, 0o755))
		opts = append(opts, "DATA_PATH "+sqlquote.String(filepath.ToSlash(mirror)+"/"), "OVERRIDE_DATA_PATH true")
	}
	target := "ducklake:" + filepath.ToSlash(catalog)
	if strings.HasSuffix(catalog, ".sqlite") {
		target = "ducklake:sqlite:" + filepath.ToSlash(catalog)
	}
	attach := "ATTACH " + sqlquote.String(target) + " AS lake"
	if len(opts) > 0 {
		attach += " (" + strings.Join(opts, ", ") + ")"
	}
	sql := attach + ";\nUSE lake;\n" + strings.Join(args[1:], ";\n") + ";\n"
	err = ts.Exec(ts.Getenv("DUCK_PYTHON"), ts.Getenv("DUCK_RUNNER"), sql)
	if err == nil && mirror != "" {
		err = uploadMirror(context.Background(), filepath.Dir(catalog), mirror, dataPath)
	}
	if (err != nil) != neg {
		ts.Fatalf("duck: %v", err)
	}
}
