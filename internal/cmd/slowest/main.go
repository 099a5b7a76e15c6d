// Command slowest reads `go test -json` on its standard input, prints what a
// plain `go test` would (each package's ok/FAIL line, the output of failing
// tests, build errors), and at the end the ten slowest tests, each package's
// wall time and the slowest subtests, so a suite that grows past its budget
// says where the time went. make test pipes the suite through it.
//
//	go test -json ./... | go run ./internal/cmd/slowest [-n 10] [-sub 10] [-quiet]
//
// A test's time is go test's own (a parallel test's excludes its wait for
// a free slot), or, for a test whose subtests run in parallel, from its
// start to its end. It exits 1 when a test, a package or a build failed, or
// when the input holds no test event at all, so a pipeline with pipefail
// fails as go test would.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, with the
// build events Go 1.24 added).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

// timing is one finished test or package.
type timing struct {
	pkg, test string
	elapsed   float64
	action    string
}

// summary is what the run left: finished tests, packages, whether anything failed.
type summary struct {
	tests, subs, pkgs []timing
	failed            bool
	events            int
	buffered          map[string]*strings.Builder // output of a running test, by package and name
	started           map[string]time.Time        // when a test started or continued, by package and name
}

func main() {
	n := flag.Int("n", 10, "how many of the slowest tests to print")
	nsub := flag.Int("sub", 10, "how many of the slowest subtests to print (0: none)")
	quiet := flag.Bool("quiet", false, "print only the summary, not the packages' lines")
	flag.Parse()
	s, err := read(os.Stdin, os.Stdout, *quiet)
	if err != nil {
		fmt.Fprintln(os.Stderr, "slowest:", err)
		os.Exit(1)
	}
	report(os.Stdout, s, *n, *nsub)
	if s.failed || s.events == 0 {
		os.Exit(1)
	}
}

// read consumes the event stream, echoing what plain go test prints to out
// (unless quiet), and returns the timings. Lines that are not JSON (a build
// error before Go 1.24, a panic of go test itself) are echoed as they are.
func read(in io.Reader, out io.Writer, quiet bool) (*summary, error) {
	s := &summary{buffered: map[string]*strings.Builder{}, started: map[string]time.Time{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(out, string(line))
			continue
		}
		s.events++
		s.add(e, out, quiet)
	}
	return s, sc.Err()
}

// add takes one event: output is kept per test until the test ends (and
// printed if it failed); package lines are printed as go test prints them.
func (s *summary) add(e event, out io.Writer, quiet bool) {
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "run", "cont":
		s.started[key] = e.Time
	case "build-output":
		fmt.Fprint(out, e.Output)
	case "build-fail":
		s.failed = true
	case "output":
		if e.Test == "" {
			if !quiet && !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" {
				fmt.Fprint(out, e.Output)
			}
			return
		}
		b := s.buffered[key]
		if b == nil {
			b = &strings.Builder{}
			s.buffered[key] = b
		}
		b.WriteString(e.Output)
	case "pass", "fail", "skip":
		if e.Action == "fail" {
			s.failed = true
		}
		if e.Test == "" {
			s.pkgs = append(s.pkgs, timing{e.Package, "", e.Elapsed, e.Action})
			return
		}
		if b := s.buffered[key]; b != nil {
			if e.Action == "fail" {
				fmt.Fprint(out, b.String())
			}
			delete(s.buffered, key)
		}
		t := timing{e.Package, e.Test, e.Elapsed, e.Action}
		// A test whose subtests run in parallel reports the time of its
		// own function only; from its start (or its continuing, when it
		// is parallel itself) to its end is what it cost the run.
		if start, ok := s.started[key]; ok && !e.Time.IsZero() {
			t.elapsed = max(t.elapsed, e.Time.Sub(start).Seconds())
		}
		delete(s.started, key)
		if strings.Contains(e.Test, "/") {
			s.subs = append(s.subs, t)
		} else {
			s.tests = append(s.tests, t)
		}
	}
}

// report prints the n slowest tests, the packages by wall time and the
// nsub slowest subtests.
func report(w io.Writer, s *summary, n, nsub int) {
	total := 0.0
	for _, p := range s.pkgs {
		total += p.elapsed
	}
	fmt.Fprintf(w, "\n%d tests, %d subtests, %d packages; package wall times add up to %s\n",
		len(s.tests), len(s.subs), len(s.pkgs), secs(total))
	section(w, fmt.Sprintf("the %d slowest tests", n), s.tests, n)
	section(w, "the slowest packages", s.pkgs, 6)
	if nsub > 0 {
		section(w, fmt.Sprintf("the %d slowest subtests", nsub), s.subs, nsub)
	}
}

// section prints up to n of ts, slowest first.
func section(w io.Writer, title string, ts []timing, n int) {
	if len(ts) == 0 {
		return
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].elapsed > ts[j].elapsed })
	fmt.Fprintf(w, "%s:\n", title)
	for _, t := range ts[:min(n, len(ts))] {
		name := shortPkg(t.pkg)
		if t.test != "" {
			name += "." + t.test
		}
		mark := ""
		if t.action != "pass" {
			mark = " (" + t.action + ")"
		}
		fmt.Fprintf(w, "  %9s  %s%s\n", secs(t.elapsed), name, mark)
	}
}

// shortPkg drops the module path from a package path.
func shortPkg(p string) string {
	if i := strings.Index(p, "/fdl/"); i >= 0 {
		return p[i+len("/fdl/"):]
	}
	return p
}

func secs(f float64) string { return fmt.Sprintf("%.1fs", f) }
