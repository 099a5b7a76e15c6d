package ducklake

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestReadRecentRefusals: what fdl status reads of a SQLite working
// catalog fails with an error, never a panic: a SQLite file that is not a
// DuckLake catalog (ErrNotCatalog), and one another process keeps locked
// beyond the retries (ErrLocked). A failed open once returned a nil reader
// to its deferred close, which dereferenced it.
func TestReadRecentRefusals(t *testing.T) {
	ctx := context.Background()
	other := filepath.Join(t.TempDir(), "other.sqlite")
	db, err := sql.Open("sqlite3", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE x(a)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := ReadRecent(ctx, other, -1); !errors.Is(err, ErrNotCatalog) {
		t.Fatalf("a SQLite file without DuckLake tables: %v, want ErrNotCatalog", err)
	}
	defer func(d time.Duration) { sqliteRetryFor = d }(sqliteRetryFor)
	sqliteRetryFor = time.Second
	src := walCatalog(t, t.TempDir())
	release := lockSQLite(t, src)
	defer release()
	if _, err := ReadRecent(ctx, src, -1); !errors.Is(err, ErrLocked) {
		t.Fatalf("a catalog that stays locked: %v, want ErrLocked", err)
	}
}
