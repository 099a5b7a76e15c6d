package storetest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/fdl-dev/fdl/internal/store"
)

// Operation names passed to Faulty's hooks, one per Store method.
const (
	OpGet    = "get"
	OpStat   = "stat"
	OpCreate = "create"
	OpSwap   = "swap"
	OpList   = "list"
	OpDelete = "delete"
)

// ErrInjected is a ready-made error for Faulty's hooks to return.
var ErrInjected = errors.New("storetest: injected fault")

// Faulty wraps a Store and injects faults, for crash tests: "the process
// died before this write" (FailAt) and "the write happened but the client saw
// an error" (FailAfter). With both hooks nil it behaves exactly like Store.
// Hooks may be called from several goroutines at once. Location and Close
// always pass through.
type Faulty struct {
	// Store is the wrapped store.
	Store store.Store

	// FailAt, if set, is called before each call with the operation (OpGet,
	// OpStat, OpCreate, OpSwap, OpList, OpDelete) and the key (the prefix for
	// OpList). A non-nil result is returned instead of calling Store.
	FailAt func(op, key string) error

	// FailAfter, if set, is called after a call to Store succeeded. A non-nil
	// result is returned instead of the call's results (the reader Get
	// opened is closed): the effect happened, the caller sees an error.
	FailAfter func(op, key string) error

	mu    sync.Mutex
	calls []string
}

var _ store.Store = (*Faulty)(nil)

// Calls returns the calls made so far, as "op key" strings in call order
// (including the ones a hook failed).
func (f *Faulty) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Faulty) before(op, key string) error {
	f.mu.Lock()
	f.calls = append(f.calls, op+" "+key)
	f.mu.Unlock()
	if f.FailAt != nil {
		return f.FailAt(op, key)
	}
	return nil
}

func (f *Faulty) after(op, key string) error {
	if f.FailAfter != nil {
		return f.FailAfter(op, key)
	}
	return nil
}

// Get implements store.Store.
func (f *Faulty) Get(ctx context.Context, key string) (io.ReadCloser, store.Token, error) {
	if err := f.before(OpGet, key); err != nil {
		return nil, "", err
	}
	r, tok, err := f.Store.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	if err := f.after(OpGet, key); err != nil {
		r.Close()
		return nil, "", err
	}
	return r, tok, nil
}

// Stat implements store.Store.
func (f *Faulty) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := f.before(OpStat, key); err != nil {
		return store.ObjectInfo{}, err
	}
	info, err := f.Store.Stat(ctx, key)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	if err := f.after(OpStat, key); err != nil {
		return store.ObjectInfo{}, err
	}
	return info, nil
}

// Create implements store.Store.
func (f *Faulty) Create(ctx context.Context, key string, r io.Reader) error {
	if err := f.before(OpCreate, key); err != nil {
		return err
	}
	if err := f.Store.Create(ctx, key, r); err != nil {
		return err
	}
	return f.after(OpCreate, key)
}

// Swap implements store.Store.
func (f *Faulty) Swap(ctx context.Context, key string, old store.Token, data []byte) (store.Token, error) {
	if err := f.before(OpSwap, key); err != nil {
		return "", err
	}
	tok, err := f.Store.Swap(ctx, key, old, data)
	if err != nil {
		return "", err
	}
	if err := f.after(OpSwap, key); err != nil {
		return "", err
	}
	return tok, nil
}

// List implements store.Store. FailAfter runs after the whole listing.
func (f *Faulty) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := f.before(OpList, prefix); err != nil {
		return err
	}
	if err := f.Store.List(ctx, prefix, fn); err != nil {
		return err
	}
	return f.after(OpList, prefix)
}

// Delete implements store.Store.
func (f *Faulty) Delete(ctx context.Context, key string) error {
	if err := f.before(OpDelete, key); err != nil {
		return err
	}
	if err := f.Store.Delete(ctx, key); err != nil {
		return err
	}
	return f.after(OpDelete, key)
}

// Location implements store.Store.
func (f *Faulty) Location(key string) string { return f.Store.Location(key) }

// Close implements store.Store.
func (f *Faulty) Close() error { return f.Store.Close() }

// FailOn returns a hook for FailAt or FailAfter that returns err for the
// n-th call (counting from 1) of op on a key starting with keyPrefix, and nil
// for every other call; n <= 0 fails every such call. It is safe for
// concurrent use.
func FailOn(op, keyPrefix string, n int, err error) func(op, key string) error {
	var mu sync.Mutex
	seen := 0
	return func(o, key string) error {
		if o != op || !strings.HasPrefix(key, keyPrefix) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		if n <= 0 || seen == n {
			return err
		}
		return nil
	}
}
