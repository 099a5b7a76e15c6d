package ducklake

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake/sqlitebulk"
)

// TestConvertToSQLiteStopsCleanly: a conversion whose SQLite side stops
// in the middle of a table that DuckDB is still writing (through a named
// pipe where that is how tables pass, else a CSV file) returns the
// reason, promptly, and leaves nothing beside the source: the load fails
// after reading a little, or the command is cancelled as the load starts.
func TestConvertToSQLiteStopsCleanly(t *testing.T) {
	injected := errors.New("injected load failure")
	cases := map[string]struct {
		load func(ctx context.Context, cancel context.CancelFunc, conn *sql.Conn, tb *duckTable, path string, from *os.File, kinds []sqlitebulk.Kind) (int64, error)
		want error
	}{
		"load fails": {func(ctx context.Context, _ context.CancelFunc, conn *sql.Conn, tb *duckTable, path string, from *os.File, kinds []sqlitebulk.Kind) (int64, error) {
			if tb.name != "ducklake_file_column_stats" {
				return loadExport(ctx, conn, tb, "", path, from, kinds)
			}
			if from == nil {
				f, err := os.Open(path)
				if err != nil {
					return 0, err
				}
				defer f.Close()
				from = f
			}
			from.Read(make([]byte, 4096))
			return 0, injected
		}, injected},
		"cancelled": {func(ctx context.Context, cancel context.CancelFunc, conn *sql.Conn, tb *duckTable, path string, from *os.File, kinds []sqlitebulk.Kind) (int64, error) {
			if tb.name == "ducklake_file_column_stats" {
				cancel()
			}
			return loadExport(ctx, conn, tb, "", path, from, kinds)
		}, context.Canceled},
	}
	dir := t.TempDir()
	src := bigCatalog(t, dir, 16<<20)
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			loadCSV = func(ctx context.Context, conn *sql.Conn, tb *duckTable, into, path string, from *os.File, kinds []sqlitebulk.Kind) (int64, error) {
				return c.load(ctx, cancel, conn, tb, path, from, kinds)
			}
			defer func() { loadCSV = loadExport }()
			out := filepath.Join(t.TempDir(), "work.sqlite")
			done := make(chan error, 1)
			go func() { done <- ConvertToSQLite(ctx, src, out) }()
			select {
			case err := <-done:
				if !errors.Is(err, c.want) {
					t.Fatalf("ConvertToSQLite = %v, want %v", err, c.want)
				}
			case <-time.After(2 * time.Minute):
				buf := make([]byte, 1<<20)
				t.Log(string(buf[:runtime.Stack(buf, true)]))
				t.Fatal("ConvertToSQLite did not return 2 minutes after its load stopped")
			}
			if got := listDir(t, filepath.Dir(out)); !slices.Equal(got, []string{}) && got != nil {
				t.Errorf("left behind: %v", got)
			}
		})
	}
}

// TestConvertToSQLiteWithoutFIFOs: on a file system that refuses named
// pipes (vfat, SMB, many FUSE mounts answer mkfifo with EPERM), a
// conversion still succeeds, through a CSV file per table as it did
// before tables were streamed, gives the same file as with pipes and
// leaves nothing beside the destination.
func TestConvertToSQLiteWithoutFIFOs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("tables pass through CSV files on this platform")
	}
	src := bigCatalog(t, t.TempDir(), 1<<20)
	ctx := context.Background()
	piped := filepath.Join(t.TempDir(), "piped.sqlite")
	if err := ConvertToSQLite(ctx, src, piped); err != nil {
		t.Fatal(err)
	}
	orig := makePipe
	makePipe = func(path string) (r, w *os.File, err error) {
		return nil, nil, &os.PathError{Op: "mkfifo", Path: path, Err: syscall.EPERM}
	}
	defer func() { makePipe = orig }()
	out := filepath.Join(t.TempDir(), "work.sqlite")
	if err := ConvertToSQLite(ctx, src, out); err != nil {
		t.Fatalf("ConvertToSQLite on a file system without named pipes: %v", err)
	}
	a, err := os.ReadFile(piped)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("SQLite file made through CSV files (%d bytes) differs from the one made through pipes (%d bytes)", len(b), len(a))
	}
	if got := listDir(t, filepath.Dir(out)); !slices.Equal(got, []string{"work.sqlite"}) {
		t.Errorf("beside the destination: %v, want only work.sqlite", got)
	}
}
