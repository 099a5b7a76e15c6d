// Package folder is the store.Store on a folder of the local file system,
// and the folder paths and file:// URLs store.Open opens through it
// (Backend).
package folder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/fdl-dev/fdl/internal/filelock"
	"github.com/fdl-dev/fdl/internal/store"
)

// Store is a store.Store on a folder of the local file system, written with the
// operating system's own calls (not gocloud's fileblob, whose create-only
// write is racy and which never fsyncs). A key "refs/heads/main" is the file
// <root>/refs/heads/main.
//
// How it keeps the store.Store guarantees:
//   - Create writes a temporary file ".tmp-<random>" in the key's folder,
//     fsyncs it and hard-links it to the key's name with link(2), which fails
//     atomically if the name exists; then it removes the temporary name and
//     fsyncs the folder. A reader sees the whole object or nothing, and the
//     object is on disk before it becomes visible.
//   - Swap takes an exclusive flock(2) on a persistent "<key>.lock" file next
//     to the object, re-reads the object under the lock, compares its Token,
//     writes a temporary file, fsyncs it, renames it over the key (or links
//     it, when creating) and fsyncs the folder. The kernel releases the lock
//     when the holder dies, even by SIGKILL, so a crashed writer never blocks
//     the next Swap. Lock files stay in place (removing one would race with a
//     process waiting on it) and are never listed.
//   - A Token is the lowercase hex SHA-256 of the object's bytes. Get reads an
//     object of at most store.MaxSwapSize bytes into memory once and hashes those
//     bytes, so the Token belongs to what the caller reads. A larger object
//     is streamed and gets a Token of the form "unhashed:<size>:<mtime>"
//     that Swap never matches (Swap is for small objects only).
//
// Caveats: flock is advisory and only excludes other users of flock. On
// network file systems its semantics differ: on NFS, Linux emulates flock
// with POSIX byte-range locks through the NFS lock manager, which needs
// lockd/NLM (NFSv3) or NFSv4 and may be unreliable across clients; on SMB
// and some FUSE file systems locks may be local to one machine. On Windows
// the lock is LockFileEx on the lock file, a mandatory lock, and renaming
// over an object fails while another process has it open. Create needs a file
// system with hard links (not FAT/exFAT or most FUSE object-store mounts).
// Use one machine per folder store, on a local file system, for the
// guarantees above to hold.
type Store struct {
	root string // absolute, cleaned, OS-native
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.TempCleaner   = (*Store)(nil)
	_ store.LocalFiles    = (*Store)(nil)
	_ store.KeyLister     = (*Store)(nil)
	_ store.Linker        = (*Store)(nil)
	_ store.ForeignFinder = (*Store)(nil)
)

// FirstForeign returns the first file under the root (in the order of a
// walk) that is neither an object List shows, nor a lock file of a Swap
// (an empty "<key>.lock"), nor a temporary file (".tmp-…"): a user's
// file whose name is not a valid key, such as a consumer's fdl.lock. A
// missing root holds none. Cost: a walk that stops at the first such file
// or after 10,000 entries (a folder that large already holds objects).
func (l *Store) FirstForeign(ctx context.Context) (string, error) {
	found, n := "", 0
	err := filepath.WalkDir(l.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == l.root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if n++; n > 10000 {
			return fs.SkipAll
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || p == l.root {
			return nil
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		name := d.Name()
		if strings.HasPrefix(name, store.TempPrefix) {
			return nil
		}
		if strings.HasSuffix(name, store.LockSuffix) {
			if fi, err := d.Info(); err == nil && fi.Size() == 0 {
				return nil
			}
			found = key
			return fs.SkipAll
		}
		if store.CheckKey(key) != nil {
			found = key
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", l.root, err)
	}
	return found, nil
}

// Open returns the Store on the folder root (a relative path is made
// absolute against the working directory). The folder need not exist yet:
// the first write creates it and its parents (see Exists). Errors: root
// exists but is not a folder, or cannot be examined.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("local store: empty folder path")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("local store %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("local store: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("local store %s: not a folder", abs)
	}
	return &Store{root: abs}, nil
}

// Exists reports whether the store's root folder exists.
func (l *Store) Exists() bool {
	fi, err := os.Stat(l.root)
	return err == nil && fi.IsDir()
}

// Location returns the absolute, OS-native path of key's file, or the root
// folder when key is "". key must be valid (see store.CheckKey).
func (l *Store) Location(key string) string {
	if key == "" {
		return l.root
	}
	return filepath.Join(l.root, filepath.FromSlash(key))
}

// LocalPath returns the same path as Location: every object is a file of
// this machine (store.LocalFiles).
func (l *Store) LocalPath(key string) string { return l.Location(key) }

// Close does nothing: a Store holds no resources between calls.
func (l *Store) Close() error { return nil }

// Get opens key's file. See Store for the Token. Errors: store.ErrNotExist (also
// when key names a folder or a parent is a file), store.ErrInvalidKey.
func (l *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.Token, error) {
	if err := store.Begin(ctx, key); err != nil {
		return nil, "", err
	}
	f, err := os.Open(l.Location(key))
	if err != nil {
		return nil, "", notExist(key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", fmt.Errorf("%s: %w", key, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, "", fmt.Errorf("%s: %w", key, store.ErrNotExist)
	}
	if fi.Size() <= store.MaxSwapSize {
		// Objects are never written in place (Create links, Swap renames), so
		// the open file keeps the bytes it had when it was opened.
		// One read of the size the file has (plus one byte, to see it
		// grow), not a buffer doubled as it fills.
		b := make([]byte, fi.Size()+1)
		n, err := io.ReadFull(f, b)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			f.Close()
			return nil, "", fmt.Errorf("%s: %w", key, err)
		}
		if b = b[:n]; int64(n) <= fi.Size() {
			f.Close()
			return store.BytesBody(b), hashToken(b), nil
		}
		// The file grew although nobody writes in place; stream it.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			f.Close()
			return nil, "", fmt.Errorf("%s: %w", key, err)
		}
	}
	tok := store.Token("unhashed:" + strconv.FormatInt(fi.Size(), 10) + ":" +
		strconv.FormatInt(fi.ModTime().UnixNano(), 10))
	return f, tok, nil
}

// Stat returns key's size in bytes and file modification time.
// Errors: store.ErrNotExist, store.ErrInvalidKey.
func (l *Store) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if err := store.Begin(ctx, key); err != nil {
		return store.ObjectInfo{}, err
	}
	fi, err := os.Stat(l.Location(key))
	if err != nil {
		return store.ObjectInfo{}, notExist(key, err)
	}
	if fi.IsDir() {
		return store.ObjectInfo{}, fmt.Errorf("%s: %w", key, store.ErrNotExist)
	}
	return store.ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Create streams r into key's file if it does not exist, creating parent
// folders as needed; it never holds the object in memory. If the write
// fails — r fails, ctx is cancelled, the disk is full — nothing is left
// behind: neither the temporary file nor a folder Create made. A key whose
// file exists already is refused before r is read: a resumed push or
// mirror, which finds its catalog stored, needs no room for a second copy
// of it (the link below still decides when two writers race). Errors: store.ErrExist (nothing written),
// store.ErrInvalidKey, r's error, I/O errors. A folder named key is not an object:
// Create then fails with an error that is not store.ErrExist.
func (l *Store) Create(ctx context.Context, key string, r io.Reader) (err error) {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	path := l.Location(key)
	if fi, err := os.Lstat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s: a folder of that name exists", key)
		}
		return fmt.Errorf("%s: %w", key, store.ErrExist)
	}
	tmp, made, err := l.createTemp(key, filepath.Dir(path))
	if err != nil {
		return err
	}
	linked := false
	defer func() {
		os.Remove(tmp.Name()) // after the link, or on failure
		if !linked {
			removeMade(made) // a failed write leaves no folder behind
		}
	}()
	_, err = io.Copy(tmp, store.ContextReader(ctx, r))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Lstat(path); serr == nil && fi.IsDir() {
				return fmt.Errorf("%s: a folder of that name exists", key)
			}
			return fmt.Errorf("%s: %w", key, store.ErrExist)
		}
		return fmt.Errorf("%s: %w", key, err)
	}
	linked = true
	if err := os.Remove(tmp.Name()); err != nil {
		return fmt.Errorf("%s: written, but %w", key, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("%s: written, but %w", key, err)
	}
	return nil
}

// CreateLink makes key's file a hard link of the local file at path
// (store.Linker): it links path to a temporary name in key's folder,
// makes the file read-only (mode 0444), calls check with it opened through
// that name, fsyncs it, and links the temporary name to key's name with
// link(2), which fails atomically if the name exists. The object is the
// caller's file itself: no byte is copied, and the store's guarantees hold
// for it as long as no one writes to the file through another name (mode
// 0444 refuses that to everyone but root). Errors: store.ErrCannotLink
// (nothing written) when path is on another file system or the file system
// has no hard links; store.ErrExist; check's error; store.ErrInvalidKey.
func (l *Store) CreateLink(ctx context.Context, key, path string, check func(f *os.File) error) (err error) {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	dst := l.Location(key)
	dir := filepath.Dir(dst)
	defer func() {
		if err != nil {
			l.removeEmpty(dir) // a failed CreateLink leaves no folder it made
		}
	}()
	tmpName, err := l.linkTemp(key, dir, path)
	if err != nil {
		return err
	}
	defer os.Remove(tmpName) // after the link to key, or on failure (before removeEmpty)
	if err := os.Chmod(tmpName, 0o444); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := checkAndSync(tmpName, check); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := os.Link(tmpName, dst); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", key, store.ErrExist)
		}
		return fmt.Errorf("%s: %w", key, err)
	}
	if err := os.Remove(tmpName); err != nil {
		return fmt.Errorf("%s: written, but %w", key, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%s: written, but %w", key, err)
	}
	return nil
}

// linkTemp makes the folder dir (as createTemp does) and links path to a
// new temporary name in it, which it returns.
func (l *Store) linkTemp(key, dir, path string) (string, error) {
	var err error
	for range 10 {
		if _, err = l.mkdirs(dir); err == nil {
			name := filepath.Join(dir, store.TempName(""))
			if err = os.Link(path, name); err == nil {
				return name, nil
			}
		}
		if cannotLink(err) {
			return "", fmt.Errorf("%s: link %s: %w (%v)", key, path, store.ErrCannotLink, err)
		}
		// ENOENT: a Delete removed the folder we just made (or path is
		// gone: the next try says so); EEXIST: two random names collided.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
			break
		}
		if _, serr := os.Lstat(path); serr != nil {
			return "", fmt.Errorf("%s: %w", key, serr)
		}
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return "", fmt.Errorf("%s: a parent is a file, not a folder", key)
	}
	return "", fmt.Errorf("%s: link %s: %w", key, path, err)
}

// CanLink reports whether path can be hard-linked into the store: it
// links it to a temporary name in the root folder (or the nearest folder
// above it that exists) and removes that name again (store.Linker).
func (l *Store) CanLink(path string) bool {
	dir := l.root
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
	probe := filepath.Join(dir, store.TempName(""))
	if err := os.Link(path, probe); err != nil {
		return false
	}
	os.Remove(probe)
	return true
}

// checkAndSync opens path, calls check with it, and fsyncs it.
func checkAndSync(path string, check func(*os.File) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if check != nil {
		if err := check(f); err != nil {
			return err
		}
	}
	return f.Sync()
}

// cannotLink reports whether a link(2) failed because the two names are on
// different file systems or the file system has no hard links (or refuses
// this one), rather than for a reason a copy would share.
func cannotLink(err error) bool {
	for _, e := range []error{syscall.EXDEV, syscall.EPERM, syscall.EMLINK, syscall.ENOTSUP, syscall.EOPNOTSUPP, syscall.ENOSYS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Swap is the compare-and-swap described on Store and store.Store. It waits for
// the key's lock until ctx is done. Errors: store.ErrConflict (nothing written),
// store.ErrInvalidKey, an error if len(data) > store.MaxSwapSize, ctx's error while
// waiting for the lock, I/O errors.
func (l *Store) Swap(ctx context.Context, key string, old store.Token, data []byte) (store.Token, error) {
	if err := store.Begin(ctx, key); err != nil {
		return "", err
	}
	if len(data) > store.MaxSwapSize {
		return "", fmt.Errorf("%s: swap of %d bytes: larger than %d", key, len(data), store.MaxSwapSize)
	}
	path := l.Location(key)
	// The lock file stays, and so does the folder it was made in, even when
	// nothing is written: removing a lock file another process may be
	// waiting on would let two processes hold "the" lock.
	unlock, err := l.lock(ctx, key)
	if err != nil {
		return "", err
	}
	defer unlock()

	// Under the lock: re-read what the key holds now.
	cur, large, err := readSmall(path)
	switch {
	case errors.Is(err, store.ErrNotExist):
		if old != store.NoToken {
			return "", fmt.Errorf("%s: %w", key, store.ErrConflict)
		}
	case err != nil:
		return "", fmt.Errorf("%s: %w", key, err)
	case old == store.NoToken || large || hashToken(cur) != old:
		// A large object never matches: its Get token is not a hash.
		return "", fmt.Errorf("%s: %w", key, store.ErrConflict)
	}

	tmp, _, err := l.createTemp(key, filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	if old == store.NoToken {
		// Link, not rename: a concurrent Create (which takes no lock) may have
		// made the key since we looked; link refuses to replace it.
		if err := os.Link(tmp.Name(), path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("%s: %w", key, store.ErrConflict)
			}
			return "", fmt.Errorf("%s: %w", key, err)
		}
	} else if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("%s: %w", key, err)
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("%s: written, but %w", key, err)
	}
	return hashToken(data), nil
}

// List walks the folder in lexical key order (byte order of the keys, so
// "a-b" < "a/b" < "a0"), streaming: it holds the entries of one folder per
// level of depth, never the whole listing. Temporary files, lock files and names that are not valid keys are
// skipped; symbolic links are followed. A missing root or prefix folder lists
// nothing. Errors: store.ErrInvalidKey for a bad prefix, fn's error, I/O errors.
func (l *Store) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.CheckPrefix(prefix); err != nil {
		return err
	}
	dirKey := prefix[:strings.LastIndexByte(prefix, '/')+1] // "" or ends in "/"
	return l.walk(ctx, dirKey, prefix, fn)
}

// ListKeys lists the keys List gives, in the order the file system gives
// them, streaming: it reads each folder a batch of entries at a time, and
// examines a file (stat) only when its entry is a symbolic link or of
// unknown type, so listing a folder of a million files costs a read of
// the folder, not a million stats, and memory holds one batch per level
// of depth. key is a buffer reused for every key, valid only until fn
// returns (store.KeyLister).
func (l *Store) ListKeys(ctx context.Context, prefix string, fn func(key []byte) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := store.CheckPrefix(prefix); err != nil {
		return err
	}
	dirKey := prefix[:strings.LastIndexByte(prefix, '/')+1]
	key := make([]byte, 0, store.MaxKeyLen)
	return l.streamKeys(ctx, dirKey, prefix, &key, fn)
}

// listBatch is how many folder entries ListKeys reads at a time.
const listBatch = 1024

// streamKeys lists the folder of dirKey for ListKeys, making each key in
// *key (the folder's key, then the entry's name).
func (l *Store) streamKeys(ctx context.Context, dirKey, prefix string, key *[]byte, fn func([]byte) error) error {
	dir := l.root
	if dirKey != "" {
		dir = l.Location(strings.TrimSuffix(dirKey, "/"))
	}
	f, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	defer f.Close()
	n := 0
	err = readEntries(f, func(name []byte, typ fs.FileMode) error {
		if n++; n%listBatch == 0 {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
		}
		*key = append(append((*key)[:0], dirKey...), name...)
		// A string over the buffer, for the checks only: walkEntry keeps
		// nothing of it but in a folder's key, which it builds anew.
		full := unsafe.String(unsafe.SliceData(*key), len(*key))
		it, ok, ierr := l.walkEntry(dir, dirKey, prefix, full, typ, false)
		switch {
		case ierr != nil:
			return ierr
		case !ok:
			return nil
		case strings.HasSuffix(it.sortKey, "/"):
			return l.streamKeys(ctx, it.key, prefix, key, fn)
		}
		return fn(*key)
	})
	if err == nil {
		err = ctx.Err()
	}
	// Only the folder's own read error means it went (ENOTDIR: replaced
	// by a file): an entry's Stat or fn may fail with ENOTDIR too, and
	// that must not end the listing as if it were complete.
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Path == f.Name() {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	return err
}

// walkItem is one entry of a folder walk.
type walkItem struct {
	sortKey string // the name, plus "/" for a folder
	key     string // the folder's key plus sortKey
	info    fs.FileInfo
}

// walk lists the folder of dirKey ("" or "a/b/"), keeping keys that start
// with prefix, with each object's size and time.
func (l *Store) walk(ctx context.Context, dirKey, prefix string, fn func(store.ObjectInfo) error) error {
	dir := l.root
	if dirKey != "" {
		dir = l.Location(strings.TrimSuffix(dirKey, "/"))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("list %s: %w", prefix, err)
	}
	items := make([]walkItem, 0, len(entries))
	for _, e := range entries {
		it, ok, err := l.walkEntry(dir, dirKey, prefix, dirKey+e.Name(), e.Type(), true)
		if err != nil {
			return err
		}
		if ok {
			items = append(items, it)
		}
	}
	slices.SortFunc(items, func(a, b walkItem) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		full := it.key
		if strings.HasSuffix(it.sortKey, "/") {
			if err := l.walk(ctx, full, prefix, fn); err != nil {
				return err
			}
			continue
		}
		if err := fn(store.ObjectInfo{Key: full, Size: it.info.Size(), ModTime: it.info.ModTime()}); err != nil {
			return err
		}
	}
	return nil
}

// walkEntry decides whether the entry of the folder dir (key dirKey) whose
// key is full (dirKey plus its name), of type typ (fs.FileMode's type bits,
// as the folder gives them), is listed: an object (a regular file, or a
// link to one) whose key starts with prefix, or a folder that can hold
// such keys. It stats the entry when info is wanted or its type is not
// known from the folder alone (a link, fs.ModeIrregular).
func (l *Store) walkEntry(dir, dirKey, prefix, full string, typ fs.FileMode, info bool) (walkItem, bool, error) {
	name := full[len(dirKey):]
	if store.CheckElement(name) != nil {
		return walkItem{}, false, nil // temp, lock, or not a valid key element
	}
	// Prune: keep names that can still lead to a key with the prefix.
	if !strings.HasPrefix(full, prefix) && !strings.HasPrefix(prefix, full) {
		return walkItem{}, false, nil
	}
	var fi fs.FileInfo
	if info || (typ != 0 && !typ.IsDir()) { // regular files and folders are known from the entry
		var err error
		fi, err = os.Stat(filepath.Join(dir, name)) // follows symlinks
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return walkItem{}, false, nil // deleted meanwhile, or a dangling link
			}
			return walkItem{}, false, fmt.Errorf("list %s: %w", prefix, err)
		}
		typ = fi.Mode().Type()
	}
	switch {
	case typ.IsDir():
		if !strings.HasPrefix(full+"/", prefix) && !strings.HasPrefix(prefix, full+"/") {
			return walkItem{}, false, nil // "x/" cannot hold keys starting with "x-"
		}
		return walkItem{name + "/", full + "/", fi}, true, nil
	case !typ.IsRegular() || !strings.HasPrefix(full, prefix):
		return walkItem{}, false, nil
	}
	return walkItem{name, full, fi}, true, nil
}

// Delete removes key's file, then the parent folders it leaves empty, up to
// (not including) the root. A missing key, or a key that names a folder, is
// not an error. Errors: store.ErrInvalidKey, I/O errors.
func (l *Store) Delete(ctx context.Context, key string) error {
	if err := store.Begin(ctx, key); err != nil {
		return err
	}
	path := l.Location(key)
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("%s: %w", key, err)
	}
	if fi.IsDir() {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", key, err)
	}
	dir := filepath.Dir(path)
	if err := syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: deleted, but %w", key, err)
	}
	l.removeEmpty(dir)
	return nil
}

// removeEmpty removes dir and its parents while they are empty, up to (not
// including) the root. os.Remove refuses a non-empty folder, so a
// concurrent writer's new file (or temp file) keeps its folder; writers
// recreate a folder removed under them (see createTemp).
func (l *Store) removeEmpty(dir string) {
	for dir != l.root && strings.HasPrefix(dir, l.root+string(filepath.Separator)) {
		if os.Remove(dir) != nil {
			break
		}
		dir = filepath.Dir(dir)
	}
}

// createTemp makes the folder dir (and its parents, fsyncing each folder a
// new one was made in) and a new temporary file in it. It retries when a
// concurrent Delete removes the folder it just made. It returns the folders
// it made, deepest first (see removeMade); on error it has removed them.
func (l *Store) createTemp(key, dir string) (*os.File, []string, error) {
	var err error
	var made []string
	for range 10 {
		var m []string
		m, err = l.mkdirs(dir)
		made = append(m, made...)
		if err == nil {
			var f *os.File
			f, err = os.OpenFile(filepath.Join(dir, store.TempName("")), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
			if err == nil {
				return f, made, nil
			}
		}
		// ENOENT: a Delete removed a folder we just made; EEXIST: a name
		// collision of two random names. Both are worth another try.
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	removeMade(made)
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, nil, fmt.Errorf("%s: a parent is a file, not a folder", key)
	}
	return nil, nil, fmt.Errorf("%s: %w", key, err)
}

// mkdirs makes dir and its missing parents, fsyncing the folder each new
// folder was made in, so a new object's path survives a crash. It returns
// the folders it made, deepest first, also when it fails part way.
func (l *Store) mkdirs(dir string) ([]string, error) {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return nil, &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil, nil
	}
	var made []string
	parent := filepath.Dir(dir)
	if parent != dir {
		m, err := l.mkdirs(parent)
		if err != nil {
			return m, err
		}
		made = m
	}
	if err := os.Mkdir(dir, 0o777); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return made, nil // made concurrently (or a file: the caller's open says so)
		}
		return made, err
	}
	made = append([]string{dir}, made...)
	return made, syncDir(parent)
}

// removeMade removes the folders a failed write made (deepest first), as
// long as each is empty: a write that fails — a full disk, a reader's
// error, a cancelled context — leaves no folder behind. A folder a
// concurrent writer has put a file into is not empty and stays; a writer
// whose new folder is removed under it makes it again (createTemp).
func removeMade(made []string) {
	for _, d := range made {
		if os.Remove(d) != nil {
			return
		}
	}
}

// lock takes the exclusive lock of key, polling until ctx is done.
func (l *Store) lock(ctx context.Context, key string) (unlock func(), err error) {
	path := l.Location(key) + store.LockSuffix
	var f *os.File
	for range 10 {
		if _, err = l.mkdirs(filepath.Dir(path)); err == nil {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			break // opened, or a real error; ENOENT: folder deleted meanwhile
		}
	}
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("%s: a parent is a file, not a folder", key)
		}
		return nil, fmt.Errorf("%s: lock: %w", key, err)
	}
	wait := time.Millisecond
	start, noted := time.Now(), false
	for {
		ok, err := filelock.TryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: lock %s: %w", key, path, err)
		}
		if ok {
			return func() {
				filelock.Unlock(f)
				f.Close()
			}, nil
		}
		if waited := time.Since(start); !noted && waited >= store.LockWaitNotice {
			noted = true
			store.NoteLockWait(ctx, store.LockWait{Key: key, Lock: path, Waited: waited.Truncate(time.Second), Holders: filelock.Holders(path)})
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("%s: waiting for lock %s: %w", key, path, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// readSmall reads path for Swap. It reports large, without reading, for a
// file of more than store.MaxSwapSize bytes (it cannot match any Token Get
// returned), and store.ErrNotExist if path is missing or a folder.
func readSmall(path string) (data []byte, large bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil, false, store.ErrNotExist
		}
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if fi.IsDir() {
		return nil, false, store.ErrNotExist
	}
	if fi.Size() > store.MaxSwapSize {
		return nil, true, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, store.MaxSwapSize+1))
	if err != nil {
		return nil, false, err
	}
	return b, len(b) > store.MaxSwapSize, nil
}

// hashToken is the Token of content on a local folder: hex SHA-256.
func hashToken(b []byte) store.Token {
	sum := sha256.Sum256(b)
	return store.Token(hex.EncodeToString(sum[:]))
}

// notExist wraps err with key, mapping "no such file" and "a parent is not a
// folder" to store.ErrNotExist.
func notExist(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%s: %w", key, store.ErrNotExist)
	}
	return fmt.Errorf("%s: %w", key, err)
}

// Temps lists the temporary files under prefix (a folder key ending in
// "/"); see store.TempCleaner. Errors: store.ErrInvalidKey for a bad prefix, I/O
// errors.
func (l *Store) Temps(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := store.CheckPrefix(prefix); err != nil {
		return err
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("%q: %w: Temps takes \"\" or a folder prefix ending in /", prefix, store.ErrInvalidKey)
	}
	root := l.Location(strings.TrimSuffix(prefix, "/"))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), store.TempPrefix) || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // renamed or removed meanwhile: a write finished
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(l.root, p)
		if err != nil {
			return err
		}
		return fn(store.ObjectInfo{Key: filepath.ToSlash(rel), Size: fi.Size(), ModTime: fi.ModTime()})
	})
	if err != nil {
		return fmt.Errorf("list temporary files under %s: %w", prefix, err)
	}
	return nil
}

// RemoveTemp deletes one temporary file that Temps listed; see
// store.TempCleaner.
func (l *Store) RemoveTemp(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, name := path.Split(key)
	if !strings.HasPrefix(name, store.TempPrefix) || strings.Contains(dir, "..") || strings.HasPrefix(key, "/") {
		return fmt.Errorf("%q: %w: not a temporary file", key, store.ErrInvalidKey)
	}
	if dir != "" {
		if err := store.CheckPrefix(dir); err != nil {
			return err
		}
	}
	if err := os.Remove(l.Location(dir) + string(filepath.Separator) + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove temporary file %s: %w", key, err)
	}
	return nil
}

// GetRange opens length bytes of key's file from offset (store.RangeReader).
// Errors: store.ErrNotExist (also for a folder), store.ErrInvalidKey.
func (l *Store) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := store.Begin(ctx, key); err != nil {
		return nil, err
	}
	f, err := os.Open(l.Location(key))
	if err != nil {
		return nil, notExist(key, err)
	}
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		f.Close()
		if err == nil {
			err = store.ErrNotExist
		}
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, offset, length), f}, nil
}
