// Package testutil finds the real DuckLake catalogs of ../shared/testdata
// for tests and parses their MANIFEST.md. It is imported only by tests.
package testutil

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// CatalogsDir returns ../shared/testdata/catalogs beside the module root.
// Without it the test is skipped, except under CI (env CI set), where it
// fails: CI always has ../shared.
func CatalogsDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
			continue
		}
		p := filepath.Join(filepath.Dir(d), "shared", "testdata", "catalogs")
		if _, err := os.Stat(filepath.Join(p, "MANIFEST.md")); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("real catalogs not found at %s: CI needs ../shared beside the clone", p)
			}
			t.Skipf("real catalogs not found at %s", p)
		}
		return p
	}
	t.Fatal("go.mod not found above " + wd)
	return ""
}

// Gunzip writes the real catalog name (without .gz) to dst.
func Gunzip(t testing.TB, name, dst string) {
	t.Helper()
	if err := GunzipFile(filepath.Join(CatalogsDir(t), name+".gz"), dst); err != nil {
		t.Fatal(err)
	}
}

// GunzipFile writes the gunzipped bytes of the file src to dst, making
// dst's folder and replacing dst if it exists. It is Gunzip for callers
// without a testing.TB (testscript commands) or with a path of their own.
func GunzipFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, zr); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Entry is one row of MANIFEST.md's table.
type Entry struct {
	File        string   // e.g. "dltest-v04.ducklake" (without .gz)
	DB          string   // "duckdb" or "sqlite"
	Format      string   // DuckLake version, e.g. "0.4"
	MaxSnapshot int64    // "snapshots (max id)": the max id
	Tables      []string // live tables, sorted as listed
	LiveColumns int
	TotalCols   int
	DataFiles   int
	DeleteFiles int
	DataPath    string
	SHA256      string
}

// Manifest parses the table of MANIFEST.md.
func Manifest(t testing.TB) []Entry {
	t.Helper()
	f, err := os.Open(filepath.Join(CatalogsDir(t), "MANIFEST.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 13 {
			continue
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		e := Entry{File: cells[0], DB: cells[2], Format: cells[3], DataPath: cells[11], SHA256: cells[12]}
		if i := strings.Index(cells[5], "("); i >= 0 {
			e.MaxSnapshot, _ = strconv.ParseInt(strings.TrimSuffix(cells[5][i+1:], ")"), 10, 64)
		}
		if cells[6] != "–" && cells[6] != "-" {
			for _, tb := range strings.Split(cells[6], ",") {
				e.Tables = append(e.Tables, strings.TrimSpace(tb))
			}
		}
		if a, b, ok := strings.Cut(cells[7], "/"); ok {
			e.LiveColumns, _ = strconv.Atoi(a)
			e.TotalCols, _ = strconv.Atoi(b)
		}
		e.DataFiles, _ = strconv.Atoi(cells[8])
		e.DeleteFiles, _ = strconv.Atoi(cells[9])
		out = append(out, e)
	}
	if len(out) == 0 {
		t.Fatal("MANIFEST.md: no catalog rows parsed")
	}
	return out
}
