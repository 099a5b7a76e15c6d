package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fdl-dev/fdl/internal/ducklake/meta"
)

// partKey is one partition key: shown as DuckDB's SET PARTITIONED BY
// takes it, and its identity (the transform and the column's id), which a
// rename of the column does not change.
type partKey struct{ shown, id string }

// partitionKeys returns each table's partition keys visible at snapshot
// at, by table id, in partition_key_index order (DuckLake spec:
// ducklake_partition_info, whose rows carry begin_snapshot/end_snapshot,
// and its ducklake_partition_column rows). A key is shown as DuckDB's
// `SET PARTITIONED BY` takes it: the column's name for the identity
// transform, else transform(column), e.g. "year(ts)", and a transform
// with arguments as DuckDB writes it, "bucket(4, id)" for "bucket(4)".
// Columns are named from st, the state at the same snapshot (a nested
// field by its path, "s.a"); one st does not hold is named by its id
// ("column 7"). A table that is not partitioned has no entry. A catalog
// without the two tables gives an empty map. The caller holds c.mu.
func (c *Catalog) partitionKeys(ctx context.Context, at int64, st *meta.State) (map[int64][]partKey, error) {
	out := map[int64][]partKey{}
	if at < 0 || !c.has("ducklake_partition_info") || !c.has("ducklake_partition_column") {
		return out, nil
	}
	names := map[[2]int64]string{} // (table id, column id) -> name
	for _, s := range st.Schemas {
		for _, t := range s.Tables {
			nameColumns(names, t.ID, "", t.Columns)
		}
	}
	q := fmt.Sprintf(`SELECT i.table_id, p.column_id, p.transform FROM %s i JOIN %s p ON p.partition_id = i.partition_id AND p.table_id = i.table_id
WHERE %s ORDER BY i.table_id, p.partition_key_index`, c.t("ducklake_partition_info"), c.t("ducklake_partition_column"), visible("i.", at))
	err := c.query(ctx, q, func(r *sql.Rows) error {
		var table, column int64
		var transform sql.NullString
		if err := r.Scan(&table, &column, &transform); err != nil {
			return err
		}
		name, ok := names[[2]int64{table, column}]
		if !ok {
			name = "column " + strconv.FormatInt(column, 10)
		}
		tr := transform.String
		switch {
		case tr == "" || tr == "identity":
		case strings.HasSuffix(tr, ")") && strings.Contains(tr, "("):
			name = strings.TrimSuffix(tr, ")") + ", " + name + ")" // bucket(4) -> bucket(4, id)
		default:
			name = tr + "(" + name + ")"
		}
		out[table] = append(out[table], partKey{shown: name, id: tr + "/" + strconv.FormatInt(column, 10)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nameColumns records the names of cols (and their nested fields, by
// path) of table into names.
func nameColumns(names map[[2]int64]string, table int64, prefix string, cols []meta.Column) {
	for _, col := range cols {
		names[[2]int64{table, col.ID}] = prefix + col.Name
		nameColumns(names, table, prefix+col.Name+".", col.Children)
	}
}

// partitioned reads the partition keys at both sides (of one catalog, or
// of two) and sets each table change's Partitioning where they differ.
// The caller holds no lock.
func partitioned(ctx context.Context, d *meta.Diff, a *Catalog, from int64, sa *meta.State, b *Catalog, to int64, sb *meta.State) error {
	before, err := a.lockedPartitionKeys(ctx, from, sa)
	if err != nil {
		return err
	}
	after, err := b.lockedPartitionKeys(ctx, to, sb)
	if err != nil {
		return err
	}
	for i := range d.Tables {
		tc := &d.Tables[i]
		x, y := before[tc.FromID], after[tc.ToID] // id 0 (absent): none
		// Keys are compared by transform and column id: a column renamed
		// is no partitioning change (column ids are the same on one
		// timeline and on what two timelines inherited).
		if !slices.EqualFunc(x, y, func(a, b partKey) bool { return a.id == b.id }) {
			tc.Partitioning = &meta.PartitionChange{Before: shownKeys(x), After: shownKeys(y)}
		}
	}
	return nil
}

// shownKeys is keys as shown, never nil.
func shownKeys(keys []partKey) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.shown)
	}
	return out
}

func (c *Catalog) lockedPartitionKeys(ctx context.Context, at int64, st *meta.State) (map[int64][]partKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.ready(); err != nil {
		return nil, err
	}
	return c.partitionKeys(ctx, at, st)
}
