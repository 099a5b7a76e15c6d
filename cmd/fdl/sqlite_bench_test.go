package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// benchCatalog writes dir/lake.duckdb: a DuckLake 1.0 catalog of 1,000
// snapshots (0..999) whose snapshots 2..999 each register about 100 data
// files of table main.t: 100,000 ducklake_data_file rows and 100,000
// ducklake_file_column_stats rows, as 998 INSERT transactions of the
// extension would leave them (contiguous file ids per snapshot,
// next_file_id and table statistics to match; the Parquet files themselves
// are not needed to commit).
func benchCatalog(tb testing.TB, dir string) string {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, "lake.duckdb")
	// lakewriter: a very large synthetic benchmark catalog (100,000 file rows written by hand below); only its table comes from the writer.
	if err := lakewriter.Create(ctx, path, lakewriter.CreateOptions{DataPath: filepath.Join(dir, "data")}); err != nil {
		tb.Fatal(err)
	}
	w, err := lakewriter.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.CreateTable(ctx, "main", "t", []lakewriter.ColumnDef{{Name: "id", Type: "int64", Nullable: true}}); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	db, err := sql.Open("duckdb", path)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	const files, snaps = 100000, 1000
	stmts := []string{
		fmt.Sprintf(`INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, file_order, path, path_is_relative, file_format, record_count, file_size_bytes, footer_size, row_id_start, partition_id, encryption_key, mapping_id, partial_max)
			SELECT i, 1, 2 + i * %d // %d, NULL, NULL, 'ducklake-' || uuidv7()::VARCHAR || '.parquet', true, 'parquet', 10, 1000, 200, i * 10, NULL, NULL, NULL, NULL FROM range(%d) t(i)`, snaps-2, files, files),
		fmt.Sprintf(`INSERT INTO ducklake_file_column_stats (data_file_id, table_id, column_id, column_size_bytes, value_count, null_count, min_value, max_value, contains_nan, extra_stats)
			SELECT i, 1, 1, 100, 10, 0, (i * 10)::VARCHAR, (i * 10 + 9)::VARCHAR, NULL, NULL FROM range(%d) t(i)`, files),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot SELECT s, (SELECT snapshot_time FROM ducklake_snapshot WHERE snapshot_id = 1) + s * INTERVAL 1 SECOND,
			(SELECT schema_version FROM ducklake_snapshot WHERE snapshot_id = 1), (SELECT next_catalog_id FROM ducklake_snapshot WHERE snapshot_id = 1),
			(SELECT max(data_file_id) + 1 FROM ducklake_data_file WHERE begin_snapshot <= s) FROM range(2, %d) t(s)`, snaps),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made, author, commit_message, commit_extra_info)
			SELECT s, 'inserted_into_table:1', 'bench', NULL, NULL FROM range(2, %d) t(s)`, snaps),
		fmt.Sprintf(`INSERT INTO ducklake_table_stats VALUES (1, %d, %d, %d)`, files*10, files*10, files*1000),
		"CHECKPOINT",
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			tb.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// BenchmarkCommitSQLiteVsDuckDB measures `fdl commit` (workdir.Workdir.Commit:
// freeze, read the snapshots and the state, write the version) of the same
// catalog (benchCatalog: 100,000 data-file rows, 1,000 snapshots) as a
// SQLite working catalog and as a DuckDB-format one, alternately in the same
// run, and reports both times and their ratio:
//
//	go test ./cmd/fdl/ -run '^$' -bench CommitSQLiteVsDuckDB -benchtime 5x
func BenchmarkCommitSQLiteVsDuckDB(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	src := benchCatalog(b, dir)
	r, err := repo.Init(ctx, filepath.Join(dir, "repo"), repo.InitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	type wd struct {
		dir         string
		state, base []byte
	}
	var wds []wd
	for _, f := range []string{"duckdb", "sqlite"} {
		d := filepath.Join(dir, f)
		if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: d, From: src, CatalogFormat: ducklake.Backend(f)}); err != nil {
			b.Fatal(err)
		}
		st, err := os.ReadFile(filepath.Join(d, workdir.StateDir, workdir.StateFile))
		if err != nil {
			b.Fatal(err)
		}
		wds = append(wds, wd{dir: d, state: st})
	}
	var took [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, w := range wds {
			b.StopTimer()
			// Back to the state before the first commit.
			os.RemoveAll(filepath.Join(w.dir, workdir.StateDir, workdir.LocalVersions))
			os.MkdirAll(filepath.Join(w.dir, workdir.StateDir, workdir.LocalVersions), 0o755)
			os.Remove(filepath.Join(w.dir, workdir.StateDir, workdir.BaseFile))
			if err := os.WriteFile(filepath.Join(w.dir, workdir.StateDir, workdir.StateFile), w.state, 0o644); err != nil {
				b.Fatal(err)
			}
			work, err := workdir.Open(w.dir)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			rec, err := work.Commit(ctx, workdir.CommitOptions{Message: "bench", Author: "bench"})
			took[j] += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			if rec.DuckLake.Snapshot != 999 {
				b.Fatalf("committed snapshot %d", rec.DuckLake.Snapshot)
			}
		}
	}
	b.StopTimer()
	d, s := took[0].Seconds()/float64(b.N), took[1].Seconds()/float64(b.N)
	b.ReportMetric(d, "duckdb-s/commit")
	b.ReportMetric(s, "sqlite-s/commit")
	b.ReportMetric(s/d, "sqlite/duckdb")
}
