package gc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// putIntent writes a deletion intent as another gc would, listing keys,
// from host and pid, with its file's modification time age ago.
func putIntent(t *testing.T, h *history.History, keys []string, host string, pid int, age time.Duration) string {
	t.Helper()
	id, err := version.NewID()
	if err != nil {
		t.Fatal(err)
	}
	in := &retention.Intent{Format: retention.Format, ID: id, StartedAt: time.Now().UTC(), By: "other", Host: host, PID: pid, Keys: keys}
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	key := retention.IntentKey(id)
	if err := h.Repo.Store().Create(context.Background(), key, strings.NewReader(string(b))); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(h.URL, filepath.FromSlash(key))
	old := time.Now().Add(-age)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestGCIntentsBetweenGCs: a gc whose deletion intent holds (another host,
// within its lease) stops the next gc before it deletes anything, and the
// floor is put back; one whose lease ran out, or written on this host by a
// process that is gone (a gc killed here), is cleared and gc goes on. The
// cases share one history (History.Keep), restored before each.
func TestGCIntentsBetweenGCs(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	kept := history.BuildReal(t, 4, history.ChurnSQL).Keep(t)
	for _, c := range []struct {
		name    string
		host    string
		pid     int
		age     time.Duration
		blocked bool
	}{
		{"live elsewhere", "another-host", 1, time.Minute, true},
		{"lease ran out", "another-host", 1, retention.IntentLease + time.Minute, false},
		{"killed here", host, deadPID(t), time.Minute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := kept.Restore(t)
			r := h.Repo
			if _, err := r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 1; return nil }); err != nil {
				t.Fatal(err)
			}
			other := putIntent(t, h, []string{"data/x.parquet"}, c.host, c.pid, c.age)
			plan, err := gc.MakePlan(ctx, r, gc.Options{})
			if err != nil || len(plan.Retire) == 0 {
				t.Fatalf("plan: %v, retires %d", err, len(plan.Retire))
			}
			digest := testutil.TreeDigest(t, filepath.Join(h.URL, "versions"))
			_, err = gc.Apply(ctx, r, plan)
			if c.blocked {
				var se *gc.StopError
				if !errors.As(err, &se) || se.Why != gc.StopAnotherGC || !strings.Contains(err.Error(), "the floor was put back") {
					t.Fatalf("gc beside a live intent: %v", err)
				}
				if testutil.TreeDigest(t, filepath.Join(h.URL, "versions")) != digest {
					t.Fatal("a stopped gc deleted something")
				}
				if ids, _ := r.RetiredIDs(ctx); len(ids) != 0 {
					t.Fatalf("floor not put back: %v", ids)
				}
				return
			}
			if err != nil {
				t.Fatalf("gc beside a stale intent: %v", err)
			}
			if _, err := r.Store().Stat(ctx, other); err == nil {
				t.Fatalf("the stale intent %s is still there", other)
			}
			if entries, _ := os.ReadDir(filepath.Join(h.URL, "retention", "deleting")); len(entries) != 0 {
				t.Fatalf("intents left after gc: %v", entries)
			}
		})
	}
}

// TestPushHonoursIntent: a push whose version reads a file a holding gc
// intent lists is refused after its uploads (GCDeletingError), removes
// them, and moves nothing; an intent whose lease ran out does not stop it.
func TestPushHonoursIntent(t *testing.T) {
	ctx := context.Background()
	for _, expired := range []bool{false, true} {
		h := history.BuildReal(t, 2, history.ChurnSQL)
		r := h.Repo
		writeUncommitted(t, h, 77)
		wd, err := workdir.Open(h.WD)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "new file", Author: "t"}); err != nil {
			t.Fatal(err)
		}
		plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(8 * 24 * time.Hour)})
		if err != nil || len(plan.DataFiles) != 1 {
			t.Fatalf("plan: %v %+v", err, plan.DataFiles)
		}
		age := time.Minute
		if expired {
			age = retention.IntentLease + time.Minute
		}
		putIntent(t, h, []string{plan.DataFiles[0].Key}, "another-host", 1, age)
		digest := testutil.TreeDigest(t, filepath.Join(h.URL, "versions"))
		_, err = wd.Push(ctx, workdir.PushOptions{})
		if expired {
			if err != nil {
				t.Fatalf("push beside an expired intent: %v", err)
			}
			continue
		}
		var ge *repo.GCDeletingError
		if !errors.As(err, &ge) || !errors.Is(err, repo.ErrGCDeleting) || ge.Keys[0] != plan.DataFiles[0].Key {
			t.Fatalf("push beside a gc intent listing its file: %v", err)
		}
		if testutil.TreeDigest(t, filepath.Join(h.URL, "versions")) != digest {
			t.Fatal("a refused push left its uploads")
		}
		if head := mustHead(t, r); head != h.Recs[1].ID {
			t.Fatalf("main moved to %s", head)
		}
	}
}

// deadPID returns the id of a process that ran on this host and is gone.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}
