// Package cache keeps catalogs on the reader's machine, once each, keyed
// by their SHA-256: a version's frozen catalog (docs/spec.md §5) is
// downloaded the first time a reader needs it and read from the local copy
// afterwards, also when the repository cannot be reached. The cache is not
// part of any repository; several fdl processes may share it at once.
//
// # Layout
//
// A cache is one folder (DefaultDir: $XDG_CACHE_HOME/fdl/catalogs, else
// ~/.cache/fdl/catalogs on Linux; the command passes FDL_CACHE when set),
// made with mode 0700 (catalogs may hold private names), holding:
//
//	CACHEDIR.TAG           marks the folder as a cache, so backup tools skip it
//	                       (the Cache Directory Tagging convention)
//	<sha256>.duckdb        an entry: the complete file whose SHA-256 is <sha256>
//	                       (64 lower-case hex digits), read-only (0444)
//	<sha256>.used          the entry's last use: one RFC 3339 UTC time with
//	                       nanoseconds and a newline, replaced by a rename
//	<sha256>.lock          the entry's lock (package filelock); the file exists
//	                       while a process holds it
//	<sha256>.part          the entry being filled, by the lock's holder only
//	<sha256>.used.new      a last-use record being written, by the lock's holder
//	<sha256>.origin        the data path of the repository the entry's catalog
//	                       was born in, when a reader recorded it (SetOrigin)
//	<sha256>.origin.new    an origin record being written, by the lock's holder
//	<sha256>.stamp         what the file system said about the entry once its
//	                       bytes were checked (device, inode, size, modification
//	                       and change times: package stamp), where the platform
//	                       gives one
//	<sha256>.stamp.new     a stamp being written, by the lock's holder
//
// Other names are left alone.
//
// # Rules
//
//   - An entry appears only complete: Fetch writes <sha256>.part, checks
//     its size and SHA-256 as the bytes stream in, fsyncs it and renames it
//     to <sha256>.duckdb. A stream of another size or digest leaves
//     nothing.
//   - Whoever creates, touches or removes an entry holds its lock: Fetch
//     while it checks for the entry and fills it (so concurrent fetches of
//     one digest, in goroutines or processes, download it once: the others
//     wait, then find it), Get while it records a use, Prune while it
//     removes. Prune never waits: an entry whose lock is held stays.
//   - Last use is a record of its own (<sha256>.used), never the file's
//     access time, which many file systems do not keep (noatime, relatime).
//     An entry without one counts as last used when it was written.
//   - An entry found is used as it is while its stamp is the one recorded
//     when its bytes were checked; an entry whose stamp changed (a write,
//     a chmod, a copy over it) or that has none is hashed again, before it
//     is used: intact, it gets a new stamp; damaged, it is removed (Fetch
//     fills it again, Get reports it missing). Where the platform gives no
//     stamp, only the entry's size is checked.
//   - A fetch killed midway leaves <sha256>.part and <sha256>.lock; the
//     kernel frees the lock with the process, and the next Open or Prune
//     removes both once it can take the lock.
package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fdl-dev/fdl/internal/stamp"
)

// File names inside the cache folder (see the package documentation).
const (
	EntrySuffix     = ".duckdb"
	usedSuffix      = ".used"
	newSuffix       = ".used.new"
	originSuffix    = ".origin"
	originNewSuffix = ".origin.new"
	stampSuffix     = ".stamp"
	stampNewSuffix  = ".stamp.new"
	lockSuffix      = ".lock"
	partSuffix      = ".part"
	tagName         = "CACHEDIR.TAG"
)

// tagContent is CACHEDIR.TAG's content: the convention's signature line.
const tagContent = "Signature: 8a477f597d28d172789f06886806bc55\n" +
	"# This file is a cache directory tag created by fdl: its catalog cache.\n" +
	"# For information about cache directory tags, see https://bford.info/cachedir/\n"

var (
	// ErrInvalidDigest: a digest given to the cache is not 64 lower-case
	// hex digits.
	ErrInvalidDigest = errors.New("not a SHA-256 digest (64 lower-case hex digits)")
	// ErrMismatch: the bytes a fill wrote, or an entry's bytes, are not the
	// size and digest asked for. Errors of this kind are *MismatchError.
	ErrMismatch = errors.New("content does not match its digest")
	// ErrNotCached: Verify found no entry for the digest.
	ErrNotCached = errors.New("not in the cache")
)

// MismatchError is content that is not what its key says: SHA256 and Size
// were asked for; GotSHA256 and GotSize are what came. Longer is true when
// the stream went on past Size (it was cut there: GotSize is then the bytes
// taken, and GotSHA256 empty). errors.Is(err, ErrMismatch) holds.
type MismatchError struct {
	SHA256    string
	Size      int64
	GotSHA256 string
	GotSize   int64
	Longer    bool
}

func (e *MismatchError) Error() string {
	switch {
	case e.Longer:
		return fmt.Sprintf("catalog %s: expected %d bytes, the stream went on past them", e.SHA256, e.Size)
	case e.GotSize != e.Size:
		return fmt.Sprintf("catalog %s: expected %d bytes, received %d (SHA-256 %s)", e.SHA256, e.Size, e.GotSize, e.GotSHA256)
	}
	return fmt.Sprintf("catalog %s: received %d bytes with SHA-256 %s instead", e.SHA256, e.GotSize, e.GotSHA256)
}

// Unwrap returns ErrMismatch.
func (e *MismatchError) Unwrap() error { return ErrMismatch }

// FolderError: the cache's folder Dir cannot be made or written (it is a
// file, or this user may not write there); Err is the file system's
// error.
type FolderError struct {
	Dir string
	Err error
}

func (e *FolderError) Error() string {
	return fmt.Sprintf("catalog cache %s: %v: the cache needs a folder this user can write", e.Dir, e.Err)
}

func (e *FolderError) Unwrap() error { return e.Err }

// FullError: the file system under the cache's folder Dir has no room for
// an entry of Size bytes, or the user's disk quota is spent; Err is the
// file system's error (ENOSPC or EDQUOT). Nothing of the entry is left.
type FullError struct {
	Dir  string
	Size int64
	Err  error
}

func (e *FullError) Error() string {
	return fmt.Sprintf("catalog cache %s: no room for a catalog of %d bytes: %v", e.Dir, e.Size, e.Err)
}

func (e *FullError) Unwrap() error { return e.Err }

// isFull reports whether err is the file system's "no space left" or
// "disk quota exceeded".
func isFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Options configure a cache.
type Options struct {
	// MaxBytes bounds the entries' total size: after each Fetch that adds
	// an entry, the least recently used others are removed until the total
	// is at most MaxBytes (the new entry stays, even alone above it). 0:
	// no bound.
	MaxBytes int64

	// now is the clock (tests set it); nil: time.Now.
	now func() time.Time
}

// Cache is a catalog cache in one folder. Its methods are safe for use by
// concurrent goroutines, and the folder for concurrent processes.
type Cache struct {
	dir  string
	opts Options
}

// DefaultDir returns the cache folder fdl uses when none is given:
// "fdl/catalogs" in the user's cache folder (os.UserCacheDir:
// $XDG_CACHE_HOME or ~/.cache on Unix, ~/Library/Caches on macOS,
// %LocalAppData% on Windows). Errors: os.UserCacheDir's (no home folder).
func DefaultDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("catalog cache: %w", err)
	}
	return filepath.Join(d, "fdl", "catalogs"), nil
}

// Open opens the cache in folder dir (a relative one made absolute, from
// the process's working directory: Dir and Path are always absolute),
// making it (mode 0700, parents 0700 too) and its CACHEDIR.TAG if missing, and removes what killed processes
// left in it (partial entries and records, stale locks: see Prune) where
// their locks are free. Errors: an empty dir, a negative MaxBytes;
// *FolderError when the folder cannot be made or written; I/O errors of
// the clean-up.
func Open(dir string, opts Options) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("catalog cache: no folder given")
	}
	if opts.MaxBytes < 0 {
		return nil, fmt.Errorf("catalog cache %s: size limit %d bytes: give 0 (no limit) or more", dir, opts.MaxBytes)
	}
	// Absolute: the paths of entries go into ATTACH lines, which DuckDB
	// reads from whatever folder it runs in.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("catalog cache %s: %w", dir, err)
	}
	dir = abs
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &FolderError{Dir: dir, Err: err}
	}
	c := &Cache{dir: dir, opts: opts}
	tag := filepath.Join(dir, tagName)
	if f, err := os.OpenFile(tag, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
		_, err = f.WriteString(tagContent)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tag)
			return nil, &FolderError{Dir: dir, Err: err}
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, &FolderError{Dir: dir, Err: err}
	}
	if _, err := c.sweep(); err != nil {
		return nil, err
	}
	return c, nil
}

// Dir returns the cache's folder.
func (c *Cache) Dir() string { return c.dir }

// Path returns where the entry for sum lives (whether or not it exists).
func (c *Cache) Path(sum string) string { return c.name(sum, EntrySuffix) }

func (c *Cache) name(sum, suffix string) string { return filepath.Join(c.dir, sum+suffix) }

func (c *Cache) now() time.Time {
	if c.opts.now != nil {
		return c.opts.now()
	}
	return time.Now()
}

// checkDigest refuses anything but 64 lower-case hex digits: a digest is
// also a file name here.
func checkDigest(sum string) error {
	if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
		return fmt.Errorf("cache key %q: %w", sum, ErrInvalidDigest)
	}
	return nil
}

// Get returns the local file of the complete entry for sum and records
// its use (now) in its last-use record; ok is false, with no error, when
// the cache has no entry for sum. It waits for the entry's lock, so a
// concurrent Fetch of sum finishes first. A failure to write the last-use
// record is not reported: the entry is intact and only looks older to
// Prune. Errors: ErrInvalidDigest; ctx's while waiting; I/O errors other
// than "does not exist".
func (c *Cache) Get(ctx context.Context, sum string) (path string, ok bool, err error) {
	if err := checkDigest(sum); err != nil {
		return "", false, err
	}
	l, err := lock(ctx, c.name(sum, lockSuffix))
	if err != nil {
		return "", false, err
	}
	defer l.release()
	path = c.Path(sum)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("catalog cache: %w", err)
	case !fi.Mode().IsRegular():
		return "", false, fmt.Errorf("catalog cache: %s is not a regular file", path)
	}
	if ok, err := c.intact(ctx, sum, fi); err != nil || !ok {
		return "", false, err
	}
	_ = c.touch(sum)
	return path, true, nil
}

// intact reports whether the entry for sum (fi: its file) still holds the
// bytes its name says: its stamp is the one recorded when they were
// checked, or, when it changed or none was recorded, hashing them again
// says so (the stamp is then recorded anew). A damaged entry is removed,
// with its records. Where the platform gives no stamp it is taken as
// intact. The caller holds sum's lock. Errors: ctx's; I/O errors reading
// the entry.
func (c *Cache) intact(ctx context.Context, sum string, fi os.FileInfo) (bool, error) {
	now, ok := stamp.Of(fi)
	if !ok {
		return true, nil
	}
	if was, err := os.ReadFile(c.name(sum, stampSuffix)); err == nil && bytes.Equal(was, now) {
		return true, nil
	}
	got, _, err := hashFile(ctx, c.Path(sum))
	if err != nil {
		return false, err
	}
	if got != sum {
		c.removeEntry(sum)
		return false, nil
	}
	_ = c.writeStamp(sum)
	return true, nil
}

// hashFile returns the hex SHA-256 of the file at path and its size in
// bytes. Errors: opening it (wrapping fs.ErrNotExist when it is not
// there), reading it, ctx's.
func hashFile(ctx context.Context, path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("catalog cache: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, readerCtx{ctx, f})
	if err != nil {
		return "", n, fmt.Errorf("catalog cache: read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// removeEntry removes the entry for sum and its records (the caller holds
// its lock); what cannot be removed stays, to be found damaged again.
func (c *Cache) removeEntry(sum string) {
	for _, s := range []string{EntrySuffix, usedSuffix, originSuffix, stampSuffix} {
		os.Remove(c.name(sum, s))
	}
}

// writeStamp records the entry's stamp (<sum>.stamp.new renamed over
// <sum>.stamp; nothing where the platform gives none). The caller holds
// sum's lock. Errors: the file system's.
func (c *Cache) writeStamp(sum string) error {
	fi, err := os.Stat(c.Path(sum))
	if err != nil {
		return err
	}
	b, ok := stamp.Of(fi)
	if !ok {
		return nil
	}
	tmp := c.name(sum, stampNewSuffix)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.name(sum, stampSuffix))
}

// FillFunc writes an entry's bytes to w, in order, and returns nil once all
// are written (the caller downloads them: a store's reader copied to w).
// A write to w fails, ending the fill, once the bytes go past the size
// asked for.
type FillFunc func(ctx context.Context, w io.Writer) error

// Fetch returns the local file of the entry for sum, filling it first with
// fill when the cache has none: the bytes fill writes are hashed as they
// stream into <sum>.part, and the entry is made (read-only, by a rename)
// only when they are size bytes with SHA-256 sum; otherwise nothing is
// left. It holds the entry's lock meanwhile, so of concurrent fetches of
// one sum (goroutines or processes) one fills and the others wait and find
// the entry: fill is called at most once per missing entry. An entry found
// whose size is not size is taken as damaged and filled again. Either way
// the use is recorded (as Get does). After making an entry, Fetch prunes
// the cache to Options.MaxBytes, never removing the entry just made; a
// failure of that prune is not reported (Prune reports its own).
// Errors: ErrInvalidDigest; a negative size; ctx's while waiting for the
// lock; fill's error, wrapped; *MismatchError (ErrMismatch) naming both
// digests or sizes; I/O errors.
func (c *Cache) Fetch(ctx context.Context, sum string, size int64, fill FillFunc) (string, error) {
	if err := checkDigest(sum); err != nil {
		return "", err
	}
	if size < 0 {
		return "", fmt.Errorf("cache entry %s: size %d: a size in bytes is never negative", sum, size)
	}
	l, err := lock(ctx, c.name(sum, lockSuffix))
	if err != nil {
		return "", err
	}
	path := c.Path(sum)
	fi, err := os.Stat(path)
	if err == nil && fi.Mode().IsRegular() && fi.Size() == size {
		ok, err := c.intact(ctx, sum, fi)
		if err != nil {
			l.release()
			return "", err
		}
		if ok {
			_ = c.touch(sum)
			l.release()
			return path, nil
		}
	} else if err == nil {
		c.removeEntry(sum) // damaged: filled again below
	}
	err = c.fill(ctx, sum, size, fill)
	if err == nil {
		_ = c.writeStamp(sum)
		_ = c.touch(sum)
	}
	l.release()
	if err != nil {
		return "", err
	}
	if c.opts.MaxBytes > 0 {
		_, _ = c.prune(ctx, PruneOptions{MaxBytes: c.opts.MaxBytes}, sum)
	}
	return path, nil
}

// fill makes the entry for sum from fill's stream; the caller holds its
// lock. On any error the partial file is removed; a file system without
// room for it gives *FullError.
func (c *Cache) fill(ctx context.Context, sum string, size int64, fill FillFunc) (err error) {
	defer func() {
		if err != nil && isFull(err) {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe // the file and the file system's words, once
			}
			err = &FullError{Dir: c.dir, Size: size, Err: err}
		}
	}()
	part := c.name(sum, partSuffix)
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(part)
		}
	}()
	w := &checkWriter{w: f, h: sha256.New(), limit: size}
	ferr := fill(ctx, w)
	switch {
	case w.longer:
		return &MismatchError{SHA256: sum, Size: size, GotSize: w.n, Longer: true}
	case w.err != nil:
		return fmt.Errorf("catalog cache: %w", w.err) // w.err names the file
	case ferr != nil:
		return fmt.Errorf("fill cache entry %s: %w", sum, ferr)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fill cache entry %s: %w", sum, err)
	}
	got := hex.EncodeToString(w.h.Sum(nil))
	if w.n != size || got != sum {
		return &MismatchError{SHA256: sum, Size: size, GotSHA256: got, GotSize: w.n}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	if err := f.Chmod(0o444); err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	if err := os.Rename(part, c.Path(sum)); err != nil {
		return fmt.Errorf("catalog cache: %w", err)
	}
	syncDir(c.dir)
	return nil
}

// checkWriter writes to w while hashing and counting, and refuses (without
// writing them) bytes past limit.
type checkWriter struct {
	w      io.Writer
	h      hash.Hash
	n      int64
	limit  int64
	longer bool  // a write went past limit
	err    error // the first error of w
}

func (cw *checkWriter) Write(p []byte) (int, error) {
	if cw.longer || cw.err != nil {
		return 0, cw.failure()
	}
	if int64(len(p)) > cw.limit-cw.n {
		cw.longer = true
		return 0, cw.failure()
	}
	n, err := cw.w.Write(p)
	cw.h.Write(p[:n])
	cw.n += int64(n)
	if err != nil {
		cw.err = err
	}
	return n, err
}

func (cw *checkWriter) failure() error {
	if cw.longer {
		return fmt.Errorf("more than the %d bytes expected: %w", cw.limit, ErrMismatch)
	}
	return cw.err
}

// touch records now as sum's last use: <sum>.used.new written, then
// renamed over <sum>.used (not fsynced: a record lost in a crash only
// makes the entry look older). The caller holds sum's lock.
func (c *Cache) touch(sum string) error {
	tmp := c.name(sum, newSuffix)
	if err := os.WriteFile(tmp, []byte(c.now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, c.name(sum, usedSuffix)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// SetOrigin records, beside the entry for sum, dataPath: the data path of
// the repository whose lake the catalog was born in (its data/ folder as
// recorded when the repository was made), one line, written under the
// entry's lock by a rename (<sum>.origin.new, then <sum>.origin), and only
// when it differs from the record there. A reader that cannot reach the
// repository later reads it (Origin) to print the line it would print
// online. Errors: ErrInvalidDigest, ErrNotCached when there is no entry,
// ctx's while waiting for the lock, I/O errors.
func (c *Cache) SetOrigin(ctx context.Context, sum, dataPath string) error {
	if err := checkDigest(sum); err != nil {
		return err
	}
	if got, ok := c.Origin(sum); ok && got == dataPath {
		return nil
	}
	l, err := lock(ctx, c.name(sum, lockSuffix))
	if err != nil {
		return err
	}
	defer l.release()
	if _, err := os.Stat(c.Path(sum)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("catalog %s: %w", sum, ErrNotCached)
	}
	tmp := c.name(sum, originNewSuffix)
	if err := os.WriteFile(tmp, []byte(dataPath+"\n"), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("catalog cache: %w", err)
	}
	if err := os.Rename(tmp, c.name(sum, originSuffix)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("catalog cache: %w", err)
	}
	return nil
}

// Origin returns the data path SetOrigin recorded for sum's entry; ok is
// false when there is none (or it cannot be read).
func (c *Cache) Origin(sum string) (string, bool) {
	if checkDigest(sum) != nil {
		return "", false
	}
	b, err := os.ReadFile(c.name(sum, originSuffix))
	if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
		return "", false
	}
	return string(b[:len(b)-1]), true
}

// lastUse reads sum's last-use record; without a readable one, the
// entry's modification time (when it was written) stands in.
func (c *Cache) lastUse(sum string, written time.Time) time.Time {
	b, err := os.ReadFile(c.name(sum, usedSuffix))
	if err == nil {
		if t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b))); err == nil {
			return t
		}
	}
	return written.UTC()
}

// Verify hashes the entry for sum again. An entry whose bytes no longer
// match sum (changed on disk) is removed. It holds the entry's lock
// meanwhile. Errors: ErrInvalidDigest; ErrNotCached when there is no
// entry; *MismatchError (ErrMismatch) for a damaged entry, now removed;
// ctx's; I/O errors.
func (c *Cache) Verify(ctx context.Context, sum string) error {
	if err := checkDigest(sum); err != nil {
		return err
	}
	l, err := lock(ctx, c.name(sum, lockSuffix))
	if err != nil {
		return err
	}
	defer l.release()
	got, n, err := hashFile(ctx, c.Path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("catalog %s: %w", sum, ErrNotCached)
	}
	if err != nil {
		return err
	}
	if got != sum {
		c.removeEntry(sum)
		return &MismatchError{SHA256: sum, Size: n, GotSHA256: got, GotSize: n}
	}
	_ = c.writeStamp(sum)
	return nil
}

// readerCtx stops a read when ctx is done.
type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// syncDir fsyncs a folder so a rename in it survives a crash; where a
// folder cannot be opened or synced (Windows) the rename still stands.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
