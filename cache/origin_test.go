package cache

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
)

// TestOrigin: an entry's origin is recorded beside it, read back, kept
// when unchanged, refused without an entry, removed with the entry by
// Prune, and an origin left without its entry is swept.
func TestOrigin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	c := open(t, dir, Options{})
	b, sum := content(7, 100)
	if err := c.SetOrigin(ctx, sum, "/r/data/"); !errors.Is(err, ErrNotCached) {
		t.Fatalf("SetOrigin without an entry: %v, want ErrNotCached", err)
	}
	if _, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, new(atomic.Int32))); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Origin(sum); ok {
		t.Fatal("Origin of a new entry: found one")
	}
	for _, p := range []string{"s3://b/r/data/", "s3://b/r/data/"} {
		if err := c.SetOrigin(ctx, sum, p); err != nil {
			t.Fatal(err)
		}
		if got, ok := c.Origin(sum); !ok || got != p {
			t.Fatalf("Origin = %q, %v; want %q", got, ok, p)
		}
	}
	wantFiles(t, dir, "CACHEDIR.TAG", sum+".duckdb", sum+".used", sum+".origin")
	if _, err := c.Prune(ctx, PruneOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
	// An origin whose entry is gone (a killed prune) goes at the next Open.
	if err := os.WriteFile(c.name(sum, originSuffix), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	open(t, dir, Options{})
	wantFiles(t, dir, "CACHEDIR.TAG")
}
