package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// inlinedMark is one inlined row or inlined deletion as identifyInlined
// records it: key is its kind, data file path (a deletion), row_id and
// begin_snapshot; at is the time of that snapshot, zero when the catalog
// no longer has it (expired).
type inlinedMark struct {
	key string
	at  time.Time
}

// sameInlined reports whether two tables' inlined marks (each sorted by
// key, then time) are the same rows: the same keys, each with the same
// snapshot time, or a time one side no longer knows (an expired
// snapshot: then the id alone decides).
func sameInlined(x, y []inlinedMark) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].key != y[i].key {
			return false
		}
		if !x[i].at.IsZero() && !y[i].at.IsZero() && !x[i].at.Equal(y[i].at) {
			return false
		}
	}
	return true
}

// identifyInlined records, for each table, the inlined rows and inlined
// deletions visible at r.to (across two catalogs r.from equals r.to),
// each by its row_id, begin_snapshot and the time of that snapshot, a
// deletion also by its data file's resolved path, into tableData.inlined
// (sorted; sameInlined compares two).
// Rows both timelines inherited carry the same snapshot time on both
// sides; a row written after they parted carries another. Two catalogs
// whose marks for a table differ hold different rows there, even when
// the row counts and the files agree (each side deleted or updated one
// row, inlined). The snapshot table is read once (times normalized to
// UTC; ids alone repeat across timelines).
func (r *diffReader) identifyInlined(ctx context.Context) error {
	c := r.c
	snaps, err := c.snapshots(ctx, "ORDER BY s.snapshot_id")
	if err != nil {
		return err
	}
	at := make(map[int64]time.Time, len(snaps))
	for _, s := range snaps {
		at[s.ID] = s.Time
	}
	mark := func(key string, begin int64) inlinedMark {
		return inlinedMark{key: key + " " + strconv.FormatInt(begin, 10), at: at[begin]}
	}
	ids := map[int64][]inlinedMark{}
	for _, src := range r.inlinedSrc {
		q := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s", src.rowID, src.begin, c.t(src.name), src.visibleAt(r.to))
		err := c.query(ctx, q, func(rows *sql.Rows) error {
			var id, begin int64
			if err := rows.Scan(&id, &begin); err != nil {
				return err
			}
			ids[src.tid] = append(ids[src.tid], mark("row "+strconv.FormatInt(id, 10), begin))
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := r.identifyInlinedDeletes(ctx, ids, mark); err != nil {
		return err
	}
	for tid, list := range ids {
		slices.SortFunc(list, func(a, b inlinedMark) int {
			if c := strings.Compare(a.key, b.key); c != 0 {
				return c
			}
			return a.at.Compare(b.at)
		})
		r.table(tid).inlined = list
	}
	return nil
}

// identifyInlinedDeletes adds the inlined deletions visible at r.to to
// ids, by table: data file path, row_id and mark(begin_snapshot).
func (r *diffReader) identifyInlinedDeletes(ctx context.Context, ids map[int64][]inlinedMark, mark func(string, int64) inlinedMark) error {
	c := r.c
	files := map[int64]*fileRow{}
	for _, f := range r.data {
		files[f.id] = f
	}
	for name, cols := range c.tables {
		if !strings.HasPrefix(name, "ducklake_inlined_delete_") || !slices.Contains(cols, "file_id") || !slices.Contains(cols, "row_id") || !slices.Contains(cols, "begin_snapshot") {
			continue
		}
		q := fmt.Sprintf("SELECT file_id, row_id, begin_snapshot FROM %s WHERE %s", c.t(name), inlinedDeleteAt(cols, r.to))
		err := c.query(ctx, q, func(rows *sql.Rows) error {
			var file, row, begin int64
			if err := rows.Scan(&file, &row, &begin); err != nil {
				return err
			}
			f := files[file]
			if f == nil {
				return nil // a file this side does not list: no row of it is visible
			}
			ids[f.table] = append(ids[f.table], mark("delete "+f.path+" "+strconv.FormatInt(row, 10), begin))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
