// Command benchgen makes a large DuckLake catalog for fdl's end-to-end
// benchmark (scripts/bench-e2e.sh): a new catalog (lakewriter.Create), a
// table of 16 varchar columns, and one snapshot that registers FILES data
// files with per-column statistics — what one very large INSERT records in
// a real catalog. Min/max values are random hex, so the file does not
// compress away. The Parquet files themselves are not written (fdl never
// reads them); the catalog is for timing fdl's own work.
//
//	benchgen CATALOG TARGET_MIB
//	benchgen -csv CATALOG DIR
//
// With -csv it instead writes every table of CATALOG as CSV into DIR with
// DuckDB's EXPORT DATABASE: a plain read-everything baseline for the
// SQLite conversion benchmark (scripts/bench-sqlite.sh).
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

const columns = 16

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "-csv":
		err = exportCSV(os.Args[2], os.Args[3])
	case len(os.Args) == 3:
		var mib int
		if mib, err = strconv.Atoi(os.Args[2]); err == nil {
			err = run(os.Args[1], int64(mib)<<20)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: benchgen CATALOG TARGET_MIB | benchgen -csv CATALOG DIR")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgen:", err)
		os.Exit(1)
	}
}

func run(path string, target int64) error {
	ctx := context.Background()
	if err := lakewriter.Create(ctx, path, lakewriter.CreateOptions{DataPath: "/nonexistent/bench-data/"}); err != nil {
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
	// Each file row costs about 16 × 38 bytes once DuckDB has compressed it (measured).
	files := target / (columns * 38)
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
		fmt.Sprintf(`INSERT INTO ducklake_data_file SELECT %d + i, %d, %d, NULL, NULL, 'ducklake-' || uuid() || '.parquet', true, 'parquet', 1000, 65536, 1024, i * 1000, NULL, NULL, NULL, NULL FROM range(%d) t(i)`,
			nextFile, tableID, s, files),
		fmt.Sprintf(`INSERT INTO ducklake_file_column_stats SELECT %d + i, %d, %d + c, 4096, 1000, 0, md5(random()::VARCHAR), md5(random()::VARCHAR), NULL, NULL FROM range(%d) t(i), range(%d) u(c)`,
			nextFile, tableID, firstColumn, files, columns),
		fmt.Sprintf(`UPDATE ducklake_table_stats SET record_count = %d, next_row_id = %d, file_size_bytes = %d WHERE table_id = %d`, files*1000, files*1000, files*65536, tableID),
		"COMMIT",
		"CHECKPOINT",
	}
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q[:min(len(q), 60)], err)
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
