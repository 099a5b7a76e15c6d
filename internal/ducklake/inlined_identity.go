package ducklake

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// identifyInlined digests, for each table, the inlined rows and inlined
// deletions visible at r.to (across two catalogs r.from equals r.to),
// each by its row_id and the time of the snapshot that wrote it, a
// deletion also by its data file's resolved path, into tableData.inlined.
// Rows both timelines inherited carry the same snapshot time on both
// sides; a row written after they parted carries another. Two catalogs
// whose digests for a table differ hold different rows there, even when
// the row counts and the files agree (each side deleted or updated one
// row, inlined). The snapshot table is read once (its times, normalized
// to UTC, are compared rather than ids: ids repeat across timelines).
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
	mark := func(begin int64) string {
		return strconv.FormatInt(begin, 10) + "@" + at[begin].Format(time.RFC3339Nano)
	}
	ids := map[int64][]string{}
	for _, src := range r.inlinedSrc {
		q := fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s", src.rowID, src.begin, c.t(src.name), src.visibleAt(r.to))
		err := c.query(ctx, q, func(rows *sql.Rows) error {
			var id, begin int64
			if err := rows.Scan(&id, &begin); err != nil {
				return err
			}
			ids[src.tid] = append(ids[src.tid], "row "+strconv.FormatInt(id, 10)+" "+mark(begin))
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
		slices.Sort(list)
		sum := sha256.Sum256([]byte(strings.Join(list, "\n")))
		r.table(tid).inlined = hex.EncodeToString(sum[:])
	}
	return nil
}

// identifyInlinedDeletes adds the inlined deletions visible at r.to to
// ids, by table: data file path, row_id and mark(begin_snapshot).
func (r *diffReader) identifyInlinedDeletes(ctx context.Context, ids map[int64][]string, mark func(int64) string) error {
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
			ids[f.table] = append(ids[f.table], "delete "+f.path+" "+strconv.FormatInt(row, 10)+" "+mark(begin))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
