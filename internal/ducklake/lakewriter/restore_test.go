package lakewriter

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestRestoreRefusals: what Restore and Revert refuse, before writing
// anything.
func TestRestoreRefusals(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lake.duckdb")
	if err := Create(bg, path, CreateOptions{DataPath: filepath.Join(dir, "data")}); err != nil {
		t.Fatal(err)
	}
	w, err := Open(bg, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.CreateTable(bg, "main", "t", []ColumnDef{{Name: "i", Type: "int64", Nullable: true}}); err != nil { // 1
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return w.Insert(bg, "main", "t", "SELECT range AS i FROM range(100)") }, // 2
		func() error { return w.DeleteWhere(bg, "main", "t", "i < 10") },                       // 3
		func() error { return w.DeleteWhere(bg, "main", "t", "i > 90") },                       // 4: replaces the delete file, partial_max 4
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := w.Snapshot(bg)
	for _, c := range []struct {
		name string
		run  func() error
		want error
	}{
		{"no such snapshot", func() error { _, err := w.Restore(bg, 9); return err }, ErrInvalid},
		{"negative", func() error { _, err := w.Restore(bg, -1); return err }, ErrInvalid},
		{"already there", func() error { _, err := w.Restore(bg, last); return err }, ErrNoChange},
		{"empty range", func() error { _, err := w.Revert(bg, 2, 2); return err }, ErrInvalid},
		{"range past the end", func() error { _, err := w.Revert(bg, 2, 9); return err }, ErrInvalid},
		// Snapshot 3's deletions live in the delete file snapshot 4 wrote
		// (begin 3, partial_max 4): only a rewrite could keep them alone.
		{"between two deletes of one file", func() error { _, err := w.Restore(bg, 3); return err }, ErrCannotRestore},
		{"revert the first of two deletes", func() error { _, err := w.Revert(bg, 2, 3); return err }, ErrConflict},
		{"revert the second of two deletes", func() error { _, err := w.Revert(bg, 3, 4); return err }, ErrCannotRestore},
	} {
		if err := c.run(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if got, _ := w.Snapshot(bg); got != last {
			t.Fatalf("%s wrote snapshot %d", c.name, got)
		}
	}
	// Before both deletes: the delete file goes, the rows come back.
	res, err := w.Restore(bg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot != last+1 || res.Ended != 1 || res.Reopened != 0 || res.Changes != "inserted_into_table:1,deleted_from_table:1" {
		t.Fatalf("restore to 2: %+v", res)
	}
}
