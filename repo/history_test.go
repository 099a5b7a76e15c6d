package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/storetest"
	thist "github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// reads counts the reads among a Faulty store's calls: gets, stats and
// listings.
func reads(f *storetest.Faulty) (gets, lists, stats int) {
	for _, c := range f.Calls() {
		switch {
		case strings.HasPrefix(c, storetest.OpGet+" "):
			gets++
		case strings.HasPrefix(c, storetest.OpList+" "):
			lists++
		case strings.HasPrefix(c, storetest.OpStat+" "):
			stats++
		}
	}
	return gets, lists, stats
}

// longHistory makes a folder repository with n versions on main (records
// only, hourly ids, with or without history packs) and returns its URL
// and the records, oldest first.
func longHistory(t *testing.T, n int, packs bool) (string, []*version.Record) {
	t.Helper()
	url := memURL(t)
	r, err := repo.Init(context.Background(), url, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return url, thist.Records(t, r, n, packs, time.Hour)
}

// TestHistoryReadsWhatItShows: on a history of 2,000 versions, log -n 20,
// show of main~100 and main@1900, and id prefixes read a handful of
// objects, not the history; results are the same with and without history
// packs (without them, log -n 20 reads its 20 records, not 2,000).
//
// It is one piece: one history of 2,000 versions, built once (the costly
// part), and the reads counted on it with and without packs.
func TestHistoryReadsWhatItShows(t *testing.T) {
	ctx := context.Background()
	const n = 2000
	withURL, with := longHistory(t, n, true)
	withoutURL, without := longHistory(t, n, false)
	type result struct{ log20, logAll, back, at, prefix string }
	run := func(url string, recs []*version.Record, limits map[string]int) result {
		var res result
		shorts := map[string]version.ID{}
		measure := func(what string, fn func(r *repo.Repo) string) string {
			f := &storetest.Faulty{}
			r := openFaulty(t, url, f)
			defer r.Close()
			out := fn(r)
			gets, lists, stats := reads(f)
			t.Logf("%s: %d gets, %d listings, %d stats", what, gets, lists, stats)
			if total := gets + lists + stats; total > limits[what] {
				t.Errorf("%s %s: %d reads (%d gets, %d listings, %d stats), want <= %d", url, what, total, gets, lists, stats, limits[what])
			}
			return out
		}
		logOf := func(max int) func(r *repo.Repo) string {
			return func(r *repo.Repo) string {
				h, err := r.History(ctx, nil, "main", max)
				if err != nil {
					t.Fatal(err)
				}
				var b strings.Builder
				for _, e := range h.Entries {
					fmt.Fprintf(&b, "%d %s %s %v|", e.Seq, e.ID, e.Message, e.Retired)
					shorts[e.Short] = e.ID
				}
				if max > 0 && len(h.Entries) != max || max == 0 && len(h.Entries) != n {
					t.Fatalf("log -n %d: %d entries", max, len(h.Entries))
				}
				return b.String()
			}
		}
		res.log20 = measure("log -n 20", logOf(20))
		res.logAll = measure("log", func(r *repo.Repo) string {
			h, err := r.History(ctx, nil, "main", 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Entries) != n || h.Entries[n-1].ID != recs[0].ID {
				t.Fatalf("full log: %d entries", len(h.Entries))
			}
			return fmt.Sprint(len(h.Entries), h.Entries[n/2].ID)
		})
		show := func(rev string, want *version.Record) func(r *repo.Repo) string {
			return func(r *repo.Repo) string {
				v, err := r.Show(ctx, rev, repo.ShowOptions{})
				if err != nil {
					t.Fatalf("show %s: %v", rev, err)
				}
				if v.Record.ID != want.ID {
					t.Fatalf("show %s: seq %d, want %d", rev, v.Record.Seq, want.Seq)
				}
				return string(v.Record.ID) + v.Short
			}
		}
		res.back = measure("show main~100", show("main~100", recs[n-101]))
		res.at = measure("show main@1900", show("main@1900", recs[1899]))
		res.prefix = measure("show PREFIX", show(recs[1234].ID.Hex()[:14], recs[1234]))
		r, err := repo.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for s, id := range shorts {
			if got, err := r.Resolve(ctx, s); err != nil || got.ID != id {
				t.Fatalf("short id %s resolves to %v, %v; want %s", s, got.ID, err, id)
			}
		}
		return res
	}
	// With packs: log -n 20 is the ref, 2 packs, a listing per window of
	// time (at most 16), the floor; the whole log about n/1024 + 10 packs.
	a := run(withURL, with, map[string]int{"log -n 20": 25, "log": 40, "show main~100": 25, "show main@1900": 30, "show PREFIX": 15})
	b := run(withoutURL, without, map[string]int{"log -n 20": 50, "log": 2*n + 40, "show main~100": 150, "show main@1900": 150, "show PREFIX": 15})
	// Same shapes (ids differ between the two repositories).
	for _, pair := range [][2]string{{a.log20, b.log20}, {a.logAll, b.logAll}} {
		if strings.Count(pair[0], "|") != strings.Count(pair[1], "|") {
			t.Errorf("log with and without packs differ in length")
		}
	}
	// On one repository, with and without its packs: identical results.
	r1, err := repo.Open(ctx, withURL)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	h1, err := r1.History(ctx, nil, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.Store().List(ctx, history.PacksPrefix, func(o store.ObjectInfo) error {
		return r1.Store().Delete(ctx, o.Key)
	}); err != nil {
		t.Fatal(err)
	}
	r2, err := repo.Open(ctx, withURL)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	h2, err := r2.History(ctx, nil, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h1.Entries) != len(h2.Entries) {
		t.Fatalf("log with packs %d entries, without %d", len(h1.Entries), len(h2.Entries))
	}
	for i := range h1.Entries {
		x, y := h1.Entries[i], h2.Entries[i]
		if x.ID != y.ID || x.Short != y.Short || x.Message != y.Message || x.Retired != y.Retired || !x.CreatedAt.Equal(y.CreatedAt) {
			t.Fatalf("entry %d differs with and without packs: %+v / %+v", i, x, y)
		}
	}
	for _, rev := range []string{"main~1", "main~999", "main@3", "main@1024", "@1999", "main@1024~1000", string(with[7].ID)} {
		x, err1 := r1.Resolve(ctx, rev)
		y, err2 := r2.Resolve(ctx, rev)
		if err1 != nil || err2 != nil || x.ID != y.ID {
			t.Errorf("Resolve(%s) with packs %v %v, without %v %v", rev, x.ID, err1, y.ID, err2)
		}
	}
	if _, err := r1.Resolve(ctx, "main~2000"); !errors.Is(err, refs.ErrUnknownRev) {
		t.Errorf("main~2000 on a history of 2000: %v", err)
	}
}

// TestFastForwardReadsTheDistance: the fast-forward check of a push reads
// as far as the branch's version is from the new one, not the history: a
// refused push onto a branch that moved on reads a few objects.
func TestFastForwardReadsTheDistance(t *testing.T) {
	ctx := context.Background()
	const n = 2000
	url, recs := longHistory(t, n, true)
	r, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		name     string
		branchAt int  // seq the branch holds
		parentAt int  // seq the new version builds on
		ok       bool // fast-forward
		maxReads int
		side     bool // the branch holds a version at branchAt on another line
	}{
		{"refused, a sibling of the head", n, n - 1, false, 6, false},
		{"refused, far behind", n, 10, false, 6, false},
		{"accepted, one ahead", n, n, true, 6, false},
		{"accepted, 1500 ahead", 500, n, true, 20, false},
		{"refused, 1500 ahead on another line", 500, n, false, 20, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			anc := recs[c.branchAt-1].ID
			if c.side {
				// A version at seq 500 that is not on the line.
				side := thist.Records(t, mustInit(t), 500, false, time.Hour)
				anc = side[499].ID
				copyRecord(t, side[499], url)
			}
			parent := recs[c.parentAt-1]
			id, _ := version.NewIDAfter(parent.ID)
			next := *parent
			next.ID, next.Seq, next.Parents = id, parent.Seq+1, []version.ID{parent.ID}
			f := &storetest.Faulty{}
			r := openFaulty(t, url, f)
			defer r.Close()
			ok, err := refs.IsAncestor(ctx, localRecords{r, &next}, anc, id)
			if err != nil || ok != c.ok {
				t.Fatalf("IsAncestor: %v %v, want %v", ok, err, c.ok)
			}
			gets, lists, stats := reads(f)
			if total := gets + lists + stats; total > c.maxReads {
				t.Errorf("%d reads (%v), want <= %d", total, f.Calls(), c.maxReads)
			}
		})
	}
}

// localRecords is a repository plus one local version (a push's).
type localRecords struct {
	r   *repo.Repo
	rec *version.Record
}

func (l localRecords) Record(ctx context.Context, id version.ID) (*version.Record, error) {
	if id == l.rec.ID {
		return l.rec, nil
	}
	return l.r.Record(ctx, id)
}

func (l localRecords) Walk(ctx context.Context, id version.ID, fn func(*version.Record) (bool, error)) error {
	if id == l.rec.ID {
		if more, err := fn(l.rec); err != nil || !more {
			return err
		}
		id = l.rec.Parent()
	}
	if id == "" {
		return nil
	}
	return l.r.Walk(ctx, id, fn)
}

// memURL returns the URL of a new, empty memory store.
func memURL(t *testing.T) string {
	return fmt.Sprintf("mem://%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

func mustInit(t *testing.T) *repo.Repo {
	t.Helper()
	r, err := repo.Init(context.Background(), memURL(t), repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// copyRecord puts rec's version.json into the folder repository at url.
func copyRecord(t *testing.T, rec *version.Record, url string) {
	t.Helper()
	b, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Create(context.Background(), repo.VersionKey(rec.ID, version.RecordFile), bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// TestPacksVerifiedAndRewritten: verify checks every pack against the
// records and notes the missing ones; a damaged pack is reported, and log
// warns and reads the records instead; gc --yes writes the missing packs
// with the same bytes a push wrote.
//
// It is one piece: one history of six versions whose packs are damaged,
// then read, verified and repaired; each step reads what the step before it
// left.
func TestPacksVerifiedAndRewritten(t *testing.T) {
	ctx := context.Background()
	h := thist.BuildReal(t, 6, thist.ChurnSQL)
	r := h.Repo
	key := func(seq int) string { return history.PackKey(h.Recs[seq-1].ID) }
	st := r.Store()
	written := map[string][]byte{}
	for seq := 1; seq <= 6; seq++ {
		b, _, err := store.ReadAll(ctx, st, key(seq))
		if err != nil {
			t.Fatalf("push wrote no pack for seq %d: %v", seq, err)
		}
		written[key(seq)] = b
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{SkipCatalogs: true})
	if err != nil || !rep.OK() || rep.Packs != 6 || len(rep.Notes) != 0 {
		t.Fatalf("verify of a repository whose pushes wrote packs: %v %+v", err, rep)
	}
	// Damage the pack of seq 6 (the head: span 2), change a record inside
	// the pack of seq 4 (span 4), delete the pack of seq 2.
	replace := func(k string, b []byte) {
		if err := st.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		if b != nil {
			if err := st.Create(ctx, k, bytes.NewReader(b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	replace(key(6), []byte("garbage"))
	replace(key(4), bytes.Replace(written[key(4)], []byte(`"version 3"`), []byte(`"version 3!"`), 1))
	replace(key(2), nil)
	r2, err := repo.Open(ctx, h.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	log, err := r2.History(ctx, nil, "main", 0)
	if err != nil || len(log.Entries) != 6 {
		t.Fatalf("log over damaged packs: %v", err)
	}
	if len(log.Warnings) != 1 || !errors.Is(log.Warnings[0], history.ErrBadPack) {
		t.Fatalf("log warnings: %v, want the damaged pack", log.Warnings)
	}
	rep, err = r2.Verify(ctx, repo.VerifyOptions{SkipCatalogs: true})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[repo.Code][]string{}
	for _, p := range append(rep.Problems, rep.Notes...) {
		codes[p.Code] = append(codes[p.Code], p.Object)
	}
	if len(codes[repo.CodePackInvalid]) != 2 || len(rep.Problems) != 2 {
		t.Fatalf("verify problems %v, want the two damaged packs", rep.Problems)
	}
	// A damaged pack is there: it is not also noted as missing.
	for _, id := range codes[repo.CodePackMissing] {
		if id == string(h.Recs[5].ID) || id == string(h.Recs[3].ID) {
			t.Fatalf("verify notes the damaged pack of %s as missing too: %v", id, rep.Notes)
		}
	}
	// A pack that differs from a record does not say which changed: the
	// advice names both ways out, not only deleting the pack (which may
	// be the good copy of an edited record).
	nDiffers := 0
	for _, p := range rep.Problems {
		differs := strings.Contains(p.Message, "differs from versions/")
		if differs != strings.Contains(p.Message, "if the record is the changed one, write the pack's copy back over it") {
			t.Fatalf("verify's advice for %s: %s", p.Object, p.Message)
		}
		if differs {
			nDiffers++
		}
	}
	if nDiffers != 1 {
		t.Fatalf("verify problems %v, want one pack that differs from a record", rep.Problems)
	}
	// gc --yes writes the missing packs on main's history (seq 6 and 4
	// once deleted; 2 is not one a walk from main jumps to) with the
	// bytes the pushes wrote.
	replace(key(6), nil)
	replace(key(4), nil)
	r3, err := repo.Open(ctx, h.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r3.Close()
	run, err := gc.Run(ctx, r3, gc.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Plan.Packs) != 2 || run.Result.PacksWritten != 2 {
		t.Fatalf("gc planned packs %v, wrote %d; want seq 4 and 6", run.Plan.Packs, run.Result.PacksWritten)
	}
	for _, seq := range []int{4, 6} {
		b, _, err := store.ReadAll(ctx, st, key(seq))
		if err != nil || !bytes.Equal(b, written[key(seq)]) {
			t.Fatalf("gc's pack of seq %d differs from the push's: %v", seq, err)
		}
	}
	rep, err = r3.Verify(ctx, repo.VerifyOptions{SkipCatalogs: true})
	if err != nil || !rep.OK() || len(rep.Notes) != 0 {
		t.Fatalf("verify after gc: %v %+v", err, rep)
	}
}

// TestPacksUnderRacingPushes: six working directories push onto one base
// at once, twice: one wins each round, and every uploaded version, winner
// or not, has its history pack, equal to the records (verify), built on
// the packs below it.
func TestPacksUnderRacingPushes(t *testing.T) {
	ctx := context.Background()
	h := thist.BuildReal(t, 3, thist.ChurnSQL)
	for round := 0; round < 2; round++ {
		const n = 6
		dirs := make([]string, n)
		for i := range dirs {
			dirs[i] = filepath.Join(t.TempDir(), "w")
			res, err := workdir.Checkout(ctx, h.Repo, workdir.CheckoutOptions{Dir: dirs[i]})
			if err != nil {
				t.Fatal(err)
			}
			commitPush(t, h, dirs[i], res.Attach, 100*round+i, false)
		}
		errs := make(chan error, n)
		for _, dir := range dirs {
			go func() {
				r, err := repo.Open(ctx, h.URL)
				if err != nil {
					errs <- err
					return
				}
				defer r.Close()
				w, err := workdir.Open(dir)
				if err != nil {
					errs <- err
					return
				}
				_, err = w.Push(ctx, workdir.PushOptions{})
				errs <- err
			}()
		}
		won := 0
		for range dirs {
			err := <-errs
			switch {
			case err == nil:
				won++
			case !errors.Is(err, refs.ErrRefused):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d pushes won", round, won)
		}
	}
	r, err := repo.Open(ctx, h.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Verify(ctx, repo.VerifyOptions{SkipCatalogs: true})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep.Problems)
	}
	if rep.Packs != rep.Versions {
		t.Fatalf("%d packs for %d versions", rep.Packs, rep.Versions)
	}
	log, err := r.History(ctx, nil, "main", 0)
	if err != nil || len(log.Entries) != 5 || len(log.Warnings) != 0 {
		t.Fatalf("log: %v, %d entries, warnings %v", err, len(log.Entries), log.Warnings)
	}
}
