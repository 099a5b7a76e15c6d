// Package store is the storage layer under a repository: a flat namespace of
// keys ("refs/heads/main", "versions/<id>/version.json") over a local folder,
// an object store or memory. This package holds the Store interface, its
// errors, the key rules, the optional interfaces some stores add
// (TempCleaner, LocalFiles), small helpers for callers and implementations,
// and the registry Open reads; it imports no storage SDK. Each kind of
// store lives in its own package (folder, memory, s3, gcs, azure,
// httpstore) and is made known to Open by Register, which the program
// calls for the kinds it links (cmd/fdl registers all of them).
//
// Every implementation gives the same guarantees (docs/spec.md §1, §10.3):
//   - Create is create-only: of any number of concurrent Creates of one key,
//     exactly one succeeds and the rest get ErrExist. A reader never sees a
//     partly written object.
//   - Swap is compare-and-swap: it replaces a key only if it still holds the
//     version the caller read (its Token), or creates it only if it does not
//     exist (NoToken). Of N concurrent Swaps from the same Token exactly one
//     succeeds; the rest get ErrConflict.
//   - Get returns the bytes and the Token of the same read.
//
// Keys are slash-separated relative paths of valid UTF-8, at most MaxKeyLen
// bytes, without "." or ".." elements, empty elements, a leading or trailing
// slash, a backslash, NUL or other control characters, a ".lock" suffix on
// any element, or an element starting with ".tmp-" (the last two are the
// local folder store's lock and temporary files). CheckKey tells whether a
// key is valid; every method refuses an invalid key with ErrInvalidKey.
package store

import (
	"context"
	"errors"
	"io"
	"time"
)

// Token identifies one stored version of an object: an ETag, a GCS
// generation, or (on a local folder) a digest of the content. It is opaque to
// callers; only the Store that returned it can interpret it.
type Token string

// NoToken asks Swap to create the object only if it does not exist yet.
const NoToken Token = ""

// MaxSwapSize is the largest object, in bytes (1 MiB), that Swap writes and
// that the local folder store hashes into a Token when Get reads it.
const MaxSwapSize = 1 << 20

// MaxKeyLen is the longest valid key, in bytes (S3's limit).
const MaxKeyLen = 1024

// Sentinel errors. Implementations wrap them with the key (and the store's
// location) so that errors.Is works and the message names the object.
var (
	// ErrNotExist: the key holds no object.
	ErrNotExist = errors.New("does not exist")
	// ErrExist: Create found the key already holds an object.
	ErrExist = errors.New("already exists")
	// ErrConflict: Swap found the key no longer holds the version the caller
	// read (or it exists although NoToken was given).
	ErrConflict = errors.New("changed concurrently")
	// ErrReadOnly: the store cannot be written (for example an http(s) URL).
	ErrReadOnly = errors.New("store is read-only")
	// ErrInvalidKey: the key is not a valid key (see the package doc).
	ErrInvalidKey = errors.New("invalid key")
	// ErrCannotList: the store can read objects by name but cannot list
	// them (a web server without directory listings). Features that need
	// every key — short ids, id prefixes, 'branch -l', 'verify' — say so
	// instead of guessing.
	ErrCannotList = errors.New("the store cannot list its objects")
)

// ObjectInfo describes one object found by List or Stat.
type ObjectInfo struct {
	Key     string    `json:"key"`      // full key, e.g. "versions/0192…/version.json"
	Size    int64     `json:"size"`     // bytes
	ModTime time.Time `json:"mod_time"` // the store's own modification time
}

// Store is a repository's storage. All methods take a context first and are
// safe for concurrent use by several goroutines and processes.
type Store interface {
	// Get opens the object at key for reading and returns the Token of the
	// version it reads. The caller closes the reader. Errors: ErrNotExist.
	Get(ctx context.Context, key string) (io.ReadCloser, Token, error)

	// Stat returns the object's size and modification time.
	// Errors: ErrNotExist.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// Create writes r to key only if key holds no object. The object becomes
	// visible whole or not at all; on local folders it is fsynced before it
	// becomes visible. Errors: ErrExist (nothing written).
	Create(ctx context.Context, key string, r io.Reader) error

	// Swap replaces the object at key with data if it still holds the version
	// identified by old, or creates it if old is NoToken and key holds no
	// object. It returns the new Token. Errors: ErrConflict (nothing
	// written), including when old is not NoToken and key holds no object.
	// data is small (a ref, a settings file): at most MaxSwapSize bytes,
	// larger data is refused with an error (not ErrConflict). Only objects
	// written by Swap, or Created with at most MaxSwapSize bytes, can be
	// swapped: the Token Get returns for a larger object may never match.
	Swap(ctx context.Context, key string, old Token, data []byte) (Token, error)

	// List calls fn for every object whose key starts with prefix, in
	// lexical key order. Temporary and lock files the store uses internally
	// are never listed. If fn returns an error, List stops and returns it.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error

	// Delete removes the object at key. Deleting a missing key is not an
	// error. Delete is unconditional: refs are never deleted with it (see
	// package refs for how a ref is deleted portably).
	Delete(ctx context.Context, key string) error

	// Location returns the URL of key as DuckDB and people should see it: an
	// absolute local path for a folder store, "s3://bucket/prefix/key" for
	// S3, and so on. Location("") is the repository root. It never contains
	// credentials.
	Location(key string) string

	// Close releases the store's resources.
	Close() error
}
