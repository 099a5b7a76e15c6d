package lakewriter

import (
	"context"
	"fmt"
	"strings"
)

// Ops lists the operations Apply takes, with their arguments.
const Ops = `  create-table SCHEMA TABLE COL:TYPE[,COL:TYPE…]
  insert SCHEMA TABLE QUERY        rows of a DuckDB SELECT, into one Parquet file
  inline SCHEMA TABLE QUERY        rows of a DuckDB SELECT, inlined in the catalog
  delete SCHEMA TABLE PREDICATE    delete the matching rows (delete files, as the extension does)
  compact SCHEMA TABLE             compaction as the extension does it (rewrite or merge adjacent files)
  rename-table SCHEMA OLD NEW
  drop-table SCHEMA TABLE
  add-column SCHEMA TABLE COL:TYPE
  drop-column SCHEMA TABLE COL
  rename-column SCHEMA TABLE OLD NEW
  create-view SCHEMA VIEW SQL
  drop-view SCHEMA VIEW
  create-schema SCHEMA
  restore SNAPSHOT                 the state of SNAPSHOT, as a new snapshot
  revert AFTER UPTO                undo snapshots AFTER+1..UPTO, as a new snapshot`

// Apply runs one named operation (see Ops) with string arguments, as the
// demo's and the CLI tests' "lakewrite" commands spell it. Each makes one
// DuckLake snapshot. Errors: a usage error naming the operation, or the
// operation's own error.
func Apply(ctx context.Context, w *Writer, op string, a []string) error {
	need := func(n int) error {
		if len(a) != n {
			return fmt.Errorf("lakewrite %s takes %d arguments, got %d; operations:\n%s", op, n, len(a), Ops)
		}
		return nil
	}
	col := func(spec string) (ColumnDef, error) {
		name, typ, ok := strings.Cut(spec, ":")
		if !ok || name == "" || typ == "" {
			return ColumnDef{}, fmt.Errorf("column %q is not NAME:TYPE", spec)
		}
		return ColumnDef{Name: name, Type: typ, Nullable: true}, nil
	}
	arity := map[string]int{"create-table": 3, "insert": 3, "inline": 3, "delete": 3, "compact": 2, "rename-table": 3,
		"drop-table": 2, "add-column": 3, "drop-column": 3, "rename-column": 4, "create-view": 3, "drop-view": 2, "create-schema": 1,
		"restore": 1, "revert": 2}
	n, ok := arity[op]
	if !ok {
		return fmt.Errorf("lakewrite: unknown operation %q; operations:\n%s", op, Ops)
	}
	if err := need(n); err != nil {
		return err
	}
	switch op {
	case "create-table":
		var cols []ColumnDef
		for _, s := range splitTopLevel(a[2]) {
			c, err := col(s)
			if err != nil {
				return err
			}
			cols = append(cols, c)
		}
		_, err := w.CreateTable(ctx, a[0], a[1], cols)
		return err
	case "insert":
		return w.Insert(ctx, a[0], a[1], a[2])
	case "inline":
		return w.InsertInlined(ctx, a[0], a[1], a[2])
	case "delete":
		return w.DeleteWhere(ctx, a[0], a[1], a[2])
	case "compact":
		return w.Compact(ctx, a[0], a[1])
	case "rename-table":
		return w.RenameTable(ctx, a[0], a[1], a[2])
	case "drop-table":
		return w.DropTable(ctx, a[0], a[1])
	case "add-column":
		c, err := col(a[2])
		if err != nil {
			return err
		}
		return w.AddColumn(ctx, a[0], a[1], c)
	case "drop-column":
		return w.DropColumn(ctx, a[0], a[1], a[2])
	case "rename-column":
		return w.RenameColumn(ctx, a[0], a[1], a[2], a[3])
	case "create-view":
		return w.CreateView(ctx, a[0], a[1], a[2])
	case "drop-view":
		return w.DropView(ctx, a[0], a[1])
	case "restore", "revert":
		var n [2]int64
		for i, v := range a {
			if _, err := fmt.Sscan(v, &n[i]); err != nil {
				return fmt.Errorf("lakewrite %s: %q is not a snapshot id", op, v)
			}
		}
		var err error
		if op == "restore" {
			_, err = w.Restore(ctx, n[0])
		} else {
			_, err = w.Revert(ctx, n[0], n[1])
		}
		return err
	default: // create-schema
		return w.CreateSchema(ctx, a[0])
	}
}

// splitTopLevel splits "a:int64,b:decimal(9,2)" on commas outside
// parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
