package gc_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// benchEnv reads a positive integer from the environment.
func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// buildBenchRepo makes a folder repository of nversions versions sharing
// nfiles data files: version i lists the files of versions 1..i (each adds
// nfiles/nversions), and every 10th version ends 50 of the oldest open
// files, as a compaction would. The data files exist (small stand-ins: gc
// never reads them). Rows are written with plain SQL into the working
// catalog; each version is committed and pushed by the library. The
// repository is kept in $FDL_GCBENCH_DIR when set (reused when complete).
func buildBenchRepo(b *testing.B, nversions, nfiles int) string {
	b.Helper()
	ctx := context.Background()
	dir := os.Getenv("FDL_GCBENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	} else {
		dir = filepath.Join(dir, fmt.Sprintf("v%d-f%d", nversions, nfiles))
		if _, err := os.Stat(filepath.Join(dir, "complete")); err == nil {
			return filepath.Join(dir, "repo")
		}
		os.RemoveAll(dir)
	}
	url := filepath.Join(dir, "repo")
	r, err := repo.Init(ctx, url, repo.InitOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "w")})
	if err != nil {
		b.Fatal(err)
	}
	// lakewriter: a very large synthetic benchmark catalog (its file rows written by hand below); the writer gives the table and its id.
	w, err := lakewriter.Open(ctx, res.Catalog)
	if err != nil {
		b.Fatal(err)
	}
	tid, err := w.CreateTable(ctx, "main", "t", []lakewriter.ColumnDef{{Name: "x", Type: "int64", Nullable: true}})
	if err != nil {
		b.Fatal(err)
	}
	w.Close()
	folder := filepath.Join(url, "data", "main", "t")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		b.Fatal(err)
	}
	per := nfiles / nversions
	start := time.Now()
	for i := 1; i <= nversions; i++ {
		for f := (i - 1) * per; f < i*per; f++ {
			if err := os.WriteFile(filepath.Join(folder, fmt.Sprintf("f-%06d.parquet", f)), []byte("PAR1"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		addBenchFiles(b, res.Catalog, tid, i, per)
		wd, err := workdir.Open(res.Dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: fmt.Sprintf("v%d", i), Author: "bench"}); err != nil {
			b.Fatalf("commit %d: %v", i, err)
		}
		if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
			b.Fatalf("push %d: %v", i, err)
		}
		if i%100 == 0 {
			b.Logf("built %d versions in %s", i, time.Since(start).Round(time.Second))
		}
	}
	os.WriteFile(filepath.Join(dir, "complete"), nil, 0o644)
	return url
}

// scanKept is the baseline: one scan of the data-file table of every kept
// catalog, opened where it lies in the folder store (no copy, no checksum).
func scanKept(b *testing.B, r *repo.Repo, kept []version.ID) (rows int, d time.Duration) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	for _, id := range kept {
		c, err := ducklake.Open(ctx, r.CatalogLocation(id))
		if err != nil {
			b.Fatal(err)
		}
		files, err := c.DataFiles(ctx)
		c.Close()
		if err != nil {
			b.Fatal(err)
		}
		rows += len(files)
	}
	return rows, time.Since(start)
}

// BenchmarkGCPlan measures fdl gc's plan on 1,000 versions sharing 100,000
// data files against one scan of every kept catalog's data-file table in
// the same run (the measure). Sub-benchmarks: the default policy
// (every version kept: gc reads exactly the kept catalogs), read one
// catalog at a time and with the default parallelism, and keep-last 100
// (gc also reads the 900 catalogs leaving retention, once, to learn which
// files only they list). Sizes: $FDL_GCBENCH_VERSIONS, $FDL_GCBENCH_FILES.
//
//	FDL_GCBENCH_DIR=/tmp/gcbench go test ./gc -run '^$' -bench BenchmarkGCPlan -benchtime 1x -timeout 120m
func BenchmarkGCPlan(b *testing.B) {
	nv, nf := benchEnv("FDL_GCBENCH_VERSIONS", 1000), benchEnv("FDL_GCBENCH_FILES", 100000)
	url := buildBenchRepo(b, nv, nf)
	ctx := context.Background()
	for _, c := range []struct{ keepLast, workers int }{{0, 1}, {0, 0}, {nv / 10, 0}} {
		keepLast := c.keepLast
		name := fmt.Sprintf("keep-last-%d/workers-%d", keepLast, c.workers)
		if c.workers == 0 {
			name = fmt.Sprintf("keep-last-%d/workers-default", keepLast)
		}
		b.Run(name, func(b *testing.B) {
			r, err := repo.Open(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = keepLast; return nil }); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				start, cpu0 := time.Now(), cpuTime()
				plan, err := gc.MakePlan(ctx, r, gc.Options{Workers: c.workers})
				if err != nil {
					b.Fatal(err)
				}
				planTime, planCPU := time.Since(start), cpuTime()-cpu0
				var kept []version.ID
				for _, k := range plan.Kept {
					kept = append(kept, k.ID)
				}
				cpu1 := cpuTime()
				rows, scan := scanKept(b, r, kept)
				scanCPU := cpuTime() - cpu1
				b.ReportMetric(planTime.Seconds(), "plan-s")
				b.ReportMetric(scan.Seconds(), "scan-kept-s")
				b.ReportMetric(planTime.Seconds()/scan.Seconds(), "ratio")
				b.ReportMetric(planCPU.Seconds()/scanCPU.Seconds(), "cpu-ratio")
				b.Logf("%d versions, %d data files: kept %d, retiring %d; plan %s wall, %s CPU (fetch+checksum %s, open+scan %s, %d catalogs read); one scan of the %d kept catalogs' data-file tables (%d rows) %s wall, %s CPU; ratio %.2f wall, %.2f CPU",
					nv, nf, len(plan.Kept), len(plan.Retire), planTime.Round(time.Millisecond), planCPU.Round(time.Millisecond), time.Duration(plan.Timing.FetchMS)*time.Millisecond,
					time.Duration(plan.Timing.ScanMS)*time.Millisecond, plan.Data.CatalogsRead, len(kept), rows, scan.Round(time.Millisecond), scanCPU.Round(time.Millisecond),
					planTime.Seconds()/scan.Seconds(), planCPU.Seconds()/scanCPU.Seconds())
			}
		})
	}
}

// addBenchFiles writes version i of buildBenchRepo into the working
// catalog at path with plain SQL, in one transaction: a snapshot of table
// tid that adds per files (f-<n>.parquet, n from (i-1)*per) and, every 10th
// version, ends the 50 oldest open ones.
func addBenchFiles(b *testing.B, path string, tid int64, i, per int) {
	b.Helper()
	db, err := sql.Open("duckdb", path)
	if err != nil {
		b.Fatal(err)
	}
	stmts := []string{
		"BEGIN",
		"CREATE TEMP TABLE last AS SELECT * FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1",
		fmt.Sprintf(`INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, file_order, path, path_is_relative, file_format, record_count, file_size_bytes, footer_size, row_id_start, partition_id, encryption_key, mapping_id, partial_max)
			SELECT l.next_file_id + r.range, %d, l.snapshot_id + 1, NULL, NULL, printf('f-%%06d.parquet', %d + r.range), true, 'parquet', 10, 4, 4, NULL, NULL, NULL, NULL, NULL
			FROM last l, range(%d) r`, tid, (i-1)*per, per),
	}
	if i%10 == 0 {
		stmts = append(stmts, `UPDATE ducklake_data_file SET end_snapshot = (SELECT snapshot_id + 1 FROM last)
			WHERE data_file_id IN (SELECT data_file_id FROM ducklake_data_file WHERE end_snapshot IS NULL ORDER BY data_file_id LIMIT 50)`)
	}
	stmts = append(stmts,
		fmt.Sprintf(`INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version, next_catalog_id, next_file_id + %d FROM last`, per),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes (snapshot_id, changes_made, author, commit_message, commit_extra_info) SELECT snapshot_id + 1, 'inserted_into_table:%d', NULL, NULL, NULL FROM last`, tid),
		"DROP TABLE last",
		"COMMIT",
	)
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			b.Fatalf("version %d: %s: %v", i, q, err)
		}
	}
	db.Close()
}
