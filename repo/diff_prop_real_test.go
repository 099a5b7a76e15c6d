package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// TestDiffMatchesExceptAll drives random histories through the real
// extension (DuckDB 1.5.5) and fdl — inserts, value-changing updates,
// deletes, compaction (merge_adjacent_files, rewrite_data_files,
// flush_inlined_data), restore, revert, and a second working directory's
// push followed by a pull — and compares fdl diff between EVERY ordered
// pair of the versions with the two states the real DuckDB reads from the
// versions' own catalogs: rows inserted are those of `SELECT rowid, *` of
// the second EXCEPT ALL the first, rows deleted the other way round; and
// fdl says the counts are exact (every file is local). One seed runs in
// the suite, six random steps long; FDL_DIFF_SEEDS=N runs N (seeds 1..N),
// FDL_DIFF_SEED=S one, FDL_DIFF_STEPS=K makes histories K steps long.
func TestDiffMatchesExceptAll(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	seeds := []uint64{1}
	if n, err := strconv.Atoi(os.Getenv("FDL_DIFF_SEEDS")); err == nil && n > 0 {
		seeds = seeds[:0]
		for i := 1; i <= n; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	if s, err := strconv.ParseUint(os.Getenv("FDL_DIFF_SEED"), 10, 64); err == nil {
		seeds = []uint64{s}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			diffProperty(t, d, seed)
		})
	}
}

// diffHistory is one random history being written: a repository, the
// working directory that writes most versions, and a second one that
// pushes versions the first then pulls.
type diffHistory struct {
	t      *testing.T
	ctx    context.Context
	rng    *rand.Rand
	s      *realduck.Session
	r      *repo.Repo
	dir    string
	w1, w2 *workdir.Workdir
	at1    string // the ATTACH lines of the working catalogs
	at2    string
	inline bool
	next   int // the next id an insert uses
	ops    []string
}

func diffProperty(t *testing.T, d *realduck.DuckDB, seed uint64) {
	h := &diffHistory{t: t, ctx: context.Background(), rng: rand.New(rand.NewPCG(seed, 25)), s: d.Start(t), dir: t.TempDir()}
	h.inline = h.rng.IntN(2) == 0
	var err error
	if h.r, err = repo.Init(h.ctx, filepath.Join(h.dir, "repo"), repo.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	defer h.r.Close()
	h.w1, h.at1 = h.checkout("w1")
	defer h.w1.Close()
	h.write(h.w1, h.at1, "CREATE TABLE t(id INTEGER, v VARCHAR); INSERT INTO t SELECT i, 'a' || i FROM range(40) r(i)")
	h.next = 40
	h.publish(h.w1, "create")
	steps := 6
	if n, err := strconv.Atoi(os.Getenv("FDL_DIFF_STEPS")); err == nil && n > 0 {
		steps = n
	}
	for range steps {
		h.step()
	}
	if h.w2 != nil {
		defer h.w2.Close()
	}
	h.check(d)
}

func (h *diffHistory) checkout(name string) (*workdir.Workdir, string) {
	res, err := workdir.Checkout(h.ctx, h.r, workdir.CheckoutOptions{Dir: filepath.Join(h.dir, name), CatalogFormat: "sqlite"})
	if err != nil {
		h.t.Fatal(err)
	}
	w, err := workdir.Open(res.Dir)
	if err != nil {
		h.t.Fatal(err)
	}
	return w, res.Attach
}

func (h *diffHistory) write(w *workdir.Workdir, attach, sql string) {
	h.t.Helper()
	h.s.MustQuery(h.t, realduck.OnLake(attach, sql, h.inline))
}

// publish commits and pushes w's work; a compaction that changed nothing
// is no version.
func (h *diffHistory) publish(w *workdir.Workdir, msg string) {
	h.t.Helper()
	if _, err := w.Commit(h.ctx, workdir.CommitOptions{Message: msg, Author: "t"}); errors.Is(err, workdir.ErrNothingToCommit) {
		return
	} else if err != nil {
		h.t.Fatalf("commit %s: %v", msg, err)
	}
	if _, err := w.Push(h.ctx, workdir.PushOptions{}); err != nil {
		h.t.Fatalf("push %s: %v", msg, err)
	}
	h.ops = append(h.ops, msg)
}

// change is a random insert, value-changing update or delete.
func (h *diffHistory) change() (string, string) {
	m := 2 + h.rng.IntN(5)
	k := h.rng.IntN(m)
	switch h.rng.IntN(3) {
	case 0:
		n := 1 + h.rng.IntN(30)
		h.next += n
		return fmt.Sprintf("insert %d", n), fmt.Sprintf("INSERT INTO t SELECT i, 'i' || i FROM range(%d, %d) r(i)", h.next-n, h.next)
	case 1:
		return fmt.Sprintf("update id%%%d=%d", m, k), fmt.Sprintf("UPDATE t SET v = v || 'u' WHERE id %% %d = %d", m, k)
	}
	return fmt.Sprintf("delete id%%%d=%d", m, k), fmt.Sprintf("DELETE FROM t WHERE id %% %d = %d AND id > %d", m, k, h.rng.IntN(h.next))
}

func (h *diffHistory) step() {
	t := h.t
	switch op := h.rng.IntN(10); {
	case op < 4:
		msg, sql := h.change()
		h.write(h.w1, h.at1, sql)
		h.publish(h.w1, msg)
	case op == 4:
		sql := []string{"CALL ducklake_merge_adjacent_files('lake')",
			"CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0)",
			"CALL ducklake_flush_inlined_data('lake')"}[h.rng.IntN(3)]
		h.write(h.w1, h.at1, sql)
		h.publish(h.w1, sql)
	case op == 5 || op == 6:
		v := h.pick()
		if _, err := h.w1.Restore(h.ctx, workdir.RestoreOptions{Source: string(v.ID), Author: "t"}); err != nil {
			t.Logf("restore seq %d: %v", v.Seq, err)
			return
		}
		h.publish(h.w1, fmt.Sprintf("restore seq %d", v.Seq))
	case op == 7:
		v := h.pick()
		if v.Seq == 1 {
			return // reverting the first version would drop t
		}
		if _, err := h.w1.Revert(h.ctx, workdir.RevertOptions{Rev: string(v.ID), Author: "t"}); err != nil {
			t.Logf("revert seq %d: %v", v.Seq, err)
			return
		}
		if _, err := h.w1.Push(h.ctx, workdir.PushOptions{}); err != nil {
			t.Fatalf("push revert: %v", err)
		}
		h.ops = append(h.ops, fmt.Sprintf("revert seq %d", v.Seq))
	default:
		if h.w2 == nil {
			h.w2, h.at2 = h.checkout("w2")
		} else if _, err := h.w2.Pull(h.ctx, workdir.PullOptions{}); err != nil {
			t.Fatalf("pull w2: %v", err)
		}
		msg, sql := h.change()
		h.write(h.w2, h.at2, sql)
		h.publish(h.w2, "w2 "+msg)
		if _, err := h.w1.Pull(h.ctx, workdir.PullOptions{}); err != nil {
			t.Fatalf("pull w1: %v", err)
		}
		h.ops = append(h.ops, "pull")
	}
}

// pick returns a random version of main.
func (h *diffHistory) pick() repo.LogEntry {
	hist, err := h.r.History(h.ctx, nil, "main", 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return hist.Entries[h.rng.IntN(len(hist.Entries))]
}

// check compares fdl diff between every ordered pair of versions with the
// real DuckDB's EXCEPT ALL of the two states.
func (h *diffHistory) check(d *realduck.DuckDB) {
	t := h.t
	hist, err := h.r.History(h.ctx, nil, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	vs := hist.Entries
	t.Logf("%d versions: %s", len(vs), strings.Join(h.ops, "; "))
	var q strings.Builder
	for i, e := range vs {
		fmt.Fprintf(&q, "ATTACH %s AS v%d (READ_ONLY);\n", sqlquote.String("ducklake:"+h.r.CatalogLocation(e.ID)), i)
	}
	type pair struct{ a, b int }
	var pairs []pair
	for i := range vs {
		for j := range vs {
			if i < j {
				pairs = append(pairs, pair{i, j})
				fmt.Fprintf(&q, "SELECT (SELECT count(*) FROM (SELECT rowid, * FROM v%[1]d.t EXCEPT ALL SELECT rowid, * FROM v%[2]d.t)), (SELECT count(*) FROM (SELECT rowid, * FROM v%[2]d.t EXCEPT ALL SELECT rowid, * FROM v%[1]d.t));\n", i, j)
			}
		}
	}
	start := time.Now()
	res := h.s.MustQuery(t, "USE memory;\n"+q.String())
	t.Logf("real DuckDB: %d pairs in %v", len(pairs), time.Since(start))
	start = time.Now()
	for k, p := range pairs {
		onlyA, onlyB := realNum(res[k].Rows[0][0]), realNum(res[k].Rows[0][1])
		for _, dir := range [][2]int{{p.a, p.b}, {p.b, p.a}} {
			from, to := vs[dir[0]], vs[dir[1]]
			// onlyA: rows of vs[p.a] that vs[p.b] lacks.
			ins, del := onlyA, onlyB
			if dir[0] == p.a {
				ins, del = onlyB, onlyA
			}
			got, exact := h.fdlRows(from.ID, to.ID)
			if got != [2]int64{ins, del} || !exact {
				t.Errorf("diff seq %d -> seq %d: fdl +%d -%d (exact %v), DuckDB EXCEPT ALL +%d -%d", from.Seq, to.Seq, got[0], got[1], exact, ins, del)
			}
		}
	}
	t.Logf("fdl: %d diffs in %v", 2*len(pairs), time.Since(start))
}

// fdlRows is fdl diff's rows inserted and deleted in table t.
func (h *diffHistory) fdlRows(from, to version.ID) ([2]int64, bool) {
	res, err := h.r.Diff(h.ctx, repo.DiffOptions{From: string(from), To: string(to)})
	if err != nil {
		h.t.Fatalf("diff %s %s: %v", from, to, err)
	}
	for _, tc := range res.Tables {
		if tc.Name == "t" {
			if tc.Rows.Inserted == nil {
				return [2]int64{-1, -1}, false
			}
			return [2]int64{*tc.Rows.Inserted, *tc.Rows.Deleted}, tc.Rows.Exact
		}
	}
	return [2]int64{}, res.Totals.Exact
}

func realNum(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return -1
}
