package main

import (
	"context"
	"database/sql"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
)

// lakewriteCmd is the script command
//
//	lakewrite CATALOG OP ARGS...
//
// which adds one DuckLake snapshot to CATALOG with the spec-following
// writer, as a DuckDB user's statement would. OPs:
//
//	create-table SCHEMA TABLE COL:TYPE[,COL:TYPE…]
//	insert SCHEMA TABLE QUERY        (one Parquet file)
//	inline SCHEMA TABLE QUERY        (inlined rows)
//	delete SCHEMA TABLE PREDICATE
//	compact SCHEMA TABLE
//	rename-table SCHEMA OLD NEW
//	drop-table SCHEMA TABLE
//	add-column SCHEMA TABLE COL:TYPE
//	drop-column SCHEMA TABLE COL
//	rename-column SCHEMA TABLE OLD NEW
//	create-view SCHEMA VIEW SQL
//	drop-view SCHEMA VIEW
//	create-schema SCHEMA
func lakewriteCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: lakewrite CATALOG OP ARGS...")
	}
	ctx := context.Background()
	w, err := lakewriter.Open(ctx, ts.MkAbs(args[0]))
	if err != nil {
		if neg {
			ts.Logf("lakewrite: %v", err)
			return
		}
		ts.Fatalf("lakewrite: %v", err)
	}
	defer func() { ts.Check(w.Close()) }()
	w.Author = "script"
	op, a := args[1], args[2:]
	need := func(n int) {
		if len(a) != n {
			ts.Fatalf("lakewrite %s: want %d arguments, got %d", op, n, len(a))
		}
	}
	col := func(spec string) lakewriter.ColumnDef {
		name, typ, ok := strings.Cut(spec, ":")
		if !ok {
			ts.Fatalf("column %q is not NAME:TYPE", spec)
		}
		return lakewriter.ColumnDef{Name: name, Type: typ, Nullable: true}
	}
	switch op {
	case "create-table":
		need(3)
		var cols []lakewriter.ColumnDef
		for _, s := range strings.Split(a[2], ",") {
			cols = append(cols, col(s))
		}
		_, err = w.CreateTable(ctx, a[0], a[1], cols)
	case "insert":
		need(3)
		err = w.Insert(ctx, a[0], a[1], a[2])
	case "inline":
		need(3)
		err = w.InsertInlined(ctx, a[0], a[1], a[2])
	case "delete":
		need(3)
		err = w.DeleteWhere(ctx, a[0], a[1], a[2])
	case "compact":
		need(2)
		err = w.Compact(ctx, a[0], a[1])
	case "rename-table":
		need(3)
		err = w.RenameTable(ctx, a[0], a[1], a[2])
	case "drop-table":
		need(2)
		err = w.DropTable(ctx, a[0], a[1])
	case "add-column":
		need(3)
		err = w.AddColumn(ctx, a[0], a[1], col(a[2]))
	case "drop-column":
		need(3)
		err = w.DropColumn(ctx, a[0], a[1], a[2])
	case "rename-column":
		need(4)
		err = w.RenameColumn(ctx, a[0], a[1], a[2], a[3])
	case "create-view":
		need(3)
		err = w.CreateView(ctx, a[0], a[1], a[2])
	case "drop-view":
		need(2)
		err = w.DropView(ctx, a[0], a[1])
	case "create-schema":
		need(1)
		err = w.CreateSchema(ctx, a[0])
	default:
		ts.Fatalf("lakewrite: unknown op %q", op)
	}
	if (err != nil) != neg {
		ts.Fatalf("lakewrite %s: %v", op, err)
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
