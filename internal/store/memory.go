package store

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is a Store held in process memory, for tests. It has the same
// semantics as the other stores (create-only Create, compare-and-swap Swap,
// the same key rules and MaxSwapSize); its Tokens are "m<counter>", a new one
// for every write, so even rewriting the same bytes changes the Token. It
// never fails on its own; wrap it in storetest.Faulty to inject faults.
type Memory struct {
	name string

	mu      sync.Mutex
	objects map[string]memObject
	next    uint64 // last Token number given out
}

type memObject struct {
	data    []byte
	tok     Token
	modTime time.Time
}

var _ Store = (*Memory)(nil)

var memSeq atomic.Uint64

// NewMemory returns an empty in-memory store with a fresh name
// "anonymous-<n>" (for Location only: Open("mem://…") never returns it).
func NewMemory() *Memory {
	return newMemory("anonymous-" + strconv.FormatUint(memSeq.Add(1), 10))
}

func newMemory(name string) *Memory {
	return &Memory{name: name, objects: make(map[string]memObject)}
}

// Location returns "mem://<name>/<key>", or "mem://<name>" for key "".
func (m *Memory) Location(key string) string {
	if key == "" {
		return "mem://" + m.name
	}
	return "mem://" + m.name + "/" + key
}

// Close does nothing; the objects stay (a named store is shared by Open).
func (m *Memory) Close() error { return nil }

// Get returns a reader over key's bytes (shared, not copied: objects are never
// modified in place) and its Token. Errors: ErrNotExist, ErrInvalidKey.
func (m *Memory) Get(ctx context.Context, key string) (io.ReadCloser, Token, error) {
	if err := begin(ctx, key); err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	o, ok := m.objects[key]
	m.mu.Unlock()
	if !ok {
		return nil, "", fmt.Errorf("%s: %w", key, ErrNotExist)
	}
	return io.NopCloser(bytes.NewReader(o.data)), o.tok, nil
}

// Stat returns key's size in bytes and the time it was written.
// Errors: ErrNotExist, ErrInvalidKey.
func (m *Memory) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := begin(ctx, key); err != nil {
		return ObjectInfo{}, err
	}
	m.mu.Lock()
	o, ok := m.objects[key]
	m.mu.Unlock()
	if !ok {
		return ObjectInfo{}, fmt.Errorf("%s: %w", key, ErrNotExist)
	}
	return ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// Create reads r to the end, then stores it under key if key holds no
// object. Errors: ErrExist (nothing written), ErrInvalidKey, r's error or
// ctx's error (nothing written).
func (m *Memory) Create(ctx context.Context, key string, r io.Reader) error {
	if err := begin(ctx, key); err != nil {
		return err
	}
	data, err := io.ReadAll(ctxReader{ctx, r})
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; ok {
		return fmt.Errorf("%s: %w", key, ErrExist)
	}
	m.put(key, data)
	return nil
}

// Swap is the compare-and-swap described on Store. Errors: ErrConflict
// (nothing written), ErrInvalidKey, an error if len(data) > MaxSwapSize.
func (m *Memory) Swap(ctx context.Context, key string, old Token, data []byte) (Token, error) {
	if err := begin(ctx, key); err != nil {
		return "", err
	}
	if len(data) > MaxSwapSize {
		return "", fmt.Errorf("%s: swap of %d bytes: larger than %d", key, len(data), MaxSwapSize)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if ok != (old != NoToken) || (ok && o.tok != old) {
		return "", fmt.Errorf("%s: %w", key, ErrConflict)
	}
	return m.put(key, bytes.Clone(data)), nil
}

// put stores data (owned by the store from now on) under key; m.mu is held.
func (m *Memory) put(key string, data []byte) Token {
	m.next++
	tok := Token("m" + strconv.FormatUint(m.next, 10))
	m.objects[key] = memObject{data: data, tok: tok, modTime: time.Now()}
	return tok
}

// List calls fn, in lexical key order, for the objects whose key starts with
// prefix as they were when List began. Errors: ErrInvalidKey for a bad
// prefix, fn's error, ctx's error.
func (m *Memory) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	m.mu.Lock()
	infos := make([]ObjectInfo, 0, len(m.objects))
	for k, o := range m.objects {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
		}
	}
	m.mu.Unlock()
	return emitSorted(ctx, infos, fn)
}

// emitSorted sorts a listing by key and calls fn for each entry, stopping at
// fn's error or ctx's.
func emitSorted(ctx context.Context, infos []ObjectInfo, fn func(ObjectInfo) error) error {
	slices.SortFunc(infos, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// Delete removes key. A missing key is not an error. Errors: ErrInvalidKey.
func (m *Memory) Delete(ctx context.Context, key string) error {
	if err := begin(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.objects, key)
	m.mu.Unlock()
	return nil
}
