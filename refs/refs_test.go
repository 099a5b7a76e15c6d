package refs

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/memory"
	"github.com/fdl-dev/fdl/version"
)

func TestCheckShort(t *testing.T) {
	good := []string{"main", "release/2025", "2025-final", "nightly_01", "naïve", "abc", "2025", "face-off"}
	for _, s := range good {
		if err := CheckShort(s); err != nil {
			t.Errorf("CheckShort(%q) = %v, want ok", s, err)
		}
	}
	bad := []string{"", "a..b", "/main", "main/", "a//b", "main.lock", "a/b.lock/c", "with space", "tab\there", "ctl\x01", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`, "a@1", ".hidden", "a/.b", "end.", "HEAD", "refs/heads/main", "-x", "--", "01a229970000700080000000000000ff", "01a22997-0000-7000-8000-0000000000ff",
		// not UTF-8: no store key or ref log entry can hold it (FuzzCheckShort found "\x8a0" accepted)
		"\x8a0", "main\xff", "caf\xc3"}
	for _, s := range bad {
		if err := CheckShort(s); !errors.Is(err, ErrInvalidName) {
			t.Errorf("CheckShort(%q) = %v, want ErrInvalidName", s, err)
		}
	}
}

func newID(t *testing.T) version.ID {
	id, err := version.NewID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestReadCorruptAndTombstone(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	r := New(st, nil, Options{})
	n := Name("refs/heads/main")
	if _, err := r.Read(ctx, n); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing ref: %v", err)
	}
	for _, content := range []string{"", "garbage\n", "0192f0c1\n", newID(t).String(), newID(t).String() + "\n\n"} {
		st2 := memory.New()
		if _, err := st2.Swap(ctx, string(n), store.NoToken, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if _, err := New(st2, nil, Options{}).Read(ctx, n); !errors.Is(err, ErrCorrupt) {
			t.Errorf("content %q: err %v, want ErrCorrupt", content, err)
		}
	}
	id := newID(t)
	if _, err := r.Create(ctx, n, id, "test", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, n, newID(t), "test", nil); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	cur, err := r.Read(ctx, n)
	if err != nil || cur.ID != id {
		t.Fatalf("read %v %v", cur, err)
	}
	if _, err := r.DeleteBranch(ctx, n); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(ctx, n); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted ref: %v", err)
	}
	good, bad, err := r.List(ctx, "refs/")
	if err != nil || len(good) != 0 || len(bad) != 0 {
		t.Fatalf("list after delete: %v %v %v", good, bad, err)
	}
	// A deleted ref can be created again.
	if _, err := r.Create(ctx, n, id, "test", nil); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateOneWinner(t *testing.T) {
	ctx := context.Background()
	r := New(memory.New(), nil, Options{})
	n := Name("refs/heads/main")
	if _, err := r.Create(ctx, n, newID(t), "test", nil); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 20; round++ {
		cur, err := r.Read(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins, conflicts := 0, 0
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := r.swap(ctx, n, cur.Token, newID(t))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
				case errors.Is(err, ErrConflict):
					conflicts++
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins != 1 || conflicts != 15 {
			t.Fatalf("round %d: %d wins, %d conflicts", round, wins, conflicts)
		}
	}
}

// A store that reports a conflict for a write that in fact succeeded: the
// ref holds our id, so Update reports success (STORES.md ambiguity rule).
type lyingStore struct{ store.Store }

func (l lyingStore) Swap(ctx context.Context, key string, old store.Token, data []byte) (store.Token, error) {
	if _, err := l.Store.Swap(ctx, key, old, data); err != nil {
		return "", err
	}
	return "", store.ErrConflict
}

func TestUpdateAmbiguousConflictWon(t *testing.T) {
	ctx := context.Background()
	r := New(lyingStore{memory.New()}, nil, Options{})
	n := Name("refs/heads/main")
	id := newID(t)
	if raced, err := r.swap(ctx, n, store.NoToken, id); err != nil || !raced {
		t.Fatalf("update whose write succeeded: %v (raced %v, want true)", err, raced)
	}
}

func TestHead(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	st.Swap(ctx, HeadKey, store.NoToken, HeadContent("refs/heads/main"))
	if n, err := New(st, nil, Options{}).Head(ctx); err != nil || n != "refs/heads/main" {
		t.Fatalf("head %q %v", n, err)
	}
	st2 := memory.New()
	st2.Swap(ctx, HeadKey, store.NoToken, []byte("refs/heads/main\n"))
	if _, err := New(st2, nil, Options{}).Head(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad head: %v", err)
	}
}
