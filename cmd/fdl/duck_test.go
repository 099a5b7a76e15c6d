package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fdl-dev/fdl/internal/testutil/realduck"
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
//
// The statements go to one real DuckDB session per script (scriptDuck),
// each call attaching the catalog and detaching it afterwards
// (realduck.OnLake), as a pipeline that stays up would: starting Python
// and loading the extensions for each call cost about 0.6 s of CPU, 73
// calls a store. Rows print as Go formats the session's JSON values
// (numbers without a trailing ".0"); no script reads them today.
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
	res, err := scriptDuck(ts).Query(realduck.OnLake(attach, strings.Join(args[1:], ";\n"), inline))
	for _, r := range res {
		for _, row := range r.Rows {
			cells := make([]string, len(row))
			for i, v := range row {
				cells[i] = duckText(v)
			}
			fmt.Fprintln(ts.Stdout(), strings.Join(cells, "\t"))
		}
	}
	if err != nil {
		fmt.Fprintln(ts.Stderr(), "realduck:", err)
	}
	if err == nil && mirror != "" {
		err = uploadMirror(context.Background(), filepath.Dir(catalog), mirror, dataPath)
	}
	if (err != nil) != neg {
		ts.Fatalf("duck: %v", err)
	}
}

// scriptDucks holds the real DuckDB session of each running script
// (*testscript.TestScript to *realduck.Session).
var scriptDucks sync.Map

// scriptDuck returns the script's real DuckDB session ($DUCK_PYTHON
// running $DUCK_RUNNER --session), started at its first duck command and
// ended with the script: scripts share nothing, as when each call was a
// process of its own.
func scriptDuck(ts *testscript.TestScript) *realduck.Session {
	if s, ok := scriptDucks.Load(ts); ok {
		return s.(*realduck.Session)
	}
	d := &realduck.DuckDB{Release: realduck.V15, Python: ts.Getenv("DUCK_PYTHON"), Runner: ts.Getenv("DUCK_RUNNER")}
	s, err := d.Launch()
	ts.Check(err)
	scriptDucks.Store(ts, s)
	ts.Defer(func() {
		scriptDucks.Delete(ts)
		s.Close()
	})
	return s
}

// duckText is a value of a session's result as the runner prints it
// without --json: NULL for null, numbers in their shortest form.
func duckText(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	return fmt.Sprint(v)
}
