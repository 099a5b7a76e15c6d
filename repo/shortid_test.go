package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	thist "github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// printed collects the id forms the commands print, with the version each
// names.
type printed map[string]version.ID

func (p printed) add(t *testing.T, where, form string, id version.ID) {
	t.Helper()
	if form == "" || id == "" {
		return
	}
	if other, ok := p[form]; ok && other != id {
		t.Fatalf("%s printed %s for %s, and it was printed for %s before", where, form, id, other)
	}
	p[form] = id
}

// collect prints what log (also from the working directory, with its local
// versions), show, branch -l, reflog and the push result print.
func collect(t *testing.T, r *repo.Repo, wd string, push *repo.PushResult, p printed) {
	t.Helper()
	ctx := context.Background()
	h, err := r.History(ctx, nil, "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range h.Entries {
		p.add(t, "log", e.Short, e.ID)
		p.add(t, "log", string(e.ID), e.ID)
	}
	w, err := workdir.Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := w.Repo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l, err := w.Local()
	if err != nil {
		t.Fatal(err)
	}
	if h, err = wr.History(ctx, l, "", 0); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.Entries {
		p.add(t, "log in the working directory", e.Short, e.ID)
	}
	v, err := r.Show(ctx, "main", repo.ShowOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.add(t, "show", v.Short, v.Record.ID)
	for _, parent := range v.Record.Parents {
		p.add(t, "show (parents)", v.Abbrev.Short(parent), parent)
	}
	list, err := r.ListRefs(ctx, refs.HeadsPrefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Refs {
		p.add(t, "branch -l", e.Short, version.ID(e.ID))
	}
	rl, err := r.RefLogOf(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rl.Entries {
		p.add(t, "reflog", e.OldShort, e.Old)
		p.add(t, "reflog", e.NewShort, e.New)
	}
	if push != nil {
		p.add(t, "push", push.Abbrev.Short(push.Old), push.Old)
		p.add(t, "push", push.Abbrev.Short(push.New), push.New)
	}
	st, err := w.Status(ctx, workdir.StatusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.add(t, "status", string(st.Base), st.Base)
}

// commitPush writes one more snapshot in the working directory wd of h's
// repository (an inlined row of main.small, with h's real DuckDB session,
// through attach: the line checkout printed for wd), commits it and, with
// push, pushes it.
func commitPush(t *testing.T, h *thist.History, wd, attach string, i int, push bool) (*version.Record, *repo.PushResult) {
	t.Helper()
	ctx := context.Background()
	w, err := workdir.Open(wd)
	if err != nil {
		t.Fatal(err)
	}
	h.Duck.MustQuery(t, realduck.OnLake(attach, fmt.Sprintf("INSERT INTO small VALUES (%d)", i), true))
	rec, err := w.Commit(ctx, workdir.CommitOptions{Message: fmt.Sprint("more ", i), Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !push {
		return rec, nil
	}
	res, err := w.Push(ctx, workdir.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rec, &res
}

// TestShortIDsStayValid: every id form log, show, branch -l, reflog, push
// and status print still names its version after more versions were made
// in the same minute (docs/spec.md §3). Where two versions share a
// millisecond, the short ids printed from then on are longer and resolve.
func TestShortIDsStayValid(t *testing.T) {
	ctx := context.Background()
	h := thist.BuildReal(t, 2, func(i int) string {
		q := "SET ducklake_default_data_inlining_row_limit = 10; INSERT INTO small VALUES (" + fmt.Sprint(i) + ")"
		if i == 1 {
			q = "CREATE TABLE small(k BIGINT); " + q
		}
		return q
	})
	r := h.Repo
	p := printed{}
	_, push := commitPush(t, h, h.WD, h.Attach, 3, true)
	local, _ := commitPush(t, h, h.WD, h.Attach, 4, false) // committed, not pushed
	collect(t, r, h.WD, push, p)
	if _, ok := p[strings.SplitN(string(local.ID), "-", 3)[0]+"-"+strings.SplitN(string(local.ID), "-", 3)[1]]; !ok {
		t.Fatalf("log in the working directory did not print the local version %s as 12 hex digits: %v", local.ID, p)
	}
	for form := range p {
		if n := len(strings.ReplaceAll(form, "-", "")); n < refs.MinShort {
			t.Fatalf("printed %s: %d hex digits, want at least %d", form, n, refs.MinShort)
		}
	}
	// More versions within the same minute, the local one pushed.
	for i := 5; i <= 8; i++ {
		commitPush(t, h, h.WD, h.Attach, i, true)
	}
	resolveAll(t, h.URL, p)

	// Another version in the millisecond of version 2 (a writer whose
	// clock was behind): short ids printed from now on tell the two apart.
	v2 := h.Recs[1].ID
	twin := sameMillisecond(t, v2)
	rec := *h.Recs[1]
	rec.ID = twin
	b, _ := rec.Marshal()
	if err := r.Store().Create(ctx, repo.VersionKey(twin, version.RecordFile), bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	r2, err := repo.Open(ctx, h.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	after := printed{}
	collect(t, r2, h.WD, nil, after)
	var long string
	for form, id := range after {
		if id == v2 && form != string(v2) {
			long = form
		}
	}
	if n := len(strings.ReplaceAll(long, "-", "")); n <= refs.MinShort {
		t.Fatalf("after a version in the same millisecond, version 2 is printed as %q (%d hex digits)", long, n)
	}
	resolveAll(t, h.URL, after)
	// The 12-digit form printed before is now the documented exception:
	// resolving it names both candidates.
	short12 := string(v2)[:13]
	if _, err := r2.Resolve(ctx, short12); !errors.Is(err, refs.ErrAmbiguousRev) || !strings.Contains(err.Error(), string(twin)) {
		t.Fatalf("Resolve(%s) with two versions in its millisecond: %v", short12, err)
	}
}

// resolveAll resolves every printed form in a new Repo.
func resolveAll(t *testing.T, url string, p printed) {
	t.Helper()
	r, err := repo.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for form, id := range p {
		got, err := r.Resolve(context.Background(), form)
		if err != nil || got.ID != id {
			t.Errorf("%s was printed for %s; now it resolves to %v, %v", form, id, got.ID, err)
		}
	}
}

// sameMillisecond returns a new UUIDv7 with id's timestamp.
func sameMillisecond(t *testing.T, id version.ID) version.ID {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	old := uuid.MustParse(string(id))
	copy(u[:6], old[:6])
	twin, err := version.ParseID(u.String())
	if err != nil {
		t.Fatal(err)
	}
	return twin
}
