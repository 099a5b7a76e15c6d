package refs

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/memory"
	"github.com/fdl-dev/fdl/version"
)

// chain is an in-memory Records: versions 1..n on one first-parent line,
// plus side versions that branch off it.
type chain struct {
	recs map[version.ID]*version.Record
	ids  []version.ID
	line []version.ID // line[i] has seq i+1
}

func newChain(t *testing.T, n int) *chain {
	c := &chain{recs: map[version.ID]*version.Record{}}
	var parent version.ID
	for i := 1; i <= n; i++ {
		c.line = append(c.line, c.add(t, parent, int64(i)))
		parent = c.line[len(c.line)-1]
	}
	return c
}

func (c *chain) add(t *testing.T, parent version.ID, seq int64) version.ID {
	id, err := version.NewIDAfter(parent)
	if err != nil {
		t.Fatal(err)
	}
	rec := &version.Record{ID: id, Seq: seq, Parents: []version.ID{}}
	if parent != "" {
		rec.Parents = []version.ID{parent}
	}
	c.recs[id] = rec
	c.ids = append(c.ids, id)
	sort.Slice(c.ids, func(i, j int) bool { return c.ids[i] < c.ids[j] })
	return id
}

func (c *chain) Record(_ context.Context, id version.ID) (*version.Record, error) {
	if rec, ok := c.recs[id]; ok {
		return rec, nil
	}
	return nil, fmt.Errorf("version %s: %w", id, ErrUnknownRev)
}

func (c *chain) Walk(ctx context.Context, id version.ID, fn func(*version.Record) (bool, error)) error {
	for id != "" {
		rec, err := c.Record(ctx, id)
		if err != nil {
			return err
		}
		if more, err := fn(rec); err != nil || !more {
			return err
		}
		id = rec.Parent()
	}
	return nil
}

func (c *chain) IDsWithPrefix(_ context.Context, hex string) ([]version.ID, error) {
	var out []version.ID
	for _, id := range c.ids {
		if strings.HasPrefix(id.Hex(), hex) {
			out = append(out, id)
		}
	}
	return out, nil
}

func newManager(t *testing.T, st store.Store, c *chain) *Manager {
	t.Helper()
	if _, err := st.Swap(context.Background(), HeadKey, store.NoToken, HeadContent("refs/heads/main")); err != nil {
		t.Fatal(err)
	}
	return New(st, c, Options{Where: "mem://test", Actor: func() string { return "tester" }})
}

// TestUpdateWritesLogThenRef checks the one move: a refused check writes
// nothing; a move writes its entry and the ref; a lost compare-and-swap
// leaves neither the move nor its entry.
func TestUpdateWritesLogThenRef(t *testing.T) {
	ctx := context.Background()
	c := newChain(t, 3)
	st := memory.New()
	m := newManager(t, st, c)
	n := Name("refs/heads/main")
	refused := errors.New("refused by the caller")
	if _, err := m.Update(ctx, n, func(context.Context, Ref, error) (Move, error) { return Move{}, refused }); !errors.Is(err, refused) {
		t.Fatalf("refused check: %v", err)
	}
	if entries, _, _ := m.Log(ctx, ""); len(entries) != 0 {
		t.Fatalf("a refused move wrote %d log entries", len(entries))
	}
	var steps []string
	m.o.Step = func(s string) { steps = append(steps, s) }
	if _, err := m.Update(ctx, n, func(_ context.Context, cur Ref, err error) (Move, error) {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("read of a new ref: %v", err)
		}
		return Move{To: c.line[0], Action: ActionPush, Why: "first"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ","); got != "push:reflog,push:ref" {
		t.Errorf("steps %s", got)
	}
	entries, bad, err := m.Log(ctx, n)
	if err != nil || len(bad) != 0 || len(entries) != 1 || entries[0].New != c.line[0] || entries[0].Old != "" || entries[0].Author != "tester" || entries[0].Action != ActionPush {
		t.Fatalf("log after a push: %+v %v %v", entries, bad, err)
	}
	// Another writer moves the ref inside the check: the swap loses, the
	// entry goes.
	_, err = m.Update(ctx, n, func(ctx context.Context, cur Ref, err error) (Move, error) {
		if _, serr := st.Swap(ctx, string(n), cur.Token, []byte(string(c.line[2])+"\n")); serr != nil {
			t.Fatal(serr)
		}
		return Move{To: c.line[1], Action: ActionForward}, nil
	})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Now != c.line[2] {
		t.Fatalf("lost swap: %v", err)
	}
	if entries, _, _ := m.Log(ctx, n); len(entries) != 1 {
		t.Fatalf("a lost move left its entry: %d entries", len(entries))
	}
}

func TestMoveBranch(t *testing.T) {
	ctx := context.Background()
	c := newChain(t, 4)
	m := newManager(t, memory.New(), c)
	if _, err := m.Create(ctx, "refs/heads/main", c.line[1], "created", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.MoveBranch(ctx, "nosuch", "main", MoveOptions{}); !errors.As(err, new(*MissingBranchError)) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing branch: %v", err)
	}
	res, err := m.MoveBranch(ctx, "main", string(c.line[3]), MoveOptions{})
	if err != nil || res.Backwards || res.Old != c.line[1] || res.New != c.line[3] {
		t.Fatalf("forward: %+v %v", res, err)
	}
	if res, err := m.MoveBranch(ctx, "main", string(c.line[3]), MoveOptions{}); err != nil || !res.UpToDate {
		t.Fatalf("up to date: %+v %v", res, err)
	}
	_, err = m.MoveBranch(ctx, "main", "main~3", MoveOptions{})
	var mr *MoveRefusedError
	if !errors.As(err, &mr) || !errors.Is(err, ErrRefused) || mr.Undone != 3 {
		t.Fatalf("back without Backwards: %v", err)
	}
	checked := errors.New("out of retention")
	if _, err := m.MoveBranch(ctx, "main", "main~3", MoveOptions{Backwards: true, Check: func(context.Context, version.ID, *version.Record) error { return checked }}); !errors.Is(err, checked) {
		t.Fatalf("caller's check: %v", err)
	}
	res, err = m.MoveBranch(ctx, "main", "main~3", MoveOptions{Backwards: true, Why: "bad loads"})
	if err != nil || !res.Backwards || len(res.Undone) != 3 || res.Undone[0] != c.line[3] {
		t.Fatalf("back: %+v %v", res, err)
	}
	entries, _, _ := m.LogOf(ctx, "main")
	if len(entries) != 3 || entries[0].Action != ActionMoveBack || entries[0].Why != "bad loads" || entries[1].Action != ActionForward || entries[2].Action != ActionCreate {
		t.Fatalf("log: %+v", entries)
	}
	// A damaged ref is replaced only with Backwards, logged as a repair.
	st := m.st
	cur, _ := m.Read(ctx, "refs/heads/main")
	if _, err := st.Swap(ctx, "refs/heads/main", cur.Token, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.MoveBranch(ctx, "main", string(c.line[2]), MoveOptions{}); !errors.As(err, new(*CorruptError)) {
		t.Fatalf("damaged without Backwards: %v", err)
	}
	res, err = m.MoveBranch(ctx, "main", string(c.line[2]), MoveOptions{Backwards: true})
	if err != nil || res.Old != "" || res.New != c.line[2] {
		t.Fatalf("repair: %+v %v", res, err)
	}
	if entries, _, _ := m.LogOf(ctx, "refs/heads/main"); entries[0].Action != ActionRepair || entries[0].Old != "" {
		t.Fatalf("repair entry: %+v", entries[0])
	}
	if _, _, err := m.LogOf(ctx, "nosuch"); !errors.As(err, new(*NoLogError)) {
		t.Fatalf("log of a ref that never moved: %v", err)
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	c := newChain(t, 4)
	m := newManager(t, memory.New(), c)
	if _, err := m.Resolve(ctx, "HEAD"); !errors.As(err, new(*NoVersionYetError)) {
		t.Fatalf("HEAD before the first version: %v", err)
	}
	if _, err := m.Create(ctx, "refs/heads/main", c.line[3], "created", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, "refs/tags/v1", c.line[0], "created", nil); err != nil {
		t.Fatal(err)
	}
	for rev, want := range map[string]version.ID{
		"HEAD": c.line[3], "main": c.line[3], "refs/heads/main": c.line[3], "main~2": c.line[1], "main~1~1": c.line[1],
		"main@2": c.line[1], "@3": c.line[2], "main@3~1": c.line[1], "v1": c.line[0], string(c.line[2]): c.line[2],
		strings.ToUpper(c.line[2].Hex()): c.line[2],
	} {
		got, err := m.Resolve(ctx, rev)
		if err != nil || got.ID != want {
			t.Errorf("Resolve(%q) = %v, %v; want %s", rev, got.ID, err, want)
		}
	}
	// A full name that is no store key names nothing (FuzzResolve found
	// "refs/." failing with the store's invalid key error).
	for _, rev := range []string{"main~4", "main@9", "v1@1", "nosuch", "zz", "main~x", "", "refs/.", "refs/heads/", "refs//x", "refs/heads/a\\b",
		// ~N suffixes whose sum wraps around to 0 named main itself.
		"main~9223372036854775807~9223372036854775807~2", "main~9223372036854775807~1"} {
		if _, err := m.Resolve(ctx, rev); !errors.Is(err, ErrUnknownRev) {
			t.Errorf("Resolve(%q): %v, want ErrUnknownRev", rev, err)
		}
	}
	if _, err := m.Resolve(ctx, "nosuch"); !errors.As(err, new(*NoSuchRevError)) {
		t.Errorf("a name nothing has: %v", err)
	}
	// Ids minted in one millisecond share their first digits: a short
	// prefix is ambiguous, Abbrev is long enough to tell them apart.
	a, err := m.Abbrev(ctx, c.ids...)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range c.ids {
		s := a.Short(id)
		if seen[s] {
			t.Fatalf("short id %s twice", s)
		}
		seen[s] = true
		if got, err := m.Resolve(ctx, s); err != nil || got.ID != id {
			t.Errorf("Resolve(short %s) = %v %v", s, got.ID, err)
		}
	}
	if _, err := m.Resolve(ctx, c.ids[0].Hex()[:4]); !errors.Is(err, ErrAmbiguousRev) {
		t.Errorf("a 4-digit prefix of ids made together: %v, want ErrAmbiguousRev", err)
	}
}

// TestNamesAreNFC: a ref name is in Unicode NFC, so "café" typed composed
// (NFC) and decomposed (NFD, as some keyboards and file systems give it)
// cannot be two refs that print alike: the NFD name is refused at
// creation, naming the NFC spelling, and a revision typed in NFD finds the
// NFC ref.
func TestNamesAreNFC(t *testing.T) {
	ctx := context.Background()
	c := newChain(t, 2)
	m := newManager(t, memory.New(), c)
	nfc, nfd := "café", "cafe\u0301"
	if err := CheckShort(nfd); !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), "NFC") || !strings.Contains(err.Error(), nfc) {
		t.Fatalf("CheckShort(NFD) = %v, want a refusal naming the NFC form", err)
	}
	if _, err := Branch(nfd); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("Branch(NFD) = %v", err)
	}
	n, err := Branch(nfc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, n, c.line[1], "created", nil); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []string{nfc, nfd} {
		res, err := m.Resolve(ctx, rev)
		if err != nil || res.Ref != n || res.ID != c.line[1] {
			t.Fatalf("Resolve(%q) = %+v, %v; want branch %s", rev, res, err, n)
		}
	}
	if res, err := m.Resolve(ctx, nfd+"~1"); err != nil || res.ID != c.line[0] {
		t.Fatalf("Resolve(NFD~1) = %+v, %v; want %s", res, err, c.line[0])
	}
}

// TestSameMoveAtOnceLoggedOnce: two writers make the same move (main from
// one version to the next) at once; the second's compare-and-swap loses
// to the first's, finds the ref where it wanted it and succeeds, and the
// log holds one entry for the one move. A retried write of one writer
// (its swap reported a conflict although it succeeded, and no other
// entry of that move exists) keeps its entry.
func TestSameMoveAtOnceLoggedOnce(t *testing.T) {
	ctx := context.Background()
	c := newChain(t, 3)
	st := memory.New()
	a := newManager(t, st, c)
	b := New(st, c, Options{Where: "mem://test", Actor: func() string { return "other" }})
	n := Name("refs/heads/main")
	if _, err := a.Update(ctx, n, func(context.Context, Ref, error) (Move, error) {
		return Move{To: c.line[0], Action: ActionPush}, nil
	}); err != nil {
		t.Fatal(err)
	}
	forward := func(context.Context, Ref, error) (Move, error) {
		return Move{To: c.line[1], Action: ActionForward}, nil
	}
	// a has read the ref and written its entry; b makes the same move whole
	// before a's swap.
	a.o.Step = func(s string) {
		if s == string(ActionForward)+":ref" {
			a.o.Step = nil
			if _, err := b.Update(ctx, n, forward); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := a.Update(ctx, n, forward); err != nil {
		t.Fatalf("the same move as another writer's, at once: %v", err)
	}
	entries, _, err := a.Log(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	moves := 0
	for _, e := range entries {
		if e.Action == ActionForward {
			moves++
			if e.Author != "other" {
				t.Errorf("the entry kept is %s's, want the writer that moved the ref: %+v", e.Author, entries)
			}
		}
	}
	if moves != 1 {
		t.Fatalf("one move logged %d times: %+v", moves, entries)
	}

	// A write that succeeded but was reported as a conflict (a retried
	// request): the ref holds the target, no other entry has the move.
	cur, err := a.Read(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Swap(ctx, string(n), cur.Token, []byte(string(c.line[2])+"\n")); err != nil {
		t.Fatal(err)
	}
	key, err := a.appendLog(ctx, n, c.line[1], Move{To: c.line[2], Action: ActionForward})
	if err != nil {
		t.Fatal(err)
	}
	a.dropTwin(ctx, n, key, c.line[1], Move{To: c.line[2], Action: ActionForward})
	if _, err := st.Stat(ctx, key); err != nil {
		t.Fatalf("the only entry of a retried write was removed: %v", err)
	}
}
