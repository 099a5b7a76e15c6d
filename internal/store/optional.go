package store

import (
	"context"
	"errors"
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
