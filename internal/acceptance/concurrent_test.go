package acceptance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// TestConcurrentWriters: three pipeline processes write one SQLite working
// catalog at once through DuckDB 1.5.5's ducklake extension, attached with
// the line fdl checkout printed (WAL journal, busy timeout), while fdl
// status, commit and push run over and over. Every version made on the way
// reads back through the line fdl show prints with a consistent state (each
// writer's rows are a prefix of what it wrote: a commit never sees half a
// transaction) and dataset.json's row counts; the last one holds every row
// of every writer once.
//
// It is one piece: one race of writers through one working directory, then
// the checks of what it left, which need every writer's observations.
func TestConcurrentWriters(t *testing.T) {
	d := realDuck(t)
	bin := fdlBinary(t)
	dir := t.TempDir()
	const writers, rows = 3, 30
	fdl := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "fdl"), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "FDL_AUTHOR=tester", "NO_COLOR=1")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if err != nil {
			err = fmt.Errorf("fdl %s: %v: %s", strings.Join(args, " "), err, errb.String())
		}
		return out.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := fdl(args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	must("init", "repo")
	line := attachFrom(t, must("checkout", "repo", "w"))
	if !strings.Contains(line, "META_JOURNAL_MODE 'WAL'") || !strings.Contains(line, "META_BUSY_TIMEOUT") {
		t.Fatalf("the SQLite working catalog's line lacks WAL or the busy timeout: %s", line)
	}
	d.MustQuery(t, line+"\nCREATE TABLE lake.t (w INTEGER, i INTEGER, payload VARCHAR);")
	attachFile := filepath.Join(dir, "attach.sql")
	if err := os.WriteFile(attachFile, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}

	writer, err := filepath.Abs("testdata/writer.py")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(d.Python, writer, attachFile, fmt.Sprint(w), fmt.Sprint(rows))
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs <- fmt.Errorf("writer %d: %v: %s", w, err, out)
			} else if len(out) > 0 {
				t.Logf("%s", out)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	commits := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(300 * time.Millisecond):
		}
		if _, err := fdl("-C", "w", "status"); err != nil {
			t.Fatalf("status while writers write: %v", err)
		}
		_, err := fdl("-C", "w", "commit", "-m", fmt.Sprintf("commit %d", commits+1))
		switch {
		case err == nil:
			commits++
			must("-C", "w", "push")
		case strings.Contains(err.Error(), "no snapshot after version"):
		default:
			t.Fatalf("commit while writers write: %v", err)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// What the writers left after the last commit in the loop.
	if _, err := fdl("-C", "w", "commit", "-m", "last"); err == nil {
		commits++
		must("-C", "w", "push")
	}
	if commits < 2 {
		t.Fatalf("only %d commit(s) while %d writers wrote %d snapshots each: the test did not overlap them", commits, writers, rows)
	}

	var log []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(must("log", "--repo", "repo", "--json")), &log); err != nil {
		t.Fatal(err)
	}
	for n, v := range log {
		checkConcurrentVersion(t, d, must, v.ID, writers, rows, n == 0)
	}
	t.Logf("%d versions committed and pushed while %d writers made %d snapshots each", len(log), writers, rows+1)
}

// checkConcurrentVersion reads version id through the line fdl show prints
// and checks that every writer's rows in t and t_W are a prefix of what it
// wrote (all of it when last), and that dataset.json counts what DuckDB
// counts.
func checkConcurrentVersion(t *testing.T, d *realduck.DuckDB, must func(...string) string, id string, writers, rows int, last bool) {
	t.Helper()
	line := attachFrom(t, must("show", id, "--repo", "repo"))
	var sj showJSON
	if err := json.Unmarshal([]byte(must("show", id, "--repo", "repo", "--json")), &sj); err != nil {
		t.Fatal(err)
	}
	alias := aliasRE.FindStringSubmatch(line)[1]
	tables := map[string]int64{}
	var names []string
	for _, s := range sj.Dataset.Schemas {
		for _, tb := range s.Tables {
			tables[tb.Name] = tb.RowCount
			names = append(names, tb.Name)
		}
	}
	// One process: the writers' rows in t, the extension's table list, and
	// each table dataset.json names (t_W hold i = 0..k-1).
	var q strings.Builder
	q.WriteString(line + "\n")
	fmt.Fprintf(&q, "SELECT w, count(*), count(DISTINCT i), coalesce(max(i), -1) FROM %s.t GROUP BY w ORDER BY w;\n", alias)
	fmt.Fprintf(&q, "SELECT string_agg(table_name, ' ' ORDER BY table_name) FROM duckdb_tables() WHERE database_name = '%s';\n", alias)
	for _, n := range names {
		col := "i"
		fmt.Fprintf(&q, "SELECT '%s', count(*), coalesce(max(%s), -1) FROM %s.%s;\n", n, col, alias, n)
	}
	res := d.MustQuery(t, q.String())
	seen := map[float64]bool{}
	var total int64
	for _, r := range res[0].Rows {
		w, n, distinct, max := r[0].(float64), r[1].(float64), r[2].(float64), r[3].(float64)
		seen[w] = true
		total += int64(n)
		if n != distinct || n != max+1 {
			t.Errorf("version %s: writer %v's rows in t are not a prefix of what it wrote: %v rows, %v distinct, max %v", id, w, n, distinct, max)
		}
		if last && int(n) != rows {
			t.Errorf("last version %s: writer %v has %v rows in t, want %d", id, w, n, rows)
		}
	}
	if last && len(seen) != writers {
		t.Errorf("last version %s: rows of %d writers in t, want %d", id, len(seen), writers)
	}
	sortedNames := append([]string(nil), names...)
	sort.Strings(sortedNames)
	if got := fmt.Sprint(res[1].Rows[0][0]); got != strings.Join(sortedNames, " ") {
		t.Errorf("version %s: DuckDB lists tables [%s], dataset.json [%s]", id, got, strings.Join(sortedNames, " "))
	}
	mismatches, counted := 0, 0
	for _, r := range res[2:] {
		name, n, max := r.Rows[0][0].(string), r.Rows[0][1].(float64), r.Rows[0][2].(float64)
		counted++
		if int64(n) != tables[name] {
			mismatches++
			t.Errorf("version %s: dataset.json says %s has %d rows, DuckDB counts %v", id, name, tables[name], n)
		}
		if name == "t" {
			if int64(n) != total {
				t.Errorf("version %s: t counts %v rows but its writers' rows sum to %d", id, n, total)
			}
		} else if n != max+1 {
			t.Errorf("version %s: %s is not a prefix: %v rows, max i %v", id, name, n, max)
		}
	}
	tally.Lock()
	tally.versions++
	tally.tables += counted
	tally.mismatches += mismatches
	tally.Unlock()
}

// attachFrom returns the one ATTACH line of fdl's output.
func attachFrom(t *testing.T, out string) string {
	t.Helper()
	var found []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "ATTACH OR REPLACE '") {
			found = append(found, strings.TrimSpace(l))
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one ATTACH line, got %d in:\n%s", len(found), out)
	}
	return found[0]
}
