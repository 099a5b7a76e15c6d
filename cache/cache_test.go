package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/stamp"
)

// content returns n deterministic pseudo-random bytes and their SHA-256.
func content(seed uint64, n int) ([]byte, string) {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	s := sha256.Sum256(b)
	return b, hex.EncodeToString(s[:])
}

// writer returns a fill that writes b in chunks of 4 KiB and counts its
// calls in calls.
func writer(b []byte, calls *atomic.Int32) FillFunc {
	return func(ctx context.Context, w io.Writer) error {
		calls.Add(1)
		for rest := b; len(rest) > 0; {
			n := min(len(rest), 4096)
			if _, err := w.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	}
}

func open(t *testing.T, dir string, opts Options) *Cache {
	t.Helper()
	c, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// files returns the names in dir, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// wantFiles fails unless dir holds exactly want, and beside each entry
// (<sum>.duckdb) its stamp (<sum>.stamp) where the platform gives stamps.
func wantFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	if fi, err := os.Stat(dir); err == nil {
		if _, ok := stamp.Of(fi); ok {
			for _, w := range want {
				if sum, ok := strings.CutSuffix(w, EntrySuffix); ok {
					want = append(want, sum+stampSuffix)
				}
			}
		}
	}
	slices.Sort(want)
	if got := files(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("cache folder holds\n  %v\nwant\n  %v", got, want)
	}
}

// A fetch fills the entry once: the second Fetch and Get find it without
// calling fill; the entry is read-only and holds the bytes; the folder
// holds the tag, the entry and its record and nothing else.
func TestFetchOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "fdl", "catalogs")
	c := open(t, dir, Options{})
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache folder mode %v, %v; want 0700", fi.Mode(), err)
	}
	b, sum := content(1, 100_000)
	var calls atomic.Int32
	path, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, sum+".duckdb") || path != c.Path(sum) {
		t.Fatalf("path %s", path)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("entry holds %d bytes, %v", len(got), err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o444 {
		t.Fatalf("entry mode %v, want 0444", fi.Mode())
	}
	path2, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls))
	if err != nil || path2 != path {
		t.Fatalf("second Fetch = %s, %v", path2, err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("fill called %d times, want 1", n)
	}
	// A second Cache on the same folder (another process's view) finds it.
	if p, ok, err := open(t, dir, Options{}).Get(ctx, sum); err != nil || !ok || p != path {
		t.Fatalf("Get = %s, %v, %v", p, ok, err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG", sum+".duckdb", sum+".used")
	tag, _ := os.ReadFile(filepath.Join(dir, "CACHEDIR.TAG"))
	if !strings.HasPrefix(string(tag), "Signature: 8a477f597d28d172789f06886806bc55") {
		t.Fatalf("CACHEDIR.TAG = %q", tag)
	}
	list, err := c.List()
	if err != nil || len(list) != 1 || list[0].SHA256 != sum || list[0].Size != int64(len(b)) || list[0].Path != path {
		t.Fatalf("List = %+v, %v", list, err)
	}
}

// A stream of the wrong digest, a short one, a long one and a failed fill
// each leave nothing in the cache, with an error that says what came.
func TestFetchRefusesMismatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	c := open(t, dir, Options{})
	b, sum := content(2, 50_000)
	other, otherSum := content(3, 50_000)
	var calls atomic.Int32
	cases := []struct {
		name string
		fill FillFunc
		say  []string
	}{
		{"wrong digest", writer(other, &calls), []string{sum, otherSum, "instead"}},
		{"short stream", writer(b[:20_000], &calls), []string{sum, "expected 50000 bytes, received 20000"}},
		{"long stream", writer(append(slices.Clone(b), 'x'), &calls), []string{sum, "expected 50000 bytes", "went on past"}},
	}
	for _, tc := range cases {
		_, err := c.Fetch(ctx, sum, int64(len(b)), tc.fill)
		var me *MismatchError
		if !errors.Is(err, ErrMismatch) || !errors.As(err, &me) || me.SHA256 != sum {
			t.Fatalf("%s: Fetch = %v, want a MismatchError", tc.name, err)
		}
		for _, s := range tc.say {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("%s: error %q does not say %q", tc.name, err, s)
			}
		}
		wantFiles(t, dir, "CACHEDIR.TAG")
	}
	failing := func(ctx context.Context, w io.Writer) error {
		w.Write(b[:1000])
		return errors.New("connection reset (simulated)")
	}
	if _, err := c.Fetch(ctx, sum, int64(len(b)), failing); err == nil || !strings.Contains(err.Error(), "connection reset") || !strings.Contains(err.Error(), sum) {
		t.Fatalf("failing fill: %v", err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
	// A fill that ignores the write error of a long stream still fails.
	sloppy := func(ctx context.Context, w io.Writer) error {
		w.Write(b)
		w.Write([]byte("more"))
		return nil
	}
	if _, err := c.Fetch(ctx, sum, int64(len(b)), sloppy); !errors.Is(err, ErrMismatch) {
		t.Fatalf("sloppy fill: %v", err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
	if _, ok, err := c.Get(ctx, sum); ok || err != nil {
		t.Fatalf("Get after refused fetches = %v, %v", ok, err)
	}
	// And the right stream then makes the entry.
	if _, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "abc", strings.ToUpper(sum), sum + "0", "../" + sum[3:]} {
		if _, err := c.Fetch(ctx, bad, 1, writer(b, &calls)); !errors.Is(err, ErrInvalidDigest) {
			t.Fatalf("Fetch(%q) = %v", bad, err)
		}
		if _, _, err := c.Get(ctx, bad); !errors.Is(err, ErrInvalidDigest) {
			t.Fatalf("Get(%q) = %v", bad, err)
		}
	}
	if _, err := c.Fetch(ctx, sum, -1, writer(b, &calls)); err == nil {
		t.Fatal("Fetch with a negative size succeeded")
	}
}

// Get of a missing entry reports it, and leaves no lock file behind.
func TestGetMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir, Options{})
	_, sum := content(4, 10)
	if p, ok, err := c.Get(context.Background(), sum); ok || err != nil || p != "" {
		t.Fatalf("Get(missing) = %q, %v, %v", p, ok, err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
}

// clock is a settable clock for Options.now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// Get moves an entry's last use to now through its own record, whatever
// the file system's access or modification times say.
func TestGetUpdatesLastUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := &clock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	c := open(t, dir, Options{now: clk.now})
	b, sum := content(5, 1000)
	var calls atomic.Int32
	path, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.List(); l[0].LastUse != clk.now() {
		t.Fatalf("last use after Fetch %v, want %v", l[0].LastUse, clk.now())
	}
	later := time.Date(2026, 3, 2, 11, 30, 0, 123456789, time.UTC)
	clk.set(later)
	if _, ok, err := c.Get(ctx, sum); !ok || err != nil {
		t.Fatal(ok, err)
	}
	l, _ := c.List()
	if l[0].LastUse != later {
		t.Fatalf("last use after Get %v, want %v", l[0].LastUse, later)
	}
	rec, _ := os.ReadFile(filepath.Join(dir, sum+".used"))
	if string(rec) != "2026-03-02T11:30:00.123456789Z\n" {
		t.Fatalf("record %q", rec)
	}
	// The entry's own times were not what moved.
	if fi, _ := os.Stat(path); !fi.ModTime().Equal(old) {
		t.Fatalf("entry mtime changed to %v", fi.ModTime())
	}
	// Without a record, the time the entry was written stands in.
	os.Remove(filepath.Join(dir, sum+".used"))
	if l, _ := c.List(); !l[0].LastUse.Equal(old) {
		t.Fatalf("last use without a record %v, want %v", l[0].LastUse, old)
	}
}

// fillN fetches n entries of size bytes each, the i-th with last use
// base + i hours, and returns their digests in that order.
func fillN(t *testing.T, c *Cache, clk *clock, base time.Time, n, size int) []string {
	t.Helper()
	var sums []string
	var calls atomic.Int32
	for i := range n {
		b, sum := content(uint64(100+i), size)
		clk.set(base.Add(time.Duration(i) * time.Hour))
		if _, err := c.Fetch(context.Background(), sum, int64(size), writer(b, &calls)); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
	}
	return sums
}

func sumsOf(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.SHA256)
	}
	return out
}

// Prune by age removes the entries last used before the cut, and only
// them; with no option it removes no entry.
func TestPruneByAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := &clock{}
	c := open(t, dir, Options{now: clk.now})
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	sums := fillN(t, c, clk, base, 4, 100) // used at +0h, +1h, +2h, +3h
	clk.set(base.Add(3*time.Hour + 30*time.Minute))
	if res, err := c.Prune(ctx, PruneOptions{}); err != nil || len(res.Removed) != 0 || res.Kept != 400 {
		t.Fatalf("Prune() = %+v, %v", res, err)
	}
	res, err := c.Prune(ctx, PruneOptions{OlderThan: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := sumsOf(res.Removed); !slices.Equal(got, sums[:2]) {
		t.Fatalf("removed %v, want %v", got, sums[:2])
	}
	if l, _ := c.List(); !slices.Equal(sumsOf(l), sums[2:]) || res.Kept != 200 {
		t.Fatalf("left %v (%d bytes), want %v", sumsOf(l), res.Kept, sums[2:])
	}
	wantFiles(t, dir, "CACHEDIR.TAG", sums[2]+".duckdb", sums[2]+".used", sums[3]+".duckdb", sums[3]+".used")
	if res, err := c.Prune(ctx, PruneOptions{All: true}); err != nil || len(res.Removed) != 2 || res.Kept != 0 {
		t.Fatalf("Prune(All) = %+v, %v", res, err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
	if _, err := c.Prune(ctx, PruneOptions{MaxBytes: -1}); err == nil {
		t.Fatal("Prune with a negative size succeeded")
	}
}

// Prune by size removes the least recently used first, and a Get makes
// an entry the most recently used.
func TestPruneBySizeLRU(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := &clock{}
	c := open(t, dir, Options{now: clk.now})
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	sums := fillN(t, c, clk, base, 4, 100)
	clk.set(base.Add(10 * time.Hour))
	if _, ok, err := c.Get(ctx, sums[0]); !ok || err != nil {
		t.Fatal(ok, err)
	}
	l, _ := c.List()
	if want := []string{sums[1], sums[2], sums[3], sums[0]}; !slices.Equal(sumsOf(l), want) {
		t.Fatalf("List order %v, want %v", sumsOf(l), want)
	}
	res, err := c.Prune(ctx, PruneOptions{MaxBytes: 250})
	if err != nil {
		t.Fatal(err)
	}
	if got := sumsOf(res.Removed); !slices.Equal(got, sums[1:3]) || res.Kept != 200 {
		t.Fatalf("removed %v (kept %d bytes), want %v", got, res.Kept, sums[1:3])
	}
	if l, _ := c.List(); !slices.Equal(sumsOf(l), []string{sums[3], sums[0]}) {
		t.Fatalf("left %v", sumsOf(l))
	}
}

// Fetch prunes to MaxBytes after making an entry, least recently used
// first, never the entry it just made, even alone above the limit.
func TestFetchPrunesToMaxBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	clk := &clock{}
	c := open(t, dir, Options{MaxBytes: 250, now: clk.now})
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	sums := fillN(t, c, clk, base, 3, 100)
	if l, _ := c.List(); !slices.Equal(sumsOf(l), sums[1:]) {
		t.Fatalf("after 3 fetches of 100 bytes under 250: %v, want %v", sumsOf(l), sums[1:])
	}
	big, bigSum := content(999, 300)
	clk.set(base.Add(time.Hour / 2)) // older than every other: still kept
	var calls atomic.Int32
	if _, err := c.Fetch(ctx, bigSum, 300, writer(big, &calls)); err != nil {
		t.Fatal(err)
	}
	if l, _ := c.List(); !slices.Equal(sumsOf(l), []string{bigSum}) {
		t.Fatalf("after a fetch above the limit: %v, want only it", sumsOf(l))
	}
}

// Verify finds an entry changed on disk and removes it.
func TestVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	c := open(t, dir, Options{})
	b, sum := content(6, 5000)
	if err := c.Verify(ctx, sum); !errors.Is(err, ErrNotCached) {
		t.Fatalf("Verify(missing) = %v", err)
	}
	var calls atomic.Int32
	path, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(ctx, sum); err != nil {
		t.Fatalf("Verify(intact) = %v", err)
	}
	os.Chmod(path, 0o644)
	b[10] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(ctx, sum); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), sum) {
		t.Fatalf("Verify(damaged) = %v", err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
}

// An entry changed on disk after it was checked, its size kept (a write
// over it), is hashed again before any use: Fetch fills it again, Get
// reports it missing; an intact entry without a stamp (made by an older
// fdl) is hashed once and gets one. TestFetchOnce shows that an entry
// whose stamp holds is used without a fill.
func TestDamagedEntryFoundByStamp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if fi, _ := os.Stat(dir); fi != nil {
		if _, ok := stamp.Of(fi); !ok {
			t.Skip("no file stamps on this platform: only sizes are checked")
		}
	}
	c := open(t, dir, Options{})
	b, sum := content(7, 50_000)
	var calls atomic.Int32
	path, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls))
	if err != nil {
		t.Fatal(err)
	}
	damage := func() {
		t.Helper()
		os.Chmod(path, 0o644)
		d := bytes.Clone(b)
		d[20_000] ^= 1
		if err := os.WriteFile(path, d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	damage()
	if got, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls)); err != nil || got != path || calls.Load() != 2 {
		t.Fatalf("Fetch of a damaged entry = %s, %v, %d fills; want it filled again", got, err, calls.Load())
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("entry after the refill: %v", err)
	}
	damage()
	if _, ok, err := c.Get(ctx, sum); ok || err != nil {
		t.Fatalf("Get of a damaged entry = %v, %v; want not found", ok, err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
	if _, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, sum+stampSuffix)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Get(ctx, sum); !ok || err != nil {
		t.Fatalf("Get of an intact entry without a stamp = %v, %v", ok, err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG", sum+EntrySuffix, sum+usedSuffix)
}

// A Fetch waiting for a lock another holder keeps gives up when its
// context ends, without calling fill.
func TestFetchWaitCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := open(t, dir, Options{})
	b, sum := content(7, 100)
	l, ok, err := tryLock(c.name(sum, lockSuffix))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer l.release()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var calls atomic.Int32
	if _, err := c.Fetch(ctx, sum, 100, writer(b, &calls)); !errors.Is(err, context.DeadlineExceeded) || calls.Load() != 0 {
		t.Fatalf("Fetch under a held lock = %v (fill called %d times)", err, calls.Load())
	}
	if _, _, err := c.Get(ctx, sum); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get under a held lock = %v", err)
	}
}

// A disk with no room for the entry gives *FullError naming the cache's
// folder and the entry's size, and leaves nothing of the entry. The
// entry's .part is a link to /dev/full, whose writes fail with ENOSPC.
func TestFetchFullDisk(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this platform")
	}
	ctx := context.Background()
	dir := t.TempDir()
	c := open(t, dir, Options{})
	b, sum := content(3, 100_000)
	if err := os.Symlink("/dev/full", c.name(sum, partSuffix)); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	_, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls))
	var fe *FullError
	if !errors.As(err, &fe) || fe.Dir != dir || fe.Size != int64(len(b)) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Fetch onto a full disk = %v (%T), want a *FullError for %s, %d bytes, wrapping ENOSPC", err, err, dir, len(b))
	}
	if strings.Count(err.Error(), "catalog cache") != 1 || !strings.Contains(err.Error(), "no room") {
		t.Fatalf("message %q: want the cache named once, and that it has no room", err)
	}
	wantFiles(t, dir, "CACHEDIR.TAG")
	// With room again, the same fetch fills the entry.
	if path, err := c.Fetch(ctx, sum, int64(len(b)), writer(b, &calls)); err != nil || path != c.Path(sum) {
		t.Fatalf("Fetch with room = %s, %v", path, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	if _, err := Open("", Options{}); err == nil {
		t.Fatal("Open(\"\") succeeded")
	}
	if _, err := Open(t.TempDir(), Options{MaxBytes: -1}); err == nil {
		t.Fatal("Open with a negative limit succeeded")
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	var fe *FolderError
	if _, err := Open(filepath.Join(file, "sub"), Options{}); !errors.As(err, &fe) || !strings.Contains(err.Error(), file) {
		t.Fatalf("Open under a file = %v, want a *FolderError naming %s", err, file)
	}
}

// TestOpenRelativeDir: a cache opened at a relative folder (FDL_CACHE=cache)
// gives absolute paths, since an entry's path goes into an ATTACH line that
// DuckDB reads from whatever folder it runs in.
func TestOpenRelativeDir(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	c, err := Open("rel/cache", Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum := strings.Repeat("a", 64)
	if want := filepath.Join(wd, "rel", "cache"); c.Dir() != want || c.Path(sum) != filepath.Join(want, sum+EntrySuffix) {
		t.Fatalf("Open(rel/cache) in %s: Dir %q, Path %q; want both under %s", wd, c.Dir(), c.Path(sum), want)
	}
}

func TestDefaultDir(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	t.Setenv("HOME", t.TempDir())
	d, err := DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	switch runtime.GOOS {
	case "darwin", "ios", "windows", "plan9":
		return // the platform's own folder
	}
	if want := filepath.Join(xdg, "fdl", "catalogs"); d != want {
		t.Fatalf("DefaultDir = %s, want %s", d, want)
	}
}

// The entry lock excludes: of goroutines taking and releasing one lock in
// a loop (each release removes the lock file), never two hold it at once.
func TestLockExcludes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.lock")
	var inside atomic.Bool
	var overlaps, taken atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				l, err := lock(context.Background(), path)
				if err != nil {
					t.Error(err)
					return
				}
				if !inside.CompareAndSwap(false, true) {
					overlaps.Add(1)
				}
				taken.Add(1)
				runtime.Gosched()
				inside.Store(false)
				l.release()
			}
		})
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("the lock was held twice at once %d times in %d", n, taken.Load())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("lock file left after the last release: %v", err)
	}
}
