package ducklake

import (
	"context"
	"fmt"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// DeleteOlderThan is the value fdl gives DuckLake's delete_older_than
// option in the working catalogs it makes for a new lake or an import. The
// option is the age of files scheduled for deletion that
// ducklake_cleanup_old_files and ducklake_delete_orphaned_files delete when
// called without older_than (CHECKPOINT calls both; DuckLake's default is 2
// days). A repository's data folder is shared by every version and branch,
// and files a working catalog supersedes are still read by the versions
// published before: only fdl gc deletes them, once no version in retention
// reads them (docs/spec.md §9). With 1000 years those calls delete nothing;
// calls with cleanup_all or an explicit older_than still do.
const DeleteOlderThan = "1000 years"

// SetOptionIfAbsent sets a lake-wide DuckLake option (a ducklake_metadata
// row with the key and no scope, as CALL lake.set_option(key, value)
// writes) in the DuckDB-format catalog at path, unless the catalog has a
// lake-wide value for key already. It reports whether it wrote. The file
// keeps its storage version (rows are added to the existing file; closing
// checkpoints it, so no .wal stays beside it).
func SetOptionIfAbsent(ctx context.Context, path, key, value string) (bool, error) {
	return setOption(ctx, path, key, value, false)
}

// SetOption sets a lake-wide DuckLake option in the DuckDB-format catalog
// at path, replacing a lake-wide value it has (SetOptionIfAbsent's rules
// otherwise). It reports whether it wrote.
func SetOption(ctx context.Context, path, key, value string) (bool, error) {
	return setOption(ctx, path, key, value, true)
}

func setOption(ctx context.Context, path, key, value string, replace bool) (bool, error) {
	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		return false, err
	}
	defer releaseDuckDB(db, conn)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("ATTACH %s AS %s (TYPE DUCKDB)", sqlquote.String(path), sqlquote.Ident(catalogAlias))); err != nil {
		return false, classifyAttachError(path, err)
	}
	var scoped bool
	if err := conn.QueryRowContext(ctx, "SELECT count(*) > 0 FROM duckdb_columns() WHERE database_name = ? AND table_name = 'ducklake_metadata' AND column_name = 'scope'",
		catalogAlias).Scan(&scoped); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	t := sqlquote.Ident(catalogAlias) + ".ducklake_metadata"
	where, insert := "key = ?", "INSERT INTO "+t+" (key, value) VALUES (?, ?)"
	if scoped {
		where, insert = "key = ? AND scope IS NULL", "INSERT INTO "+t+" (key, value, scope, scope_id) VALUES (?, ?, NULL, NULL)"
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+t+" WHERE "+where, key).Scan(&n); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if n > 0 && !replace {
		return false, nil
	}
	if n > 0 {
		insert = "UPDATE " + t + " SET value = ? WHERE " + where
		if _, err := conn.ExecContext(ctx, insert, value, key); err != nil {
			return false, fmt.Errorf("%s: setting DuckLake option %s: %w", path, key, err)
		}
	} else if _, err := conn.ExecContext(ctx, insert, key, value); err != nil {
		return false, fmt.Errorf("%s: setting DuckLake option %s: %w", path, key, err)
	}
	if _, err := conn.ExecContext(ctx, "DETACH "+sqlquote.Ident(catalogAlias)); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}
