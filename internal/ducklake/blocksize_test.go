package ducklake

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// blockSizeOf returns the block size, in bytes, of the DuckDB file at path.
func blockSizeOf(t *testing.T, path string) int64 {
	t.Helper()
	ctx := context.Background()
	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH "+sqlquote.String(path)+" AS f (READ_ONLY)"); err != nil {
		t.Fatal(err)
	}
	var bs int64
	if err := conn.QueryRowContext(ctx, "SELECT block_size FROM pragma_database_size() WHERE database_name = 'f'").Scan(&bs); err != nil {
		t.Fatal(err)
	}
	return bs
}

// TestFreezeBlockSize: a small catalog frozen from SQLite gets 16 KiB
// blocks (a tenth of the file DuckDB's default gives it) and DuckDB 1.5's
// extension reads it; an incremental commit keeps the block size until
// the SQLite form passes twice the bound (then DuckDB's default) or falls
// below half of it (then small again), rewriting the copy once each time;
// and a few-row catalog of 40 tables on a 256 KiB base (its used blocks
// alone over 8 MiB) goes to small blocks.
func TestFreezeBlockSize(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	ctx := context.Background()
	dir := t.TempDir()
	lite := deltaLake(t, gunzipCatalog(t, "dltest-v04.ducklake", dir, ""), dir)
	base := fullBase(t, lite, filepath.Join(dir, "base0.duckdb"))
	if bs := blockSizeOf(t, base.Path); bs != smallBlockSize {
		t.Fatalf("a small catalog frozen from SQLite has %d-byte blocks; want %d", bs, smallBlockSize)
	}
	attach := fmt.Sprintf("ATTACH 'ducklake:sqlite:%s' AS lake (DATA_PATH '%s/', OVERRIDE_DATA_PATH true)", lite, filepath.Join(dir, "data"))
	lake := d.Start(t)
	old := smallCatalogMax
	t.Cleanup(func() { smallCatalogMax = old })
	size := sqliteBytes(lite) // the measure, as the bound is crossed both ways
	for k, c := range []struct {
		max       int64
		want      int64
		compacted bool
	}{
		{old, smallBlockSize, false},       // small stays small, no rewrite
		{size / 4, defaultBlockSize, true}, // past twice the bound: the default
		{size, defaultBlockSize, false},    // between half and twice: kept
		{size * 4, smallBlockSize, true},   // below half: small again
		{size, smallBlockSize, false},      // between half and twice: kept
	} {
		smallCatalogMax = c.max
		sql := fmt.Sprintf("INSERT INTO fdl_t VALUES (%d, 'b')", k)
		if k == 0 {
			sql = "CREATE TABLE fdl_t(i INTEGER, s VARCHAR); " + sql
		}
		if _, err := lake.Query(realduck.OnLake(attach, sql, false)); err != nil {
			t.Fatal(err)
		}
		inc := filepath.Join(dir, fmt.Sprintf("inc%d.duckdb", k))
		info, delta, err := FreezeOnto(ctx, lite, inc, base)
		if err != nil {
			t.Fatal(err)
		}
		if bs := blockSizeOf(t, inc); bs != c.want || delta.Compacted != c.compacted || delta.Full != "" {
			t.Errorf("step %d (bound %d): block size %d, compacted %v, full %q; want %d, %v, incremental", k, c.max, bs, delta.Compacted, delta.Full, c.want, c.compacted)
		}
		base = equalsFull(t, lite, inc, filepath.Join(dir, fmt.Sprintf("full%d.duckdb", k)), info)
	}
	out := lake.MustQuery(t, fmt.Sprintf("ATTACH 'ducklake:%s' AS l (READ_ONLY, DATA_PATH '%s/', OVERRIDE_DATA_PATH true); SELECT count(*) FROM l.fdl_t;", base.Path, filepath.Join(dir, "data")))
	if got := fmt.Sprint(out[len(out)-1].Rows); got != "[[5]]" {
		t.Errorf("DuckDB 1.5 reads %s rows from the small-block catalog; want [[5]]", got)
	}

	// Forty tables of a row each, inlined: forty more DuckDB tables, a
	// block each. A base written with 256 KiB blocks uses over 8 MiB of
	// them, yet the catalog is small: the next commit gives small blocks.
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf("CREATE TABLE m%d AS SELECT %d AS i", i, i))
	}
	if _, err := lake.Query(realduck.OnLake(attach, strings.Join(many, ";\n"), true)); err != nil {
		t.Fatal(err)
	}
	smallCatalogMax = 1
	big := fullBase(t, lite, filepath.Join(dir, "many-default.duckdb"))
	smallCatalogMax = old
	if bs := blockSizeOf(t, big.Path); bs != defaultBlockSize {
		t.Fatalf("the forced base has %d-byte blocks", bs)
	}
	if _, err := lake.Query(realduck.OnLake(attach, "INSERT INTO fdl_t VALUES (99, 'z')", false)); err != nil {
		t.Fatal(err)
	}
	inc := filepath.Join(dir, "many-inc.duckdb")
	if _, delta, err := FreezeOnto(ctx, lite, inc, big); err != nil || !delta.Compacted || delta.Full != "" {
		t.Fatalf("FreezeOnto of the 40-table lake: %v, %+v", err, delta)
	}
	if bs := blockSizeOf(t, inc); bs != smallBlockSize {
		t.Errorf("a small 40-table lake on a 256 KiB base: %d-byte blocks after a commit; want %d", bs, smallBlockSize)
	}
}

// TestFreezeBlockSizeOldStorage: a catalog of a storage version older
// than v1.2.0 (DuckLake 0.2: v0.10.0) keeps DuckDB's default block size,
// however small.
func TestFreezeBlockSizeOldStorage(t *testing.T) {
	dir := t.TempDir()
	old02 := gunzipCatalog(t, "ahri-tre-v0.2.sqlite", dir, "")
	frozen := filepath.Join(dir, "v02.duckdb")
	if _, err := Freeze(context.Background(), old02, frozen); err != nil {
		t.Fatal(err)
	}
	if bs := blockSizeOf(t, frozen); bs != defaultBlockSize {
		t.Errorf("a DuckLake 0.2 catalog (storage v0.10.0) frozen with %d-byte blocks; want DuckDB's default %d", bs, defaultBlockSize)
	}
}
