package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNoRoot: the bucket or container a store URL names does not exist (or
// the credentials in use cannot see it). Wrapped by RootChecker's errors,
// which name it.
var ErrNoRoot = errors.New("bucket or container does not exist")

// TempCleaner is implemented by stores whose interrupted writes leave
// objects behind that List does not show: the local folder store's
// ".tmp-<random>" files of a Create or Swap killed before its link or
// rename (on object stores an interrupted upload never becomes an object).
// gc deletes the ones older than its grace period; verify lists them.
type TempCleaner interface {
	// Temps calls fn for every temporary file under prefix's folder
	// ("data/", "versions/"; "" for the whole store), in lexical order; ObjectInfo.Key is the
	// file's slash path from the root (not a valid key), with its size
	// and modification time.
	Temps(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// RemoveTemp deletes one file Temps listed. A missing file is not an
	// error; a path whose last element is not a temporary file's name is
	// refused with ErrInvalidKey.
	RemoveTemp(ctx context.Context, key string) error
}

// LocalFiles is implemented by stores whose objects are files of this
// machine's file system (the folder store). A caller can then read an
// object where it lies instead of copying it, and reason about the files
// themselves: where a symbolic link leads, whether two names are one file.
// A store wrapped in another (storetest.Faulty) does not offer it.
type LocalFiles interface {
	// LocalPath returns the absolute, OS-native path of key's file, or of
	// the store's root folder for key "". key must be valid (CheckKey);
	// the file need not exist.
	LocalPath(key string) string
}

// SecretProvider is implemented by stores whose readers need a DuckDB
// secret to reach them (the object stores: S3, GCS, Azure): the commands
// that print an ATTACH statement put it first, on the same line.
type SecretProvider interface {
	// DuckDBSecret returns the DuckDB CREATE SECRET statement a reader
	// runs before attaching a catalog or reading data in this store, with
	// no credential in it (a credential chain provider, or placeholders the
	// reader fills in), e.g.
	// "CREATE SECRET (TYPE s3, PROVIDER credential_chain, REGION 'eu-west-1');".
	DuckDBSecret() string
}

// RootChecker is implemented by stores whose root lives in something that
// must exist before a repository can be made in it (a bucket, a
// container): when a key is missing, a caller asks whether the root itself
// is, so that a missing bucket is not mistaken for a missing repository.
type RootChecker interface {
	// CheckRoot returns nil when the store's bucket or container exists, an
	// error wrapping ErrNoRoot naming it when it does not (or cannot be
	// seen with these credentials), or the store's error.
	CheckRoot(ctx context.Context) error
}

// KeyLister is implemented by stores that list keys more cheaply when the
// caller needs no sizes or times (the folder store reads folder entries
// without examining each file). A caller that checks which of many keys a
// store holds lists them this way.
type KeyLister interface {
	// ListKeys calls fn once for every key List gives for prefix, in no
	// particular order (so a store need not hold a folder's names to sort
	// them), and stops at fn's error. key is the store's buffer, valid
	// only until fn returns (so a listing of a million keys need not make
	// a million strings): fn copies what it keeps. Errors as List gives
	// them.
	ListKeys(ctx context.Context, prefix string, fn func(key []byte) error) error
}

// ErrCannotLink: Linker.CreateLink cannot make the file an object (it lies
// on another file system than the store, or the file system has no hard
// links). Nothing was written; the caller copies with Create instead.
var ErrCannotLink = errors.New("cannot link the file into the store")

// Linker is implemented by stores whose objects are files of this machine
// and that can make an existing local file an object without copying its
// bytes (the folder store, by a hard link). A store wrapped in another
// (storetest.Faulty) does not offer it.
type Linker interface {
	// CreateLink makes key an object that is the local file at path itself,
	// create-only: the file gets a second name in the store (one file, two
	// names; no byte is copied). It is made read-only first (mode 0444,
	// which every name of it shares), so that no one writes to the stored
	// object through the other name by mistake; the caller should remove
	// its own name once it no longer needs it. Before the object becomes
	// visible at key, check is called with the file opened through its new
	// name: if check returns an error, nothing is created and that error is
	// returned. The file is fsynced before it becomes visible.
	//
	// Errors: ErrCannotLink (nothing written; copy with Create instead),
	// ErrExist (nothing created; check has run), check's error,
	// ErrInvalidKey, I/O errors.
	CreateLink(ctx context.Context, key, path string, check func(f *os.File) error) error
	// CanLink reports whether CreateLink can link the file at path: it
	// lies on the store's file system, which has hard links. It writes
	// nothing the store shows.
	CanLink(path string) bool
}

// ReadOnly is implemented by stores that can never be written (the
// http(s) store): every write of theirs fails with ErrReadOnly. Callers ask
// it to refuse a whole operation that writes before taking any step.
type ReadOnly interface {
	// ReadOnly reports true when every write fails with ErrReadOnly.
	ReadOnly() bool
}

// IsReadOnly reports whether st says it can never be written (ReadOnly).
func IsReadOnly(st Store) bool {
	ro, ok := st.(ReadOnly)
	return ok && ro.ReadOnly()
}

// RangeReader is implemented by stores that read part of an object
// without reading the bytes before it (a file's seek, an object store's
// ranged GET). ReadRange uses it where a store offers it.
type RangeReader interface {
	// GetRange opens length bytes of the object at key from offset (fewer
	// when the object ends before). The caller closes the reader.
	// Errors: ErrNotExist, ErrInvalidKey.
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
}

// ReadRange returns length bytes of the object at key from offset: through
// st's GetRange where it offers one (RangeReader), else by reading the
// object from its start and dropping the bytes before offset. Fewer bytes
// come back when the object ends first. Errors: Get's.
func ReadRange(ctx context.Context, st Store, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 0 {
		return nil, fmt.Errorf("%s: a read of %d bytes at offset %d", key, length, offset)
	}
	var r io.ReadCloser
	var err error
	if rr, ok := st.(RangeReader); ok {
		r, err = rr.GetRange(ctx, key, offset, length)
	} else if r, _, err = st.Get(ctx, key); err == nil {
		if _, err = io.CopyN(io.Discard, r, offset); errors.Is(err, io.EOF) {
			err = nil
		}
	}
	if err != nil {
		if r != nil {
			r.Close()
		}
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, length))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}

// ReaderPaths is implemented by stores whose readers request an object by
// another URL than the store itself (http(s): DuckDB's httpfs sends a
// data file's path as the catalog spells it, with its %XX escapes as they
// are, which a web server decodes; the store escapes the key's '%'). verify
// asks for what the readers ask for.
type ReaderPaths interface {
	// ReaderDiffers reports whether a reader's request for key differs
	// from the store's own (key holds a character the store escapes).
	ReaderDiffers(key string) bool
	// StatAsReader is Stat of what a reader that sends key as it is
	// reaches, with the URL it requests (without credentials).
	// Errors: ErrNotExist (the server has no file there), Stat's.
	StatAsReader(ctx context.Context, key string) (string, ObjectInfo, error)
}

// ForeignFinder is implemented by stores whose List leaves out files that
// are not objects: the folder and cloud stores list only names that are
// valid keys, so a folder or prefix holding only "fdl.lock" (a consumer's
// lockfile) or a name with a control character looks empty to List. Init asks it before
// making a repository, so it never makes one in a folder that holds files.
type ForeignFinder interface {
	// FirstForeign returns the slash path from the root of one file under
	// the root that List does not show and that is not the store's own
	// (an empty "<key>.lock" file of a Swap, a ".tmp-" file of an
	// interrupted write), or "" when there is none.
	FirstForeign(ctx context.Context) (string, error)
}
