package ducklake

import (
	"reflect"
	"testing"
)

func TestParseChanges(t *testing.T) {
	cases := []struct {
		in   string
		want []Change
	}{
		{"", nil},
		{`created_schema:"main"`, []Change{{"created_schema", `"main"`}}},
		{`created_table:"main"."T"`, []Change{{"created_table", `"main"."T"`}}},
		{"inserted_into_table:1,deleted_from_table:1", []Change{{"inserted_into_table", "1"}, {"deleted_from_table", "1"}}},
		{`created_table:"main"."a,""b"`, []Change{{"created_table", `"main"."a,""b"`}}},
		{`created_table:"my:schema"."x:y,z",inlined_insert:3`, []Change{{"created_table", `"my:schema"."x:y,z"`}, {"inlined_insert", "3"}}},
		{`created_view:"s"."""quoted"""`, []Change{{"created_view", `"s"."""quoted"""`}}},
		{`created_schema:"a""",dropped_table:2`, []Change{{"created_schema", `"a"""`}, {"dropped_table", "2"}}},
		{`created_table:"ü"."表,名"`, []Change{{"created_table", `"ü"."表,名"`}}},
		{"altered_table:3,,flushed_inlined:1,", []Change{{"altered_table", "3"}, {"flushed_inlined", "1"}}},
		{"compacted_table", []Change{{"compacted_table", ""}}},
		{`created_table:"unterminated,still`, []Change{{"created_table", `"unterminated,still`}}},
		{"kind:a:b", []Change{{"kind", "a:b"}}},
		// The SQLite catalog's strings (ahri-tre-v0.2.sqlite, read with sqlite3;
		// the DuckDB-format catalogs' strings are checked in TestOpenRealCatalogs).
		{`created_table:"main"."nl_train_stations",inserted_into_table:1`, []Change{{"created_table", `"main"."nl_train_stations"`}, {"inserted_into_table", "1"}}},
		{"inserted_into_table:1,deleted_from_table:1", []Change{{"inserted_into_table", "1"}, {"deleted_from_table", "1"}}},
		{`created_table:"main"."demo"`, []Change{{"created_table", `"main"."demo"`}}},
		{"inserted_into_table:2", []Change{{"inserted_into_table", "2"}}},
	}
	for _, tc := range cases {
		if got := ParseChanges(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseChanges(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}
