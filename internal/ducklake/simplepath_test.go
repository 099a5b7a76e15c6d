package ducklake_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/retention"
)

// TestSimplePathMatchesSimpleName: the SQL rule a push's data check uses
// to key the added files without leaving DuckDB takes a path for simple
// only when retention.SimpleName does (gc and verify key files by it), and
// otherwise agrees, but for a path with a double quote, which the SQL
// rule places one by one.
func TestSimplePathMatchesSimpleName(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	paths := []string{
		"ducklake-0193.parquet", "k=1/ducklake-0193.parquet", "k=a b/x.parquet", "a,b", "it's", `a"b`, "a#b", "a?b", "k=?/x", "ü/ï.parquet",
		"🦆.parquet", "€", "", ".", "..", ".hidden", "a/.b", "a/../b", "a//b", "/abs", "dir/", "a\\b", "a\x00b", "a\x01b",
		"a\tb", "a\nb", "a\x1fb", "a\x7fb", "a\u0080b", "a\u0085b", "a\u009fb", "a\u00a0b", "a\ufffdb", "a\u2028b",
		"x/\x01", "\u0085", strings.Repeat("a", 300), "a b ", " a",
	}
	q := "SELECT " + ducklake.SimplePathSQL + " FROM (SELECT ?::VARCHAR AS path) f"
	for _, p := range paths {
		var got bool
		if err := db.QueryRowContext(context.Background(), q, p).Scan(&got); err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		want := retention.SimpleName(p)
		switch {
		case got && !want:
			t.Errorf("%q: simple in SQL, not for retention.SimpleName", p)
		case !got && want && !strings.Contains(p, `"`):
			t.Errorf("%q: not simple in SQL, simple for retention.SimpleName", p)
		}
	}
}
