package ducklake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// readListed runs withListing with the keys of list and returns what
// DuckDB's read_csv read from it (in order), through a pipe or, with
// noPipe, a file.
func readListed(t *testing.T, list func(emit func([]byte) error) error, noPipe bool) ([]string, error) {
	t.Helper()
	if noPipe {
		old := makePipe
		makePipe = func(string) (r, w *os.File, err error) { return nil, nil, errors.ErrUnsupported }
		defer func() { makePipe = old }()
	}
	ctx := context.Background()
	db, conn, err := newDuckDB(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer conn.Close()
	base := filepath.Join(t.TempDir(), "listed")
	err = withListing(ctx, base, list, func(path string) error {
		_, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TABLE got AS SELECT key FROM read_csv(%s, %s)", sqlquote.String(path), listedCSV))
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, suffix := range []string{".pipe", ".csv"} {
		if _, err := os.Lstat(base + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind (%v)", base+suffix, err)
		}
	}
	var got []string
	rows, err := conn.QueryContext(ctx, "SELECT key FROM got WHERE key IS NOT NULL") // the blank first line
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	return got, rows.Err()
}

// TestWithListingExact: every key a store can list reaches DuckDB as
// written, whatever CSV would make of it (separators, quotes, spaces, a
// comment sign, "NULL", non-ASCII); keys no added file can have (control
// characters, invalid UTF-8, empty, longer than a store's longest) are
// dropped; through a pipe and through a file alike. emit's buffer is
// reused between calls, as the folder store's is.
func TestWithListingExact(t *testing.T) {
	keep := []string{
		"data/main/t/ducklake-0193.parquet", "data/a,b.parquet", `data/"q".parquet`, `"`, `""`, "data/it's",
		" data/lead", "data/trail ", "#data/hash", "NULL", "null", "", "data/ünï €", "data/x\u0085y", "data/\ufffd",
		"data/semi;colon|pipe\t", strings.Repeat("k", maxListedKey), "data/🦆.parquet",
		`data/a\x01b.parquet`, // the text of an escape, not the control character
	}
	drop := map[string]bool{}
	var all []string
	for _, k := range keep {
		if k == "" || strings.ContainsRune(k, '\t') {
			drop[k] = true
		}
		all = append(all, k)
	}
	for _, k := range []string{"data/new\nline", "data/cr\r", "data/nul\x00", "data/del\x7f", "data/\xff\xfe", strings.Repeat("k", maxListedKey+1)} {
		drop[k] = true
		all = append(all, k)
	}
	var want []string
	for _, k := range all {
		if !drop[k] {
			want = append(want, k)
		}
	}
	list := func(emit func([]byte) error) error {
		buf := make([]byte, 0, 2*maxListedKey)
		for _, k := range all {
			buf = append(buf[:0], k...)
			if err := emit(buf); err != nil {
				return err
			}
			copy(buf, strings.Repeat("X", len(buf))) // the caller's buffer changes after emit
		}
		return nil
	}
	for _, noPipe := range []bool{false, true} {
		got, err := readListed(t, list, noPipe)
		if err != nil {
			t.Fatalf("noPipe %v: %v", noPipe, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("noPipe %v: DuckDB read\n%q\nwant\n%q", noPipe, got, want)
		}
	}
}

// TestWithListingFailures: a listing that fails makes withListing fail
// with its error (DuckDB reads what came before and stops); a read that
// fails before it takes a key fails it with the read's error, and the
// writer, with more keys than a pipe holds, neither waits forever nor
// masks that error; a large listing arrives whole.
func TestWithListingFailures(t *testing.T) {
	boom := errors.New("listing failed")
	many := func(n int, tail error) func(emit func([]byte) error) error {
		return func(emit func([]byte) error) error {
			for i := range n {
				if err := emit(fmt.Appendf(nil, "data/main/t/ducklake-%08d.parquet", i)); err != nil {
					return err
				}
			}
			return tail
		}
	}
	for _, noPipe := range []bool{false, true} {
		if _, err := readListed(t, many(1000, boom), noPipe); !errors.Is(err, boom) {
			t.Errorf("noPipe %v: failing listing gave %v, want %v", noPipe, err, boom)
		}
		got, err := readListed(t, many(200000, nil), noPipe)
		if err != nil || len(got) != 200000 || got[199999] != "data/main/t/ducklake-00199999.parquet" {
			t.Errorf("noPipe %v: 200,000 keys: read %d, %v", noPipe, len(got), err)
		}
	}
	ctx := context.Background()
	// Neither a pipe nor a file can be made: the error says where and
	// what to do.
	old := makePipe
	makePipe = func(string) (r, w *os.File, err error) { return nil, nil, errors.ErrUnsupported }
	gone := filepath.Join(t.TempDir(), "gone")
	err := withListing(ctx, filepath.Join(gone, "listed"), many(10, nil), func(string) error { return nil })
	makePipe = old
	if err == nil || !strings.Contains(err.Error(), gone) || !strings.Contains(err.Error(), "TMPDIR") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no pipe, no file: %v", err)
	}
	readErr := errors.New("read failed")
	err = withListing(ctx, filepath.Join(t.TempDir(), "listed"), many(200000, nil), func(string) error { return readErr })
	if !errors.Is(err, readErr) {
		t.Errorf("read that fails at once: %v, want %v", err, readErr)
	}
}
