package ducklake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// big03Catalog makes a copy of the real 0.3 catalog with compacted files
// grown to about size bytes: data files (a tenth of them with the
// partial_file_info of a compaction, which the 0.3 -> 0.4 step moves into
// partial_max and drops) and their column statistics.
func big03Catalog(t testing.TB, dir string, size int64) string {
	t.Helper()
	src := gunzipCatalog(t, "dltest-compacted-files.ducklake", dir, "big03.ducklake")
	rows := size / 80
	withWritable(t, src,
		fmt.Sprintf(`INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, path, path_is_relative, file_format, record_count, file_size_bytes, partial_file_info)
			SELECT 100 + i, 1, 1, 'ducklake-' || uuid() || '.parquet', true, 'parquet', 1000, 123456,
				CASE WHEN i %% 10 = 0 THEN '1:500|2:1000|partial_max:2' END FROM range(%d) r(i)`, rows/10),
		fmt.Sprintf(`INSERT INTO ducklake_file_column_stats
			SELECT 100 + i // 10, 1, 1, 1000, 1000, 0, md5(random()::VARCHAR) || md5(random()::VARCHAR), md5(random()::VARCHAR) || md5(random()::VARCHAR), false, NULL
			FROM range(%d) r(i)`, rows),
		"CHECKPOINT",
	)
	return src
}

// BenchmarkMigrate migrates a 0.3 catalog of about 100 MiB to 1.0 (Freeze's
// copy, the extension's 0.3 -> 0.4 -> 1.0 steps, the checks) and reports
// the source size and the peak RSS of a child process that runs one
// Migrate:
//
//	go test -run '^$' -bench BenchmarkMigrate -benchtime 3x ./internal/ducklake/
func BenchmarkMigrate(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	src := big03Catalog(b, dir, 100<<20)
	st, err := os.Stat(src)
	if err != nil {
		b.Fatal(err)
	}
	rss := childRSS(b, envMigrateSrc+"="+src, envMigrateDst+"="+filepath.Join(dir, "rss.duckdb"))
	b.ResetTimer()
	var dstSize int64
	for i := 0; b.Loop(); i++ {
		dst := filepath.Join(dir, fmt.Sprintf("migrated-%d.duckdb", i))
		if _, err := Migrate(ctx, src, dst); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if st, err := os.Stat(dst); err == nil {
			dstSize = st.Size()
		}
		os.Remove(dst)
		b.StartTimer()
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "src-MiB")
	b.ReportMetric(float64(dstSize)/(1<<20), "dst-MiB")
	b.ReportMetric(float64(rss)/1024, "peak-rss-MiB")
}
