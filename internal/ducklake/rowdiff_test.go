package ducklake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// TestDiffSaysWhenApproximate: an UPDATE's rows can only be told from
// new rows by reading the files; with the new data file gone, the diff
// still answers, from the catalog, and says it is not exact and why.
func TestDiffSaysWhenApproximate(t *testing.T) {
	t.Parallel()
	d := realduck.Find(t, realduck.V15, "ducklake")
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "lake.duckdb")
	d.MustQuery(t, fmt.Sprintf(`ATTACH 'ducklake:%s' AS lake (DATA_PATH '%s/', DATA_INLINING_ROW_LIMIT 0); USE lake;
		CREATE TABLE t(id INTEGER, v VARCHAR); INSERT INTO t SELECT i, 'a' FROM range(10) r(i);
		UPDATE t SET v = 'b' WHERE id < 5;`, path, filepath.Join(dir, "data")))
	rows := func() (ins, del int64, exact bool, why string) {
		t.Helper()
		c, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		df, err := c.Diff(ctx, 2, 3)
		if err != nil {
			t.Fatal(err)
		}
		r := df.Tables[0].Rows
		return *r.Inserted, *r.Deleted, r.Exact, r.Approximate
	}
	if ins, del, exact, why := rows(); ins != 5 || del != 5 || !exact || why != "" {
		t.Fatalf("update of 5 rows: +%d -%d exact %v (%q), want +5 -5 exact", ins, del, exact, why)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "data", "main", "t", "*.parquet"))
	newest := ""
	for _, f := range files {
		if !strings.HasSuffix(f, "-delete.parquet") && f > newest {
			newest = f
		}
	}
	if err := os.Remove(newest); err != nil {
		t.Fatal(err)
	}
	ins, del, exact, why := rows()
	if exact || !strings.Contains(why, "could not be read") || ins != 5 || del != 5 {
		t.Fatalf("with %s gone: +%d -%d exact %v (%q), want the catalog's +5 -5, not exact, and why", filepath.Base(newest), ins, del, exact, why)
	}
	t.Logf("approximate: %s", why)
}
