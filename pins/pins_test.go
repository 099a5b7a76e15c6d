package pins_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/folder"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/pins"
	"github.com/fdl-dev/fdl/repo"
)

func TestMain(m *testing.M) {
	store.Register(folder.Backend())
	os.Exit(m.Run())
}

// countingStore counts the reads of catalogs.
type countingStore struct {
	store.Store
	gets *atomic.Int32
}

func (c countingStore) Get(ctx context.Context, key string) (io.ReadCloser, store.Token, error) {
	if strings.HasSuffix(key, "/ducklake.duckdb") {
		c.gets.Add(1)
	}
	return c.Store.Get(ctx, key)
}

// TestAttachDownloadsOnce: eight readers attaching one pinned version at
// once through a shared cache download its catalog once (the others wait
// for the entry's lock and find it); every later attach downloads
// nothing; all print the same line, which names the cached copy.
func TestAttachDownloadsOnce(t *testing.T) {
	h := history.BuildReal(t, 1, func(int) string { return "CREATE TABLE t AS SELECT range AS x FROM range(10)" })
	ctx := context.Background()
	proj := t.TempDir()
	var gets atomic.Int32
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := pins.Env{Dir: proj, Cache: c, Open: func(ctx context.Context, url string) (*repo.Repo, error) {
		st, err := store.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return repo.OpenStore(ctx, countingStore{st, &gets}, url)
	}}
	add := env
	add.Cache = nil // lock add checks by streaming: one read
	if _, err := pins.Add(ctx, add, pins.AddOptions{Name: "sales", Repository: h.URL}); err != nil {
		t.Fatal(err)
	}
	gets.Store(0)
	lines := make([]string, 8)
	var wg sync.WaitGroup
	for i := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := pins.Attach(ctx, env, nil, pins.AttachOptions{Locked: "sales"})
			if err != nil {
				t.Error(err)
				return
			}
			lines[i] = a.Attach
		}()
	}
	wg.Wait()
	if n := gets.Load(); n != 1 {
		t.Errorf("8 concurrent attaches read the catalog %d times, want 1", n)
	}
	for _, l := range lines {
		if l != lines[0] || !strings.Contains(l, c.Dir()) || !strings.Contains(l, " AS sales (") {
			t.Fatalf("lines differ or do not name the cache %s:\n%s\n%s", c.Dir(), l, lines[0])
		}
	}
	if _, err := pins.Attach(ctx, env, nil, pins.AttachOptions{Locked: "sales"}); err != nil {
		t.Fatal(err)
	}
	if n := gets.Load(); n != 1 {
		t.Errorf("a later attach read the catalog again (%d reads)", n)
	}
}

// TestCheckStopsOnFullCache: a disk with no room under the cache is the
// reader's machine's trouble, not a pin's: Check stops with the cache's
// *cache.FullError, the pin listed with kind cache_full. The entry's .part
// links to /dev/full, whose writes fail with ENOSPC.
func TestCheckStopsOnFullCache(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this platform")
	}
	h := history.BuildReal(t, 1, func(int) string { return "CREATE TABLE t AS SELECT range AS x FROM range(10)" })
	ctx := context.Background()
	proj := t.TempDir()
	env := pins.Env{Dir: proj, Open: func(ctx context.Context, url string) (*repo.Repo, error) {
		return repo.Open(ctx, url)
	}}
	if _, err := pins.Add(ctx, env, pins.AddOptions{Name: "sales", Repository: h.URL}); err != nil {
		t.Fatal(err)
	}
	c, err := cache.Open(filepath.Join(t.TempDir(), "cache"), cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	part := strings.TrimSuffix(c.Path(h.Recs[0].Catalog.SHA256), cache.EntrySuffix) + ".part"
	if err := os.Symlink("/dev/full", part); err != nil {
		t.Fatal(err)
	}
	env.Cache = c
	rep, err := pins.Check(ctx, env, false)
	var full *cache.FullError
	if !errors.As(err, &full) || full.Size != h.Recs[0].Catalog.Size {
		t.Fatalf("Check onto a full cache = %v (%T), want a *cache.FullError for %d bytes", err, err, h.Recs[0].Catalog.Size)
	}
	if len(rep.Pins) != 1 || rep.Pins[0].Kind != pins.ProblemCacheFull {
		t.Fatalf("report %+v: want the pin listed with kind %s", rep.Pins, pins.ProblemCacheFull)
	}
}
