package ducklake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotMarks: the light read of a catalog's snapshots gives the ids
// and times Open gives, for a SQLite catalog the extension wrote and for a
// DuckDB one.
func TestSnapshotMarks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, path := range []string{
		gunzipCatalog(t, "ahri-tre-v0.2.sqlite", dir, ""),
		gunzipCatalog(t, "dltest-v04.ducklake", dir, ""),
	} {
		marks, err := SnapshotMarks(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		snaps, err := c.Snapshots(ctx)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(marks) != len(snaps) || len(marks) == 0 {
			t.Fatalf("%s: %d marks, %d snapshots", path, len(marks), len(snaps))
		}
		for i := range marks {
			if marks[i].ID != snaps[i].ID || !marks[i].Time.Equal(snaps[i].Time) {
				t.Errorf("%s: mark %d is %d at %s, Open says %d at %s", filepath.Base(path), i, marks[i].ID, marks[i].Time, snaps[i].ID, snaps[i].Time)
			}
		}
	}
}

// TestReplaceSQLite: the contents of one SQLite catalog replaced by
// another's (a different DuckLake format: tables dropped, made again,
// added), in one transaction; a check that refuses leaves it untouched.
func TestReplaceSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dst := gunzipCatalog(t, "ahri-tre-v0.2.sqlite", dir, "")
	src := filepath.Join(dir, "new.sqlite")
	if err := ConvertToSQLite(ctx, gunzipCatalog(t, "dltest-v04.ducklake", dir, ""), src); err != nil {
		t.Fatal(err)
	}
	before := sha256File(t, dst)
	refused := errors.New("a writer added a snapshot")
	var seen []SnapshotMark
	err := ReplaceSQLite(ctx, dst, src, func(m []SnapshotMark) error { seen = m; return refused })
	if !errors.Is(err, refused) {
		t.Fatalf("a refusing check: %v", err)
	}
	if len(seen) != 5 || seen[4].ID != 4 {
		t.Errorf("the check saw %+v, want the 5 snapshots of the catalog being replaced", seen)
	}
	if sha256File(t, dst) != before {
		t.Fatal("a refused replacement changed the catalog")
	}
	if err := ReplaceSQLite(ctx, dst, src, func([]SnapshotMark) error { return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := Open(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	want, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if got.Format() != want.Format() || got.DataPath() != want.DataPath() {
		t.Errorf("format %s data_path %s, want %s %s", got.Format(), got.DataPath(), want.Format(), want.DataPath())
	}
	gs, _ := got.Snapshots(ctx)
	ws, _ := want.Snapshots(ctx)
	if len(gs) != len(ws) || gs[len(gs)-1].ID != ws[len(ws)-1].ID || !gs[len(gs)-1].Time.Equal(ws[len(ws)-1].Time) {
		t.Errorf("snapshots after the replacement: %d ending %+v, want %d ending %+v", len(gs), gs[len(gs)-1], len(ws), ws[len(ws)-1])
	}
	gst, err := got.State(ctx, gs[len(gs)-1].ID)
	if err != nil {
		t.Fatal(err)
	}
	wst, _ := want.State(ctx, ws[len(ws)-1].ID)
	if g, w := tableNames(gst), tableNames(wst); len(g) != len(w) || len(g) == 0 {
		t.Errorf("tables %v, want %v", g, w)
	}
	if _, err := os.Stat(dst + "-wal"); err == nil {
		t.Error("a -wal file stayed beside the replaced catalog")
	}
}

// TestReplaceDuckDB: refused while another process holds DuckDB's lock on
// the file (nothing changes), and while the caller's check refuses; else
// the new file takes the path, and the old file's WAL goes.
func TestReplaceDuckDB(t *testing.T) {
	dir := t.TempDir()
	dst := gunzipCatalog(t, "dltest-v04.ducklake", dir, "")
	src := gunzipCatalog(t, "dltest-v01.ducklake", dir, "")
	before, want := sha256File(t, dst), sha256File(t, src)
	release := startLockHolder(t, dst)
	err := ReplaceDuckDB(dst, src, func() error { return nil })
	release()
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("while attached elsewhere: %v, want ErrLocked", err)
	}
	if sha256File(t, dst) != before {
		t.Fatal("a refused replacement changed the file")
	}
	changed := errors.New("changed meanwhile")
	if err := ReplaceDuckDB(dst, src, func() error { return changed }); !errors.Is(err, changed) || sha256File(t, dst) != before {
		t.Fatalf("a refusing check: %v", err)
	}
	if err := os.WriteFile(walPath(dst), []byte("old wal"), 0o644); err != nil {
		t.Fatal(err)
	}
	s1, err := Stamp(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := ReplaceDuckDB(dst, src, func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if sha256File(t, dst) != want {
		t.Error("the path does not hold the new file")
	}
	if _, err := os.Stat(walPath(dst)); err == nil {
		t.Error("the old file's WAL stayed")
	}
	if s2, _ := Stamp(dst); s2 == s1 {
		t.Error("Stamp did not change when the file was replaced")
	}
}
