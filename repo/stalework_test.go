package repo_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/workdir"
)

// TestLockRemovesStaleWork: the work folders a killed conversion leaves in
// a working directory (a checkout or a pull into SQLite killed midway:
// DIR/.fdl-sqlite-*, DIR/.fdl/.fdl-sqlite-*, and the like for a freeze or
// a migration) are removed by the next command that takes the working
// directory's lock; files and folders of other names stay.
func TestLockRemovesStaleWork(t *testing.T) {
	ctx := context.Background()
	_, _, res := history.Empty(t)
	stale := []string{".fdl-sqlite-1/catalog.sqlite", ".fdl-sqlite-1/table-6.pipe", ".fdl/.fdl-sqlite-2/catalog.sqlite", ".fdl/.fdl-freeze-3/x", ".fdl-migrate-4/x"}
	kept := []string{".fdl-sqlite-file", ".fdl-other/x", "notes/.fdl-sqlite-5/x", ".fdl/.fdl-keep/x"}
	for _, p := range append(append([]string{}, stale...), kept...) {
		full := filepath.Join(res.Dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wd, err := workdir.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	wd.Commit(ctx, workdir.CommitOptions{Message: "nothing new", Author: "t"}) // takes the lock; may refuse: nothing to commit
	for _, p := range stale {
		if _, err := os.Stat(filepath.Join(res.Dir, filepath.Dir(p))); !os.IsNotExist(err) {
			t.Errorf("%s: still there after a command took the lock (%v)", filepath.Dir(p), err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(filepath.Join(res.Dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
