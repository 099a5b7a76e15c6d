package term

import "testing"

// TestColorWanted: colour only on a terminal, never with NO_COLOR set or
// on a dumb terminal.
func TestColorWanted(t *testing.T) {
	for _, c := range []struct {
		tty           bool
		noColor, term string
		want          bool
	}{
		{true, "", "xterm-256color", true},
		{true, "", "", true},
		{true, "1", "xterm", false},
		{true, "", "dumb", false},
		{false, "", "xterm", false},
	} {
		if got := ColorWanted(c.tty, c.noColor, c.term); got != c.want {
			t.Errorf("tty %v NO_COLOR %q TERM %q: colour %v, want %v", c.tty, c.noColor, c.term, got, c.want)
		}
	}
}
