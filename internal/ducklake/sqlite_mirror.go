package ducklake

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fdl-dev/fdl/internal/scratch"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// CopySQLiteInto reads one consistent snapshot of the SQLite-format catalog
// at path (as Open does: checked first, read in one read transaction,
// retried on SQLITE_BUSY) into the empty DuckDB database attached as alias
// on conn, with the tables and column types of a DuckDB-format catalog of
// the same DuckLake format. When rowIDColumn is not empty, every table gets
// one more BIGINT column of that name holding each row's SQLite rowid (a
// writer uses it to turn changes made in DuckDB back into SQLite DELETEs).
// The connection's TimeZone must be UTC. Errors as Open gives them.
func CopySQLiteInto(ctx context.Context, conn *sql.Conn, alias, path, rowIDColumn string) error {
	return withSQLiteSnapshot(ctx, path, func(s *sqliteSnapshot) error {
		s.rowIDCol = rowIDColumn
		var names []string
		rows, err := conn.QueryContext(ctx, "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", alias)
		if err != nil {
			return err
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return err
			}
			names = append(names, n)
		}
		rows.Close()
		work, removeWork, err := scratch.New(scratch.SQLite)
		if err != nil {
			return err
		}
		defer removeWork()
		_, err = s.copyInto(ctx, conn, alias, work)
		if err != nil {
			// undo the partial copy so a retry starts from an empty database
			for _, t := range s.tables {
				conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+sqlquote.Ident(alias)+".main."+sqlquote.Ident(t.name))
			}
		}
		return err
	})
}

// SQLiteTable says how a table of a DuckDB-format catalog is laid out in a
// SQLite-format catalog (ConvertToSQLite's rules).
type SQLiteTable struct {
	Name string
	// CreateSQL is the CREATE TABLE statement for SQLite.
	CreateSQL string
	// Columns and DeclTypes: the column names in order and the declared
	// SQLite type of each (BIGINT, VARCHAR, DOUBLE or BLOB); a value is
	// stored as DuckDB's CAST of it to that type.
	Columns, DeclTypes []string
}

// SQLiteLayout returns the SQLite layout of every table in schema main of
// the DuckDB database attached as alias on conn (a DuckLake catalog). Errors:
// ErrUnsupportedFormat for a table or column fdl cannot type in SQLite.
func SQLiteLayout(ctx context.Context, conn *sql.Conn, alias string) ([]SQLiteTable, error) {
	// The format names the metadata columns of inlined-data tables.
	var format sql.NullString
	q := "SELECT max(value) FILTER (WHERE key = 'version') FROM " + sqlquote.Ident(alias) + ".main.ducklake_metadata"
	if err := conn.QueryRowContext(ctx, q).Scan(&format); err != nil {
		return nil, fmt.Errorf("%w: %s: read ducklake_metadata: %v", ErrNotCatalog, alias, err)
	}
	c := &Catalog{path: alias, conn: conn, schema: "main", format: format.String}
	tables, err := c.duckLayoutAlias(ctx, alias)
	if err != nil {
		return nil, err
	}
	keywords, err := duckKeywords(ctx, conn)
	if err != nil {
		return nil, err
	}
	out := make([]SQLiteTable, len(tables))
	for i, t := range tables {
		ddl, decls := sqliteCreateTable(t, keywords)
		out[i] = SQLiteTable{Name: t.name, CreateSQL: ddl, Columns: t.cols, DeclTypes: decls}
	}
	return out, nil
}
