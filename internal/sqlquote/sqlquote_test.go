package sqlquote

import "testing"

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{"main": "main", "t_1": "t_1", "1t": `"1t"`, "Sales": `"Sales"`, `my "t"`: `"my ""t"""`, "": `""`, "ü": `"ü"`, "select": `"select"`, "from": `"from"`, "int": `"int"`, "data": "data"} {
		if got := IdentIfNeeded(in); got != want {
			t.Errorf("IdentIfNeeded(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Ident("main"); got != `"main"` {
		t.Errorf("Ident(main) = %s", got)
	}
	if got := String("it's"); got != "'it''s'" {
		t.Errorf("String = %s", got)
	}
}
