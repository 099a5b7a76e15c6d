package gc_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/sqlquote"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// dataKeys lists the keys under data/.
func dataKeys(t testing.TB, r *repo.Repo) []string {
	t.Helper()
	var out []string
	if err := r.Store().List(context.Background(), repo.DataPrefix, func(o store.ObjectInfo) error {
		out = append(out, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// keyOf maps a resolved path inside the repository's data folder to its
// key, the plain way (the writer spells every path the same way).
func keyOf(t testing.TB, r *repo.Repo, p string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(p, r.DataLocation())
	if !ok {
		t.Fatalf("%s is not under %s", p, r.DataLocation())
	}
	return repo.DataPrefix + rest
}

// TestGCKeepLastFive builds n versions with the spec-following writer
// (compaction that rewrites files and compaction that merges them, deletes,
// two dropped tables, inlined rows), sets keep-last 5, and checks that gc
// deletes exactly what the rule says: the catalogs of seq 1..n-5 (records
// stay, markers appear), and every data file except those a kept catalog
// (seq n-4..n) can read at or after seq n-4's snapshot — computed here
// independently from the catalogs. A plan changes nothing, byte for byte.
// Afterwards every kept version's files exist and read, verify --data is
// clean, log marks the retired versions, checkout refuses them.
//
// n is 21 in make test: history.ChurnSQL has done every kind of change by
// then (the second dropped table at 20, the third rewrite at 21) and the
// kept five hold a merge (18), a rewrite, a drop and inlined rows. make
// soak (FDL_SOAK=1) builds 32, as the test did first (a build costs about
// 1 s of CPU a version).
func TestGCKeepLastFive(t *testing.T) {
	ctx := context.Background()
	n := 21
	if testutil.Soak(t, "the 32-version history is") {
		n = 32
	}
	h := history.BuildReal(t, n, history.ChurnSQL)
	r := h.Repo
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 5; return nil }); err != nil {
		t.Fatal(err)
	}
	kept, retired := h.Recs[n-5:], h.Recs[:n-5]
	floor := kept[0].DuckLake.Snapshot
	want, before := keepLastRule(t, h, kept[0].Seq, floor)
	if plan0, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(8 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	} else if plan0.Data.Young != 0 {
		t.Fatalf("past the grace period %d unlisted files are still kept", plan0.Data.Young)
	}
	var wantDeleted []string
	for _, k := range before {
		if !want[k] {
			wantDeleted = append(wantDeleted, k)
		}
	}

	// The plan: exactly that, and no byte changes.
	digest := testutil.TreeDigest(t, h.URL)
	plan, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.TreeDigest(t, h.URL); got != digest {
		t.Fatal("planning changed the repository")
	}
	checkKeepLastPlan(t, plan, wantDeleted, retired, kept[0].ID, floor)

	// Apply.
	res, err := gc.Apply(ctx, r, plan)
	if err != nil {
		t.Fatal(err)
	}
	if !res.FloorMoved || res.Marked != len(retired) || res.DataFiles != len(wantDeleted) || res.Skipped != 0 {
		t.Fatalf("result %+v", res)
	}
	after := dataKeys(t, r)
	var wantAfter []string
	for k := range want {
		wantAfter = append(wantAfter, k)
	}
	sort.Strings(wantAfter)
	if !slices.Equal(after, wantAfter) {
		t.Fatalf("after gc data/ holds %v, want %v", after, wantAfter)
	}
	for _, rec := range retired {
		for file, present := range map[string]bool{version.RecordFile: true, retention.MarkerFile: true, version.CatalogFile: false, version.DatasetFile: false} {
			_, err := r.Store().Stat(ctx, repo.VersionKey(rec.ID, file))
			if (err == nil) != present {
				t.Fatalf("seq %d: %s present %v, want %v", rec.Seq, file, err == nil, present)
			}
		}
	}
	checkKeptReadable(t, r, kept)
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil {
		t.Fatal(err)
	}
	// verify --data counts the files the kept versions read, all in the
	// store: not the ended rows' files gc deleted (the store may hold
	// more: files no catalog lists, younger than the grace period).
	if !rep.OK() || rep.Retired != len(retired) || rep.DataFiles == 0 || rep.DataFiles > len(after) {
		t.Fatalf("verify --data: %+v; want 1 to %d data files checked", rep, len(after))
	}
	// A second plan finds nothing to do.
	again, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil || !again.Empty() {
		t.Fatalf("second plan: %+v %v", again, err)
	}
	checkRetiredRefused(t, h, retired, kept)
}

// keepLastRule computes, from h's catalogs directly, which data files the
// keep-last rule keeps when versions from seq first on stay (floor: the
// first one's snapshot): a kept catalog keeps the files it can read at or
// after the floor; a file no catalog lists at all stays while younger
// than the grace period (here: files a merging compaction wrote and
// merged away within one version). It returns those keys and the keys
// data/ holds before gc, and fails the test when the history leaves no
// unlisted file or a kept file is missing.
func keepLastRule(t *testing.T, h *history.History, first, floor int64) (want map[string]bool, before []string) {
	t.Helper()
	r := h.Repo
	want = map[string]bool{}
	listed := map[string]bool{}
	for _, rec := range h.Recs {
		for _, f := range history.CatalogFiles(t, r, rec) {
			k := keyOf(t, r, f.ResolvedPath)
			listed[k] = true
			if rec.Seq >= first && (f.EndSnapshot == nil || *f.EndSnapshot > max(f.BeginSnapshot, floor)) {
				want[k] = true
			}
		}
	}
	before = dataKeys(t, r)
	unlisted := 0
	for _, k := range before {
		if !listed[k] {
			want[k] = true
			unlisted++
		}
	}
	if unlisted == 0 {
		t.Fatal("the history should leave files no catalog lists (merged within the version that wrote them)")
	}
	for k := range want {
		if !slices.Contains(before, k) {
			t.Fatalf("kept file %s is not in the store before gc", k)
		}
	}
	return want, before
}

// checkKeepLastPlan checks TestGCKeepLastFive's plan: it deletes exactly
// wantDeleted (with files ended before the floor and files only retired
// catalogs list among them), retires exactly retired, abandons nothing,
// and puts main's floor at floorID (snapshot floor).
func checkKeepLastPlan(t *testing.T, plan *gc.Plan, wantDeleted []string, retired []*version.Record, floorID version.ID, floor int64) {
	t.Helper()
	var planned []string
	reasons := map[string]int{}
	for _, d := range plan.DataFiles {
		planned = append(planned, d.Key)
		reasons[d.Reason]++
	}
	if !slices.Equal(planned, wantDeleted) {
		t.Fatalf("plan deletes %d data files, the rule says %d:\nplan %v\nrule %v", len(planned), len(wantDeleted), planned, wantDeleted)
	}
	if reasons[retention.ReasonEnded] == 0 || reasons[retention.ReasonRetired] == 0 {
		t.Fatalf("the history should exercise files ended before the floor and files only retired catalogs list: %v", reasons)
	}
	var planRetired []version.ID
	for _, rt := range plan.Retire {
		planRetired = append(planRetired, rt.ID)
	}
	var wantRetired []version.ID
	for _, rec := range retired {
		wantRetired = append(wantRetired, rec.ID)
	}
	if !slices.Equal(planRetired, wantRetired) || !plan.FloorMoves || len(plan.Abandoned) != 0 {
		t.Fatalf("plan retires %v (floor moves %v, abandoned %d), want seq 1..%d", planRetired, plan.FloorMoves, len(plan.Abandoned), len(retired))
	}
	if len(plan.Branches) != 1 || plan.Branches[0].Floor != floorID || plan.Branches[0].Snapshot != floor {
		t.Fatalf("branch floor %+v, want seq %d at snapshot %d", plan.Branches, len(retired)+1, floor)
	}
}

// checkKeptReadable checks that every kept version's rows resolve to
// existing, readable files and that its dataset.json reads.
func checkKeptReadable(t *testing.T, r *repo.Repo, kept []*version.Record) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, rec := range kept {
		for _, f := range history.CatalogFiles(t, r, rec) {
			s := rec.DuckLake.Snapshot
			if f.BeginSnapshot > s || (f.EndSnapshot != nil && *f.EndSnapshot <= s) {
				continue
			}
			var n int64
			if err := db.QueryRow("SELECT count(*) FROM read_parquet(" + sqlquote.String(f.ResolvedPath) + ")").Scan(&n); err != nil {
				t.Fatalf("seq %d: file %d (%s): %v", rec.Seq, f.ID, f.ResolvedPath, err)
			}
		}
		ds, err := r.Dataset(ctx, rec.ID)
		if err != nil || ds.Totals.Rows == 0 {
			t.Fatalf("seq %d: dataset %v", rec.Seq, err)
		}
	}
}

// checkRetiredRefused checks that readers treat TestGCKeepLastFive's
// retired versions as such (retirement, the retired ids; checkout and a
// new tag refused, no directory left) and still check out the floor
// version.
func checkRetiredRefused(t *testing.T, h *history.History, retired, kept []*version.Record) {
	t.Helper()
	ctx := context.Background()
	r := h.Repo
	ret, err := r.Retirement(ctx, retired[3].ID)
	if err != nil || ret == nil || !ret.Marked {
		t.Fatalf("retirement of seq 4: %+v %v", ret, err)
	}
	ids, err := r.RetiredIDs(ctx)
	if err != nil || len(ids) != len(retired) || ids[kept[0].ID] {
		t.Fatalf("retired ids: %d %v", len(ids), err)
	}
	_, err = workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(h.Dir, "old"), Rev: string(retired[3].ID)})
	var re *repo.RetiredError
	if !errors.As(err, &re) || re.Seq != 4 || !strings.Contains(err.Error(), "left retention on") {
		t.Fatalf("checkout of a retired version: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.Dir, "old")); !os.IsNotExist(err) {
		t.Fatalf("a refused checkout left its directory")
	}
	if _, err := r.CreateTag(ctx, nil, "old", string(retired[3].ID)); !errors.Is(err, repo.ErrRetired) {
		t.Fatalf("tag on a retired version: %v", err)
	}
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(h.Dir, "new"), Rev: string(kept[0].ID)}); err != nil {
		t.Fatalf("checkout of the floor version: %v", err)
	}
}

// TestGCSpellings: the same data file spelled differently in two catalogs
// (plain path vs file:// URL, a trailing slash, relative vs absolute) is
// one file: a kept catalog spelling it one way protects it from a retired
// catalog spelling it another (docs/spec.md §16).
func TestGCSpellings(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	// The next version reads the same files under other spellings, as a
	// DuckLake compaction would list them: at a new snapshot the old rows
	// end and new rows name the same files as absolute file:// URLs with a
	// trailing slash and doubled slashes. What the earlier versions
	// published stays as it was (docs/spec.md §24); files with deletes
	// keep their rows.
	h.Write(t, "INSERT INTO events VALUES (99)")
	cat := filepath.Join(h.WD, workdir.CatalogName)
	odd := `'file://' || replace(` + sqlquote.String(r.DataLocation()) + ` || 'main/' || t.path || o.path, '/main/', '//main/') || '/'`
	history.ExecCatalog(t, cat,
		`CREATE TEMP TABLE s AS SELECT max(snapshot_id) AS id FROM ducklake_snapshot`,
		`CREATE TEMP TABLE o AS SELECT f.* FROM ducklake_data_file f WHERE f.end_snapshot IS NULL AND f.path_is_relative
			AND f.begin_snapshot < (SELECT id FROM s) AND f.data_file_id NOT IN (SELECT data_file_id FROM ducklake_delete_file)`,
		`UPDATE ducklake_data_file SET end_snapshot = (SELECT id FROM s) WHERE data_file_id IN (SELECT data_file_id FROM o)`,
		`INSERT INTO ducklake_data_file SELECT o.* REPLACE (o.data_file_id + 1000000 AS data_file_id, (SELECT id FROM s) AS begin_snapshot, NULL AS end_snapshot, `+odd+` AS path, false AS path_is_relative)
			FROM o JOIN ducklake_table t ON t.table_id = o.table_id AND t.end_snapshot IS NULL`,
		`INSERT INTO ducklake_file_column_stats SELECT c.* REPLACE (c.data_file_id + 1000000 AS data_file_id) FROM ducklake_file_column_stats c WHERE c.data_file_id IN (SELECT data_file_id FROM o)`,
		`UPDATE ducklake_snapshot SET next_file_id = greatest(next_file_id, (SELECT max(data_file_id) + 1 FROM ducklake_data_file)) WHERE snapshot_id = (SELECT id FROM s)`)
	wd, _ := workdir.Open(h.WD)
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "odd spellings", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// The newest catalog spells files as file:// URLs with slashes.
	log, _ := r.Log(ctx, mustHead(t, r), 0)
	oddRows := 0
	for _, f := range history.CatalogFiles(t, r, log[0]) {
		if strings.HasPrefix(f.ResolvedPath, "file://") && strings.HasSuffix(f.ResolvedPath, "/") {
			oddRows++
		}
	}
	if oddRows == 0 {
		t.Fatal("the catalog has no oddly spelled path")
	}
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Retire) != 2 {
		t.Fatalf("retire %d versions, want 2", len(plan.Retire))
	}
	for _, rt := range plan.Retire {
		if rt.FreesCount != 0 {
			t.Errorf("seq %d frees %d files: its plain paths were not matched with the kept catalog's file:// URLs", rt.Seq, rt.FreesCount)
		}
	}
	for _, d := range plan.DataFiles {
		if d.Reason == retention.ReasonRetired {
			t.Errorf("%s would be deleted as listed only by retired versions", d.Key)
		}
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil || !rep.OK() {
		t.Fatalf("verify --data after gc: %+v %v", rep, err)
	}
}

func mustHead(t testing.TB, r *repo.Repo) version.ID {
	t.Helper()
	ref, err := r.Ref(context.Background(), "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	return ref.ID
}

// TestGCReachability: versions reachable only from a tag or a request ref
// keep their catalog; a branch moved back keeps the undone versions in the
// ref log, and gc keeps them while keep-within says so; an in-flight push
// (uploaded, ref not moved) and a working catalog's uncommitted data files
// survive within the grace period, and go after it.
func TestGCReachability(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 8, history.ChurnSQL)
	r := h.Repo
	v := h.Recs
	reachOnlyByRefs(t, h)
	inflight := uploadInFlight(t, h)
	// A working catalog's uncommitted data file.
	h.Write(t, "INSERT INTO orders VALUES (777777, 1.0)")
	uncommitted := unlistedKeys(t, r, append(slices.Clone(v), mustRecord(t, r, inflight)))
	if len(uncommitted) != 1 {
		t.Fatalf("uncommitted files %v, want 1", uncommitted)
	}

	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error {
		p.KeepLast, p.KeepWithin = 2, retention.Duration(time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	// Now: every version is younger than an hour: all kept, nothing goes.
	checkReach(t, r, now, idsOf(v), inflight, uncommitted[0], false)
	// Two days on: the tag's, the request's, main's last two; the undone
	// versions retire (keep-within no longer holds them); the in-flight
	// push and the uncommitted file are still within the grace period.
	checkReach(t, r, now.Add(48*time.Hour), []version.ID{v[1].ID, v[2].ID, v[4].ID, v[5].ID}, inflight, uncommitted[0], false)
	// Eight days on: past the 7-day grace period, they go.
	checkReach(t, r, now.Add(8*24*time.Hour), []version.ID{v[1].ID, v[2].ID, v[4].ID, v[5].ID}, inflight, uncommitted[0], true)

	// Apply two days on: the undone versions keep their records and stay in
	// the ref log; the tag's and the request's versions keep their catalogs.
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: now.Add(48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	for _, id := range []version.ID{v[1].ID, v[2].ID, inflight} {
		if _, err := r.Store().Stat(ctx, repo.VersionKey(id, version.CatalogFile)); err != nil {
			t.Errorf("catalog of %s: %v", id, err)
		}
	}
	for _, id := range []version.ID{v[6].ID, v[7].ID} {
		if _, err := r.Record(ctx, id); err != nil {
			t.Errorf("record of undone %s: %v", id, err)
		}
		if ret, _ := r.Retirement(ctx, id); ret == nil {
			t.Errorf("undone %s is not retired", id)
		}
	}
	if _, err := r.Store().Stat(ctx, uncommitted[0]); err != nil {
		t.Errorf("uncommitted data file: %v", err)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestGCUnrecordsAbandonedFirst: a complete version no ref reaches, past
// the grace period, loses its history pack and record before gc deletes
// any data file, so a gc stopped at its first data deletion leaves it an
// incomplete folder, never a record whose files may be gone (a mirror or
// a push run again trusts a record it finds); the next gc finishes the
// folder.
func TestGCUnrecordsAbandonedFirst(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	inflight := uploadInFlight(t, h)
	later := time.Now().Add(8 * 24 * time.Hour)
	stopped := errors.New("stopped at the first data deletion")
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r, err := repo.Open(ctx, h.URL, repo.Options{Step: func(step string) {
		if step == "gc:data" {
			stop(stopped)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(plan.Abandoned, func(a retention.Abandoned) bool { return a.ID == inflight && a.Complete }) || len(plan.DataFiles) == 0 {
		t.Fatalf("plan abandons %+v and deletes %d data file(s); want the in-flight version and its files", plan.Abandoned, len(plan.DataFiles))
	}
	if _, err := gc.Apply(sctx, r, plan); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply stopped at the data step: %v", err)
	}
	if _, err := r.Store().Stat(ctx, repo.VersionKey(inflight, version.RecordFile)); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("record of the abandoned version when the data step began: %v; want it gone", err)
	}
	if _, err := r.Store().Stat(ctx, repo.VersionKey(inflight, version.CatalogFile)); err != nil {
		t.Fatalf("catalog of the abandoned version: %v; want it there until step 4", err)
	}
	plan, err = gc.MakePlan(ctx, h.Repo, gc.Options{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Apply(ctx, h.Repo, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Store().Stat(ctx, repo.VersionKey(inflight, version.CatalogFile)); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("catalog of the abandoned version after a second gc: %v; want it gone", err)
	}
}

// reachOnlyByRefs makes TestGCReachability's refs on h's 8 versions: a tag
// on seq 2, a request ref on seq 3, main moved back to seq 6 (seq 7 and 8
// undone, reached only by the ref log; a move back without Backwards is
// refused first).
func reachOnlyByRefs(t *testing.T, h *history.History) {
	t.Helper()
	ctx := context.Background()
	r, v := h.Repo, h.Recs
	if _, err := r.CreateTag(ctx, nil, "t2", string(v[1].ID)); err != nil {
		t.Fatal(err)
	}
	req, _ := refs.Request("r3")
	// No command makes requests yet: write the ref as one would.
	if _, err := r.Store().Swap(ctx, string(req), store.NoToken, []byte(string(v[2].ID)+"\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.MoveBranch(ctx, "main", "main~2", repo.MoveOptions{}); !errors.Is(err, refs.ErrRefused) {
		t.Fatalf("moving back without Backwards: %v", err)
	}
	mv, err := r.MoveBranch(ctx, "main", "main~2", repo.MoveOptions{Backwards: true, Why: "bad loads"})
	if err != nil || len(mv.Undone) != 2 || mv.Undone[0] != v[7].ID {
		t.Fatalf("move back: %+v %v", mv, err)
	}
	log, _, err := r.RefLog(ctx, "refs/heads/main")
	if err != nil || log[0].Action != refs.ActionMoveBack || log[0].Old != v[7].ID || log[0].New != v[5].ID || log[0].Why != "bad loads" {
		t.Fatalf("ref log: %+v %v", log, err)
	}
}

// uploadInFlight commits a version in h's working directory and uploads
// its three files by hand without moving a ref: an in-flight push. It
// returns the version's id.
func uploadInFlight(t *testing.T, h *history.History) version.ID {
	t.Helper()
	ctx := context.Background()
	wd, _ := workdir.Open(h.WD)
	h.Write(t, "INSERT INTO events VALUES (1000)")
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "in flight", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	pend, _ := wd.PendingVersions()
	for _, f := range []string{version.CatalogFile, version.DatasetFile, version.RecordFile} {
		b, err := os.ReadFile(filepath.Join(pend[0].Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Repo.Store().Create(ctx, repo.VersionKey(rec.ID, f), strings.NewReader(string(b))); err != nil {
			t.Fatal(err)
		}
	}
	return rec.ID
}

// mustRecord reads version id's record, failing the test if it cannot.
func mustRecord(t *testing.T, r *repo.Repo, id version.ID) *version.Record {
	t.Helper()
	rec, err := r.Record(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// unlistedKeys returns the keys under data/ that no catalog of recs lists.
func unlistedKeys(t *testing.T, r *repo.Repo, recs []*version.Record) []string {
	t.Helper()
	listed := map[string]bool{}
	for _, rec := range recs {
		for _, f := range history.CatalogFiles(t, r, rec) {
			listed[keyOf(t, r, f.ResolvedPath)] = true
		}
	}
	var out []string
	for _, k := range dataKeys(t, r) {
		if !listed[k] {
			out = append(out, k)
		}
	}
	return out
}

// checkReach checks a plan made at now: it keeps exactly wantKept, and
// the in-flight push inflight (abandoned, not young) and the uncommitted
// data file (deleted) go exactly when wantGone.
func checkReach(t *testing.T, r *repo.Repo, now time.Time, wantKept []version.ID, inflight version.ID, uncommitted string, wantGone bool) {
	t.Helper()
	plan, err := gc.MakePlan(context.Background(), r, gc.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var got []version.ID
	for _, k := range plan.Kept {
		got = append(got, k.ID)
	}
	if !slices.Equal(got, wantKept) {
		t.Fatalf("at %s kept %v, want %v", now, got, wantKept)
	}
	var dels []string
	for _, d := range plan.DataFiles {
		dels = append(dels, d.Key)
	}
	abandoned := slices.ContainsFunc(plan.Abandoned, func(a retention.Abandoned) bool { return a.ID == inflight })
	young := slices.Contains(plan.Young, inflight)
	if slices.Contains(dels, uncommitted) != wantGone || abandoned != wantGone || young == wantGone {
		t.Fatalf("at %s: uncommitted file deleted %v, in-flight push abandoned %v young %v; want gone %v", now, slices.Contains(dels, uncommitted), abandoned, young, wantGone)
	}
}

func idsOf(recs []*version.Record) []version.ID {
	var out []version.ID
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

// TestGCRefusesBadRefs: an empty, garbage or dangling branch ref makes gc
// refuse to plan, naming the ref.
func TestGCRefusesBadRefs(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	missing, _ := version.NewID()
	for name, content := range map[string]string{"empty": "", "garbage": "not an id\n", "dangling": string(missing) + "\n"} {
		key := "refs/heads/" + name
		if err := r.Store().Create(ctx, key, strings.NewReader(content)); err != nil {
			t.Fatal(err)
		}
		_, err := gc.MakePlan(ctx, r, gc.Options{})
		if !errors.Is(err, gc.ErrRefused) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s branch: %v", name, err)
		}
		r.Store().Delete(ctx, key)
	}
	if _, err := gc.MakePlan(ctx, r, gc.Options{}); err != nil {
		t.Fatalf("after removing the bad refs: %v", err)
	}
}

// TestExciseAheadOfFloor: deleting a version's catalog is refused until the
// floor takes it out of retention.
func TestExciseAheadOfFloor(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 3, history.ChurnSQL)
	r := h.Repo
	err := gc.Excise(ctx, r, h.Recs[0].ID, nil)
	if !errors.Is(err, gc.ErrAheadOfFloor) || !strings.Contains(err.Error(), string(h.Recs[0].ID)) {
		t.Fatalf("excise without a floor: %v", err)
	}
	if _, err := r.Store().Stat(ctx, repo.VersionKey(h.Recs[0].ID, version.CatalogFile)); err != nil {
		t.Fatalf("the refused excise deleted the catalog: %v", err)
	}
	// Once the floor retires seq 1 (keep-last 2), excising it works; seq 2
	// is still ahead of the floor.
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 2; return nil }); err != nil {
		t.Fatal(err)
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := *plan.NewFloor
	b, _ := f.Marshal()
	if _, err := r.Store().Swap(ctx, retention.FloorKey, store.NoToken, b); err != nil {
		t.Fatal(err)
	}
	if err := gc.Excise(ctx, r, h.Recs[1].ID, nil); !errors.Is(err, gc.ErrAheadOfFloor) {
		t.Fatalf("excise of a kept version: %v", err)
	}
	if err := gc.Excise(ctx, r, h.Recs[0].ID, []string{}); err != nil {
		t.Fatal(err)
	}
	m, err := r.Marker(ctx, h.Recs[0].ID)
	if err != nil || m == nil || m.Floor != f.Generation {
		t.Fatalf("marker %+v %v", m, err)
	}
	// A plan made before another floor move does not apply: the floor's
	// compare-and-swap fails and nothing is deleted.
	if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	stale, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := gc.MakePlan(ctx, r, gc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gc.Apply(ctx, r, fresh); err != nil {
		t.Fatal(err)
	}
	digest := testutil.TreeDigest(t, h.URL)
	if _, err := gc.Apply(ctx, r, stale); !errors.Is(err, repo.ErrRetentionConflict) {
		t.Fatalf("stale plan: %v", err)
	}
	if testutil.TreeDigest(t, h.URL) != digest {
		t.Fatal("a refused stale plan changed the repository")
	}
}

// TestVerifyFull: verify reports broken catalog invariants with stable
// codes, retired versions that kept their catalog, missing data files
// (--data) and ref log entries that do not parse.
func TestVerifyFull(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	// A catalog that breaks the invariants but matches its record: break
	// the working catalog's rows after its base (what the base published
	// is checked by commit and push: TestCommitRefusesRewrittenHistory),
	// then commit and push it.
	h.Write(t, "CREATE TABLE later(x INTEGER)")
	h.Write(t, "INSERT INTO later SELECT range FROM range(2000)")
	cat := filepath.Join(h.WD, workdir.CatalogName)
	history.ExecCatalog(t, cat,
		"INSERT INTO ducklake_column (column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, column_type, nulls_allowed) SELECT 1, max(snapshot_id), NULL, 424242, 1, 'ghost', 'int32', true FROM ducklake_snapshot",
		"UPDATE ducklake_data_file SET end_snapshot = begin_snapshot WHERE data_file_id = (SELECT max(data_file_id) FROM ducklake_data_file)",
		"UPDATE ducklake_snapshot SET next_file_id = 0 WHERE snapshot_id = (SELECT max(snapshot_id) FROM ducklake_snapshot)")
	wd, _ := workdir.Open(h.WD)
	broken, err := wd.Commit(ctx, workdir.CommitOptions{Message: "broken", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	// A data file the head can read, removed.
	var gone string
	for _, f := range history.CatalogFiles(t, r, h.Recs[1]) {
		if f.EndSnapshot == nil && !f.Delete {
			gone = keyOf(t, r, f.ResolvedPath)
			break
		}
	}
	if err := r.Store().Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	// A marker beside a catalog (a gc that stopped half way).
	mk := &retention.Marker{Format: 1, Version: h.Recs[0].ID, RetiredAt: time.Now().UTC(), Floor: 1, DataFiles: []string{}}
	b, _ := mk.Marshal()
	if err := r.Store().Create(ctx, repo.VersionKey(h.Recs[0].ID, retention.MarkerFile), strings.NewReader(string(b))); err != nil {
		t.Fatal(err)
	}
	// A ref log entry that does not parse.
	if err := r.Store().Create(ctx, refs.LogsPrefix+"refs/heads/main/x.json", strings.NewReader("{")); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[repo.Code]string{}
	for _, p := range rep.Problems {
		codes[p.Code] = p.Object
	}
	for code, obj := range map[repo.Code]string{
		"catalog-column-table": string(broken.ID), "catalog-end-before-begin": string(broken.ID), "catalog-counter": string(broken.ID),
		repo.CodeRetiredCatalog: string(h.Recs[0].ID), repo.CodeDataMissing: gone, repo.CodeReflogInvalid: refs.LogsPrefix + "refs/heads/main/x.json",
	} {
		if got, ok := codes[code]; !ok || got != obj {
			t.Errorf("problem %s on %q: got %q (present %v); all: %+v", code, obj, got, ok, rep.Problems)
		}
	}
	// gc refuses while a ref log entry does not parse.
	if _, err := gc.MakePlan(ctx, r, gc.Options{}); !errors.Is(err, gc.ErrRefused) || !strings.Contains(err.Error(), "x.json") {
		t.Fatalf("gc with a bad ref log entry: %v", err)
	}
}

// TestGCLeavesFilesItDoesNotOwn: a file under data/ that no catalog lists
// is deleted only when its name is of a kind DuckDB's ducklake writes
// (ducklake-<uuid>.parquet, its delete files); a README.txt put there by
// hand stays however old it is, and the plan names it.
func TestGCLeavesFilesItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	_, r, _ := history.Empty(t)
	owned := "data/main/t/ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet"
	for _, k := range []string{"data/README.txt", "data/main/t/notes.parquet", owned} {
		if err := r.Store().Create(ctx, k, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(30 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.DataFiles) != 1 || plan.DataFiles[0].Key != owned || plan.DataFiles[0].Reason != retention.ReasonUnlisted {
		t.Fatalf("deletions %+v, want only %s (unlisted)", plan.DataFiles, owned)
	}
	if plan.Data.Foreign != 2 || !slices.Equal(plan.Data.ForeignSample, []string{"data/README.txt", "data/main/t/notes.parquet"}) {
		t.Fatalf("foreign %d %v, want README.txt and notes.parquet", plan.Data.Foreign, plan.Data.ForeignSample)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"data/README.txt": true, "data/main/t/notes.parquet": true, owned: false} {
		if _, err := r.Store().Stat(ctx, k); (err == nil) != want {
			t.Errorf("%s after gc: %v, want present %v", k, err, want)
		}
	}
}
