// Package storetest is the conformance suite every store.Store must pass
// (docs/spec.md §1, §10.3), and Faulty, a Store wrapper that injects faults for
// crash tests of commit and push.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
)

// Run runs the conformance suite as subtests of t. newStore must return a
// new, empty store for each call (it is called once per subtest) and arrange
// its cleanup with t.Cleanup; Run closes nothing itself.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Missing", testMissing},
		{"CreateGet", testCreateGet},
		{"CreateEmpty", testCreateEmpty},
		{"CreateLarge", testCreateLarge},
		{"CreateExisting", testCreateExisting},
		{"CreateReaderFails", testCreateReaderFails},
		{"CreateNeverPartial", testCreateNeverPartial},
		{"SwapCreate", testSwapCreate},
		{"SwapReplace", testSwapReplace},
		{"SwapStale", testSwapStale},
		{"SwapNoTokenExisting", testSwapNoTokenExisting},
		{"SwapTokenMissing", testSwapTokenMissing},
		{"SwapCreated", testSwapCreated},
		{"SwapTooLarge", testSwapTooLarge},
		{"ConcurrentCreate", testConcurrentCreate},
		{"ConcurrentSwap", testConcurrentSwap},
		{"List", testList},
		{"ListStops", testListStops},
		{"ListHidesInternals", testListHidesInternals},
		{"Delete", testDelete},
		{"InvalidKeys", testInvalidKeys},
		{"Cancelled", testCancelled},
		{"Location", testLocation},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

// Workers and Rounds size the concurrency tests: Workers goroutines race on
// one key, Rounds times for Swap.
const (
	Workers = 16
	Rounds  = 20
)

func testMissing(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "refs/heads/missing"
	_, _, err := s.Get(ctx, key)
	wantErr(t, "Get", err, store.ErrNotExist)
	if err != nil && !strings.Contains(err.Error(), key) {
		t.Errorf("Get error %q does not name the key %q", err, key)
	}
	_, err = s.Stat(ctx, key)
	wantErr(t, "Stat", err, store.ErrNotExist)
	if err != nil && !strings.Contains(err.Error(), key) {
		t.Errorf("Stat error %q does not name the key %q", err, key)
	}
	// A key below a missing folder, and a prefix of an existing key.
	mustCreate(t, s, "versions/a/version.json", []byte("{}"))
	for _, k := range []string{"versions/a", "versions/b/version.json", "versions/a/version.json/x"} {
		_, _, err := s.Get(ctx, k)
		wantErr(t, "Get "+k, err, store.ErrNotExist)
		_, err = s.Stat(ctx, k)
		wantErr(t, "Stat "+k, err, store.ErrNotExist)
	}
}

func testCreateGet(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "versions/0192/version.json"
	want := []byte(`{"id":"0192"}` + "\n")
	before := time.Now().Add(-time.Hour)
	mustCreate(t, s, key, want)
	got, tok := mustGet(t, s, key)
	if !bytes.Equal(got, want) {
		t.Errorf("Get = %q, want %q", got, want)
	}
	if tok == store.NoToken {
		t.Errorf("Get returned NoToken for an existing object")
	}
	info, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if info.Key != key || info.Size != int64(len(want)) {
		t.Errorf("Stat = %+v, want key %q size %d", info, key, len(want))
	}
	if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(time.Hour)) {
		t.Errorf("Stat ModTime = %v, want about now", info.ModTime)
	}
	// A second Get returns the same bytes and Token.
	got2, tok2 := mustGet(t, s, key)
	if !bytes.Equal(got2, want) || tok2 != tok {
		t.Errorf("second Get = %q, %q; want %q, %q", got2, tok2, want, tok)
	}
}

func testCreateEmpty(t *testing.T, s store.Store) {
	mustCreate(t, s, "empty", nil)
	got, _ := mustGet(t, s, "empty")
	if len(got) != 0 {
		t.Errorf("Get = %d bytes, want 0", len(got))
	}
	info, err := s.Stat(t.Context(), "empty")
	if err != nil || info.Size != 0 {
		t.Errorf("Stat = %+v, %v; want size 0", info, err)
	}
}

func testCreateLarge(t *testing.T, s store.Store) {
	const key = "versions/0192/ducklake.duckdb"
	want := randomBytes(t, 5<<20+123) // 5 MiB and a bit: above store.MaxSwapSize
	// Through a reader that is not a *bytes.Reader, in small odd pieces.
	if err := s.Create(t.Context(), key, &chunkReader{data: want, chunk: 64<<10 + 7}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, tok := mustGet(t, s, key)
	if sha256.Sum256(got) != sha256.Sum256(want) || len(got) != len(want) {
		t.Errorf("Get returned %d bytes that differ from the %d written", len(got), len(want))
	}
	if tok == store.NoToken {
		t.Errorf("Get returned NoToken for an existing object")
	}
	info, err := s.Stat(t.Context(), key)
	if err != nil || info.Size != int64(len(want)) {
		t.Errorf("Stat = %+v, %v; want size %d", info, err, len(want))
	}
}

func testCreateExisting(t *testing.T, s store.Store) {
	const key = "versions/0192/dataset.json"
	mustCreate(t, s, key, []byte("first"))
	err := s.Create(t.Context(), key, strings.NewReader("second, longer"))
	wantErr(t, "second Create", err, store.ErrExist)
	if err != nil && !strings.Contains(err.Error(), key) {
		t.Errorf("Create error %q does not name the key %q", err, key)
	}
	if got, _ := mustGet(t, s, key); string(got) != "first" {
		t.Errorf("after refused Create, Get = %q, want %q", got, "first")
	}
	// Also against an object written by Swap.
	if _, err := s.Swap(t.Context(), "refs/heads/main", store.NoToken, []byte("v1\n")); err != nil {
		t.Fatalf("Swap: %v", err)
	}
	err = s.Create(t.Context(), "refs/heads/main", strings.NewReader("v2\n"))
	wantErr(t, "Create over a swapped key", err, store.ErrExist)
	if got, _ := mustGet(t, s, "refs/heads/main"); string(got) != "v1\n" {
		t.Errorf("after refused Create, Get = %q, want %q", got, "v1\n")
	}
}

var errReader = errors.New("storetest: reader failed")

func testCreateReaderFails(t *testing.T, s store.Store) {
	const key = "versions/0192/ducklake.duckdb"
	r := io.MultiReader(bytes.NewReader(randomBytes(t, 3<<20)), &failingReader{err: errReader})
	err := s.Create(t.Context(), key, r)
	if err == nil {
		t.Fatalf("Create with a failing reader succeeded")
	}
	if !errors.Is(err, errReader) {
		t.Errorf("Create error = %v, want it to wrap the reader's error", err)
	}
	_, _, err = s.Get(t.Context(), key)
	wantErr(t, "Get after failed Create", err, store.ErrNotExist)
	noFolderLeft(t, s, "versions/0192", "a Create whose reader failed")
	cctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Create(cctx, "versions/0193/ducklake.duckdb", strings.NewReader("cancelled")); err == nil {
		t.Errorf("Create with a cancelled context succeeded")
	}
	noFolderLeft(t, s, "versions/0193", "a cancelled Create")
	// The key is still free.
	mustCreate(t, s, key, []byte("ok"))
	if got, _ := mustGet(t, s, key); string(got) != "ok" {
		t.Errorf("Get = %q, want %q", got, "ok")
	}
}

// noFolderLeft fails t when a failed write left anything at dir: no object
// under it is listed and, on a store of local files (store.LocalFiles), no
// folder remains either (an empty versions/<id>/ left by a failed upload
// is debris every later listing of the folder walks into).
func noFolderLeft(t *testing.T, s store.Store, dir, what string) {
	t.Helper()
	if err := s.List(t.Context(), dir+"/", func(oi store.ObjectInfo) error {
		t.Errorf("%s left %s", what, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if lf, ok := s.(store.LocalFiles); ok {
		if _, err := os.Lstat(lf.LocalPath(dir)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left the folder %s (%v)", what, lf.LocalPath(dir), err)
		}
	}
}

// testCreateNeverPartial polls Get, Stat and List while a large Create is in
// progress: each must see nothing or the whole object.
func testCreateNeverPartial(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "versions/0192/ducklake.duckdb"
	want := randomBytes(t, 8<<20)
	wantSum := sha256.Sum256(want)

	polled := make(chan struct{}) // closed after the first poll saw nothing
	var once sync.Once
	release := func() { once.Do(func() { close(polled) }) }
	defer release() // never leave the writer blocked, even on t.Fatal
	r := &chunkReader{data: want, chunk: 256 << 10, gate: polled, pause: 2 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- s.Create(ctx, key, r) }()

	var missing, whole int
	first := true
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			finished = true
		default:
		}
		rc, _, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotExist):
			missing++
		case err != nil:
			t.Fatalf("Get during Create: %v", err)
		default:
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("reading during Create: %v", err)
			}
			if len(got) != len(want) || sha256.Sum256(got) != wantSum {
				t.Fatalf("Get during Create saw %d bytes that are not the object (%d bytes)", len(got), len(want))
			}
			whole++
		}
		if info, err := s.Stat(ctx, key); err == nil && info.Size != int64(len(want)) {
			t.Fatalf("Stat during Create: size %d, want %d", info.Size, len(want))
		} else if err != nil && !errors.Is(err, store.ErrNotExist) {
			t.Fatalf("Stat during Create: %v", err)
		}
		var keys []string
		if err := s.List(ctx, "", func(oi store.ObjectInfo) error {
			keys = append(keys, oi.Key)
			if oi.Key == key && oi.Size != int64(len(want)) {
				return fmt.Errorf("List during Create: %s has %d bytes, want %d", key, oi.Size, len(want))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(keys) > 1 || (len(keys) == 1 && keys[0] != key) {
			t.Fatalf("List during Create = %q, want nothing or [%s]", keys, key)
		}
		if first {
			first = false
			if missing != 1 {
				t.Fatalf("the object was visible before its writer got past the first chunk")
			}
			release()
		}
		time.Sleep(time.Millisecond)
	}
	if missing == 0 {
		t.Errorf("never saw the object missing during Create: the test did not overlap the write")
	}
	got, _ := mustGet(t, s, key)
	if sha256.Sum256(got) != wantSum {
		t.Errorf("after Create, Get returned other bytes")
	}
	t.Logf("polls: %d saw nothing, %d saw the whole object", missing, whole)
}

func testSwapCreate(t *testing.T, s store.Store) {
	const key = "refs/heads/main"
	tok, err := s.Swap(t.Context(), key, store.NoToken, []byte("v1\n"))
	if err != nil {
		t.Fatalf("Swap(NoToken) on a missing key: %v", err)
	}
	if tok == store.NoToken {
		t.Errorf("Swap returned NoToken")
	}
	got, gtok := mustGet(t, s, key)
	if string(got) != "v1\n" {
		t.Errorf("Get = %q, want %q", got, "v1\n")
	}
	// The Token Swap returned and the one Get returned both allow the next Swap.
	if gtok != tok {
		t.Logf("note: Get's Token %q differs from Swap's %q", gtok, tok)
	}
	if _, err := s.Swap(t.Context(), key, tok, []byte("v2\n")); err != nil {
		t.Errorf("Swap with the Token Swap returned: %v", err)
	}
}

func testSwapReplace(t *testing.T, s store.Store) {
	const key = "refs/heads/main"
	mustSwap(t, s, key, store.NoToken, "v1\n")
	_, tok := mustGet(t, s, key)
	tok2, err := s.Swap(t.Context(), key, tok, []byte("v2\n"))
	if err != nil {
		t.Fatalf("Swap with Get's Token: %v", err)
	}
	got, gtok := mustGet(t, s, key)
	if string(got) != "v2\n" {
		t.Errorf("Get = %q, want %q", got, "v2\n")
	}
	if gtok == tok {
		t.Errorf("Token did not change when the content did: %q", tok)
	}
	if _, err := s.Swap(t.Context(), key, tok2, []byte("v3\n")); err != nil {
		t.Errorf("Swap with the Token the last Swap returned: %v", err)
	}
	if got, _ := mustGet(t, s, key); string(got) != "v3\n" {
		t.Errorf("Get = %q, want %q", got, "v3\n")
	}
}

func testSwapStale(t *testing.T, s store.Store) {
	const key = "refs/heads/main"
	tok1 := mustSwap(t, s, key, store.NoToken, "v1\n")
	mustSwap(t, s, key, tok1, "v2\n")
	_, err := s.Swap(t.Context(), key, tok1, []byte("v3\n"))
	wantErr(t, "Swap with a stale Token", err, store.ErrConflict)
	if err != nil && !strings.Contains(err.Error(), key) {
		t.Errorf("Swap error %q does not name the key %q", err, key)
	}
	if got, _ := mustGet(t, s, key); string(got) != "v2\n" {
		t.Errorf("after refused Swap, Get = %q, want %q", got, "v2\n")
	}
	_, err = s.Swap(t.Context(), key, store.Token("not-a-token-this-store-made"), []byte("v4\n"))
	wantErr(t, "Swap with a made-up Token", err, store.ErrConflict)
	if got, _ := mustGet(t, s, key); string(got) != "v2\n" {
		t.Errorf("after refused Swap, Get = %q, want %q", got, "v2\n")
	}
}

func testSwapNoTokenExisting(t *testing.T, s store.Store) {
	const key = "refs/tags/v1"
	mustSwap(t, s, key, store.NoToken, "a\n")
	_, err := s.Swap(t.Context(), key, store.NoToken, []byte("b\n"))
	wantErr(t, "Swap(NoToken) on an existing key", err, store.ErrConflict)
	if got, _ := mustGet(t, s, key); string(got) != "a\n" {
		t.Errorf("after refused Swap, Get = %q, want %q", got, "a\n")
	}
	// Also when the object was made by Create.
	mustCreate(t, s, "fdl.json", []byte("{}"))
	_, err = s.Swap(t.Context(), "fdl.json", store.NoToken, []byte(`{"x":1}`))
	wantErr(t, "Swap(NoToken) on a created key", err, store.ErrConflict)
	if got, _ := mustGet(t, s, "fdl.json"); string(got) != "{}" {
		t.Errorf("after refused Swap, Get = %q, want %q", got, "{}")
	}
}

func testSwapTokenMissing(t *testing.T, s store.Store) {
	const key = "refs/heads/gone"
	tok := mustSwap(t, s, key, store.NoToken, "v1\n")
	if err := s.Delete(t.Context(), key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err := s.Swap(t.Context(), key, tok, []byte("v2\n"))
	wantErr(t, "Swap with a Token on a deleted key", err, store.ErrConflict)
	_, _, err = s.Get(t.Context(), key)
	wantErr(t, "Get after refused Swap", err, store.ErrNotExist)
}

func testSwapCreated(t *testing.T, s store.Store) {
	const key = "fdl.json"
	mustCreate(t, s, key, []byte(`{"format":1}`))
	_, tok := mustGet(t, s, key)
	if _, err := s.Swap(t.Context(), key, tok, []byte(`{"format":2}`)); err != nil {
		t.Fatalf("Swap of a small Created object with Get's Token: %v", err)
	}
	if got, _ := mustGet(t, s, key); string(got) != `{"format":2}` {
		t.Errorf("Get = %q", got)
	}
}

func testSwapTooLarge(t *testing.T, s store.Store) {
	const key = "refs/heads/main"
	_, err := s.Swap(t.Context(), key, store.NoToken, make([]byte, store.MaxSwapSize+1))
	if err == nil {
		t.Fatalf("Swap of %d bytes succeeded, want an error", store.MaxSwapSize+1)
	}
	if errors.Is(err, store.ErrConflict) {
		t.Errorf("Swap too large = %v, want an error that is not ErrConflict", err)
	}
	_, _, err = s.Get(t.Context(), key)
	wantErr(t, "Get after refused Swap", err, store.ErrNotExist)
	// Exactly MaxSwapSize is fine, and can be swapped again with Get's Token.
	mustSwap(t, s, key, store.NoToken, string(make([]byte, store.MaxSwapSize)))
	_, tok := mustGet(t, s, key)
	mustSwap(t, s, key, tok, "small\n")
}

func testConcurrentCreate(t *testing.T, s store.Store) {
	const key = "versions/0192/version.json"
	for round := range 5 {
		key := fmt.Sprintf("%s.%d", key, round)
		errs := make([]error, Workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range Workers {
			wg.Go(func() {
				<-start
				data := bytes.Repeat([]byte(fmt.Sprintf("writer %02d;", i)), 1000)
				errs[i] = s.Create(t.Context(), key, bytes.NewReader(data))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: two Creates of %s succeeded: writers %d and %d", round, key, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrExist):
				t.Errorf("round %d: writer %d: %v, want ErrExist", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no Create of %s succeeded", round, key)
		}
		got, _ := mustGet(t, s, key)
		want := bytes.Repeat([]byte(fmt.Sprintf("writer %02d;", winner)), 1000)
		if !bytes.Equal(got, want) {
			t.Errorf("round %d: object holds %.20q…, want the winner %d's content", round, got, winner)
		}
	}
}

func testConcurrentSwap(t *testing.T, s store.Store) {
	const key = "refs/heads/main"
	tok := store.NoToken // round 0 races to create the ref
	for round := range Rounds {
		toks := make([]store.Token, Workers)
		errs := make([]error, Workers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range Workers {
			wg.Go(func() {
				<-start
				toks[i], errs[i] = s.Swap(t.Context(), key, tok, []byte(fmt.Sprintf("round %d writer %d\n", round, i)))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: two Swaps from one Token succeeded: writers %d and %d", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("round %d: writer %d: %v, want ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no Swap succeeded", round)
		}
		got, gtok := mustGet(t, s, key)
		if want := fmt.Sprintf("round %d writer %d\n", round, winner); string(got) != want {
			t.Fatalf("round %d: ref holds %q, want the winner's %q", round, got, want)
		}
		tok = toks[winner]
		if round%2 == 1 {
			tok = gtok // alternate between Swap's and Get's Token
		}
	}
}

func testList(t *testing.T, s store.Store) {
	keys := []string{
		"x0", "x-1", "x/1", "x/2/a", "x/10",
		"fdl.json", "HEAD", "refs/heads/main", "refs/heads/main-2", "refs/tags/v1",
		"versions/0192aa/version.json", "versions/0192aa/dataset.json",
		"versions/0192ab/version.json", "versions/0193/version.json",
		"data/main/t/f.parquet",
	}
	for i, k := range keys {
		if strings.HasPrefix(k, "refs/") {
			mustSwap(t, s, k, store.NoToken, strings.Repeat("r", i))
		} else {
			mustCreate(t, s, k, []byte(strings.Repeat("c", i)))
		}
	}
	sizes := map[string]int64{}
	for i, k := range keys {
		sizes[k] = int64(i)
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted) // byte order: "HEAD" < "data/…", "x-1" < "x/1" < "x0"
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", sorted},
		{"x", []string{"x-1", "x/1", "x/10", "x/2/a", "x0"}},
		{"x/", []string{"x/1", "x/10", "x/2/a"}},
		{"x/1", []string{"x/1", "x/10"}},
		{"x/2/a", []string{"x/2/a"}},
		{"x/2/a/", nil},
		{"refs/heads/", []string{"refs/heads/main", "refs/heads/main-2"}},
		{"refs/heads/main", []string{"refs/heads/main", "refs/heads/main-2"}},
		{"versions/0192", []string{"versions/0192aa/dataset.json", "versions/0192aa/version.json", "versions/0192ab/version.json"}},
		{"versions/0192aa/", []string{"versions/0192aa/dataset.json", "versions/0192aa/version.json"}},
		{"versions/01", []string{"versions/0192aa/dataset.json", "versions/0192aa/version.json", "versions/0192ab/version.json", "versions/0193/version.json"}},
		{"H", []string{"HEAD"}},
		{"HEADS", nil},
		{"x/2/ab", nil},
		{"refs/heads/main-2/", nil},
		{"h", nil},
		{"zzz", nil},
		{"nope/deeper/", nil},
	}
	for _, c := range cases {
		var got []string
		err := s.List(t.Context(), c.prefix, func(oi store.ObjectInfo) error {
			got = append(got, oi.Key)
			if oi.Size != sizes[oi.Key] {
				t.Errorf("List(%q): %s has size %d, want %d", c.prefix, oi.Key, oi.Size, sizes[oi.Key])
			}
			if oi.ModTime.IsZero() {
				t.Errorf("List(%q): %s has no ModTime", c.prefix, oi.Key)
			}
			return nil
		})
		if err != nil {
			t.Errorf("List(%q): %v", c.prefix, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
		// A store that lists keys alone gives the same keys, once each.
		if kl, ok := s.(store.KeyLister); ok {
			var keys []string
			if err := kl.ListKeys(t.Context(), c.prefix, func(k []byte) error { keys = append(keys, string(k)); return nil }); err != nil {
				t.Errorf("ListKeys(%q): %v", c.prefix, err)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, c.want) {
				t.Errorf("ListKeys(%q) = %q, want %q", c.prefix, keys, c.want)
			}
		}
	}
}

func testListStops(t *testing.T, s store.Store) {
	for _, k := range []string{"a", "b", "c"} {
		mustCreate(t, s, k, nil)
	}
	stop := errors.New("stop")
	var calls []string
	err := s.List(t.Context(), "", func(oi store.ObjectInfo) error {
		calls = append(calls, oi.Key)
		if oi.Key == "b" {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("List returned %v, want fn's error", err)
	}
	if !slices.Equal(calls, []string{"a", "b"}) {
		t.Errorf("List called fn for %q, want [a b]", calls)
	}
}

func testListHidesInternals(t *testing.T, s store.Store) {
	ctx := t.Context()
	// Leave behind whatever a store uses internally: locks of swapped,
	// refused and deleted refs, and the debris of failed and refused Creates.
	tok := mustSwap(t, s, "refs/heads/main", store.NoToken, "v1\n")
	mustSwap(t, s, "refs/heads/main", tok, "v2\n")
	_, _ = s.Swap(ctx, "refs/heads/main", tok, []byte("v3\n"))
	mustSwap(t, s, "refs/heads/gone", store.NoToken, "x\n")
	if err := s.Delete(ctx, "refs/heads/gone"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "versions/1/version.json", []byte("{}"))
	_ = s.Create(ctx, "versions/1/version.json", strings.NewReader("again"))
	_ = s.Create(ctx, "versions/2/ducklake.duckdb", io.MultiReader(strings.NewReader("part"), &failingReader{err: errReader}))
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_ = s.Create(cctx, "versions/3/ducklake.duckdb", strings.NewReader("cancelled"))

	var got []string
	if err := s.List(ctx, "", func(oi store.ObjectInfo) error {
		got = append(got, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"refs/heads/main", "versions/1/version.json"}
	if !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	const key = "versions/0192/ducklake.duckdb"
	if err := s.Delete(ctx, "never/was"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	mustCreate(t, s, key, []byte("catalog"))
	mustCreate(t, s, "versions/0192/version.json", []byte("record"))
	if err := s.Delete(ctx, key); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, _, err := s.Get(ctx, key)
	wantErr(t, "Get after Delete", err, store.ErrNotExist)
	_, err = s.Stat(ctx, key)
	wantErr(t, "Stat after Delete", err, store.ErrNotExist)
	if err := s.Delete(ctx, key); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	// Its neighbour is untouched.
	if got, _ := mustGet(t, s, "versions/0192/version.json"); string(got) != "record" {
		t.Errorf("neighbour holds %q after Delete, want %q", got, "record")
	}
	// The key can be created again, and a deleted swapped key swapped anew.
	mustCreate(t, s, key, []byte("again"))
	if got, _ := mustGet(t, s, key); string(got) != "again" {
		t.Errorf("Get = %q, want %q", got, "again")
	}
	mustSwap(t, s, "refs/heads/x", store.NoToken, "1\n")
	if err := s.Delete(ctx, "refs/heads/x"); err != nil {
		t.Fatal(err)
	}
	mustSwap(t, s, "refs/heads/x", store.NoToken, "2\n")
	// Deleting everything leaves nothing listed.
	for _, k := range []string{key, "versions/0192/version.json", "refs/heads/x"} {
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if err := s.List(ctx, "", func(store.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("List after deleting everything found %d objects", n)
	}
}

// InvalidKeys are keys every store must refuse with store.ErrInvalidKey.
var InvalidKeys = []string{
	"", "/", "/a", "a/", "a//b", ".", "..", "./a", "a/./b", "../a", "a/..", "a/../b",
	`a\b`, "a\x00b", "a\nb", "a\tb", "a\x7fb", "a\xffb",
	"refs/heads/main.lock", "a.lock/b", ".lock",
	".tmp-1", "a/.tmp-x/b", "versions/.tmp-abc",
	strings.Repeat("k", store.MaxKeyLen+1),
}

func testInvalidKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, key := range InvalidKeys {
		if err := store.CheckKey(key); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrInvalidKey", key, err)
		}
		_, _, err := s.Get(ctx, key)
		wantErr(t, fmt.Sprintf("Get(%q)", key), err, store.ErrInvalidKey)
		_, err = s.Stat(ctx, key)
		wantErr(t, fmt.Sprintf("Stat(%q)", key), err, store.ErrInvalidKey)
		err = s.Create(ctx, key, strings.NewReader("x"))
		wantErr(t, fmt.Sprintf("Create(%q)", key), err, store.ErrInvalidKey)
		_, err = s.Swap(ctx, key, store.NoToken, []byte("x"))
		wantErr(t, fmt.Sprintf("Swap(%q)", key), err, store.ErrInvalidKey)
		err = s.Delete(ctx, key)
		wantErr(t, fmt.Sprintf("Delete(%q)", key), err, store.ErrInvalidKey)
	}
	for _, prefix := range []string{"/", "/a", "a//", "../", "a/../b", `a\`, "a\x00", "x.lock/", ".tmp-1/"} {
		err := s.List(ctx, prefix, func(store.ObjectInfo) error { return nil })
		wantErr(t, fmt.Sprintf("List(%q)", prefix), err, store.ErrInvalidKey)
	}
	// Nothing got written.
	n := 0
	if err := s.List(ctx, "", func(store.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("after invalid writes, List found %d objects", n)
	}
	// Valid keys that look odd.
	for _, key := range []string{"a.lockx", "lock", "a/.hidden", "a..b", "...", "tmp-1", ".tmp", "ü/ß", "a b"} {
		if err := store.CheckKey(key); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", key, err)
		}
		mustCreate(t, s, key, []byte(key))
	}
}

func testCancelled(t *testing.T, s store.Store) {
	mustSwap(t, s, "refs/heads/main", store.NoToken, "v1\n")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := s.Get(ctx, "refs/heads/main"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled", err)
	}
	if err := s.Create(ctx, "a", strings.NewReader("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := s.Swap(ctx, "refs/heads/main", store.NoToken, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Swap with a cancelled context = %v, want context.Canceled", err)
	}
	if err := s.List(ctx, "", func(store.ObjectInfo) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v, want context.Canceled", err)
	}
	if _, _, err := s.Get(t.Context(), "a"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("cancelled Create left an object: Get = %v", err)
	}
	if got, _ := mustGet(t, s, "refs/heads/main"); string(got) != "v1\n" {
		t.Errorf("cancelled Swap changed the ref to %q", got)
	}
}

func testLocation(t *testing.T, s store.Store) {
	root := s.Location("")
	loc := s.Location("refs/heads/main")
	if root == "" || loc == "" || root == loc {
		t.Fatalf("Location(\"\") = %q, Location(refs/heads/main) = %q: want two different non-empty locations", root, loc)
	}
	if !strings.HasPrefix(loc, root) || !strings.HasSuffix(loc, "main") {
		t.Errorf("Location(refs/heads/main) = %q, want it under %q and ending in main", loc, root)
	}
}

// helpers

func mustCreate(t *testing.T, s store.Store, key string, data []byte) {
	t.Helper()
	if err := s.Create(t.Context(), key, bytes.NewReader(data)); err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
}

func mustSwap(t *testing.T, s store.Store, key string, old store.Token, data string) store.Token {
	t.Helper()
	tok, err := s.Swap(t.Context(), key, old, []byte(data))
	if err != nil {
		t.Fatalf("Swap(%q): %v", key, err)
	}
	return tok
}

func mustGet(t *testing.T, s store.Store, key string) ([]byte, store.Token) {
	t.Helper()
	b, tok, err := store.ReadAll(t.Context(), s, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return b, tok
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// chunkReader returns data chunk bytes at a time. If gate is set it waits for
// gate to close after the first chunk, and then pauses between chunks.
type chunkReader struct {
	data  []byte
	chunk int
	gate  <-chan struct{}
	pause time.Duration
	n     int // chunks returned
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.n > 0 && r.gate != nil {
		<-r.gate
		time.Sleep(r.pause)
	}
	r.n++
	n := copy(p, r.data[:min(r.chunk, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

type failingReader struct{ err error }

func (r *failingReader) Read([]byte) (int, error) { return 0, r.err }
