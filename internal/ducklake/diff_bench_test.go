package ducklake

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// BenchmarkDiff measures Catalog.Diff on a lake the real extension wrote
// (DuckDB 1.5.5, no inlining): table t gets 200 inserts of 10,000 rows
// (one Parquet file each, snapshots 2..201), then an UPDATE of one row in
// a thousand (a delete file on every file and one new file, snapshot
// 202), then a DELETE of 5,000 rows from one file (snapshot 203). Each
// sub-benchmark is one diff:
//
//   - insert: snapshot 200 -> 201 (one file added: counted from the catalog);
//
//   - history: 1 -> 201 (200 files added: from the catalog);
//
//   - update: 201 -> 202 (every file's deletions change: row ids read);
//
//   - delete: 202 -> 203 (one file's deletions grow: from the catalog);
//
//   - all: 0 -> 203.
//
//     go test -run '^$' -bench BenchmarkDiff -benchtime 5x ./internal/ducklake/
func BenchmarkDiff(b *testing.B) {
	d := realduck.Find(b, realduck.V15, "ducklake")
	ctx := context.Background()
	dir := b.TempDir()
	path := filepath.Join(dir, "lake.duckdb")
	var q strings.Builder
	fmt.Fprintf(&q, "ATTACH 'ducklake:%s' AS lake (DATA_PATH '%s/', DATA_INLINING_ROW_LIMIT 0);\nUSE lake;\nCREATE TABLE t(id BIGINT, v VARCHAR);\n", path, filepath.Join(dir, "data"))
	for i := range 200 {
		fmt.Fprintf(&q, "INSERT INTO t SELECT i, 'v' || i FROM range(%d, %d) r(i);\n", i*10000, (i+1)*10000)
	}
	q.WriteString("UPDATE t SET v = v || 'u' WHERE id % 1000 = 0;\nDELETE FROM t WHERE id < 5000;\n")
	d.MustQuery(b, q.String())
	c, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, bc := range []struct {
		name     string
		from, to int64
		ins, del int64
	}{
		{"insert", 200, 201, 10000, 0},
		{"history", 1, 201, 2000000, 0},
		{"update", 201, 202, 2000, 2000},
		{"delete", 202, 203, 0, 5000},
		{"all", 0, 203, 1995000, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				df, err := c.Diff(ctx, bc.from, bc.to)
				if err != nil {
					b.Fatal(err)
				}
				var r *int64
				for _, tc := range df.Tables {
					if tc.Name == "t" {
						r = tc.Rows.Inserted
						if *r != bc.ins || *tc.Rows.Deleted != bc.del {
							b.Fatalf("%d..%d: +%d -%d, want +%d -%d", bc.from, bc.to, *r, *tc.Rows.Deleted, bc.ins, bc.del)
						}
					}
				}
				if r == nil {
					b.Fatalf("%d..%d: table t not in the diff", bc.from, bc.to)
				}
			}
		})
	}
}
