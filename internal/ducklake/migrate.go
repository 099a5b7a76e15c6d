package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// CurrentFormat is the DuckLake format fdl migrates older catalogs to: the
// only one the ducklake extension of DuckDB 1.5.2 and newer attaches without
// migrating it (duckdb/ducklake v1.5-variegata, ducklake_initializer.cpp
// LoadExistingDuckLake: any other version string needs AUTOMATIC_MIGRATION,
// which a READ_ONLY reader cannot run), and one that DuckDB 2.0's extension
// reads as it is (its ResolveTargetVersion keeps a catalog of 1.0 or newer
// at its own version).
const CurrentFormat = "1.0"

// ErrCurrentFormat: Migrate was given a catalog whose format needs no
// migration (CurrentFormat or newer).
var ErrCurrentFormat = errors.New("catalog needs no migration")

// migration is one step of the extension's migration chain: the SQL of
// duckdb/ducklake src/storage/ducklake_metadata_manager.cpp function Source,
// which takes a catalog of format From to format To. The SQL is the same on
// branch v1.5-variegata (shipped with DuckDB 1.5.5), at d8a1881e (pinned by
// DuckDB v1.5.5's .github/config/extensions/ducklake.cmake) and on main
// (Aug 2026). "{M}" stands for the quoted catalog and schema that hold the
// ducklake_* tables ({METADATA_CATALOG} in the source).
type migration struct {
	From, To string
	Source   string
	// Lenient is the extension's allow_failures mode (used for the dev
	// formats, whose table sets vary): IF [NOT] EXISTS on each DDL statement.
	Lenient bool
}

// migrations maps a format to the step the extension takes from it
// (ducklake_initializer.cpp LoadExistingDuckLake): 0.1 -> 0.2 -> 0.3 -> 0.4
// -> 1.0, with 0.3-dev1 joining at 0.3 and 0.4-dev1 at 0.4.
var migrations = map[string]migration{
	"0.1":      {From: "0.1", To: "0.2", Source: "MigrateV01"},
	"0.2":      {From: "0.2", To: "0.3", Source: "MigrateV02"},
	"0.3-dev1": {From: "0.3-dev1", To: "0.3", Source: "MigrateV02", Lenient: true},
	"0.3":      {From: "0.3", To: "0.4", Source: "MigrateV03"},
	"0.4-dev1": {From: "0.4-dev1", To: "0.4", Source: "MigrateV03", Lenient: true},
	"0.4":      {From: "0.4", To: "1.0", Source: "MigrateV04"},
}

// NeedsMigration reports whether a catalog of this DuckLake format must be
// migrated before DuckDB 1.5.2 and newer can attach it READ_ONLY: true for
// every format older than CurrentFormat that Migrate takes (0.1, 0.2,
// 0.3-dev1, 0.3, 0.4-dev1, 0.4).
func NeedsMigration(format string) bool {
	_, ok := migrations[format]
	return ok
}

// FormatReaders names the DuckDB releases whose ducklake extension attaches
// a catalog of this DuckLake format READ_ONLY as it is, as fdl prints them:
// "DuckDB 1.4.x" for "0.3", "DuckDB >= 1.5.2" for "1.0" (meta's formats
// table: each release reads only the format it writes); "no published
// DuckDB release" for a format only development builds wrote, "current
// DuckDB releases" for one this fdl does not know (a newer one).
func FormatReaders(format string) string {
	f, ok := meta.LookupFormat(format)
	switch {
	case !ok:
		return "current DuckDB releases"
	case f.Extension == nil:
		return "no published DuckDB release"
	}
	return "DuckDB " + f.Extension.String()
}

// IsCurrentFormat reports whether format is CurrentFormat or newer (meta's order
// of formats); an unknown format counts as newer.
func IsCurrentFormat(format string) bool {
	c, err := meta.CompareFormats(format, CurrentFormat)
	return err != nil || c >= 0
}

// statements returns the SQL of step m for a catalog whose tables are
// described by has (table, columns...). It is the extension's SQL with two
// changes, both only where the extension itself would fail: DDL carries
// IF [NOT] EXISTS in every mode (a catalog with the exact layout of its
// format gets exactly the extension's result; one whose layout is already
// partly migrated, as dev formats are, is finished instead of refused), and
// MigrateV03's move of partial_file_info's "partial_max:N" into partial_max
// is skipped when ducklake_data_file has no partial_file_info (a 0.4-dev1
// layout, on which the extension's allow_failures mode still fails).
func (m migration) statements(has func(table string, cols ...string) bool) []string {
	switch m.Source {
	case "MigrateV01":
		return []string{
			`ALTER TABLE {M}.ducklake_schema ADD COLUMN IF NOT EXISTS path VARCHAR DEFAULT ''`,
			`ALTER TABLE {M}.ducklake_schema ADD COLUMN IF NOT EXISTS path_is_relative BOOLEAN DEFAULT TRUE`,
			`ALTER TABLE {M}.ducklake_table ADD COLUMN IF NOT EXISTS path VARCHAR DEFAULT ''`,
			`ALTER TABLE {M}.ducklake_table ADD COLUMN IF NOT EXISTS path_is_relative BOOLEAN DEFAULT TRUE`,
			`ALTER TABLE {M}.ducklake_metadata ADD COLUMN IF NOT EXISTS scope VARCHAR`,
			`ALTER TABLE {M}.ducklake_metadata ADD COLUMN IF NOT EXISTS scope_id BIGINT`,
			`ALTER TABLE {M}.ducklake_data_file ADD COLUMN IF NOT EXISTS mapping_id BIGINT`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_column_mapping(mapping_id BIGINT, table_id BIGINT, type VARCHAR)`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_name_mapping(mapping_id BIGINT, column_id BIGINT, source_name VARCHAR, target_field_id BIGINT, parent_column BIGINT)`,
			// 0.1 stored a partition key's column as its position among the
			// table's live top-level columns; 0.2 stores the column id.
			`UPDATE {M}.ducklake_partition_column SET column_id = (SELECT LIST(column_id ORDER BY column_order) FROM {M}.ducklake_column WHERE table_id = ducklake_partition_column.table_id AND parent_column IS NULL AND end_snapshot IS NULL)[ducklake_partition_column.column_id + 1]`,
			`UPDATE {M}.ducklake_metadata SET value = '0.2' WHERE key = 'version'`,
		}
	case "MigrateV02":
		return []string{
			`ALTER TABLE {M}.ducklake_name_mapping ADD COLUMN IF NOT EXISTS is_partition BOOLEAN DEFAULT false`,
			`ALTER TABLE {M}.ducklake_snapshot_changes ADD COLUMN IF NOT EXISTS author VARCHAR DEFAULT NULL`,
			`ALTER TABLE {M}.ducklake_snapshot_changes ADD COLUMN IF NOT EXISTS commit_message VARCHAR DEFAULT NULL`,
			`ALTER TABLE {M}.ducklake_snapshot_changes ADD COLUMN IF NOT EXISTS commit_extra_info VARCHAR DEFAULT NULL`,
			`UPDATE {M}.ducklake_metadata SET value = '0.3' WHERE key = 'version'`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_schema_versions(begin_snapshot BIGINT, schema_version BIGINT)`,
			// {WHERE_EMPTY} of allow_failures mode; in strict mode the table
			// was just created, so it is empty anyway.
			`INSERT INTO {M}.ducklake_schema_versions SELECT * FROM (SELECT MIN(snapshot_id), schema_version FROM {M}.ducklake_snapshot GROUP BY schema_version ORDER BY schema_version) t WHERE NOT EXISTS (SELECT 1 FROM {M}.ducklake_schema_versions)`,
			`ALTER TABLE IF EXISTS {M}.ducklake_file_column_statistics RENAME TO ducklake_file_column_stats`,
			`ALTER TABLE {M}.ducklake_file_column_stats ADD COLUMN IF NOT EXISTS extra_stats VARCHAR DEFAULT NULL`,
			`ALTER TABLE {M}.ducklake_table_column_stats ADD COLUMN IF NOT EXISTS extra_stats VARCHAR DEFAULT NULL`,
		}
	case "MigrateV03":
		s := []string{
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_macro(schema_id BIGINT, macro_id BIGINT, macro_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT)`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_macro_impl(macro_id BIGINT, impl_id BIGINT, dialect VARCHAR, sql VARCHAR, type VARCHAR)`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_macro_parameters(macro_id BIGINT, impl_id BIGINT,column_id BIGINT, parameter_name VARCHAR, parameter_type VARCHAR, default_value VARCHAR, default_value_type VARCHAR)`,
			`ALTER TABLE {M}.ducklake_column ADD COLUMN IF NOT EXISTS default_value_type VARCHAR DEFAULT 'literal'`,
			`UPDATE {M}.ducklake_column SET default_value_type = 'literal' WHERE default_value_type IS NULL`,
			`ALTER TABLE {M}.ducklake_column ADD COLUMN IF NOT EXISTS default_value_dialect VARCHAR DEFAULT NULL`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_sort_info(sort_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT)`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_sort_expression(sort_id BIGINT, table_id BIGINT, sort_key_index BIGINT, expression VARCHAR, dialect VARCHAR, sort_direction VARCHAR, null_order VARCHAR)`,
			`CREATE TABLE IF NOT EXISTS {M}.ducklake_file_variant_stats(data_file_id BIGINT, table_id BIGINT, column_id BIGINT, variant_path VARCHAR, shredded_type VARCHAR, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR)`,
			`ALTER TABLE {M}.ducklake_schema_versions ADD COLUMN IF NOT EXISTS table_id BIGINT`,
			`ALTER TABLE {M}.ducklake_data_file ADD COLUMN IF NOT EXISTS partial_max BIGINT`,
			`ALTER TABLE {M}.ducklake_delete_file ADD COLUMN IF NOT EXISTS partial_max BIGINT`,
		}
		if has("ducklake_data_file", "partial_file_info") {
			s = append(s,
				`CREATE TEMP TABLE IF NOT EXISTS __ducklake_partial_max_migration AS
SELECT data_file_id, TRY_CAST(regexp_extract(partial_file_info, 'partial_max:(\d+)', 1) AS BIGINT) AS partial_max
FROM {M}.ducklake_data_file
WHERE partial_file_info IS NOT NULL AND partial_file_info LIKE '%partial_max:%'`,
				`ALTER TABLE {M}.ducklake_data_file DROP COLUMN IF EXISTS partial_file_info`,
				`UPDATE {M}.ducklake_data_file AS df
SET partial_max = m.partial_max
FROM __ducklake_partial_max_migration m
WHERE df.data_file_id = m.data_file_id`,
				`DROP TABLE IF EXISTS __ducklake_partial_max_migration`)
		}
		return append(s,
			`UPDATE {M}.ducklake_metadata SET value = '0.4' WHERE key = 'version'`,
			// Then, as separate queries: schema versions become per table.
			`INSERT INTO {M}.ducklake_schema_versions (table_id, begin_snapshot, schema_version)
SELECT t.table_id, sv.begin_snapshot, sv.schema_version
FROM {M}.ducklake_schema_versions sv
JOIN {M}.ducklake_table t
  ON sv.begin_snapshot BETWEEN t.begin_snapshot
                           AND COALESCE(t.end_snapshot, sv.begin_snapshot)
WHERE sv.table_id IS NULL`,
			`DELETE FROM {M}.ducklake_schema_versions WHERE table_id IS NULL`)
	case "MigrateV04":
		return []string{`UPDATE {M}.ducklake_metadata SET value = '1.0' WHERE key = 'version'`}
	}
	return nil
}

// currentLayout is the table set of a CurrentFormat catalog: each
// ducklake_* table the extension creates (ducklake_metadata_manager.cpp
// InitializeDuckLake) with its columns and their types as DuckDB reports
// them (duckdb_columns().data_type). A migrated catalog must have exactly
// these columns in each of these tables.
var currentLayout = map[string]string{
	"ducklake_metadata":                     "key VARCHAR, value VARCHAR, scope VARCHAR, scope_id BIGINT",
	"ducklake_snapshot":                     "snapshot_id BIGINT, snapshot_time TIMESTAMP WITH TIME ZONE, schema_version BIGINT, next_catalog_id BIGINT, next_file_id BIGINT",
	"ducklake_snapshot_changes":             "snapshot_id BIGINT, changes_made VARCHAR, author VARCHAR, commit_message VARCHAR, commit_extra_info VARCHAR",
	"ducklake_schema":                       "schema_id BIGINT, schema_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN",
	"ducklake_table":                        "table_id BIGINT, table_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, table_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN",
	"ducklake_view":                         "view_id BIGINT, view_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, view_name VARCHAR, dialect VARCHAR, sql VARCHAR, column_aliases VARCHAR",
	"ducklake_tag":                          "object_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR",
	"ducklake_column_tag":                   "table_id BIGINT, column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR",
	"ducklake_data_file":                    "data_file_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, file_order BIGINT, path VARCHAR, path_is_relative BOOLEAN, file_format VARCHAR, record_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, row_id_start BIGINT, partition_id BIGINT, encryption_key VARCHAR, mapping_id BIGINT, partial_max BIGINT",
	"ducklake_file_column_stats":            "data_file_id BIGINT, table_id BIGINT, column_id BIGINT, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR",
	"ducklake_file_variant_stats":           "data_file_id BIGINT, table_id BIGINT, column_id BIGINT, variant_path VARCHAR, shredded_type VARCHAR, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR",
	"ducklake_delete_file":                  "delete_file_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, format VARCHAR, delete_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, encryption_key VARCHAR, partial_max BIGINT",
	"ducklake_column":                       "column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, table_id BIGINT, column_order BIGINT, column_name VARCHAR, column_type VARCHAR, initial_default VARCHAR, default_value VARCHAR, nulls_allowed BOOLEAN, parent_column BIGINT, default_value_type VARCHAR, default_value_dialect VARCHAR",
	"ducklake_table_stats":                  "table_id BIGINT, record_count BIGINT, next_row_id BIGINT, file_size_bytes BIGINT",
	"ducklake_table_column_stats":           "table_id BIGINT, column_id BIGINT, contains_null BOOLEAN, contains_nan BOOLEAN, min_value VARCHAR, max_value VARCHAR, extra_stats VARCHAR",
	"ducklake_partition_info":               "partition_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT",
	"ducklake_partition_column":             "partition_id BIGINT, table_id BIGINT, partition_key_index BIGINT, column_id BIGINT, transform VARCHAR",
	"ducklake_file_partition_value":         "data_file_id BIGINT, table_id BIGINT, partition_key_index BIGINT, partition_value VARCHAR",
	"ducklake_files_scheduled_for_deletion": "data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, schedule_start TIMESTAMP WITH TIME ZONE",
	"ducklake_inlined_data_tables":          "table_id BIGINT, table_name VARCHAR, schema_version BIGINT",
	"ducklake_column_mapping":               "mapping_id BIGINT, table_id BIGINT, type VARCHAR",
	"ducklake_name_mapping":                 "mapping_id BIGINT, column_id BIGINT, source_name VARCHAR, target_field_id BIGINT, parent_column BIGINT, is_partition BOOLEAN",
	"ducklake_schema_versions":              "begin_snapshot BIGINT, schema_version BIGINT, table_id BIGINT",
	"ducklake_macro":                        "schema_id BIGINT, macro_id BIGINT, macro_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT",
	"ducklake_macro_impl":                   "macro_id BIGINT, impl_id BIGINT, dialect VARCHAR, sql VARCHAR, type VARCHAR",
	"ducklake_macro_parameters":             "macro_id BIGINT, impl_id BIGINT, column_id BIGINT, parameter_name VARCHAR, parameter_type VARCHAR, default_value VARCHAR, default_value_type VARCHAR",
	"ducklake_sort_info":                    "sort_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT",
	"ducklake_sort_expression":              "sort_id BIGINT, table_id BIGINT, sort_key_index BIGINT, expression VARCHAR, dialect VARCHAR, sort_direction VARCHAR, null_order VARCHAR",
}

// MigrationStep is one step Migrate applied: the extension's function
// Source (ducklake_metadata_manager.cpp) that takes format From to To.
type MigrationStep struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Source string `json:"source"` // e.g. "MigrateV02"
	// Lenient is true for the extension's allow_failures mode (dev formats).
	Lenient bool `json:"lenient,omitempty"`
}

// MigrateInfo describes a migrated catalog.
type MigrateInfo struct {
	// From is the source's format (ducklake_metadata 'version'), e.g. "0.2".
	From string `json:"from"`
	// To is CurrentFormat.
	To    string          `json:"to"`
	Steps []MigrationStep `json:"steps"`
	// Snapshot is the last snapshot, the same row as the source's: a
	// migration adds no snapshot (the extension's neither).
	Snapshot Snapshot `json:"snapshot"`
	// Storage is the migrated file's DuckDB storage format: the source's
	// (a SQLite source gets the one Freeze gives it).
	Storage meta.Storage `json:"storage"`
}

// Migrate writes to dst a copy of the DuckLake catalog src migrated to
// CurrentFormat with the ducklake extension's own migration steps (see
// migration), run as plain SQL in a private DuckDB: the extension is not
// needed.
//
// src is any catalog Freeze takes (DuckDB or SQLite form, with or without a
// WAL), read as Freeze reads it and never modified. The copy is made and
// migrated in a temporary folder ".fdl-migrate-*" beside dst, in one
// transaction, checkpointed and checked before it is moved to dst with a
// create-only link:
//   - its format is CurrentFormat and each ducklake_* table the extension
//     creates for that format has exactly the extension's columns and types
//     (other tables, such as inlined data, are kept as they are);
//   - every table has the source's row count, except
//     ducklake_schema_versions, which the migration rewrites;
//   - the snapshots are the source's (no snapshot is added) and the state at
//     the last snapshot (schemas, tables, columns, views, row counts, data
//     files) equals the source's;
//   - its DuckDB storage version is the frozen source's (an in-place
//     change keeps the file's storage version, so any DuckDB that read the
//     source file can open the copy; whether its ducklake extension reads
//     CurrentFormat is another matter: see FormatReaders).
//
// On any error nothing is left behind.
//
// Errors: ErrCurrentFormat when src needs no migration (its format is
// CurrentFormat or newer); ErrUnsupportedFormat for a format with no
// migration path, or when the migrated layout is not the CurrentFormat
// layout (the message names the table and columns); fs.ErrExist when dst
// exists; every error of Freeze for src.
func Migrate(ctx context.Context, src, dst string) (info MigrateInfo, err error) {
	dstAbs, err := filepath.Abs(dst)
	if err != nil {
		return info, err
	}
	if _, err := os.Lstat(dstAbs); err == nil {
		return info, fmt.Errorf("migrate %s: %s: %w", src, dstAbs, fs.ErrExist)
	}
	workParent := filepath.Dir(dstAbs)
	if strings.Contains(workParent, "?") {
		workParent = os.TempDir() // DuckDB cannot write under such a path (walPath)
	}
	work, err := os.MkdirTemp(workParent, ".fdl-migrate-*")
	if err != nil {
		return info, fmt.Errorf("migrate %s: %w", src, err)
	}
	defer os.RemoveAll(work)
	tmp := filepath.Join(work, "catalog.duckdb")
	frozen, err := Freeze(ctx, src, tmp)
	if err != nil {
		return info, err
	}
	if !NeedsMigration(frozen.Format) {
		if IsCurrentFormat(frozen.Format) {
			return info, fmt.Errorf("%s is DuckLake %s, which %s reads as it is: %w", src, frozen.Format, FormatReaders(frozen.Format), ErrCurrentFormat)
		}
		return info, fmt.Errorf("%w %q in %s: no migration path to %s", ErrUnsupportedFormat, frozen.Format, src, CurrentFormat)
	}
	info, err = migrateInPlace(ctx, tmp, frozen, work)
	if err != nil {
		return info, fmt.Errorf("migrate %s: %w", src, err)
	}
	if err := syncFile(tmp); err != nil {
		return info, fmt.Errorf("migrate %s: %w", src, err)
	}
	if err := placeNew(tmp, dstAbs); err != nil {
		return info, fmt.Errorf("migrate %s: %w", src, err)
	}
	syncDir(filepath.Dir(dstAbs))
	return info, nil
}

// migrateInPlace runs the migration chain on the DuckDB-format catalog at
// path (a private copy) and checks the result.
func migrateInPlace(ctx context.Context, path string, frozen FreezeInfo, work string) (MigrateInfo, error) {
	info := MigrateInfo{From: frozen.Format, To: CurrentFormat, Steps: []MigrationStep{}}
	before, err := catalogFacts(ctx, path)
	if err != nil {
		return info, err
	}
	db, conn, err := newDuckDB(ctx, []string{
		"SET memory_limit = " + sqlquote.String(freezeMemoryLimit),
		"SET temp_directory = " + sqlquote.String(filepath.Join(work, "spill")),
	})
	if err != nil {
		return info, err
	}
	c := &Catalog{path: path, db: db, conn: conn, backend: BackendDuckDB}
	defer c.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("ATTACH %s AS %s (TYPE DUCKDB)", sqlquote.String(path), sqlquote.Ident(catalogAlias))); err != nil {
		return info, classifyAttachError(path, err)
	}
	if err := c.load(ctx); err != nil {
		return info, err
	}
	m := sqlquote.Ident(catalogAlias) + "." + sqlquote.Ident(c.schema)
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return info, err
	}
	rollback := func(err error) (MigrateInfo, error) {
		_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		return info, err
	}
	for format := frozen.Format; format != CurrentFormat; {
		step, ok := migrations[format]
		if !ok {
			return rollback(fmt.Errorf("%w %q: no migration step from it", ErrUnsupportedFormat, format))
		}
		for _, s := range step.statements(c.has) {
			if _, err := conn.ExecContext(ctx, strings.ReplaceAll(s, "{M}", m)); err != nil {
				return rollback(fmt.Errorf("DuckLake %s -> %s (%s): %w", step.From, step.To, step.Source, err))
			}
		}
		info.Steps = append(info.Steps, MigrationStep{From: step.From, To: step.To, Source: step.Source, Lenient: step.Lenient})
		format = step.To
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return rollback(err)
	}
	for _, s := range []string{"CHECKPOINT " + sqlquote.Ident(catalogAlias), "DETACH " + sqlquote.Ident(catalogAlias)} {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return info, fmt.Errorf("%s: %w", s, err)
		}
	}
	c.Close()
	if _, err := checkCopy(path, path, frozen.Storage); err != nil {
		return info, err
	}
	after, err := catalogFacts(ctx, path)
	if err != nil {
		return info, fmt.Errorf("the migrated catalog does not open: %w", err)
	}
	if err := checkMigrated(before, after); err != nil {
		return info, err
	}
	info.Snapshot, info.Storage = after.last, frozen.Storage
	return info, nil
}

// facts are what checkMigrated compares before and after a migration.
type facts struct {
	format string
	cols   map[string][]string // table -> "name TYPE" in physical order
	counts map[string]int64    // table -> rows
	snaps  []Snapshot
	last   Snapshot
	state  *meta.State
}

// catalogFacts reads facts of the DuckDB-format catalog at path.
func catalogFacts(ctx context.Context, path string) (*facts, error) {
	c, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	f := &facts{format: c.Format(), cols: map[string][]string{}, counts: map[string]int64{}}
	err = c.query(ctx, fmt.Sprintf(`SELECT table_name, column_name, data_type FROM duckdb_columns()
		WHERE database_name = %s AND schema_name = %s ORDER BY table_name, column_index`,
		sqlquote.String(catalogAlias), sqlquote.String(c.schema)), func(r *sql.Rows) error {
		var t, col, typ string
		if err := r.Scan(&t, &col, &typ); err != nil {
			return err
		}
		f.cols[t] = append(f.cols[t], col+" "+typ)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for t := range f.cols {
		var n int64
		if err := c.conn.QueryRowContext(ctx, "SELECT count(*) FROM "+c.t(t)).Scan(&n); err != nil {
			return nil, fmt.Errorf("count rows of %s in %s: %w", t, path, err)
		}
		f.counts[t] = n
	}
	if f.snaps, err = c.Snapshots(ctx); err != nil {
		return nil, err
	}
	if len(f.snaps) == 0 {
		return nil, fmt.Errorf("%w: %s has no snapshots", ErrSnapshotNotFound, path)
	}
	f.last = f.snaps[len(f.snaps)-1]
	if f.state, err = c.State(ctx, f.last.ID); err != nil {
		return nil, err
	}
	return f, nil
}

// checkMigrated compares a migrated catalog's facts with its source's.
func checkMigrated(before, after *facts) error {
	if after.format != CurrentFormat {
		return fmt.Errorf("the migrated catalog has format %q, want %s", after.format, CurrentFormat)
	}
	var bad []string
	names := make([]string, 0, len(currentLayout))
	for t := range currentLayout {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		want := strings.Split(currentLayout[t], ", ")
		got := slices.Clone(after.cols[t])
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			if len(got) == 0 {
				bad = append(bad, fmt.Sprintf("%s is missing", t))
			} else {
				bad = append(bad, fmt.Sprintf("%s has (%s), want (%s)", t, strings.Join(got, ", "), strings.Join(want, ", ")))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: after the extension's migration steps the catalog's layout is not DuckLake %s's: %s", ErrUnsupportedFormat, CurrentFormat, strings.Join(bad, "; "))
	}
	for t, n := range before.counts {
		if t == "ducklake_file_column_statistics" {
			t = "ducklake_file_column_stats" // renamed by MigrateV02
		}
		if t == "ducklake_schema_versions" {
			continue // rewritten per table by MigrateV03
		}
		if after.counts[t] != n {
			return fmt.Errorf("table %s has %d rows after the migration, %d before", t, after.counts[t], n)
		}
	}
	if !reflect.DeepEqual(before.snaps, after.snaps) {
		return fmt.Errorf("the snapshots changed in the migration (%d before, %d after)", len(before.snaps), len(after.snaps))
	}
	if !reflect.DeepEqual(before.state, after.state) {
		return fmt.Errorf("what the catalog holds at snapshot %d changed in the migration", after.last.ID)
	}
	return nil
}
