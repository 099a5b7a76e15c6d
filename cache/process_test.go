package cache

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests here run the test binary again as other fdl processes sharing
// a cache (TestHelperProcess, with FDL_CACHE_HELPER naming what it does).

// TestHelperProcess is not a test: it is the body of a helper process.
//   - fetch: say "ready", wait for the file FDL_CACHE_GO, Fetch the entry
//     with a fill that appends a line to FDL_CACHE_COUNT first; say the path.
//   - hang: Fetch with a fill that writes half the bytes, says "filling"
//     and never returns (the test kills it).
//   - hold: take the entry's lock, say "held", and keep it until stdin
//     closes.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("FDL_CACHE_HELPER")
	if mode == "" {
		return
	}
	if err := helper(mode); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helper(mode string) error {
	ctx := context.Background()
	c, err := Open(os.Getenv("FDL_CACHE_DIR"), Options{})
	if err != nil {
		return err
	}
	sum := os.Getenv("FDL_CACHE_SUM")
	b, err := os.ReadFile(os.Getenv("FDL_CACHE_CONTENT"))
	if err != nil {
		return err
	}
	switch mode {
	case "fetch":
		fmt.Println("ready")
		waitFile(os.Getenv("FDL_CACHE_GO"))
		path, err := c.Fetch(ctx, sum, int64(len(b)), countingFill(b, os.Getenv("FDL_CACHE_COUNT")))
		if err != nil {
			return err
		}
		fmt.Println(path)
	case "hang":
		_, err := c.Fetch(ctx, sum, int64(len(b)), func(ctx context.Context, w io.Writer) error {
			if _, err := w.Write(b[:len(b)/2]); err != nil {
				return err
			}
			fmt.Println("filling")
			time.Sleep(time.Hour) // until killed
			return nil
		})
		return err
	case "hold":
		l, ok, err := tryLock(c.name(sum, lockSuffix))
		if err != nil || !ok {
			return fmt.Errorf("hold: %v, %v", ok, err)
		}
		fmt.Println("held")
		io.Copy(io.Discard, os.Stdin)
		l.release()
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	return nil
}

// countingFill appends a line to countFile, waits a moment so that other
// fetches arrive while it fills, then writes b.
func countingFill(b []byte, countFile string) FillFunc {
	return func(ctx context.Context, w io.Writer) error {
		f, err := os.OpenFile(countFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, "fill by %d\n", os.Getpid())
		f.Close()
		if err != nil {
			return err
		}
		time.Sleep(150 * time.Millisecond)
		_, err = io.Copy(w, bytes.NewReader(b))
		return err
	}
}

func waitFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// helperProc is a running helper process and its standard output.
type helperProc struct {
	cmd    *exec.Cmd
	out    *bufio.Reader
	stdin  io.WriteCloser
	stderr *bytes.Buffer
}

// startHelper starts the test binary as a helper process in mode.
func startHelper(t *testing.T, mode string, env ...string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), append([]string{"FDL_CACHE_HELPER=" + mode}, env...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &helperProc{cmd: cmd, out: bufio.NewReader(stdout), stdin: stdin, stderr: new(bytes.Buffer)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return h
}

// line reads the helper's next line of output, failing after 30 s.
func (h *helperProc) line(t *testing.T) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := h.out.ReadString('\n')
		ch <- res{strings.TrimSuffix(s, "\n"), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("helper %s: %v (stderr: %s)", h.cmd.Env[len(h.cmd.Env)-1], r.err, h.stderr)
		}
		return r.s
	case <-time.After(30 * time.Second):
		t.Fatalf("helper silent for 30 s (stderr: %s)", h.stderr)
		return ""
	}
}

// setup writes b to a file and returns the environment helpers read.
func setup(t *testing.T, dir, sum string, b []byte) (env []string, work string) {
	t.Helper()
	work = t.TempDir()
	contentFile := filepath.Join(work, "content")
	if err := os.WriteFile(contentFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{
		"FDL_CACHE_DIR=" + dir, "FDL_CACHE_SUM=" + sum, "FDL_CACHE_CONTENT=" + contentFile,
		"FDL_CACHE_COUNT=" + filepath.Join(work, "count"), "FDL_CACHE_GO=" + filepath.Join(work, "go"),
	}, work
}

// 8 goroutines and 4 processes fetching one digest at once fill it once
// in all, and all get the same complete entry.
func TestConcurrentFetchFillsOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, sum := content(42, 1<<20)
	env, work := setup(t, dir, sum, b)
	countFile := filepath.Join(work, "count")
	goFile := filepath.Join(work, "go")

	var procs []*helperProc
	for range 4 {
		procs = append(procs, startHelper(t, "fetch", env...))
	}
	for _, p := range procs {
		if s := p.line(t); s != "ready" {
			t.Fatalf("helper said %q", s)
		}
	}
	c := open(t, dir, Options{})
	var wg sync.WaitGroup
	paths := make([]string, 8)
	errs := make([]error, 8)
	var started atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			started.Add(1)
			waitFile(goFile)
			paths[i], errs[i] = c.Fetch(context.Background(), sum, int64(len(b)), countingFill(b, countFile))
		})
	}
	for started.Load() < 8 {
		time.Sleep(time.Millisecond)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil { // all start at once
		t.Fatal(err)
	}
	wg.Wait()
	for i := range 8 {
		if errs[i] != nil || paths[i] != c.Path(sum) {
			t.Fatalf("goroutine %d: %s, %v", i, paths[i], errs[i])
		}
	}
	for i, p := range procs {
		if s := p.line(t); s != c.Path(sum) {
			t.Fatalf("process %d: %q", i, s)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v (%s)", i, err, p.stderr)
		}
	}
	count, err := os.ReadFile(countFile)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(count), "\n"); n != 1 {
		t.Fatalf("fill called %d times in all, want 1:\n%s", n, count)
	}
	got, err := os.ReadFile(c.Path(sum))
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("entry: %d bytes, %v", len(got), err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG", sum+".duckdb", sum+".used")
}

// Prune never removes an entry whose lock another process holds, even
// when it is the least recently used; once released, it goes.
func TestPruneSkipsEntryHeldByAnotherProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := &clock{}
	c := open(t, dir, Options{now: clk.now})
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	sums := fillN(t, c, clk, base, 3, 100)
	b, _ := os.ReadFile(c.Path(sums[0]))
	env, _ := setup(t, dir, sums[0], b)
	h := startHelper(t, "hold", env...)
	if s := h.line(t); s != "held" {
		t.Fatalf("helper said %q", s)
	}
	res, err := c.Prune(ctx, PruneOptions{MaxBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	if got := sumsOf(res.Removed); strings.Join(got, " ") != sums[1] {
		t.Fatalf("removed %v, want only %s", got, sums[1])
	}
	if got := sumsOf(res.Busy); strings.Join(got, " ") != sums[0] {
		t.Fatalf("busy %v, want %s", got, sums[0])
	}
	if l, _ := c.List(); strings.Join(sumsOf(l), " ") != sums[0]+" "+sums[2] || res.Kept != 200 {
		t.Fatalf("left %v (%d bytes)", sumsOf(l), res.Kept)
	}
	if res, err := c.Prune(ctx, PruneOptions{All: true}); err != nil || len(res.Busy) != 1 || len(res.Removed) != 1 {
		t.Fatalf("Prune(All) while held = %+v, %v", res, err)
	}
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v (%s)", err, h.stderr)
	}
	if res, err := c.Prune(ctx, PruneOptions{MaxBytes: 1}); err != nil || strings.Join(sumsOf(res.Removed), " ") != sums[0] {
		t.Fatalf("Prune after release = %+v, %v", res, err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
}

// A fetch killed (SIGKILL) while filling leaves its partial file and lock
// file; while it lives, Open and Prune leave them (its lock is held); once
// it is dead, Open removes them (first round) and Prune does (second),
// and the next Fetch fills the entry.
func TestKilledFetchLeftoverCleaned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	b, sum := content(77, 300_000)
	env, _ := setup(t, dir, sum, b)
	part := filepath.Join(dir, sum+".part")
	lockFile := filepath.Join(dir, sum+".lock")
	for round, clean := range []string{"Open", "Prune"} {
		h := startHelper(t, "hang", env...)
		if s := h.line(t); s != "filling" {
			t.Fatalf("helper said %q", s)
		}
		fi, err := os.Stat(part)
		if err != nil || fi.Size() != int64(len(b)/2) {
			t.Fatalf("round %d: partial entry while filling: %v, %v", round, fi, err)
		}
		if l, ok, err := tryLock(lockFile); ok || err != nil {
			if ok {
				l.release()
			}
			t.Fatalf("round %d: the lock of a living fetch was free (%v)", round, err)
		}
		c := open(t, dir, Options{})
		if res, err := c.Prune(ctx, PruneOptions{All: true}); err != nil || res.Leftovers != 0 {
			t.Fatalf("Prune while the fetch lives = %+v, %v", res, err)
		}
		wantFiles(t, dir, "CACHEDIR.TAG", sum+".lock", sum+".part")
		if err := h.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		h.cmd.Wait()
		wantFiles(t, dir, "CACHEDIR.TAG", sum+".lock", sum+".part")
		switch clean {
		case "Open":
			c = open(t, dir, Options{})
		case "Prune":
			res, err := c.Prune(ctx, PruneOptions{})
			if err != nil || res.Leftovers != 1 {
				t.Fatalf("Prune after the kill = %+v, %v", res, err)
			}
		}
		wantFiles(t, dir, "CACHEDIR.TAG")
		if _, err := os.Stat(lockFile); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("lock file left: %v", err)
		}
	}
	c := open(t, dir, Options{})
	var calls atomic.Int32
	if _, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls)); err != nil || calls.Load() != 1 {
		t.Fatalf("Fetch after the cleanup: %v (fill called %d times)", err, calls.Load())
	}
}

// A waiting Fetch in this process takes over from a fetch killed in
// another: it does not wait for a lock no one holds.
func TestFetchAfterKilledFetch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, sum := content(78, 100_000)
	env, _ := setup(t, dir, sum, b)
	h := startHelper(t, "hang", env...)
	if s := h.line(t); s != "filling" {
		t.Fatalf("helper said %q", s)
	}
	c := open(t, dir, Options{})
	done := make(chan error, 1)
	var calls atomic.Int32
	go func() {
		_, err := c.Fetch(context.Background(), sum, int64(len(b)), writer(b, &calls))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Fetch finished while another process filled: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	h.cmd.Process.Kill()
	h.cmd.Wait()
	select {
	case err := <-done:
		if err != nil || calls.Load() != 1 {
			t.Fatalf("Fetch = %v, fill called %d times", err, calls.Load())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Fetch still waiting 30 s after the holder died")
	}
	got, _ := os.ReadFile(c.Path(sum))
	if !bytes.Equal(got, b) {
		t.Fatal("entry differs")
	}
	wantFiles(t, dir, "CACHEDIR.TAG", sum+".duckdb", sum+".used")
}
