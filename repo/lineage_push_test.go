package repo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// TestPushRefusesBrokenLineage: a local version whose record does not
// follow its first parent — created before it, an id that sorts before
// its id, a seq that skips, snapshots that do not start after its last —
// is refused by push before anything is uploaded, by the same rule
// (version.CheckChild) and with the same code verify reports for such a
// version already in the store; and commit never makes one, whatever this
// machine's clock says.
//
// The cases share one history (History.Keep), restored before each.
func TestPushRefusesBrokenLineage(t *testing.T) {
	ctx := context.Background()
	kept := history.BuildReal(t, 2, history.ChurnSQL).Keep(t)
	for _, c := range []struct {
		code string
		edit func(parent, rec *version.Record)
	}{
		{"created-order", func(p, r *version.Record) { r.CreatedAt = p.CreatedAt.Add(-time.Hour) }},
		{"id-order", func(p, r *version.Record) { r.ID = idBefore(t, p.ID) }},
		{"seq-mismatch", func(p, r *version.Record) { r.Seq = p.Seq + 2 }},
		{"snapshot-order", func(p, r *version.Record) { r.DuckLake.Adds.First = p.DuckLake.Snapshot }},
	} {
		t.Run(c.code, func(t *testing.T) {
			h := kept.Restore(t)
			writeUncommitted(t, h, 7)
			wd, err := workdir.Open(h.WD)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "edited", Author: "t"})
			if err != nil {
				t.Fatal(err)
			}
			rec = editLocalRecord(t, h.WD, rec, func(r *version.Record) { c.edit(h.Recs[1], r) })
			digest := testutil.TreeDigest(t, h.URL)
			wd, err = workdir.Open(h.WD)
			if err != nil {
				t.Fatal(err)
			}
			_, err = wd.Push(ctx, workdir.PushOptions{})
			var le *repo.LineageError
			if !errors.As(err, &le) || !errors.Is(err, version.ErrBadRecord) || !strings.Contains(err.Error(), c.code) {
				t.Fatalf("push of a version with %s: %v", c.code, err)
			}
			if testutil.TreeDigest(t, h.URL) != digest {
				t.Fatal("a refused push changed the repository")
			}
			// The same version in the store (put there by hand): verify
			// reports the same code.
			verifyReportsStored(t, h, rec, c.code)
		})
	}

	t.Run("clock behind", func(t *testing.T) {
		h := kept.Restore(t)
		parent := h.Recs[len(h.Recs)-1]
		writeUncommitted(t, h, 8)
		wd, err := workdir.Open(h.WD)
		if err != nil {
			t.Fatal(err)
		}
		behind := func() time.Time { return parent.CreatedAt.Add(-24 * time.Hour) }
		rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "clock behind", Author: "t", Now: behind})
		if err != nil {
			t.Fatal(err)
		}
		if len(version.CheckChild(parent, rec)) != 0 {
			t.Fatalf("commit with a clock behind the parent's made %+v", version.CheckChild(parent, rec))
		}
		if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// verifyReportsStored copies the local version rec of h's working
// directory into the store by hand, as no push would, and checks that
// verify reports it with code.
func verifyReportsStored(t *testing.T, h *history.History, rec *version.Record, code string) {
	t.Helper()
	ctx := context.Background()
	r := h.Repo
	dir := filepath.Join(h.WD, workdir.StateDir, workdir.LocalVersions, string(rec.ID))
	for _, f := range []string{version.CatalogFile, version.DatasetFile, version.RecordFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(h.URL, "versions", string(rec.ID)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.URL, "versions", string(rec.ID), f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{SkipCatalogs: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range rep.Problems {
		found = found || (string(p.Code) == code && p.Object == string(rec.ID))
	}
	if !found {
		t.Fatalf("verify of a stored version with %s: %+v", code, rep.Problems)
	}
}

// idBefore returns a fresh UUIDv7 id whose timestamp is a second before
// id's: it sorts before it.
func idBefore(t *testing.T, id version.ID) version.ID {
	t.Helper()
	for {
		n, err := version.NewID()
		if err != nil {
			t.Fatal(err)
		}
		// Keep the random tail of n, with a timestamp a second before id's.
		ms := id.Time().Add(-time.Second).UnixMilli()
		b := []byte(string(n))
		hex := "0123456789abcdef"
		digits := []int{0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12}
		for i := 11; i >= 0; i-- {
			b[digits[i]] = hex[ms&0xf]
			ms >>= 4
		}
		if out := version.ID(b); out < id {
			return out
		}
	}
}

// editLocalRecord rewrites the record of a version committed in the
// working directory wd (and, when the id changes, its folder, state.json's
// base and base.json) after applying edit, and returns the new record.
func editLocalRecord(t *testing.T, wd string, rec *version.Record, edit func(*version.Record)) *version.Record {
	t.Helper()
	old := rec.ID
	nr := *rec
	edit(&nr)
	b, err := nr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wd, workdir.StateDir, workdir.LocalVersions)
	if err := os.WriteFile(filepath.Join(dir, string(old), version.RecordFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, workdir.StateDir, workdir.BaseFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if nr.ID != old {
		if err := os.Rename(filepath.Join(dir, string(old)), filepath.Join(dir, string(nr.ID))); err != nil {
			t.Fatal(err)
		}
	}
	// state.json holds the base and its record together: both follow the
	// edit.
	var st map[string]any
	sb, err := os.ReadFile(filepath.Join(wd, workdir.StateDir, workdir.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sb, &st); err != nil {
		t.Fatal(err)
	}
	st["base"] = string(nr.ID)
	st["base_record"] = json.RawMessage(b)
	sb, _ = json.Marshal(st)
	if err := os.WriteFile(filepath.Join(wd, workdir.StateDir, workdir.StateFile), sb, 0o644); err != nil {
		t.Fatal(err)
	}
	return &nr
}

// writeUncommitted inserts one row (k) into h's working catalog without
// committing it: a new data file that no catalog in the store lists.
func writeUncommitted(t *testing.T, h *history.History, k int) {
	t.Helper()
	h.Write(t, fmt.Sprintf("INSERT INTO events VALUES (%d)", k))
}
