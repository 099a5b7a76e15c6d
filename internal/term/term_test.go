package term

import (
	"strings"
	"testing"
	"time"
)

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

// TestProgressRate: the upload bar's rate is bytes moved since the bar's
// first update over at least a second: a burst that arrives in a
// microsecond shows no rate (the bar's own rolling rate showed 826 GB/s),
// and the rate shown is what moved over the time it took.
func TestProgressRate(t *testing.T) {
	t.Parallel()
	ios, _, errOut := Test()
	ios.ErrTTY = true
	p := ios.NewProgress(false)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	p.now = func() time.Time { return clock }
	const mib = 1 << 20
	p.Update("upload", "versions/x/ducklake.duckdb", 0, 100*mib)
	clock = t0.Add(time.Microsecond)
	p.Update("upload", "versions/x/ducklake.duckdb", 60*mib, 100*mib)
	if strings.Contains(p.desc, "/s") || p.desc != "upload versions/x/ducklake.duckdb 60.0 MiB of 100.0 MiB" {
		t.Fatalf("a burst within a microsecond: %q", p.desc)
	}
	clock = t0.Add(2 * time.Second)
	p.Update("upload", "versions/x/ducklake.duckdb", 80*mib, 100*mib)
	if want := "upload versions/x/ducklake.duckdb 80.0 MiB of 100.0 MiB, 40.0 MiB/s"; p.desc != want {
		t.Fatalf("after 2 s: %q, want %q", p.desc, want)
	}
	p.Done()
	if strings.Contains(errOut.String(), "GB/s") {
		t.Fatalf("drawn: %q", errOut.String())
	}
}
