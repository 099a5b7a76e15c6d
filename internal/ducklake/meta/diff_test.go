package meta

import (
	"encoding/json"
	"testing"
)

func col(id int64, name, typ string, children ...Column) Column {
	return Column{ID: id, Name: name, Type: typ, Nullable: true, Children: children}
}

// state builds a state of one schema "main" (id 0) holding the given
// tables and views.
func state(tables []Table, views ...View) *State {
	return &State{Schemas: []Schema{{ID: 0, Name: "main", Tables: tables, Views: views}}}
}

func TestCompareStatesOneTimeline(t *testing.T) {
	from := state([]Table{
		{ID: 1, Name: "a", Columns: []Column{col(1, "x", "int32"), col(2, "y", "varchar"), col(3, "s", "struct", col(4, "p", "int32"))}, RowCount: 10, DataFiles: 1, DataBytes: 100},
		{ID: 2, Name: "gone", Columns: []Column{col(1, "z", "int32")}, RowCount: 5},
		{ID: 3, Name: "same", Columns: []Column{col(1, "z", "int32")}, RowCount: 7, DataFiles: 1, DataBytes: 10},
	}, View{ID: 9, Name: "v", SQL: "SELECT 1"})
	to := state([]Table{
		{ID: 1, Name: "a2", Columns: []Column{col(1, "x", "int64"), col(2, "y2", "varchar"), col(3, "s", "struct", col(5, "q", "int32")), col(6, "w", "int32")}, RowCount: 12, DataFiles: 2, DataBytes: 150},
		{ID: 3, Name: "same", Columns: []Column{col(1, "z", "int32")}, RowCount: 7, DataFiles: 1, DataBytes: 10},
		{ID: 4, Name: "new", Columns: []Column{col(1, "k", "int32")}},
	}, View{ID: 9, Name: "v", SQL: "SELECT 2"}, View{ID: 10, Name: "w", SQL: "SELECT 3"})
	to.Schemas = append(to.Schemas, Schema{ID: 11, Name: "extra"})
	d := CompareStates(from, to, CompareOptions{SameTimeline: true})
	d.Finish(false)
	if len(d.Tables) != 3 {
		t.Fatalf("tables %+v", d.Tables)
	}
	byName := map[string]TableChange{}
	for _, tc := range d.Tables {
		byName[tc.Name] = tc
	}
	a := byName["a2"]
	if a.Change != Modified || a.OldName != "a" || a.Rows.Before != 10 || a.Rows.After != 12 {
		t.Errorf("a2: %+v", a)
	}
	got := map[string]ColumnChange{}
	for _, c := range a.Columns {
		got[c.Name] = c
	}
	if c := got["x"]; c.Change != Modified || c.OldType != "int32" || c.Type != "int64" || c.OldName != "" {
		t.Errorf("x: %+v", c)
	}
	if c := got["y2"]; c.OldName != "y" || c.OldType != "" {
		t.Errorf("y2: %+v", c)
	}
	if c := got["s.p"]; c.Change != Dropped {
		t.Errorf("s.p: %+v", c)
	}
	if c := got["s.q"]; c.Change != Added {
		t.Errorf("s.q: %+v", c)
	}
	if c := got["w"]; c.Change != Added {
		t.Errorf("w: %+v", c)
	}
	if _, ok := got["s"]; ok {
		t.Errorf("unchanged struct column listed: %+v", got["s"])
	}
	if byName["gone"].Change != Dropped || byName["new"].Change != Created || len(byName["new"].Columns) != 1 {
		t.Errorf("gone/new: %+v %+v", byName["gone"], byName["new"])
	}
	if len(d.Views) != 2 || d.Views[0].Name != "v" || d.Views[0].OldSQL != "SELECT 1" || d.Views[1].Change != Created {
		t.Errorf("views %+v", d.Views)
	}
	if len(d.Schemas) != 1 || d.Schemas[0].Change != Created {
		t.Errorf("schemas %+v", d.Schemas)
	}
	tt := d.Totals
	if tt.TablesCreated != 1 || tt.TablesDropped != 1 || tt.TablesModified != 1 || tt.RowsBefore != 22 || tt.RowsAfter != 19 || tt.RowsInserted != nil {
		t.Errorf("totals %+v", tt)
	}

	// Reversed, the diff reads the other way.
	d.Reverse()
	byName = map[string]TableChange{}
	for _, tc := range d.Tables {
		byName[tc.Name] = tc
	}
	if a := byName["a"]; a.OldName != "a2" || a.Rows.Before != 12 || a.Rows.After != 10 {
		t.Errorf("reversed a: %+v", a)
	}
	if byName["gone"].Change != Created || byName["new"].Change != Dropped || d.Totals.RowsBefore != 19 {
		t.Errorf("reversed: %+v", d)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Fatal(err)
	}
}

// Two timelines: ids the base had are matched by id (a rename shows); ids
// made on each side after they parted are matched by name, so two
// different tables that got the same id are not taken for one renamed.
func TestCompareStatesTwoTimelines(t *testing.T) {
	base := state([]Table{{ID: 1, Name: "shared", Columns: []Column{col(1, "x", "int32")}}})
	from := state([]Table{
		{ID: 1, Name: "shared", Columns: []Column{col(1, "x", "int32"), col(2, "left", "int32")}},
		{ID: 5, Name: "only_left"},
		{ID: 6, Name: "both"},
	})
	to := state([]Table{
		{ID: 1, Name: "shared_renamed", Columns: []Column{col(1, "x", "int32"), col(2, "right", "int32")}},
		{ID: 5, Name: "only_right"},
		{ID: 7, Name: "both"},
	})
	d := CompareStates(from, to, CompareOptions{Base: base})
	d.Finish(false)
	names := map[string]Change{}
	for _, tc := range d.Tables {
		names[tc.Name] = tc.Change
		if tc.Name == "shared_renamed" {
			if tc.OldName != "shared" {
				t.Errorf("shared: %+v", tc)
			}
			cols := map[string]Change{}
			for _, c := range tc.Columns {
				cols[c.Name] = c.Change
			}
			if cols["left"] != Dropped || cols["right"] != Added || len(cols) != 2 {
				t.Errorf("columns made after the fork are matched by name: %+v", tc.Columns)
			}
		}
	}
	if names["only_left"] != Dropped || names["only_right"] != Created {
		t.Errorf("tables: %+v", d.Tables)
	}
	if _, listed := names["both"]; listed {
		t.Errorf("the two 'both' tables (same name, no change) are one table: %+v", d.Tables)
	}
}
