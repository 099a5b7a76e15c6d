// Package realduck runs SQL through the real DuckDB and DuckDB's own
// extensions (ducklake, sqlite_scanner, httpfs, aws), installed from PyPI
// into the project's virtual environments by scripts/pyenv.sh. It is the
// judge of what "DuckDB reads this" means in fdl's tests; fdl itself never
// needs the extension. It is imported only by tests.
//
// Environments are found under $FDL_PYENV, or <module root>/.venv:
// duckdb-1.5 (DuckDB 1.5.5 with all four extensions), duckdb-1.5.1 (DuckDB
// 1.5.1 with ducklake and sqlite_scanner) and duckdb-2.0 (DuckDB
// 2.0.0 with the extensions PyPI serves for it, listed in its EXTENSIONS
// file). A test that needs a missing environment or extension is skipped,
// except under CI (env CI set), where it fails: .ci/run installs them.
package realduck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Release names a DuckDB release line with an environment of its own.
type Release string

// The releases scripts/pyenv.sh installs.
const (
	V15 Release = "1.5" // DuckDB 1.5.5, DuckLake format 1.0
	// V151 is DuckDB 1.5.1 (ducklake and sqlite extensions only), the last
	// release whose ducklake extension reads and writes DuckLake 0.4.
	V151 Release = "1.5.1"
	V20  Release = "2.0" // DuckDB 2.0.0, DuckLake format 1.1
)

// DuckDB is one installed release: its Python, the runner script and the
// extensions it has.
type DuckDB struct {
	Release    Release
	Env        string   // the environment's folder
	Python     string   // its python
	Runner     string   // scripts/realduck.py
	Extensions []string // installed extension names, e.g. "ducklake"
}

// Result is what one statement that returns rows gave: its SQL, column
// names, and rows (values as encoding/json decodes them: float64 for
// numbers, string for text, dates and decimals, nil for NULL).
type Result struct {
	SQL     string   `json:"sql"`
	Columns []string `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// Root returns the module root (the folder holding go.mod) above the
// working directory, or "" if there is none.
func Root() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return ""
}

// Locate returns release rel's environment, or an error saying what is
// missing and how to install it. It never installs anything.
func Locate(rel Release) (*DuckDB, error) {
	root := Root()
	if root == "" {
		return nil, fmt.Errorf("go.mod not found above the working directory")
	}
	base := os.Getenv("FDL_PYENV")
	if base == "" {
		base = filepath.Join(root, ".venv")
	}
	env := filepath.Join(base, "duckdb-"+string(rel))
	d := &DuckDB{Release: rel, Env: env, Python: filepath.Join(env, "bin", "python"),
		Runner: filepath.Join(root, "scripts", "realduck.py")}
	if _, err := os.Stat(d.Python); err != nil {
		return nil, fmt.Errorf("DuckDB %s is not installed at %s: run make pyenv (scripts/pyenv.sh)", rel, env)
	}
	b, err := os.ReadFile(filepath.Join(env, "EXTENSIONS"))
	if err != nil {
		return nil, fmt.Errorf("DuckDB %s at %s has no EXTENSIONS list: rerun scripts/pyenv.sh", rel, env)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			d.Extensions = append(d.Extensions, s)
		}
	}
	return d, nil
}

// Find returns release rel with every extension in need installed. When
// something is missing, t is skipped, or failed under CI.
func Find(t testing.TB, rel Release, need ...string) *DuckDB {
	t.Helper()
	d, err := Locate(rel)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("real DuckDB: %v (.ci/run installs it)", err)
		}
		t.Skipf("real DuckDB: %v", err)
	}
	for _, e := range need {
		if d.Has(e) {
			continue
		}
		msg := fmt.Sprintf("real DuckDB %s at %s has no %s extension", rel, d.Env, e)
		// DuckDB 2.0's extensions are not all served by PyPI yet
		// (scripts/pyenv.sh installs those that are); 1.5's always are.
		if os.Getenv("CI") != "" && rel != V20 {
			t.Fatal(msg + " (.ci/run installs it)")
		}
		t.Skip(msg + " (PyPI serves none for this release)")
	}
	return d
}

// Has reports whether extension name is installed.
func (d *DuckDB) Has(name string) bool {
	if name == "sqlite" {
		return slices.Contains(d.Extensions, "sqlite") || slices.Contains(d.Extensions, "sqlite_scanner")
	}
	return slices.Contains(d.Extensions, name)
}

// Query runs sql (one or more statements) in a fresh in-memory DuckDB and
// returns the results of the statements that return rows. An error names
// the failing statement and carries DuckDB's message.
func (d *DuckDB) Query(sql string) ([]Result, error) {
	env, wd := here()
	ans, err := d.serve(serveRequest{SQL: sql, JSON: true, Env: env, Cwd: wd})
	if err != nil {
		return nil, err
	}
	if ans.Error != nil {
		return nil, fmt.Errorf("DuckDB %s: realduck: %s", d.Release, *ans.Error)
	}
	return ans.Results, nil
}

// MustQuery is Query that fails t on error.
func (d *DuckDB) MustQuery(t testing.TB, sql string) []Result {
	t.Helper()
	res, err := d.Query(sql)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Text runs sql like Query and returns the rows as the runner prints them
// without --json: tab-separated values, NULL for null, one line per row.
func (d *DuckDB) Text(sql string) (string, error) {
	env, wd := here()
	ans, err := d.serve(serveRequest{SQL: sql, Env: env, Cwd: wd})
	if err != nil {
		return "", err
	}
	if ans.Error != nil {
		return "", fmt.Errorf("DuckDB %s: realduck: %s", d.Release, *ans.Error)
	}
	return ans.Text, nil
}
