package workdir

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestInterruptedCheckout: what a checkout killed while it wrote a SQLite
// catalog leaves (.fdl without state.json, the catalog's files, the
// conversion's .fdl-sqlite-* folder) is taken for an interrupted checkout
// and cleared by the next one; anything else in the directory is not.
func TestInterruptedCheckout(t *testing.T) {
	leave := func(t *testing.T, extra string, dir bool) string {
		d := t.TempDir()
		must(t, os.Mkdir(filepath.Join(d, StateDir), 0o755))
		must(t, os.WriteFile(filepath.Join(d, SQLiteCatalogName), []byte("x"), 0o644))
		if dir {
			must(t, os.Mkdir(filepath.Join(d, extra), 0o755))
			must(t, os.WriteFile(filepath.Join(d, extra, "catalog.sqlite"), []byte("x"), 0o644))
		} else {
			must(t, os.WriteFile(filepath.Join(d, extra), []byte("x"), 0o644))
		}
		return d
	}
	d := leave(t, ".fdl-sqlite-2383639457", true)
	if !interruptedCheckout(d) {
		t.Fatal("a killed conversion's folder: not taken for an interrupted checkout")
	}
	made, release, err := claimCheckout(d)
	if err != nil || made {
		t.Fatalf("claimCheckout after a killed conversion: made %v, %v", made, err)
	}
	if ents, _ := os.ReadDir(d); len(ents) != 1 || ents[0].Name() != StateDir {
		t.Errorf("claimCheckout left %v", ents)
	}
	release()
	for _, c := range []struct {
		name string
		dir  bool
	}{{"notes.txt", false}, {".fdl-sqlite-file", false}, {"data", true}} {
		if d := leave(t, c.name, c.dir); interruptedCheckout(d) {
			t.Errorf("%s (dir %v) taken for what a checkout leaves", c.name, c.dir)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestClaimCheckoutRace: of checkouts claiming one directory at once
// (new, empty, or holding what a stopped checkout left), exactly one
// claims it and the others are refused (ErrDirNotEmpty) having removed
// nothing: the winner's lock file is still there and locked. Each claim
// opens the lock file itself, so goroutines contend as processes do
// (flock locks an open file).
func TestClaimCheckoutRace(t *testing.T) {
	for round := range 60 {
		dir := filepath.Join(t.TempDir(), "w")
		switch round % 3 {
		case 1:
			must(t, os.Mkdir(dir, 0o755))
		case 2: // a stopped checkout's files
			must(t, os.MkdirAll(filepath.Join(dir, StateDir), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, SQLiteCatalogName), []byte("x"), 0o644))
		}
		const n = 6
		var wg sync.WaitGroup
		start := make(chan struct{})
		releases := make(chan func(), n)
		errs := make(chan error, n)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, release, err := claimCheckout(dir)
				if err != nil {
					errs <- err
					return
				}
				releases <- release
			}()
		}
		close(start)
		wg.Wait()
		close(releases)
		close(errs)
		won := 0
		for release := range releases {
			won++
			defer release()
		}
		for err := range errs {
			if !errors.Is(err, ErrDirNotEmpty) {
				t.Errorf("round %d: a refused claim: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d checkouts claimed %s", round, won, dir)
		}
		if !fileExists(filepath.Join(dir, StateDir, checkoutLock)) || interruptedCheckout(dir) {
			t.Fatalf("round %d: the winner's claim is gone or not held", round)
		}
		if fileExists(filepath.Join(dir, SQLiteCatalogName)) {
			t.Fatalf("round %d: the stopped checkout's catalog was not cleared", round)
		}
	}
}
