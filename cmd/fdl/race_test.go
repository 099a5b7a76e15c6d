package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// The fault-and-race suite of gc against push (docs/spec.md §16, "gc and
// push"): a push paused at each of its steps while a whole gc runs, and a
// gc paused at each of its steps while a whole push runs, on a folder and
// on S3, with every grace gc accepts and with and without keep-last; and a
// push paused while gc plans, gc applying after the push finished.
// After each: the branch holds the old head (push refused, nothing of it
// reachable) or the new one (push done), and verify --data is clean — no
// file a kept catalog reads is missing. FDL_RACE_SOAK=N repeats free-running
// races N times more (a benchmark or a scheduled job sets it).

// pushSteps are the steps a push pauses at: each upload, the ref log
// entry, the confirmation, the compare-and-swap, the working directory's
// state.
var pushSteps = []string{"push:" + version.CatalogFile, "push:" + version.DatasetFile, "push:" + version.RecordFile, "push:reflog", "push:confirm", "push:ref", "push:state"}

// gcSteps are the steps a gc pauses at: the floor, the intent, each kind of
// deletion.
var gcSteps = []string{"gc:floor", "gc:intent", "gc:marker", "gc:catalog", "gc:data", "gc:abandoned"}

// graces are the grace periods gc accepts (below a day only when asked
// for on purpose).
var graces = []time.Duration{0, time.Second, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}

// raceCase is one race: a repository, a working directory with a commit
// whose data file no stored catalog lists, and the policy.
type raceCase struct {
	url  string
	base version.ID
	dir  string
}

// newRaceCase returns a race case with the policy keep-last keepLast and
// grace grace: on a folder (tmpl set) a copy of tmpl (a moved repository
// reads as itself: fdl.json keeps where its data folder was), else one
// made at url (makeRaceCase).
func newRaceCase(t *testing.T, tmpl *raceCase, url string, keepLast int, grace time.Duration) raceCase {
	t.Helper()
	var c raceCase
	if tmpl != nil {
		c = copyRaceCase(t, *tmpl)
	} else {
		c = makeRaceCase(t, url)
	}
	r, err := repo.Open(context.Background(), c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.UpdatePolicy(context.Background(), func(p *retention.Policy) error {
		p.KeepLast, p.Grace = keepLast, retention.Duration(grace)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// copyRaceCase copies a folder race case (repository and working
// directory) and points the copy's working directory at the copy.
func copyRaceCase(t *testing.T, c raceCase) raceCase {
	t.Helper()
	url := copyTree(t, c.url)
	dir := filepath.Join(t.TempDir(), "w")
	if out, err := exec.Command("cp", "-a", c.dir, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	st := filepath.Join(dir, workdir.StateDir, workdir.StateFile)
	b, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st, bytes.Replace(b, []byte(strconv.Quote(c.url)), []byte(strconv.Quote(url)), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	return raceCase{url: url, base: c.base, dir: dir}
}

// makeRaceCase builds a race case at url.
func makeRaceCase(t *testing.T, url string) raceCase {
	t.Helper()
	ctx := context.Background()
	if url != "" && !strings.Contains(url, "://") {
		if err := os.MkdirAll(url, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	url, _ = newRepoWithBaseAt(t, url)
	second, _ := commitChange(t, url, "second")
	r, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wd2, err := workdir.Open(second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd2.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "w")
	if !strings.Contains(url, "://") {
		dir = filepath.Join(filepath.Dir(url), "w")
	}
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	duckWrite(t, duckSession(t), dir, "INSERT INTO base SELECT 1000 + i AS id FROM range(3) t(i)")
	wd, err := workdir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "racing", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	return raceCase{url: url, base: branchHead(t, url), dir: dir}
}

// pauser returns a step hook that blocks the first time step is reached
// until release is closed, and the channel closed when it is reached.
func pauser(step string, release <-chan struct{}) (func(string), <-chan struct{}) {
	reached := make(chan struct{})
	var once sync.Once
	return func(name string) {
		if name != step {
			return
		}
		once.Do(func() {
			close(reached)
			<-release
		})
	}, reached
}

// raceGC plans and applies gc on its own Repo, as if now were now.
func raceGC(ctx context.Context, url string, now time.Time, step func(string)) error {
	r, err := repo.Open(ctx, url, repo.Options{Step: step})
	if err != nil {
		return err
	}
	defer r.Close()
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: now})
	if err != nil {
		return err
	}
	_, err = gc.Apply(ctx, r, plan)
	return err
}

// racePush pushes the working directory's versions on its own Repo.
func racePush(ctx context.Context, c raceCase, step func(string)) error {
	wd, err := workdir.Open(c.dir, repo.Options{Step: step})
	if err != nil {
		return err
	}
	defer wd.Close()
	_, err = wd.Push(ctx, workdir.PushOptions{})
	return err
}

// checkRaceEnd checks the end of a race: a push that succeeded moved main
// to its version, one that failed did so for a reason the protocol gives
// and left main alone; gc succeeded or stopped for a reason it gives; and
// verify --data is clean either way (no file a kept catalog reads is
// missing, nothing half-published).
func checkRaceEnd(t *testing.T, c raceCase, pushErr, gcErr error) {
	t.Helper()
	head := branchHead(t, c.url)
	switch {
	case pushErr == nil:
		if head == c.base {
			t.Fatalf("push succeeded but main still holds %s", head)
		}
	case errors.Is(pushErr, repo.ErrDataMissing), errors.Is(pushErr, repo.ErrGCDeleting), errors.Is(pushErr, repo.ErrIncomplete),
		errors.Is(pushErr, repo.ErrChecksum), errors.Is(pushErr, repo.ErrRetired):
		if head != c.base {
			t.Fatalf("push failed (%v) but main moved to %s", pushErr, head)
		}
	default:
		t.Fatalf("push: %v", pushErr)
	}
	if gcErr != nil && !errors.Is(gcErr, repo.ErrRetentionConflict) && !errors.Is(gcErr, gc.ErrAheadOfFloor) {
		t.Fatalf("gc: %v", gcErr)
	}
	r, err := repo.Open(context.Background(), c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Verify(context.Background(), repo.VerifyOptions{Data: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify --data after the race (push: %v; gc: %v): %+v", pushErr, gcErr, rep.Problems)
	}
}

// racePushPaused pauses a push at step, runs a whole gc (as if grace+2s
// had passed), then lets the push go on.
func racePushPaused(t *testing.T, c raceCase, step string, grace time.Duration) {
	ctx := context.Background()
	release := make(chan struct{})
	hook, reached := pauser(step, release)
	done := make(chan error, 1)
	go func() { done <- racePush(ctx, c, hook) }()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("push ended before %s: %v", step, err)
	}
	gcErr := raceGC(ctx, c.url, time.Now().Add(grace+2*time.Second), nil)
	close(release)
	checkRaceEnd(t, c, <-done, gcErr)
}

// raceGCPaused plans gc, pauses it at step, runs a whole push, then lets
// gc go on.
func raceGCPaused(t *testing.T, c raceCase, step string, grace time.Duration) {
	ctx := context.Background()
	release := make(chan struct{})
	hook, reached := pauser(step, release)
	done := make(chan error, 1)
	go func() { done <- raceGC(ctx, c.url, time.Now().Add(grace+2*time.Second), hook) }()
	select {
	case <-reached:
	case err := <-done:
		if err != nil {
			t.Fatalf("gc ended before %s: %v", step, err)
		}
		t.Skipf("this gc has no step %s", step)
	}
	pushErr := racePush(ctx, c, nil)
	close(release)
	checkRaceEnd(t, c, pushErr, <-done)
}

// raceInterleaved pauses a push at step, lets gc plan, lets the push
// finish, then lets gc apply its plan: what the plan read about the push
// (an upload, a complete folder no ref reaches) is out of date when gc
// deletes.
func raceInterleaved(t *testing.T, c raceCase, step string, grace time.Duration) {
	ctx := context.Background()
	release := make(chan struct{})
	hook, reached := pauser(step, release)
	done := make(chan error, 1)
	go func() { done <- racePush(ctx, c, hook) }()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("push ended before %s: %v", step, err)
	}
	r, err := repo.Open(ctx, c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(grace + 2*time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	pushErr := <-done
	_, gcErr := gc.Apply(ctx, r, plan)
	checkRaceEnd(t, c, pushErr, gcErr)
}

// TestGCPushRace is the suite on a folder repository: every push step ×
// every grace gc accepts, with keep-last 1 (versions leave retention) and
// with the default policy; every gc step.
func TestGCPushRace(t *testing.T) { gcPushRace(t, "", graces) }

// TestGCPushRaceS3 is the suite on the S3 server (versitygw), where the
// compare-and-swap, listings and deletes are the server's: in `make test`
// every push step (paused, and interleaved with gc's plan) and every gc
// step once, with grace 0 and keep-last 1 (each case builds its own
// repository on S3); with FDL_ALL_STORES=1 (make soak) also the
// default policy and the default grace, as the folder runs them.
func TestGCPushRaceS3(t *testing.T) {
	base := cloudtest.S3(t)
	if allStores() {
		gcPushRace(t, base, []time.Duration{0, 7 * 24 * time.Hour})
		return
	}
	gcPushRace(t, base, []time.Duration{0}, 1)
}

// gcPushRace runs the races; each has a repository and a working
// directory of its own (a copy of one template on a folder, a prefix of
// its own on S3) and its step hooks in its own options, so they run at
// once. keepLasts are the keep-last policies raced at the first grace
// (default: 1 and 0, the default policy); later graces race keep-last 1.
func gcPushRace(t *testing.T, base string, graces []time.Duration, keepLasts ...int) {
	if len(keepLasts) == 0 {
		keepLasts = []int{1, 0}
	}
	var tmpl *raceCase
	if base == "" {
		c := makeRaceCase(t, filepath.Join(t.TempDir(), "tmpl", "repo"))
		tmpl = &c
	}
	at := func(t *testing.T) string {
		if base == "" {
			return ""
		}
		return cloudtest.WithPrefix(base, t.Name())
	}
	for _, grace := range graces {
		for _, keepLast := range keepLasts {
			if keepLast == 0 && grace != graces[0] {
				continue // the default policy once: no version leaves retention
			}
			for _, step := range pushSteps {
				t.Run(fmt.Sprintf("push-paused/%s/grace=%s/keep-last=%d", step, grace, keepLast), func(t *testing.T) {
					t.Parallel()
					racePushPaused(t, newRaceCase(t, tmpl, at(t), keepLast, grace), step, grace)
				})
				if grace != graces[0] {
					continue
				}
				t.Run(fmt.Sprintf("interleaved/%s/grace=%s/keep-last=%d", step, grace, keepLast), func(t *testing.T) {
					t.Parallel()
					raceInterleaved(t, newRaceCase(t, tmpl, at(t), keepLast, grace), step, grace)
				})
			}
		}
		for _, step := range gcSteps {
			t.Run(fmt.Sprintf("gc-paused/%s/grace=%s", step, grace), func(t *testing.T) {
				t.Parallel()
				raceGCPaused(t, newRaceCase(t, tmpl, at(t), 1, grace), step, grace)
			})
		}
	}
	soak, _ := strconv.Atoi(os.Getenv("FDL_RACE_SOAK"))
	for i := range soak {
		t.Run(fmt.Sprintf("soak/%d", i), func(t *testing.T) {
			t.Parallel()
			c := newRaceCase(t, tmpl, at(t), 1, 0)
			ctx := context.Background()
			var pushErr, gcErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); pushErr = racePush(ctx, c, nil) }()
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i%7) * 30 * time.Millisecond)
				gcErr = raceGC(ctx, c.url, time.Now().Add(2*time.Second), nil)
			}()
			wg.Wait()
			checkRaceEnd(t, c, pushErr, gcErr)
		})
	}
}
