package workdir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/version"
)

func record(t *testing.T, id version.ID, seq int64) *version.Record {
	t.Helper()
	rec := &version.Record{RecordFormat: version.RecordFormat, ID: id, Seq: seq, Parents: []version.ID{}, Author: "t", Message: "m",
		CreatedAt: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		Catalog:   version.Catalog{Size: 1, SHA256: strings.Repeat("a", 64)},
		Dataset:   version.File{Size: 1, SHA256: strings.Repeat("b", 64)}}
	rec.DuckLake.Format = "1.0"
	rec.DuckLake.Snapshot = seq
	rec.DuckLake.Adds = version.SnapshotRange{First: 0, Last: seq}
	return rec
}

// TestStateHoldsBaseRecord: the base and its record move in one write of
// state.json; a state.json written before it held the record still opens,
// from base.json, or — when base.json is another version's (a process
// killed between the two files) — from the local version's version.json;
// a directory with .fdl and no state.json is named as an interrupted
// checkout.
//
// It is one piece: each case rewrites the same state folder from the one
// before (new form, old form, base.json of another version, no state.json).
func TestStateHoldsBaseRecord(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, StateDir, LocalVersions), 0o755); err != nil {
		t.Fatal(err)
	}
	old, next := version.ID("01a23784-9317-7442-aa55-b1a2089a1830"), version.ID("01a23784-9317-7442-aa55-b1a2089a1831")
	w := &Workdir{Dir: dir, State: State{Format: StateFormat, Repository: "/r", Branch: "main", Base: old}}
	if err := w.save(record(t, old, 1)); err != nil {
		t.Fatal(err)
	}
	got, err := Open(dir)
	if err != nil || got.BaseRecord == nil || got.BaseRecord.ID != old || len(got.State.BaseRecord) == 0 {
		t.Fatalf("open: %+v %v", got, err)
	}
	// base.json of another version beside a state.json that holds its own
	// record: state.json wins.
	nrec := record(t, next, 2)
	nrec.Parents = []version.ID{old}
	nb, _ := nrec.Marshal()
	if err := os.WriteFile(filepath.Join(dir, StateDir, BaseFile), nb, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Open(dir); err != nil || got.BaseRecord.ID != old {
		t.Fatalf("state.json's record must win: %+v %v", got, err)
	}
	// A state.json of before: no base_record, and base.json of another
	// version (killed between the files); the local version's record
	// repairs it.
	legacy := State{Format: StateFormat, Repository: "/r", Branch: "main", Base: next}
	b, _ := json.Marshal(legacy)
	if err := os.WriteFile(filepath.Join(dir, StateDir, StateFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ob, _ := record(t, old, 1).Marshal()
	if err := os.WriteFile(filepath.Join(dir, StateDir, BaseFile), ob, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, version.ErrBadRecord) {
		t.Fatalf("a base.json of another version and no local record: %v, want a bad record", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, StateDir, LocalVersions, string(next)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, StateDir, LocalVersions, string(next), version.RecordFile), nb, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := Open(dir); err != nil || got.BaseRecord.ID != next {
		t.Fatalf("repaired from the local version: %+v %v", got, err)
	}
	// An interrupted checkout.
	co := t.TempDir()
	if err := os.MkdirAll(filepath.Join(co, StateDir, LocalVersions), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(co, SQLiteCatalogName), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var nw *NotWorkdirError
	if _, err := Open(co); !errors.As(err, &nw) || !nw.Interrupted {
		t.Fatalf("interrupted checkout: %v", err)
	}
	made, release, err := claimCheckout(co)
	if err != nil || made {
		t.Fatalf("a checkout into it again: made %v, %v", made, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(co, StateDir)); len(ents) != 1 || ents[0].Name() != checkoutLock {
		t.Fatalf("the interrupted checkout's files stayed: %v", ents)
	}
	if ents, _ := os.ReadDir(co); len(ents) != 1 {
		t.Fatalf("the interrupted checkout's files stayed: %v", ents)
	}
	release()
	// Anything else in the directory: not ours to clear, and nothing of
	// it removed.
	other := t.TempDir()
	os.MkdirAll(filepath.Join(other, StateDir), 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o644)
	if _, _, err := claimCheckout(other); !errors.Is(err, ErrDirNotEmpty) {
		t.Fatalf("a directory with other files: %v", err)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 2 {
		t.Fatalf("a refused checkout changed the directory: %v", ents)
	} else if inner, _ := os.ReadDir(filepath.Join(other, StateDir)); len(inner) != 0 {
		t.Fatalf("a refused checkout left %v in .fdl", inner)
	}
}

// TestCheckoutIntoDanglingLink: a checkout into a symbolic link whose
// target does not exist says so (it read "mkdir: file exists").
func TestCheckoutIntoDanglingLink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "w")
	if err := os.Symlink(filepath.Join(dir, "gone"), link); err != nil {
		t.Fatal(err)
	}
	_, _, err := claimCheckout(link)
	if err == nil || !strings.Contains(err.Error(), "symbolic link to "+filepath.Join(dir, "gone")+", which does not exist") {
		t.Fatalf("checkout into a dangling link: %v", err)
	}
}
