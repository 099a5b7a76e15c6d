package meta

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
)

// DigestEncoding is the number of the canonical row encoding, rule of
// visibility and digest arithmetic RowDigests uses (docs/spec.md §24). A
// digest of another encoding is not compared. 2: a row of a table keyed
// by a DuckLake table id is at S only while that table is (1 counted the
// schema versions and inlined rows of a dropped table, which an expiry
// then removes).
const DigestEncoding = 2

// RowDigests is the digest of a catalog's metadata rows visible at one
// snapshot (docs/spec.md §24): for each metadata table, the rows DuckLake's
// visibility rule shows at Snapshot, projected as of Snapshot (end_snapshot
// left out), counted and summed. It is what a version published at its
// last snapshot, kept in dataset.json (`history`), and what a later catalog
// must still show there.
type RowDigests struct {
	// Encoding is DigestEncoding.
	Encoding int `json:"encoding"`
	// HashCheck is the hash the computing DuckDB gives a fixed row
	// (docs/spec.md §24), in decimal: digests whose checks differ were
	// made by different hash functions and are not compared.
	HashCheck string `json:"hash_check"`
	// Snapshot is the snapshot the rows are read at.
	Snapshot int64 `json:"snapshot"`
	// Format is the DuckLake format of the catalog digested: digests of
	// catalogs of two formats (columns differ) are not compared.
	Format string `json:"ducklake_format"`
	// Tables maps a metadata table's name (inlined-data tables together as
	// "ducklake_inlined_data", inlined-delete tables as
	// "ducklake_inlined_delete") to its digest.
	Tables map[string]TableDigest `json:"tables"`
	// Respread lists, in a digest taken of a later catalog at an older
	// snapshot, the DuckLake table ids whose files visible at Snapshot
	// were rewritten after it by DuckLake's maintenance
	// (ducklake_merge_adjacent_files, ducklake_flush_inlined_data,
	// ducklake_rewrite_data_files: a data or delete file with an id the
	// catalog had not handed out by Snapshot, visible at Snapshot): their
	// rows of file-bound tables (FileBound) cannot be compared with what
	// was published. Empty in a version's own digest.
	Respread []int64 `json:"respread,omitempty"`
}

// TableDigest is the digest of the rows of one metadata table visible at
// a snapshot. Tables with a table_id column are also split by it (ByTable,
// keyed by the DuckLake table id in decimal), so that a table whose files
// DuckLake's maintenance rewrote is told apart from the others.
type TableDigest struct {
	Part
	ByTable map[string]Part `json:"by_table,omitempty"`
}

// Part is a count of rows and the sum of their row hashes (DuckDB's
// 64-bit hash() of the row, docs/spec.md §24) mod 2^64, as 16 lowercase
// hex digits. The sum does not depend on the rows' order.
type Part struct {
	Rows int64  `json:"rows"`
	Sum  string `json:"sum"`
}

// FormatSum writes a sum as Part.Sum does.
func FormatSum(s uint64) string { return fmt.Sprintf("%016x", s) }

// AddParts returns the part of the rows of a and b together (an empty
// Sum reads as 0).
func AddParts(a, b Part) Part {
	x, _ := strconv.ParseUint(a.Sum, 16, 64)
	y, _ := strconv.ParseUint(b.Sum, 16, 64)
	return Part{Rows: a.Rows + b.Rows, Sum: FormatSum(x + y)}
}

// FileBound reports whether a metadata table's rows belong to data or
// delete files (or are inlined rows), so that DuckLake's maintenance after
// a snapshot rewrites them for a whole table: such rows of a Respread
// table are not compared.
func FileBound(table string) bool {
	switch table {
	case "ducklake_data_file", "ducklake_delete_file", "ducklake_file_column_stats",
		"ducklake_file_column_statistics", "ducklake_file_partition_value",
		"ducklake_file_variant_stats", "ducklake_column_mapping",
		"ducklake_inlined_data", "ducklake_inlined_delete":
		return true
	}
	return false
}

// DigestChange is where a later catalog's digest at a snapshot differs from
// the one published there: the metadata table and, for tables split by
// table_id, the DuckLake table id (TableID < 0 when the whole table
// differs), with both counts.
type DigestChange struct {
	Table     string
	TableID   int64
	Want, Got Part
}

// String names the change for a message: "ducklake_data_file (table id 3):
// 12 row(s) published, 12 now, other contents".
func (d DigestChange) String() string {
	where := d.Table
	if d.TableID >= 0 {
		where += fmt.Sprintf(" (table id %d)", d.TableID)
	}
	what := "other contents"
	if d.Want.Rows != d.Got.Rows {
		what = "rows added or removed"
	}
	return fmt.Sprintf("%s: %d row(s) published, %d now, %s", where, d.Want.Rows, d.Got.Rows, what)
}

// Comparable reports whether two digests can be compared: same encoding,
// hash function (HashCheck), snapshot and DuckLake format.
func Comparable(published, later *RowDigests) bool {
	return published != nil && later != nil && published.Encoding == DigestEncoding && later.Encoding == DigestEncoding &&
		published.HashCheck == later.HashCheck && published.Snapshot == later.Snapshot && published.Format == later.Format
}

// CompareDigests compares what a version published (its own digest) with a
// later catalog's digest at the same snapshot, table by table in name
// order, and returns the first difference, or nil. Rows of file-bound
// tables (FileBound) of the later digest's Respread tables are not
// compared. The caller checks Comparable first.
func CompareDigests(published, later *RowDigests) *DigestChange {
	respread := map[string]bool{}
	for _, id := range later.Respread {
		respread[strconv.FormatInt(id, 10)] = true
	}
	names := make([]string, 0, len(published.Tables)+len(later.Tables))
	for n := range published.Tables {
		names = append(names, n)
	}
	for n := range later.Tables {
		if _, ok := published.Tables[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		want, got := published.Tables[n], later.Tables[n]
		if want.ByTable == nil && got.ByTable == nil {
			if !samePart(want.Part, got.Part) {
				return &DigestChange{Table: n, TableID: -1, Want: want.Part, Got: got.Part}
			}
			continue
		}
		if d := compareByTable(n, want.ByTable, got.ByTable, respread); d != nil {
			return d
		}
	}
	return nil
}

// compareByTable compares the per-table-id parts of one metadata table, in
// order of table id.
func compareByTable(name string, want, got map[string]Part, respread map[string]bool) *DigestChange {
	keys := make([]string, 0, len(want)+len(got))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return cmp.Compare(x, y)
	})
	for _, k := range keys {
		if FileBound(name) && respread[k] {
			continue
		}
		if w, g := want[k], got[k]; !samePart(w, g) {
			id, _ := strconv.ParseInt(k, 10, 64)
			return &DigestChange{Table: name, TableID: id, Want: w, Got: g}
		}
	}
	return nil
}

// samePart: no rows on either side (however written) or the same count
// and sum.
func samePart(a, b Part) bool {
	if a.Rows == 0 && b.Rows == 0 {
		return true
	}
	return a == b
}
