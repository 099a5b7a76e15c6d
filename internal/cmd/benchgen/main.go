// Command benchgen makes a large DuckLake catalog for fdl's benchmarks
// (scripts/bench-e2e.sh, scripts/bench-sqlite.sh): a new catalog
// (lakewriter.Create), a table of COLUMNS varchar columns (default 16),
// and one snapshot that registers data files with per-column statistics —
// what one very large INSERT records in a real catalog — until the file
// reaches about TARGET_MIB. File names are "ducklake-<UUIDv7>.parquet", as
// DuckDB's extension names them. Min/max values are random hex, so the
// file does not compress away. Fewer columns give more data files for the
// same size: "-columns 2 CATALOG 136" makes 1.9 M data files and 3.7 M
// statistics rows in about 217 MiB (16 columns: 441,000 data files in
// 262 MiB at TARGET_MIB 256).
//
// The Parquet files themselves are not written: fdl never reads them. With
// -data DIR the catalog's data_path is DIR and an empty file is made for
// every data file it registers (a push's data check then finds them, as
// in a repository whose lake writes to its data/ folder); without it the
// data_path is a folder that does not exist (outside any repository).
//
//	benchgen [-columns N] [-data DIR] CATALOG TARGET_MIB
//	benchgen -csv CATALOG DIR
//
// With -csv it instead writes every table of CATALOG as CSV into DIR with
// DuckDB's EXPORT DATABASE: a plain read-everything baseline for the
// SQLite conversion benchmark (scripts/bench-sqlite.sh).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

func main() {
	csv := flag.Bool("csv", false, "export CATALOG as CSV into DIR instead")
	columns := flag.Int("columns", 16, "varchar columns of the table (statistics rows per data file)")
	data := flag.String("data", "", "data_path of the catalog; an empty file is made for each data file")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchgen [-columns N] [-data DIR] CATALOG TARGET_MIB | benchgen -csv CATALOG DIR")
		os.Exit(2)
	}
	flag.Parse()
	args := flag.Args()
	if len(args) != 2 || *columns < 1 {
		flag.Usage()
	}
	var err error
	if *csv {
		err = exportCSV(args[0], args[1])
	} else {
		var mib int
		if mib, err = strconv.Atoi(args[1]); err == nil {
			err = run(args[0], int64(mib)<<20, *columns, *data)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func run(path string, target int64, columns int, data string) error {
	ctx := context.Background()
	dataPath := "/nonexistent/bench-data/"
	if data != "" {
		abs, err := filepath.Abs(data)
		if err != nil {
			return err
		}
		dataPath = filepath.ToSlash(abs) + "/"
	}
	if err := lakewriter.Create(ctx, path, lakewriter.CreateOptions{DataPath: dataPath}); err != nil {
		return err
	}
	w, err := lakewriter.Open(ctx, path)
	if err != nil {
		return err
	}
	cols := make([]lakewriter.ColumnDef, columns)
	for i := range cols {
		cols[i] = lakewriter.ColumnDef{Name: fmt.Sprintf("c%02d", i), Type: "varchar", Nullable: true}
	}
	tableID, err := w.CreateTable(ctx, "main", "wide", cols)
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	db, err := sql.Open("duckdb", path)
	if err != nil {
		return err
	}
	defer db.Close()
	// Each file row costs about 60 bytes, and each statistics row 38, once
	// DuckDB has compressed them (measured).
	files := target / (int64(columns) * 38)
	var snap, nextCatalog, nextFile, schemaVersion int64
	if err := db.QueryRow(`SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1`).
		Scan(&snap, &schemaVersion, &nextCatalog, &nextFile); err != nil {
		return err
	}
	var firstColumn int64
	if err := db.QueryRow(`SELECT min(column_id) FROM ducklake_column WHERE table_id = ?`, tableID).Scan(&firstColumn); err != nil {
		return err
	}
	s := snap + 1
	stmts := []string{
		"BEGIN",
		fmt.Sprintf(`INSERT INTO ducklake_snapshot VALUES (%d, now(), %d, %d, %d)`, s, schemaVersion, nextCatalog, nextFile+files),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'inserted_into_table:%d', 'benchgen', NULL, NULL)`, s, tableID),
		fmt.Sprintf(`INSERT INTO ducklake_data_file SELECT %d + i, %d, %d, NULL, NULL, 'ducklake-' || uuidv7() || '.parquet', true, 'parquet', 1000, 65536, 1024, i * 1000, NULL, NULL, NULL, NULL FROM range(%d) t(i)`,
			nextFile, tableID, s, files),
		fmt.Sprintf(`INSERT INTO ducklake_file_column_stats SELECT %d + i, %d, %d + c, 4096, 1000, 0, md5(random()::VARCHAR), md5(random()::VARCHAR), NULL, NULL FROM range(%d) t(i), range(%d) u(c)`,
			nextFile, tableID, firstColumn, files, int64(columns)),
		fmt.Sprintf(`UPDATE ducklake_table_stats SET record_count = %d, next_row_id = %d, file_size_bytes = %d WHERE table_id = %d`, files*1000, files*1000, files*65536, tableID),
		"COMMIT",
		"CHECKPOINT",
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q[:min(len(q), 60)], err)
		}
	}
	if err := db.Close(); err != nil {
		return err
	}
	if data == "" {
		return nil
	}
	return makeFiles(ctx, path)
}

// makeFiles makes an empty file for every data file the catalog lists.
func makeFiles(ctx context.Context, path string) error {
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	files, err := c.DataFiles(ctx)
	if err != nil {
		return err
	}
	made := map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(filepath.FromSlash(f.ResolvedPath))
		if !made[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			made[dir] = true
		}
		if err := os.WriteFile(filepath.FromSlash(f.ResolvedPath), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// exportCSV writes every table of the DuckDB file path as CSV into dir.
func exportCSV(path, dir string) error {
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec("EXPORT DATABASE " + sqlquote.String(dir) + " (FORMAT csv)")
	return err
}
