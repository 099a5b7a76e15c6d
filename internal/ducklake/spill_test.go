package ducklake

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A spill folder whose owner is gone (its owner file unlocked, and not
// just made) is swept, so is an old one without an owner file; one whose
// owner holds its lock, one whose owner file was made a moment ago (about
// to be locked), a young one without an owner file (being made), and
// anything else are kept. The temporary folder's own name holds
// characters a glob pattern would read ('[', '*').
func TestSweepSpill(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "tmp [1]*")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	mk := func(name string, owner bool, age time.Duration) string {
		t.Helper()
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "duckdb_temp_block-1.block"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if owner {
			o := filepath.Join(d, spillOwner)
			if err := os.WriteFile(o, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(o, when, when); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, when, when); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead := mk("fdl-duckdb-dead", true, 2*spillLockGrace)
	justMade := mk("fdl-duckdb-justmade", true, 0)
	oldOrphan := mk("fdl-duckdb-old", false, 2*spillOrphanAge)
	youngOrphan := mk("fdl-duckdb-young", false, time.Minute)
	other := mk("not-fdl-duckdb", true, 0)
	if err := os.WriteFile(filepath.Join(tmp, "fdl-duckdb-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	live, release, err := newSpillDir() // sweeps first
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		kept bool
	}{{dead, false}, {justMade, true}, {oldOrphan, false}, {youngOrphan, true}, {other, true}, {filepath.Join(tmp, "fdl-duckdb-file"), true}, {live, true}} {
		_, err := os.Lstat(c.dir)
		if kept := err == nil; kept != c.kept {
			t.Errorf("%s: kept %v, want %v", filepath.Base(c.dir), kept, c.kept)
		}
	}
	if filepath.Dir(live) != tmp {
		t.Errorf("spill folder %s is not in TMPDIR %s", live, tmp)
	}
	// Another process's sweep (another open of the owner file) keeps the
	// live folder while its owner holds the lock, and removes it after.
	sweepSpill(tmp, time.Now())
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live spill folder was swept: %v", err)
	}
	release()
	sweepSpill(tmp, time.Now().Add(2*spillLockGrace))
	if _, err := os.Stat(live); err == nil {
		t.Errorf("the spill folder of a released owner was kept")
	}
}
