package repo

import "testing"

// TestAliasWord: a database name keeps a name's ASCII letters, digits and
// '_'; a name with none of them gets a word of its own, the same each
// time and another for another name (a branch named ü/ä was named like
// a branch named lake).
func TestAliasWord(t *testing.T) {
	for in, want := range map[string]string{"sales": "sales", "2025-final": "2025_final", "a//b": "a_b", "_x_": "x", "": "lake", "lake": "lake"} {
		if got := aliasWord(in); got != want {
			t.Errorf("aliasWord(%q) = %q, want %q", in, got, want)
		}
	}
	a, b := aliasWord("ü/ä"), aliasWord("ö")
	if a == b || a == "lake" || len(a) != len("lake_")+8 || a != aliasWord("ü/ä") {
		t.Errorf("aliasWord of names without ASCII: %q and %q; want two stable words lake_XXXXXXXX", a, b)
	}
}
