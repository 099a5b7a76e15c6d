package ducklake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// convertRSS runs ConvertToSQLite in a child process and returns its peak
// RSS (KiB).
func convertRSS(t testing.TB, src, dst string) int64 {
	t.Helper()
	return childRSS(t, envConvertSrc+"="+src, envConvertDst+"="+dst)
}

// TestSQLiteMemoryFlat: the peak RSS of both conversions, DuckDB -> SQLite
// (ConvertToSQLite, what checkout does) and SQLite -> DuckDB (Freeze of a
// SQLite catalog, what commit does), does not grow with the catalog's size.
// It builds catalogs of about 40 and 200 MiB, so it only runs when
// FDL_DUCKLAKE_BIG is set:
//
//	FDL_DUCKLAKE_BIG=1 go test -count=1 -run TestSQLiteMemoryFlat -v ./internal/ducklake/
func TestSQLiteMemoryFlat(t *testing.T) {
	if os.Getenv("FDL_DUCKLAKE_BIG") == "" {
		t.Skip("set FDL_DUCKLAKE_BIG=1 to build 40 and 200 MiB catalogs and compare the SQLite conversions' peak RSS")
	}
	var toSQLite, fromSQLite []int64
	for _, mib := range []int64{40, 200} {
		dir := t.TempDir()
		src := bigCatalog(t, dir, mib<<20)
		st, err := os.Stat(src)
		if err != nil {
			t.Fatal(err)
		}
		lite := filepath.Join(dir, "work.sqlite")
		r1 := convertRSS(t, src, lite)
		os.Remove(src)
		r2 := freezeRSS(t, lite, filepath.Join(dir, "frozen.duckdb"))
		lst, _ := os.Stat(lite)
		t.Logf("source %d MiB (SQLite %d MiB): peak RSS to SQLite %d MiB, from SQLite %d MiB", st.Size()>>20, lst.Size()>>20, r1>>10, r2>>10)
		toSQLite = append(toSQLite, r1)
		fromSQLite = append(fromSQLite, r2)
	}
	for _, r := range []struct {
		what string
		rss  []int64
	}{{"ConvertToSQLite", toSQLite}, {"Freeze of a SQLite catalog", fromSQLite}} {
		if r.rss[1] > r.rss[0]+64<<10 || r.rss[1] > 320<<10 {
			t.Errorf("%s: peak RSS grows with catalog size: %d KiB -> %d KiB", r.what, r.rss[0], r.rss[1])
		}
	}
}

// BenchmarkConvertToSQLite converts a catalog of about 64 MiB (a real 0.4
// catalog grown with random strings) to SQLite and reports the source and
// SQLite sizes and the peak RSS of a child process that runs one conversion:
//
//	go test -run '^$' -bench 'BenchmarkConvertToSQLite|BenchmarkFreezeSQLite' -benchtime 3x ./internal/ducklake/
func BenchmarkConvertToSQLite(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	src := bigCatalog(b, dir, 64<<20)
	st, err := os.Stat(src)
	if err != nil {
		b.Fatal(err)
	}
	rss := convertRSS(b, src, filepath.Join(dir, "rss.sqlite"))
	lst, err := os.Stat(filepath.Join(dir, "rss.sqlite"))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer() // (it also drops reported metrics: report after the loop)
	for i := 0; b.Loop(); i++ {
		dst := filepath.Join(dir, fmt.Sprintf("lite-%d.sqlite", i))
		if err := ConvertToSQLite(ctx, src, dst); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.Remove(dst)
		b.StartTimer()
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "src-MiB")
	b.ReportMetric(float64(lst.Size())/(1<<20), "sqlite-MiB")
	b.ReportMetric(float64(rss)/1024, "peak-rss-MiB")
}

// BenchmarkFreezeSQLite freezes the SQLite form of the catalog of
// BenchmarkConvertToSQLite back into a DuckDB file (what commit does) and
// reports the peak RSS of a child process that runs one Freeze.
func BenchmarkFreezeSQLite(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	src := bigCatalog(b, dir, 64<<20)
	lite := filepath.Join(dir, "work.sqlite")
	if err := ConvertToSQLite(ctx, src, lite); err != nil {
		b.Fatal(err)
	}
	os.Remove(src)
	st, err := os.Stat(lite)
	if err != nil {
		b.Fatal(err)
	}
	benchFreeze(b, ctx, lite, dir, float64(st.Size())/(1<<20), "sqlite-MiB")
}

// manyFilesCatalog is a catalog registering files data files with two
// statistics rows each (the shape of a lake of many small files), about
// 110 bytes a file.
func manyFilesCatalog(t testing.TB, dir string, files int64) string {
	t.Helper()
	src := gunzipCatalog(t, "dltest-v04.ducklake", dir, "many.ducklake")
	withWritable(t, src,
		fmt.Sprintf(`INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, path, path_is_relative, file_format, record_count, file_size_bytes)
			SELECT i, 1, 1, 'ducklake-' || uuidv7() || '.parquet', true, 'parquet', 1000, 123456 FROM range(%d) r(i)`, files),
		fmt.Sprintf(`INSERT INTO ducklake_file_column_stats
			SELECT i // 2, 1, 1, 1000, 1000, 0, md5(random()::VARCHAR), md5(random()::VARCHAR), false, NULL FROM range(%d) r(i)`, 2*files),
		"CHECKPOINT",
	)
	return src
}

// TestSQLiteManyFilesMemory: a SQLite catalog of 2 M data files and 4 M
// statistics rows (where freezing under a fixed 64 MB limit failed with
// "failed to pin block": a primary key's index must fit in memory) is
// frozen, its recent snapshots read with little memory, and converted
// back, each in a child process whose peak RSS is logged. It builds a
// catalog of about 220 MiB, so it only runs when FDL_DUCKLAKE_BIG is set:
//
//	FDL_DUCKLAKE_BIG=1 go test -count=1 -run TestSQLiteManyFilesMemory -v ./internal/ducklake/
func TestSQLiteManyFilesMemory(t *testing.T) {
	if os.Getenv("FDL_DUCKLAKE_BIG") == "" {
		t.Skip("set FDL_DUCKLAKE_BIG=1 to build a catalog of 2 M data files and freeze its SQLite form")
	}
	dir := t.TempDir()
	src := manyFilesCatalog(t, dir, 2_000_000)
	lite := filepath.Join(dir, "many.sqlite")
	toLite := convertRSS(t, src, lite)
	back := freezeRSS(t, lite, filepath.Join(dir, "frozen.duckdb"))
	st, _ := os.Stat(src)
	lst, _ := os.Stat(lite)
	t.Logf("%d MiB DuckDB, %d MiB SQLite: peak RSS to SQLite %d MiB, from SQLite %d MiB", st.Size()>>20, lst.Size()>>20, toLite>>10, back>>10)
	c, err := Open(context.Background(), filepath.Join(dir, "frozen.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	files, err := c.DataFiles(context.Background())
	if err != nil || len(files) != 2_000_000 {
		t.Fatalf("frozen copy has %d data files (%v), want 2000000", len(files), err)
	}
	if back > 640<<10 {
		t.Errorf("freeze of the SQLite form: peak RSS %d MiB", back>>10)
	}
}
