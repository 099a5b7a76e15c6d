// Package memory is a store.Store held in process memory, for tests, and
// the mem://NAME stores Open returns through it (Backend).
package memory

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
)

// Store is a store.Store held in process memory, for tests. It has the same
// semantics as the other stores (create-only Create, compare-and-swap Swap,
// the same key rules and store.MaxSwapSize); its Tokens are "m<counter>", a
// new one for every write, so even rewriting the same bytes changes the
// Token. It never fails on its own; wrap it in storetest.Faulty to inject
// faults.
type Store struct {
	name string

	mu      sync.Mutex
	objects map[string]memObject
	next    uint64 // last Token number given out
}

type memObject struct {
	data    []byte
	tok     store.Token
	modTime time.Time
}

var _ store.Store = (*Store)(nil)

var memSeq atomic.Uint64

// New returns an empty in-memory store with a fresh name "anonymous-<n>"
// (for Location only: store.Open("mem://…") never returns it).
func New() *Store {
	return newStore("anonymous-" + strconv.FormatUint(memSeq.Add(1), 10))
}

func newStore(name string) *Store {
	return &Store{name: name, objects: make(map[string]memObject)}
}

// Location returns "mem://<name>/<key>", or "mem://<name>" for key "".
func (m *Store) Location(key string) string {
	if key == "" {
		return "mem://" + m.name
	}
	return "mem://" + m.name + "/" + key
}

// Close does nothing; the objects stay (a named store is shared by store.Open).
func (m *Store) Close() error { return nil }

// Get returns a reader over key's bytes (shared, not copied: objects are never
// modified in place) and its Token. Errors: store.ErrNotExist, store.ErrInvalidKey.
func (m *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.Token, error) {
	if err := store.Begin(ctx, key); err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	o, ok := m.objects[key]
	m.mu.Unlock()
	if !ok {
		return nil, "", fmt.Errorf("%s: %w", key, store.ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(o.data)), o.tok, nil
}

// Stat returns key's size in bytes and the time it was written.
// Errors: store.ErrNotExist, store.ErrInvalidKey.
func (m *Store) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := store.Begin(ctx, key); err != nil {
		return store.ObjectInfo{}, err
	}
	m.mu.Lock()
	o, ok := m.objects[key]
	m.mu.Unlock()
	if !ok {
		return store.ObjectInfo{}, fmt.Errorf("%s: %w", key, store.ErrNotExist)
	}
	return store.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// Create reads r to the end, then stores it under key if key holds no
// object. Errors: store.ErrExist (nothing written), store.ErrInvalidKey, r's error or
// ctx's error (nothing written).
func (m *Store) Create(ctx context.Context, key string, r io.Reader) error {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	data, err := io.ReadAll(store.ContextReader(ctx, r))
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; ok {
		return fmt.Errorf("%s: %w", key, store.ErrExist)
	}
	m.put(key, data)
	return nil
}

// Swap is the compare-and-swap described on Store. Errors: store.ErrConflict
// (nothing written), store.ErrInvalidKey, an error if len(data) > store.MaxSwapSize.
func (m *Store) Swap(ctx context.Context, key string, old store.Token, data []byte) (store.Token, error) {
	if err := store.Begin(ctx, key); err != nil {
		return "", err
	}
	if len(data) > store.MaxSwapSize {
		return "", fmt.Errorf("%s: swap of %d bytes: larger than %d", key, len(data), store.MaxSwapSize)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if ok != (old != store.NoToken) || (ok && o.tok != old) {
		return "", fmt.Errorf("%s: %w", key, store.ErrConflict)
	}
	return m.put(key, bytes.Clone(data)), nil
}

// put stores data (owned by the store from now on) under key; m.mu is held.
func (m *Store) put(key string, data []byte) store.Token {
	m.next++
	tok := store.Token("m" + strconv.FormatUint(m.next, 10))
	m.objects[key] = memObject{data: data, tok: tok, modTime: time.Now()}
	return tok
}

// List calls fn, in lexical key order, for the objects whose key starts with
// prefix as they were when List began. Errors: store.ErrInvalidKey for a bad
// prefix, fn's error, ctx's error.
func (m *Store) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.CheckPrefix(prefix); err != nil {
		return err
	}
	m.mu.Lock()
	infos := make([]store.ObjectInfo, 0, len(m.objects))
	for k, o := range m.objects {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, store.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
		}
	}
	m.mu.Unlock()
	return store.EmitSorted(ctx, infos, fn)
}

// Delete removes key. A missing key is not an error. Errors: store.ErrInvalidKey.
func (m *Store) Delete(ctx context.Context, key string) error {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.objects, key)
	m.mu.Unlock()
	return nil
}

// Backend is the mem:// kind of store for store.Register: mem://NAME opens
// the process-wide store called NAME, made empty on first use; every Open
// of the same NAME returns the same *Store. It has no form in Open's
// messages (a store for tests).
func Backend() store.Backend {
	return store.Backend{Schemes: []string{"mem"}, Open: openURL}
}

var (
	namedMu sync.Mutex
	named   = map[string]*Store{}
)

// openURL opens mem://NAME, making the store on first use.
func openURL(_ context.Context, u *url.URL, raw string) (store.Store, error) {
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("store URL %q: use mem://NAME", raw)
	}
	namedMu.Lock()
	defer namedMu.Unlock()
	m, ok := named[u.Host]
	if !ok {
		m = newStore(u.Host)
		named[u.Host] = m
	}
	return m, nil
}
