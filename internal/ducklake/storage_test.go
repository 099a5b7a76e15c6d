package ducklake

import (
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
// first version.
func TestStorageVersionTable(t *testing.T) {
	dir := t.TempDir()
	r := newRawDB(t, "")
	cases := []struct {
		option string
		number uint64
		min    string
	}{
		{"v0.10.0", 64, "v0.10.0"},
		{"v1.0.0", 64, "v0.10.0"},
		{"v1.1.3", 64, "v0.10.0"},
		{"v1.2.0", 65, "v1.2.0"},
		{"v1.3.2", 66, "v1.3.0"},
		{"v1.4.0", 67, "v1.4.0"},
		{"v1.5.0", 68, "v1.5.0"},
		{"latest", 68, "v1.5.0"},
	}
	for i, tc := range cases {
		p := filepath.Join(dir, fmt.Sprintf("s%d.duckdb", i))
		r.exec(
			fmt.Sprintf("ATTACH %s AS d (STORAGE_VERSION '%s')", sqlquote.String(p), tc.option),
			"CREATE TABLE d.t(i INTEGER)", "CHECKPOINT d", "DETACH d")
		got, err := ReadStorage(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Number != tc.number || got.MinDuckDB != tc.min {
			t.Errorf("STORAGE_VERSION %s: %+v, want %d %s", tc.option, got, tc.number, tc.min)
		}
	}
	// The default (no option) stays the most compatible format.
	p := filepath.Join(dir, "default.duckdb")
	r.exec(fmt.Sprintf("ATTACH %s AS d", sqlquote.String(p)), "CREATE TABLE d.t(i INTEGER)", "DETACH d")
	if got, err := ReadStorage(p); err != nil || got.Number != 64 {
		t.Errorf("default: %+v %v", got, err)
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
