package meta

import (
	"slices"
	"strings"
)

// Diff is what changed between two states of a lake: the schemas, tables
// and views created, renamed or dropped, each table's columns and data.
// Only what changed is listed. Its JSON is the body of 'fdl diff --json'
// (docs/cli.md gives every field with its type).
type Diff struct {
	Schemas []SchemaChange `json:"schemas"`
	Tables  []TableChange  `json:"tables"`
	Views   []ViewChange   `json:"views"`
	Totals  DiffTotals     `json:"totals"`
}

// Change says what happened to a schema, table, view or column.
type Change string

// The changes. A renamed object is Modified with its old name given.
const (
	Created  Change = "created"  // a schema, table or view that the second state adds
	Dropped  Change = "dropped"  // one the second state no longer has
	Modified Change = "modified" // renamed, or (tables) columns or data changed, or (views) SQL changed
	Added    Change = "added"    // a column the second state adds
)

// SchemaChange is a schema created, dropped or renamed.
type SchemaChange struct {
	Change  Change `json:"change"`
	ID      int64  `json:"id"` // schema_id on the second side (the first for a dropped one)
	Name    string `json:"name"`
	OldName string `json:"old_name,omitempty"` // set when renamed
}

// TableChange is a table created, dropped, renamed, or whose columns or
// data changed.
type TableChange struct {
	Change Change `json:"change"`
	// ID is the table_id on the second side (the first for a dropped table).
	ID     int64  `json:"id"`
	Schema string `json:"schema"`
	Name   string `json:"name"`
	// OldSchema and OldName are the first side's names when they differ.
	OldSchema string         `json:"old_schema,omitempty"`
	OldName   string         `json:"old_name,omitempty"`
	Columns   []ColumnChange `json:"columns"`
	Rows      RowChange      `json:"rows"`
	Files     FileChange     `json:"data_files"`
	// Partitioning is set when the table's partition keys differ between
	// the sides (ALTER TABLE … SET PARTITIONED BY, RESET PARTITIONED BY, or
	// a table created or dropped partitioned).
	Partitioning *PartitionChange `json:"partitioning,omitempty"`
	// FromID and ToID are the table's ids on each side (0 where it is
	// absent); the two differ only when two catalogs are compared.
	FromID int64 `json:"-"`
	ToID   int64 `json:"-"`
}

// PartitionChange is a table's partition keys on each side, in key order,
// as DuckDB's SET PARTITIONED BY takes them: a column's name, or
// transform(column) ("year(ts)", "month(ts)"). Empty: not partitioned.
type PartitionChange struct {
	Before []string `json:"before"`
	After  []string `json:"after"`
}

// ColumnChange is a column added, dropped, renamed, retyped or whose
// nullability changed. Nested fields are named by their path ("s.a").
type ColumnChange struct {
	Change   Change `json:"change"` // added, dropped or modified
	ID       int64  `json:"id"`     // column_id (per table)
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	// OldName, OldType and OldNullable are set when that property changed.
	OldName     string `json:"old_name,omitempty"`
	OldType     string `json:"old_type,omitempty"`
	OldNullable *bool  `json:"old_nullable,omitempty"`
}

// RowChange is a table's rows at each side and what happened between.
type RowChange struct {
	Before int64 `json:"before"`
	After  int64 `json:"after"`
	// Inserted and Deleted count rows by identity between the two
	// snapshots of one timeline: a row is its rowid and values, as
	// `SELECT rowid, *` reads it; Inserted is the second state EXCEPT ALL
	// the first, Deleted the first EXCEPT ALL the second (docs/spec.md §25).
	// An UPDATE that changes values counts once each way (the rowid
	// stays), a compaction counts nothing, a row inserted and deleted in
	// between counts nowhere, a row a restore or revert brings back counts
	// as inserted. Nil when two timelines are compared: then only Before
	// and After are known.
	Inserted *int64 `json:"inserted"`
	Deleted  *int64 `json:"deleted"`
	// Exact is false when a count had to be estimated; Approximate then
	// says what is approximate and why (a file fdl could not read, values
	// that could not be compared).
	Exact       bool   `json:"exact"`
	Approximate string `json:"approximate,omitempty"`
	// Differ is set when two timelines are compared (Inserted and Deleted
	// nil), both sides hold the same data and delete files, and the rows
	// kept in the catalog itself (DuckLake's inlined rows and inlined
	// deletions) differ between the sides: each side deleted or updated
	// other rows, which the counts and the files do not show.
	Differ bool `json:"differ,omitempty"`
}

// FileChange is a table's data files at each side, how many were added
// and removed between, and their bytes (file_size_bytes).
type FileChange struct {
	Before       int64 `json:"before"`
	After        int64 `json:"after"`
	Added        int64 `json:"added"`
	Removed      int64 `json:"removed"`
	BytesBefore  int64 `json:"bytes_before"`
	BytesAfter   int64 `json:"bytes_after"`
	BytesAdded   int64 `json:"bytes_added"`
	BytesRemoved int64 `json:"bytes_removed"`
	// DeleteFilesAdded and DeleteFilesRemoved count delete files.
	DeleteFilesAdded   int64 `json:"delete_files_added"`
	DeleteFilesRemoved int64 `json:"delete_files_removed"`
}

// ViewChange is a view created, dropped, renamed or redefined.
type ViewChange struct {
	Change    Change `json:"change"`
	ID        int64  `json:"id"`
	Schema    string `json:"schema"`
	Name      string `json:"name"`
	OldSchema string `json:"old_schema,omitempty"`
	OldName   string `json:"old_name,omitempty"`
	SQL       string `json:"sql"`
	OldSQL    string `json:"old_sql,omitempty"` // set when the SQL changed
}

// DiffTotals sums a Diff.
type DiffTotals struct {
	SchemasCreated int `json:"schemas_created"`
	SchemasDropped int `json:"schemas_dropped"`
	SchemasRenamed int `json:"schemas_renamed"`
	TablesCreated  int `json:"tables_created"`
	TablesDropped  int `json:"tables_dropped"`
	TablesModified int `json:"tables_modified"`
	ViewsCreated   int `json:"views_created"`
	ViewsDropped   int `json:"views_dropped"`
	ViewsModified  int `json:"views_modified"`
	// RowsBefore and RowsAfter sum every table's rows on each side (the
	// tables that did not change included).
	RowsBefore int64 `json:"rows_before"`
	RowsAfter  int64 `json:"rows_after"`
	// RowsInserted and RowsDeleted sum the listed tables' (nil when two
	// timelines are compared).
	RowsInserted *int64 `json:"rows_inserted"`
	RowsDeleted  *int64 `json:"rows_deleted"`
	FilesAdded   int64  `json:"data_files_added"`
	FilesRemoved int64  `json:"data_files_removed"`
	BytesAdded   int64  `json:"bytes_added"`
	BytesRemoved int64  `json:"bytes_removed"`
	// Exact is false when any table's row counts are estimates.
	Exact bool `json:"exact"`
}

// CompareOptions say how CompareStates matches objects of the two states.
type CompareOptions struct {
	// SameTimeline: both states are snapshots of one catalog's timeline,
	// so an id names the same schema, table, view or column on both sides
	// (renames show as such).
	SameTimeline bool
	// Base, for two timelines, is the state of their last common snapshot
	// (nil when they share none): an object whose id the base has is
	// matched by id (both sides inherited it), any other by name (ids made
	// after the timelines parted may name different objects on each side).
	Base *State
}

// CompareStates compares two states' schemas, tables (columns, row and file
// counts) and views. Every table present on a side is listed, changed or
// not, with Rows.Before/After and Files.Before/After/BytesBefore/BytesAfter
// from the states; the caller adds what only a catalog knows (inserted and
// deleted rows, files added and removed) and calls Finish, which drops
// the tables that did not change and sums the totals.
func CompareStates(from, to *State, o CompareOptions) *Diff {
	m := matcher{o: o}
	if o.Base != nil {
		m.base = indexState(o.Base)
	}
	d := &Diff{Schemas: []SchemaChange{}, Tables: []TableChange{}, Views: []ViewChange{}}
	fs, ts := indexState(from), indexState(to)
	d.compareSchemas(&m, from, to)
	d.compareTables(&m, fs, ts)
	d.compareViews(&m, fs, ts)
	return d
}

// stateIndex flattens a state: its tables and views with their schema's name.
type stateIndex struct {
	schemas map[int64]bool
	tables  []namedTable
	views   []namedView
	tableID map[int64]bool
	viewID  map[int64]bool
	columns map[int64]map[int64]bool // table id -> column ids (all depths)
}

type namedTable struct {
	schema string
	t      *Table
}

type namedView struct {
	schema string
	v      *View
}

func indexState(st *State) *stateIndex {
	x := &stateIndex{schemas: map[int64]bool{}, tableID: map[int64]bool{}, viewID: map[int64]bool{}, columns: map[int64]map[int64]bool{}}
	for i := range st.Schemas {
		s := &st.Schemas[i]
		x.schemas[s.ID] = true
		for j := range s.Tables {
			t := &s.Tables[j]
			x.tables = append(x.tables, namedTable{s.Name, t})
			x.tableID[t.ID] = true
			cols := map[int64]bool{}
			walkColumns(t.Columns, "", func(path string, c *Column) { cols[c.ID] = true })
			x.columns[t.ID] = cols
		}
		for j := range s.Views {
			x.views = append(x.views, namedView{s.Name, &s.Views[j]})
			x.viewID[s.Views[j].ID] = true
		}
	}
	return x
}

// matcher decides whether an object is known by id (one timeline, or
// inherited from the base) or by name.
type matcher struct {
	o    CompareOptions
	base *stateIndex
}

func (m *matcher) byID(has func(*stateIndex) bool) bool {
	return m.o.SameTimeline || (m.base != nil && has(m.base))
}

// pair matches the items of two lists: first by key when byID says the
// item is known by id, then the rest by name. It returns the pairs (-1
// for a missing side) in the order of the second list, then the first's
// leftovers.
func pair[T any](from, to []T, id func(T) int64, name func(T) string, byID func(T) bool) [][2]int {
	used := make([]bool, len(from))
	var out [][2]int
	fromByID := map[int64]int{}
	fromByName := map[string][]int{}
	for i, x := range from {
		if byID(x) {
			fromByID[id(x)] = i
		} else {
			fromByName[name(x)] = append(fromByName[name(x)], i)
		}
	}
	for j, y := range to {
		i := -1
		if byID(y) {
			if k, ok := fromByID[id(y)]; ok {
				i = k
			}
		} else if c := fromByName[name(y)]; len(c) > 0 {
			i, fromByName[name(y)] = c[0], c[1:]
		}
		if i >= 0 {
			used[i] = true
		}
		out = append(out, [2]int{i, j})
	}
	for i := range from {
		if !used[i] {
			out = append(out, [2]int{i, -1})
		}
	}
	return out
}

func (d *Diff) compareSchemas(m *matcher, from, to *State) {
	byID := func(s Schema) bool { return m.byID(func(x *stateIndex) bool { return x.schemas[s.ID] }) }
	for _, p := range pair(from.Schemas, to.Schemas, func(s Schema) int64 { return s.ID }, func(s Schema) string { return s.Name }, byID) {
		switch {
		case p[0] < 0:
			s := to.Schemas[p[1]]
			d.Schemas = append(d.Schemas, SchemaChange{Change: Created, ID: s.ID, Name: s.Name})
		case p[1] < 0:
			s := from.Schemas[p[0]]
			d.Schemas = append(d.Schemas, SchemaChange{Change: Dropped, ID: s.ID, Name: s.Name})
		case from.Schemas[p[0]].Name != to.Schemas[p[1]].Name:
			s := to.Schemas[p[1]]
			d.Schemas = append(d.Schemas, SchemaChange{Change: Modified, ID: s.ID, Name: s.Name, OldName: from.Schemas[p[0]].Name})
		}
	}
}

func (d *Diff) compareTables(m *matcher, fs, ts *stateIndex) {
	byID := func(t namedTable) bool { return m.byID(func(x *stateIndex) bool { return x.tableID[t.t.ID] }) }
	id := func(t namedTable) int64 { return t.t.ID }
	name := func(t namedTable) string { return t.schema + "\x00" + t.t.Name }
	for _, p := range pair(fs.tables, ts.tables, id, name, byID) {
		var tc TableChange
		switch {
		case p[0] < 0:
			t := ts.tables[p[1]]
			tc = TableChange{Change: Created, ID: t.t.ID, ToID: t.t.ID, Schema: t.schema, Name: t.t.Name}
			tc.Columns = compareColumns(m, t.t.ID, nil, t.t.Columns)
			tc.Rows.After, tc.Files.After, tc.Files.BytesAfter = t.t.RowCount, t.t.DataFiles, t.t.DataBytes
		case p[1] < 0:
			t := fs.tables[p[0]]
			tc = TableChange{Change: Dropped, ID: t.t.ID, FromID: t.t.ID, Schema: t.schema, Name: t.t.Name, Columns: []ColumnChange{}}
			tc.Rows.Before, tc.Files.Before, tc.Files.BytesBefore = t.t.RowCount, t.t.DataFiles, t.t.DataBytes
		default:
			a, b := fs.tables[p[0]], ts.tables[p[1]]
			tc = TableChange{ID: b.t.ID, FromID: a.t.ID, ToID: b.t.ID, Schema: b.schema, Name: b.t.Name}
			if a.schema != b.schema {
				tc.OldSchema = a.schema
			}
			if a.t.Name != b.t.Name {
				tc.OldName = a.t.Name
			}
			// Columns are known by id within a table both sides inherited.
			cm := m
			if !byID(a) {
				cm = &matcher{}
			}
			tc.Columns = compareColumns(cm, b.t.ID, a.t.Columns, b.t.Columns)
			tc.Rows.Before, tc.Files.Before, tc.Files.BytesBefore = a.t.RowCount, a.t.DataFiles, a.t.DataBytes
			tc.Rows.After, tc.Files.After, tc.Files.BytesAfter = b.t.RowCount, b.t.DataFiles, b.t.DataBytes
		}
		tc.Rows.Exact = true
		d.Tables = append(d.Tables, tc)
	}
}

// flatColumn is a column with its path ("s.a" for a nested field).
type flatColumn struct {
	path string
	c    *Column
}

func walkColumns(cols []Column, prefix string, fn func(path string, c *Column)) {
	for i := range cols {
		c := &cols[i]
		p := prefix + c.Name
		fn(p, c)
		walkColumns(c.Children, p+".", fn)
	}
}

func flatten(cols []Column) []flatColumn {
	var out []flatColumn
	walkColumns(cols, "", func(p string, c *Column) { out = append(out, flatColumn{p, c}) })
	return out
}

// compareColumns compares a table's columns at every depth. In a table
// known by id on both sides, columns the base had (or every column, on one
// timeline) are matched by id, the others by path.
func compareColumns(m *matcher, tableID int64, from, to []Column) []ColumnChange {
	out := []ColumnChange{}
	byID := func(c flatColumn) bool {
		return m.byID(func(x *stateIndex) bool { return x.columns[tableID][c.c.ID] })
	}
	a, b := flatten(from), flatten(to)
	for _, p := range pair(a, b, func(c flatColumn) int64 { return c.c.ID }, func(c flatColumn) string { return c.path }, byID) {
		switch {
		case p[0] < 0:
			c := b[p[1]]
			out = append(out, ColumnChange{Change: Added, ID: c.c.ID, Name: c.path, Type: c.c.Type, Nullable: c.c.Nullable})
		case p[1] < 0:
			c := a[p[0]]
			out = append(out, ColumnChange{Change: Dropped, ID: c.c.ID, Name: c.path, Type: c.c.Type, Nullable: c.c.Nullable})
		default:
			x, y := a[p[0]], b[p[1]]
			cc := ColumnChange{Change: Modified, ID: y.c.ID, Name: y.path, Type: y.c.Type, Nullable: y.c.Nullable}
			changed := false
			if x.path != y.path {
				cc.OldName, changed = x.path, true
			}
			if x.c.Type != y.c.Type {
				cc.OldType, changed = x.c.Type, true
			}
			if x.c.Nullable != y.c.Nullable {
				n := x.c.Nullable
				cc.OldNullable, changed = &n, true
			}
			if changed {
				out = append(out, cc)
			}
		}
	}
	return out
}

func (d *Diff) compareViews(m *matcher, fs, ts *stateIndex) {
	byID := func(v namedView) bool { return m.byID(func(x *stateIndex) bool { return x.viewID[v.v.ID] }) }
	id := func(v namedView) int64 { return v.v.ID }
	name := func(v namedView) string { return v.schema + "\x00" + v.v.Name }
	for _, p := range pair(fs.views, ts.views, id, name, byID) {
		switch {
		case p[0] < 0:
			v := ts.views[p[1]]
			d.Views = append(d.Views, ViewChange{Change: Created, ID: v.v.ID, Schema: v.schema, Name: v.v.Name, SQL: v.v.SQL})
		case p[1] < 0:
			v := fs.views[p[0]]
			d.Views = append(d.Views, ViewChange{Change: Dropped, ID: v.v.ID, Schema: v.schema, Name: v.v.Name, SQL: v.v.SQL})
		default:
			a, b := fs.views[p[0]], ts.views[p[1]]
			vc := ViewChange{Change: Modified, ID: b.v.ID, Schema: b.schema, Name: b.v.Name, SQL: b.v.SQL}
			if a.schema != b.schema {
				vc.OldSchema = a.schema
			}
			if a.v.Name != b.v.Name {
				vc.OldName = a.v.Name
			}
			if a.v.SQL != b.v.SQL {
				vc.OldSQL = a.v.SQL
			}
			if vc.OldSchema != "" || vc.OldName != "" || vc.OldSQL != "" {
				d.Views = append(d.Views, vc)
			}
		}
	}
	d.Views = replacedViews(d.Views)
}

// replacedViews gives a view dropped and another created under the same
// schema and name (CREATE OR REPLACE VIEW makes a new view id) as one
// view modified, its OldSQL the dropped one's (nothing when the SQL is the
// same).
func replacedViews(vs []ViewChange) []ViewChange {
	dropped := map[[2]string]int{}
	for i, v := range vs {
		if v.Change == Dropped {
			dropped[[2]string{v.Schema, v.Name}] = i
		}
	}
	gone := map[int]bool{}
	for i, v := range vs {
		j, ok := dropped[[2]string{v.Schema, v.Name}]
		if v.Change != Created || !ok || gone[j] {
			continue
		}
		gone[j] = true
		if vs[j].SQL == v.SQL {
			gone[i] = true
			continue
		}
		vs[i].Change, vs[i].OldSQL = Modified, vs[j].SQL
	}
	out := vs[:0]
	for i, v := range vs {
		if !gone[i] {
			out = append(out, v)
		}
	}
	return out
}

// Finish marks the tables whose columns, names or data changed as Modified,
// drops the tables that did not change, sorts everything by schema and
// name, and sums the totals. rowsKnown says whether Rows.Inserted and
// Rows.Deleted were filled (one timeline).
func (d *Diff) Finish(rowsKnown bool) {
	t := DiffTotals{Exact: true}
	var ins, del int64
	kept := d.Tables[:0]
	for _, tc := range d.Tables {
		t.RowsBefore += tc.Rows.Before
		t.RowsAfter += tc.Rows.After
		if tc.Change == "" {
			if !tableChanged(tc) {
				continue
			}
			tc.Change = Modified
		}
		kept = append(kept, tc)
		if tc.Rows.Inserted != nil {
			ins += *tc.Rows.Inserted
		}
		if tc.Rows.Deleted != nil {
			del += *tc.Rows.Deleted
		}
		t.FilesAdded += tc.Files.Added
		t.FilesRemoved += tc.Files.Removed
		t.BytesAdded += tc.Files.BytesAdded
		t.BytesRemoved += tc.Files.BytesRemoved
		t.Exact = t.Exact && tc.Rows.Exact
		switch tc.Change {
		case Created:
			t.TablesCreated++
		case Dropped:
			t.TablesDropped++
		default:
			t.TablesModified++
		}
	}
	d.Tables = kept
	if rowsKnown {
		t.RowsInserted, t.RowsDeleted = &ins, &del
	}
	for _, s := range d.Schemas {
		switch s.Change {
		case Created:
			t.SchemasCreated++
		case Dropped:
			t.SchemasDropped++
		default:
			t.SchemasRenamed++
		}
	}
	for _, v := range d.Views {
		switch v.Change {
		case Created:
			t.ViewsCreated++
		case Dropped:
			t.ViewsDropped++
		default:
			t.ViewsModified++
		}
	}
	d.Totals = t
	slices.SortStableFunc(d.Schemas, func(a, b SchemaChange) int { return strings.Compare(a.Name, b.Name) })
	slices.SortStableFunc(d.Tables, func(a, b TableChange) int { return cmpNames(a.Schema, a.Name, b.Schema, b.Name) })
	slices.SortStableFunc(d.Views, func(a, b ViewChange) int { return cmpNames(a.Schema, a.Name, b.Schema, b.Name) })
}

func cmpNames(s1, n1, s2, n2 string) int {
	if c := strings.Compare(s1, s2); c != 0 {
		return c
	}
	return strings.Compare(n1, n2)
}

// tableChanged reports whether a table present on both sides changed.
func tableChanged(tc TableChange) bool {
	r, f := tc.Rows, tc.Files
	return tc.OldName != "" || tc.OldSchema != "" || len(tc.Columns) > 0 || tc.Partitioning != nil ||
		r.Before != r.After || (r.Inserted != nil && *r.Inserted != 0) || (r.Deleted != nil && *r.Deleted != 0) ||
		f.Added != 0 || f.Removed != 0 || f.DeleteFilesAdded != 0 || f.DeleteFilesRemoved != 0 ||
		f.Before != f.After || f.BytesBefore != f.BytesAfter || r.Differ
}

// Empty reports whether the diff lists nothing.
func (d *Diff) Empty() bool {
	return len(d.Schemas) == 0 && len(d.Tables) == 0 && len(d.Views) == 0
}

// Reverse turns a finished diff from A to B into the diff from B to A:
// created and dropped swap, old and new names, types and SQL swap, before
// and after swap, inserted and deleted swap, added and removed swap.
func (d *Diff) Reverse() {
	for i := range d.Schemas {
		s := &d.Schemas[i]
		s.Change = flip(s.Change)
		if s.OldName != "" {
			s.Name, s.OldName = s.OldName, s.Name
		}
	}
	for i := range d.Tables {
		t := &d.Tables[i]
		t.Change = flip(t.Change)
		t.FromID, t.ToID = t.ToID, t.FromID
		if t.OldName != "" {
			t.Name, t.OldName = t.OldName, t.Name
		}
		if t.OldSchema != "" {
			t.Schema, t.OldSchema = t.OldSchema, t.Schema
		}
		for j := range t.Columns {
			reverseColumn(&t.Columns[j])
		}
		if p := t.Partitioning; p != nil {
			p.Before, p.After = p.After, p.Before
		}
		r := &t.Rows
		r.Before, r.After = r.After, r.Before
		r.Inserted, r.Deleted = r.Deleted, r.Inserted
		f := &t.Files
		f.Before, f.After, f.Added, f.Removed = f.After, f.Before, f.Removed, f.Added
		f.BytesBefore, f.BytesAfter, f.BytesAdded, f.BytesRemoved = f.BytesAfter, f.BytesBefore, f.BytesRemoved, f.BytesAdded
		f.DeleteFilesAdded, f.DeleteFilesRemoved = f.DeleteFilesRemoved, f.DeleteFilesAdded
	}
	for i := range d.Views {
		v := &d.Views[i]
		v.Change = flip(v.Change)
		if v.OldName != "" {
			v.Name, v.OldName = v.OldName, v.Name
		}
		if v.OldSchema != "" {
			v.Schema, v.OldSchema = v.OldSchema, v.Schema
		}
		if v.OldSQL != "" {
			v.SQL, v.OldSQL = v.OldSQL, v.SQL
		}
	}
	t := &d.Totals
	t.SchemasCreated, t.SchemasDropped = t.SchemasDropped, t.SchemasCreated
	t.TablesCreated, t.TablesDropped = t.TablesDropped, t.TablesCreated
	t.ViewsCreated, t.ViewsDropped = t.ViewsDropped, t.ViewsCreated
	t.RowsBefore, t.RowsAfter = t.RowsAfter, t.RowsBefore
	t.RowsInserted, t.RowsDeleted = t.RowsDeleted, t.RowsInserted
	t.FilesAdded, t.FilesRemoved = t.FilesRemoved, t.FilesAdded
	t.BytesAdded, t.BytesRemoved = t.BytesRemoved, t.BytesAdded
}

func reverseColumn(c *ColumnChange) {
	switch c.Change {
	case Added:
		c.Change = Dropped
		return
	case Dropped:
		c.Change = Added
		return
	}
	if c.OldName != "" {
		c.Name, c.OldName = c.OldName, c.Name
	}
	if c.OldType != "" {
		c.Type, c.OldType = c.OldType, c.Type
	}
	if c.OldNullable != nil {
		n := c.Nullable
		c.Nullable, c.OldNullable = *c.OldNullable, &n
	}
}

func flip(c Change) Change {
	switch c {
	case Created:
		return Dropped
	case Dropped:
		return Created
	}
	return c
}
