package ducklake

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/sqlquote"
)

// TestStorageVersionTable repeats the experiment that established
// storageVersions: DuckDB writes each STORAGE_VERSION with the number the
// table gives for its release line, and the table names that release's
// first version. Run: go test ./internal/ducklake -run TestStorageVersionTable -v
func TestStorageVersionTable(t *testing.T) {
	dir := t.TempDir()
	r := newRawDB(t, "")
	lib := r.strings("SELECT library_version FROM pragma_version()")[0]
	cases := []struct {
		option string
		number uint64
		min    string
	}{
		{"v0.9.0", 64, "v0.10.0"},
		{"v0.10.0", 64, "v0.10.0"},
		{"v1.0.0", 64, "v0.10.0"},
		{"v1.1.3", 64, "v0.10.0"},
		{"v1.2.0", 65, "v1.2.0"},
		{"v1.2.2", 65, "v1.2.0"},
		{"v1.3.0", 66, "v1.3.0"},
		{"v1.3.2", 66, "v1.3.0"},
		{"v1.4.0", 67, "v1.4.0"},
		{"v1.4.5", 67, "v1.4.0"},
		{"v1.5.0", 68, "v1.5.0"},
		{"v1.5.6", 68, "v1.5.0"},
		{"v2.0.0", 999, "v2.0.0"},
		{"latest", 999, "v2.0.0"},
		{"", 999, "v2.0.0"}, // a plain ATTACH: DuckDB 2.0 writes its own format (1.5 wrote 64)
	}
	for i, tc := range cases {
		p := filepath.Join(dir, fmt.Sprintf("s%d.duckdb", i))
		attach := fmt.Sprintf("ATTACH %s AS d", sqlquote.String(p))
		if tc.option != "" {
			attach += fmt.Sprintf(" (STORAGE_VERSION '%s')", tc.option)
		}
		r.exec(attach, "CREATE TABLE d.t(i INTEGER)", "CHECKPOINT d", "DETACH d")
		got, err := ReadStorage(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Number != tc.number || got.MinDuckDB != tc.min {
			t.Errorf("STORAGE_VERSION %q: %+v, want %d %s", tc.option, got, tc.number, tc.min)
		}
		t.Logf("DuckDB %s, STORAGE_VERSION %-8q -> number %d, read by DuckDB %s and newer", lib, tc.option, got.Number, got.MinDuckDB)
	}
	// Releases this DuckDB does not know are refused, so the table covers
	// every value it accepts.
	for _, bad := range []string{"v1.5.9", "v2.0.1", "v2.1.0"} {
		if _, err := r.conn.ExecContext(context.Background(), fmt.Sprintf("ATTACH %s AS x (STORAGE_VERSION '%s')", sqlquote.String(filepath.Join(dir, "bad.duckdb")), bad)); err == nil {
			t.Errorf("STORAGE_VERSION %s accepted: extend storageVersions", bad)
			r.exec("DETACH x")
		}
	}
}

// TestStorageKeptOnWrite: DuckDB never changes a file's storage version when
// it writes to it, so a working catalog keeps what it was created with and a
// byte copy (Freeze's fast path) keeps it too.
func TestStorageKeptOnWrite(t *testing.T) {
	dir := t.TempDir()
	r := newRawDB(t, "")
	for _, opt := range []string{"v1.0.0", "v1.5.0", "v2.0.0"} {
		p := filepath.Join(dir, opt+".duckdb")
		r.exec(fmt.Sprintf("ATTACH %s AS d (STORAGE_VERSION '%s')", sqlquote.String(p), opt), "CREATE TABLE d.t(i INTEGER)", "DETACH d")
		before, err := ReadStorage(p)
		if err != nil {
			t.Fatal(err)
		}
		r.exec(fmt.Sprintf("ATTACH %s AS d", sqlquote.String(p)), "INSERT INTO d.t SELECT range FROM range(100000)", "CHECKPOINT d", "DETACH d")
		if after, err := ReadStorage(p); err != nil || after != before {
			t.Errorf("%s: storage %+v after a write, %+v before (%v)", opt, after, before, err)
		}
	}
}

func TestReadStorageRealCatalogs(t *testing.T) {
	dir := t.TempDir()
	for _, m := range duckdbCatalogs(t) {
		p := gunzipCatalog(t, m.File, dir, "")
		got, err := ReadStorage(p)
		if err != nil {
			t.Fatal(err)
		}
		want := meta.Storage{Number: 64, MinDuckDB: "v0.10.0"}
		if m.File == "dltest-v04.ducklake" { // MANIFEST.md: storage format 68
			want = meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}
		}
		if got != want {
			t.Errorf("%s: %+v, want %+v", m.File, got, want)
		}
	}
	if _, err := ReadStorage(gunzipCatalog(t, "ahri-tre-v0.2.sqlite", dir, "")); !errors.Is(err, ErrSQLite) {
		t.Errorf("sqlite: %v", err)
	}
}

func TestReadStorageErrors(t *testing.T) {
	dir := t.TempDir()
	p := gunzipCatalog(t, "dltest-v04.ducklake", dir, "")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(b[12:20], 99)
	unknown := filepath.Join(dir, "unknown.duckdb")
	if err := os.WriteFile(unknown, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStorage(unknown)
	if !errors.Is(err, ErrUnknownStorage) || !strings.Contains(err.Error(), "99") || got.Number != 99 {
		t.Errorf("unknown: %+v %v", got, err)
	}
	// Storage 999 is named by the release that created the file.
	r := newRawDB(t, "")
	v2 := filepath.Join(dir, "v2.duckdb")
	r.exec(fmt.Sprintf("ATTACH %s AS d (STORAGE_VERSION 'v2.0.0')", sqlquote.String(v2)), "CREATE TABLE d.t(i INTEGER)", "DETACH d")
	b, err = os.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadStorage(v2); err != nil || got != (meta.Storage{Number: 999, MinDuckDB: "v2.0.0"}) {
		t.Errorf("v2.0.0: %+v %v", got, err)
	}
	copy(b[52:84], append([]byte("v2.1.0"), make([]byte, 26)...))
	v21 := filepath.Join(dir, "v21.duckdb")
	if err := os.WriteFile(v21, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = ReadStorage(v21)
	if !errors.Is(err, ErrUnknownStorage) || !strings.Contains(err.Error(), `"v2.1.0"`) || got.Number != 999 || got.MinDuckDB != "" {
		t.Errorf("999 by v2.1.0: %+v %v", got, err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("12345678DUCK"), 0o644)
	if _, err := ReadStorage(short); !errors.Is(err, ErrNotCatalog) {
		t.Errorf("short: %v", err)
	}
	text := filepath.Join(dir, "text")
	os.WriteFile(text, []byte(strings.Repeat("not a database\n", 10)), 0o644)
	if _, err := ReadStorage(text); !errors.Is(err, ErrNotCatalog) {
		t.Errorf("text: %v", err)
	}
	if _, err := ReadStorage(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
