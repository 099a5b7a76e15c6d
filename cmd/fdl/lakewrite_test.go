package main

import (
	"context"
	"database/sql"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
)

// lakewriteCmd is the script command "lakewrite CATALOG OP ARGS...": one
// DuckLake snapshot made with the spec-following writer, as a DuckDB user's
// statement would (operations: lakewriter.Ops). The scripts write with the
// real DuckDB (duck); they use lakewrite only where it cannot serve, each
// use saying why (a 0.x catalog, a crafted one).
func lakewriteCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: lakewrite CATALOG OP ARGS...")
	}
	ctx := context.Background()
	// On an object store the data goes through $DATA, a local mirror of
	// the repository's data/ (writeLake).
	// lakewriter: the scripts' old DuckLake formats and crafted catalogs, which the real extension does not write.
	err := writeLake(nil, ts.MkAbs(args[0]), ts.Getenv("DATA"), func(w *lakewriter.Writer) error {
		w.Author = "script"
		return lakewriter.Apply(ctx, w, args[1], args[2:])
	})
	if (err != nil) != neg {
		ts.Fatalf("lakewrite %s: %v", args[1], err)
	}
}

// sqlexecCmd is the script command "sqlexec FILE SQL": run one statement on
// a DuckDB file with plain DuckDB (to make damaged or foreign inputs).
func sqlexecCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: sqlexec FILE SQL")
	}
	db, err := sql.Open("duckdb", ts.MkAbs(args[0]))
	ts.Check(err)
	defer db.Close()
	_, err = db.Exec(args[1])
	if (err != nil) != neg {
		ts.Fatalf("sqlexec: %v", err)
	}
}
