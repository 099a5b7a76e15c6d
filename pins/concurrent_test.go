package pins_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/lockfile"
	"github.com/fdl-dev/fdl/pins"
	"github.com/fdl-dev/fdl/repo"
)

// TestConcurrentWritersKeepEveryPin: eight `fdl lock add` of different
// names and a `lock remove` at once on one lockfile (none there yet) each
// keep their change: every pin added is in the file, the removed one is
// not. Without the writers' lock, each read the file before the others
// saved and the last rename won, silently dropping pins.
func TestConcurrentWritersKeepEveryPin(t *testing.T) {
	t.Parallel()
	h := history.BuildReal(t, 1, func(int) string { return "CREATE TABLE t AS SELECT range AS x FROM range(10)" })
	ctx := context.Background()
	proj := t.TempDir()
	env := pins.Env{Dir: proj, Open: func(ctx context.Context, url string) (*repo.Repo, error) {
		st, err := store.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return repo.OpenStore(ctx, st, url)
	}}
	if _, err := pins.Add(ctx, env, pins.AddOptions{Name: "gone", Repository: h.URL}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := pins.Add(ctx, env, pins.AddOptions{Name: fmt.Sprintf("p%d", i), Repository: h.URL}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := pins.Remove(ctx, env, "gone"); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	f, err := lockfile.Load(filepath.Join(proj, lockfile.FileName))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}
	if got := f.Names(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pins after concurrent writers: %v, want %v", got, want)
	}
}
