package ducklake

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkRowDigests digests a large catalog at two snapshots, as commit
// does (its last one and its base's), beside Freeze of the same catalog
// (the copy every commit makes), so that the digest's cost reads as a
// share of a commit's. The catalog is FDL_DIGEST_CATALOG, one made by
// internal/cmd/benchgen (docs/performance.md):
//
//	go run ./internal/cmd/benchgen /tmp/big64.duckdb 64
//	FDL_DIGEST_CATALOG=/tmp/big64.duckdb go test -run '^$' -bench BenchmarkRowDigests -benchtime 3x ./internal/ducklake/
func BenchmarkRowDigests(b *testing.B) {
	path := os.Getenv("FDL_DIGEST_CATALOG")
	if path == "" {
		b.Skip("FDL_DIGEST_CATALOG names no catalog: make one with go run ./internal/cmd/benchgen CATALOG 64")
	}
	ctx := context.Background()
	c, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		b.Fatal(err)
	}
	last := snaps[len(snaps)-1].ID
	first := snaps[0].ID
	b.Run("digest", func(b *testing.B) {
		for b.Loop() {
			ds, err := c.RowDigests(ctx, last, first)
			if err != nil || len(ds) != 2 {
				b.Fatalf("RowDigests: %v, %d digests", err, len(ds))
			}
		}
	})
	b.Run("freeze", func(b *testing.B) {
		dst := filepath.Join(b.TempDir(), "frozen.duckdb")
		for b.Loop() {
			os.Remove(dst)
			if _, err := Freeze(ctx, path, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
