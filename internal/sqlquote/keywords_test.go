package sqlquote_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// TestKeywordsOfRealDuckDB: every keyword the real DuckDB (1.5 and 2.0)
// does not list as unreserved is quoted by IdentIfNeeded, and a database
// named after each keyword, written as IdentIfNeeded gives it, attaches
// and is read from. Before, "fdl attach --as select" printed
// "ATTACH ... AS select", which DuckDB cannot parse.
func TestKeywordsOfRealDuckDB(t *testing.T) {
	t.Parallel()
	for _, rel := range []realduck.Release{realduck.V15, realduck.V20} {
		d := realduck.Find(t, rel)
		res, err := d.Query("SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category <> 'unreserved'")
		if err != nil {
			t.Fatal(err)
		}
		var sql strings.Builder
		n := 0
		for _, row := range res[0].Rows {
			k := fmt.Sprint(row[0])
			if sqlquote.IdentIfNeeded(k) == k {
				t.Errorf("DuckDB %s keyword %q is not quoted", rel, k)
			}
			if k == "memory" || k == "system" || k == "temp" || k == "main" {
				continue // reserved database names (repo.CheckAlias)
			}
			q := sqlquote.IdentIfNeeded(k)
			fmt.Fprintf(&sql, "ATTACH ':memory:' AS %s; CREATE TABLE %s.t AS SELECT 1 AS x; SELECT x FROM %s.t; DETACH %s;\n", q, q, q, q)
			n++
		}
		if n < 70 {
			t.Fatalf("DuckDB %s lists %d keywords that are not unreserved: too few to be its list", rel, n)
		}
		if _, err := d.Query(sql.String()); err != nil {
			t.Errorf("DuckDB %s: %v", rel, err)
		}
	}
}
