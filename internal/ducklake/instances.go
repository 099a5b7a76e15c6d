package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// Idle DuckDB instances (docs/performance.md, "DuckDB instances").
//
// Starting an in-memory DuckDB costs about 15 ms of CPU (every statically
// linked extension registers its functions), and its first look at the
// catalog (duckdb_columns(), duckdb_tables()) about as much again (DuckDB
// creates its built-in views then). A process that uses instances one after
// another — a commit's freeze and then its checks, verify over many
// versions, the tests — hands a finished one to the next instead:
// releaseDuckDB resets it to what newDuckDB starts from (nothing attached,
// no table in its own database, the settings this package changes back to
// baseSettings and DuckDB's defaults, a new connection so no temporary
// table is left) and keeps
// up to idleMax of them; newDuckDB takes one before it starts a new one.
// An instance that cannot be reset (a setting DuckDB refuses to change back,
// such as a spill folder it has used) is closed as before.

// idleMax is the number of idle instances a process keeps.
const idleMax = 2

// baseSettings are what every instance starts from and is reset to:
// nothing downloaded, no cache of file contents that outlives a query's
// files being replaced between two users, and no spill folder (DuckDB's
// default for an in-memory instance is ".tmp" in the process's working
// directory, a user's folder; a user that may spill sets a folder of its
// own). temp_directory is SET, not RESET, on release: RESET after it was
// SET to the empty string keeps the empty string (DuckDB 1.5 and 2.0).
var baseSettings = []string{
	"SET autoinstall_known_extensions = false",
	"SET enable_external_file_cache = false",
	"SET temp_directory = ''",
}

// resetSettings are the other settings this package SETs on an instance:
// releaseDuckDB RESETs each (threads: ConvertToSQLite's one thread, which
// also moves worker_threads and write_buffer_row_group_memory_limit, reset
// with it).
var resetSettings = []string{"memory_limit", "preserve_insertion_order", "TimeZone", "threads", "worker_threads", "write_buffer_row_group_memory_limit"}

var idle struct {
	mu  sync.Mutex
	dbs []*sql.DB
	// udfs are the scalar functions registered in each instance
	// (registerUDF): DuckDB keeps them in the instance's catalog.
	udfs map[*sql.DB]map[string]bool
}

// newDuckDB returns an in-memory DuckDB (an idle one when the process has
// one, else a new one, with one open connection at most) and a new
// connection to it, after running the given SET statements on it. Give
// both back with releaseDuckDB.
func newDuckDB(ctx context.Context, settings []string) (*sql.DB, *sql.Conn, error) {
	db := takeIdle()
	if db == nil {
		var err error
		if db, err = sql.Open("duckdb", ""); err != nil {
			return nil, nil, fmt.Errorf("start duckdb: %w", err)
		}
		db.SetMaxOpenConns(1)
		// A closed connection is closed, not kept for the next Conn: its
		// temporary tables go with it.
		db.SetMaxIdleConns(0)
		// No network here or on users' machines is assumed: never try to
		// download an extension while reading a catalog (baseSettings).
		settings = append(slices.Clone(baseSettings), settings...)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		closeInstance(db)
		return nil, nil, fmt.Errorf("start duckdb: %w", err)
	}
	for _, s := range settings {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			conn.Close()
			closeInstance(db)
			return nil, nil, fmt.Errorf("duckdb %q: %w", s, err)
		}
	}
	return db, conn, nil
}

// takeIdle returns an idle instance, nil when there is none.
func takeIdle() *sql.DB {
	idle.mu.Lock()
	defer idle.mu.Unlock()
	n := len(idle.dbs)
	if n == 0 {
		return nil
	}
	db := idle.dbs[n-1]
	idle.dbs = idle.dbs[:n-1]
	return db
}

// releaseDuckDB gives back an instance and its connection from newDuckDB:
// the connection is closed and the instance kept idle when it can be reset
// and fewer than idleMax are, else closed. Errors: closing's.
func releaseDuckDB(db *sql.DB, conn *sql.Conn) error {
	err := resetInstance(context.Background(), conn)
	cerr := conn.Close()
	if err != nil || cerr != nil {
		return closeInstance(db)
	}
	db.SetMaxOpenConns(1)
	idle.mu.Lock()
	if len(idle.dbs) < idleMax {
		idle.dbs = append(idle.dbs, db)
		idle.mu.Unlock()
		return nil
	}
	idle.mu.Unlock()
	return closeInstance(db)
}

// closeInstance shuts an instance down and forgets its functions.
func closeInstance(db *sql.DB) error {
	idle.mu.Lock()
	delete(idle.udfs, db)
	idle.mu.Unlock()
	return db.Close()
}

// resetInstance detaches every database conn's instance has attached,
// checks that its own database holds no table or view, and sets back the
// settings of resetSettings and baseSettings. An error means the instance is not reusable.
func resetInstance(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "USE memory"); err != nil {
		return err
	}
	var attached []string
	rows, err := conn.QueryContext(ctx, "SELECT database_name FROM duckdb_databases() WHERE NOT internal AND database_name <> 'memory'")
	if err != nil {
		return err
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		attached = append(attached, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range attached {
		if _, err := conn.ExecContext(ctx, "DETACH "+sqlquote.Ident(name)); err != nil {
			return err
		}
	}
	var left int
	if err := conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = 'memory' AND NOT temporary)
		+ (SELECT count(*) FROM duckdb_views() WHERE database_name = 'memory' AND NOT temporary AND NOT internal)`).Scan(&left); err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("the instance's own database holds %d tables or views", left)
	}
	for _, s := range resetSettings {
		if _, err := conn.ExecContext(ctx, "RESET "+s); err != nil {
			return err
		}
	}
	for _, s := range baseSettings {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// registerUDF registers the scalar function f under name in conn's
// instance db unless it already holds it (an idle instance keeps what an
// earlier user registered).
func registerUDF(db *sql.DB, name string, register func() error) error {
	idle.mu.Lock()
	done := idle.udfs[db][name]
	idle.mu.Unlock()
	if done {
		return nil
	}
	if err := register(); err != nil {
		return err
	}
	idle.mu.Lock()
	if idle.udfs == nil {
		idle.udfs = map[*sql.DB]map[string]bool{}
	}
	if idle.udfs[db] == nil {
		idle.udfs[db] = map[string]bool{}
	}
	idle.udfs[db][name] = true
	idle.mu.Unlock()
	return nil
}

// Instance returns an in-memory DuckDB instance and a connection to it, for
// a package that writes catalogs through DuckDB (lakewriter): an idle one
// of the process when there is one. Give both back with ReleaseInstance.
// Errors: DuckDB's, when it cannot start.
func Instance(ctx context.Context) (*sql.DB, *sql.Conn, error) {
	return newDuckDB(ctx, nil)
}

// ReleaseInstance gives back what Instance returned: whatever is attached
// is detached (a database opened for writing is checkpointed as DuckDB
// does on DETACH), and the instance is kept idle or closed
// (releaseDuckDB). Errors: closing's.
func ReleaseInstance(db *sql.DB, conn *sql.Conn) error {
	return releaseDuckDB(db, conn)
}
