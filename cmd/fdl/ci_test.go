package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// docScript returns the shell block of doc (a file of the repository)
// that follows the marker "<!-- ci-script: NAME -->".
func docScript(t *testing.T, doc, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(realduck.Root(), doc))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- ci-script: "+name+" -->")
	if !ok {
		t.Fatalf("%s has no ci-script %s", doc, name)
	}
	_, block, ok := strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("%s: no sh block after the ci-script %s marker", doc, name)
	}
	script, _, _ := strings.Cut(block, "```")
	return script
}

// TestCIWorkflow runs the nightly job of docs/ci.md exactly as written,
// with the real DuckDB CLI on the PATH, against S3 on loopback: once (it
// publishes the day's rows and tags them), again (it stops at the tag),
// killed between its push and its tag and run again (it tags main's head
// without publishing the rows again), a day with no new rows (it tags the
// head), and twice at once (the rows are published once; both end with
// exit 0); then its first night on an empty repository.
//
// It is one piece: one story of the nightly job on one repository, each run
// reading what the run before it published.
func TestCIWorkflow(t *testing.T) {
	ctx := context.Background()
	url := cloudtest.S3(t)
	duck := realduck.Find(t, realduck.V15, "ducklake", "sqlite", "httpfs", "aws")
	dir := t.TempDir()
	script := filepath.Join(dir, "nightly.sh")
	if err := os.WriteFile(script, []byte(docScript(t, "docs/ci.md", "nightly.sh")), 0o755); err != nil {
		t.Fatal(err)
	}
	// The duckdb a job installs: the real CLI with its extensions.
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nexec " + filepath.Join(realduck.Root(), "scripts", "duckdb") + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "duckdb"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	// The repository with its table, as the nightly finds it.
	r, err := repo.Init(ctx, url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seed := filepath.Join(dir, "seed")
	co, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: seed})
	if err != nil {
		t.Fatal(err)
	}
	duck.MustQuery(t, realduck.OnLake(co.Attach, "CREATE TABLE sales(day DATE, id INTEGER, amount DOUBLE)", false))
	w, err := workdir.Open(seed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx, workdir.CommitOptions{Message: "sales table", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	csv := func(day string, n int) string {
		p := filepath.Join(dir, day+".csv")
		var b strings.Builder
		b.WriteString("day,id,amount\n")
		for i := range n {
			fmt.Fprintf(&b, "%s,%d,%d.5\n", day, i, i)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	job := func(jobDir, day, data string, env ...string) (int, string) {
		if err := os.MkdirAll(jobDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", script)
		cmd.Dir = jobDir
		cmd.Env = append(os.Environ(), append([]string{"FDL_REPO=" + url, "NIGHTLY_DATE=" + day, "NIGHTLY_CSV=" + data,
			"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "FDL_AUTHOR=nightly"}, env...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	// rows counts the day's rows main holds, and main's seq.
	seqOf := func(rev string) int64 {
		t.Helper()
		res, err := r.Resolve(ctx, rev)
		if err != nil {
			t.Fatalf("%s: %v", rev, err)
		}
		rec, err := r.Record(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Seq
	}
	rows := func(day string) (int, int64) {
		t.Helper()
		a, err := r.Attach(ctx, "main", repo.ShowOptions{Alias: "v"})
		if err != nil {
			t.Fatal(err)
		}
		res := duck.MustQuery(t, a.Attach+"\nSELECT count(*) AS n FROM v.sales WHERE day = DATE '"+day+"';")
		n := fmt.Sprint(res[len(res)-1].Rows[0][0])
		var c int
		fmt.Sscan(n, &c)
		return c, seqOf("main")
	}
	tagged := func(day string) int64 { return seqOf("nightly-" + day) }

	// Once: the day's rows, tagged.
	d1 := "2026-11-30"
	if code, out := job(filepath.Join(dir, "j1"), d1, csv(d1, 50)); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	n, seq := rows(d1)
	if n != 50 || tagged(d1) != seq {
		t.Fatalf("after the first run: %d rows of %s, main at seq %d, tag at %d", n, d1, seq, tagged(d1))
	}
	// Again: it stops at the tag, publishing nothing.
	if code, out := job(filepath.Join(dir, "j2"), d1, csv(d1, 50)); code != 0 || !strings.Contains(out, "published already") {
		t.Fatalf("rerun: exit %d\n%s", code, out)
	}
	if n2, seq2 := rows(d1); n2 != 50 || seq2 != seq {
		t.Fatalf("the rerun published again: %d rows, main at seq %d (was %d)", n2, seq2, seq)
	}
	// Killed between its push (main moved) and its tag; another night
	// publishes before the rerun: the rerun finds the rows on main,
	// commits nothing and tags the version they went in with, not the
	// head.
	d2 := "2026-12-01"
	if code, out := job(filepath.Join(dir, "j3"), d2, csv(d2, 30), "FDL_TEST_KILL_AT=push:state"); code == 0 {
		t.Fatalf("the killed run ended with exit 0\n%s", out)
	}
	n, seq = rows(d2)
	if n != 30 {
		t.Fatalf("the killed run's push did not land: %d rows", n)
	}
	if _, err := r.Resolve(ctx, "nightly-"+d2); !errors.Is(err, refs.ErrUnknownRev) {
		t.Fatalf("the killed run tagged: %v", err)
	}
	d0 := "2026-11-29"
	if code, out := job(filepath.Join(dir, "j3b"), d0, csv(d0, 5)); code != 0 {
		t.Fatalf("the night between: exit %d\n%s", code, out)
	}
	_, head := rows(d0)
	if code, out := job(filepath.Join(dir, "j4"), d2, csv(d2, 30)); code != 0 || !strings.Contains(out, "Nothing to commit") {
		t.Fatalf("run after the kill: exit %d\n%s", code, out)
	}
	if n2, seq2 := rows(d2); n2 != 30 || seq2 != head || tagged(d2) != seq {
		t.Fatalf("after the run that followed the kill: %d rows, main at seq %d (was %d), tag at %d, want %d (the version with its rows)", n2, seq2, head, tagged(d2), seq)
	}
	seq = head
	// A day without new rows: nothing committed, the head tagged.
	d3 := "2026-12-02"
	if code, out := job(filepath.Join(dir, "j5"), d3, csv(d3, 0)); code != 0 {
		t.Fatalf("empty day: exit %d\n%s", code, out)
	}
	if _, seq3 := rows(d2); seq3 != seq || tagged(d3) != seq {
		t.Fatalf("an empty day published a version (main at seq %d, was %d) or tagged elsewhere (%d)", seq3, seq, tagged(d3))
	}
	// Twice at once: the rows are published once, both end with exit 0.
	d4 := "2026-12-03"
	data := csv(d4, 40)
	var wg sync.WaitGroup
	codes, outs := make([]int, 2), make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], outs[i] = job(filepath.Join(dir, fmt.Sprint("race", i)), d4, data)
		}()
	}
	wg.Wait()
	for i := range 2 {
		if codes[i] != 0 {
			t.Fatalf("concurrent run %d: exit %d\n%s", i, codes[i], outs[i])
		}
	}
	if n, seq4 := rows(d4); n != 40 || seq4 != seq+1 || tagged(d4) != seq4 {
		t.Fatalf("two runs at once: %d rows of %s (want 40), main at seq %d (want %d), tag at %d", n, d4, seq4, seq+1, tagged(d4))
	}
	// Refused credentials end the script with fdl's own exit 5.
	if code, out := job(filepath.Join(dir, "badkey"), "2026-12-04", data, "AWS_SECRET_ACCESS_KEY=wrong-secret"); code != 5 {
		t.Fatalf("a run with a wrong secret key: exit %d, want 5\n%s", code, out)
	}
	// A repository's first night (fdl init, nothing else): the table is
	// made from the file's columns, and the rows published and tagged.
	t.Run("first night", func(t *testing.T) {
		url2 := cloudtest.S3(t)
		r2, err := repo.Init(ctx, url2, repo.InitOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r2.Close()
		if code, out := job(filepath.Join(dir, "first"), d1, csv(d1, 7), "FDL_REPO="+url2); code != 0 {
			t.Fatalf("first night on an empty repository: exit %d\n%s", code, out)
		}
		a, err := r2.Attach(ctx, "nightly-"+d1, repo.ShowOptions{Alias: "v"})
		if err != nil {
			t.Fatal(err)
		}
		res := duck.MustQuery(t, a.Attach+"\nSELECT count(*) AS n FROM v.sales WHERE day = DATE '"+d1+"';")
		if n := fmt.Sprint(res[len(res)-1].Rows[0][0]); n != "7" {
			t.Fatalf("the first night published %s rows, want 7", n)
		}
	})
}
