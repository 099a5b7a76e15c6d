package workdir

import (
	"os"
	"path/filepath"
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
	if made, err := prepareDir(d); err != nil || made {
		t.Fatalf("prepareDir after a killed conversion: made %v, %v", made, err)
	}
	if ents, _ := os.ReadDir(d); len(ents) != 0 {
		t.Errorf("prepareDir left %d entries", len(ents))
	}
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
