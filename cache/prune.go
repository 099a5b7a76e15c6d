package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// Entry is one complete entry of the cache.
type Entry struct {
	SHA256  string    `json:"sha256"`   // the key: the file's SHA-256, 64 lower-case hex digits
	Path    string    `json:"path"`     // the local file
	Size    int64     `json:"size"`     // bytes
	LastUse time.Time `json:"last_use"` // last Get or Fetch of it (UTC); when written, without a record
}

// List returns the cache's complete entries, least recently used first
// (the order Prune removes them in; equal times by digest). Entries being
// filled are not listed. Errors: reading the folder.
func (c *Cache) List() ([]Entry, error) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("catalog cache: %w", err)
	}
	var out []Entry
	for _, de := range des {
		sum, ok := strings.CutSuffix(de.Name(), EntrySuffix)
		if !ok || checkDigest(sum) != nil || !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("catalog cache: %w", err)
		}
		out = append(out, Entry{SHA256: sum, Path: c.Path(sum), Size: fi.Size(), LastUse: c.lastUse(sum, fi.ModTime())})
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(a.LastUse.Compare(b.LastUse), strings.Compare(a.SHA256, b.SHA256))
	})
	return out, nil
}

// PruneOptions say which entries Prune removes. With none set, Prune
// removes only what killed processes left (see Prune).
type PruneOptions struct {
	// OlderThan > 0 removes every entry last used more than OlderThan ago.
	OlderThan time.Duration
	// MaxBytes > 0 then removes entries, least recently used first, until
	// the total size of those left is at most MaxBytes.
	MaxBytes int64
	// All removes every entry.
	All bool
}

// PruneResult is what a Prune did.
type PruneResult struct {
	Removed   []Entry `json:"pruned"`     // entries removed, in the order removed
	Busy      []Entry `json:"busy"`       // entries Prune would have removed but another holder's lock kept
	Kept      int64   `json:"kept_bytes"` // total size of the entries left, bytes
	Leftovers int     `json:"leftovers"`  // partial entries, records and stale locks of killed processes removed
}

// Prune removes entries from the cache: first those last used more than
// OlderThan ago, then the least recently used until the rest fit in
// MaxBytes (or all, with All). It never waits: an entry whose lock another
// fetch, Get or process holds is kept (listed in Busy), and so is one used
// since Prune listed it. It also removes what killed processes left:
// <sha256>.part and <sha256>.used.new files, last-use records without an
// entry, and lock files no process holds. Errors: a negative option; ctx's
// (between entries: what was removed stays removed); I/O errors, after
// the other entries were tried.
func (c *Cache) Prune(ctx context.Context, opts PruneOptions) (PruneResult, error) {
	if opts.OlderThan < 0 || opts.MaxBytes < 0 {
		return PruneResult{}, fmt.Errorf("catalog cache prune: age %v and size %d bytes: give 0 (no limit) or more", opts.OlderThan, opts.MaxBytes)
	}
	return c.prune(ctx, opts, "")
}

// prune is Prune, keeping the entry keep (the one a Fetch just made).
func (c *Cache) prune(ctx context.Context, opts PruneOptions, keep string) (PruneResult, error) {
	res := PruneResult{Removed: []Entry{}, Busy: []Entry{}} // arrays in JSON, never null
	n, err := c.sweep()
	res.Leftovers = n
	if err != nil {
		return res, err
	}
	entries, err := c.List()
	if err != nil {
		return res, err
	}
	var total int64
	for _, e := range entries {
		total += e.Size
	}
	now := c.now()
	var errs []error
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			res.Kept = total
			return res, fmt.Errorf("catalog cache prune: %w", err)
		}
		old := opts.OlderThan > 0 && now.Sub(e.LastUse) > opts.OlderThan
		over := opts.MaxBytes > 0 && total > opts.MaxBytes
		if e.SHA256 == keep || !(opts.All || old || over) {
			continue
		}
		removed, busy, err := c.remove(e)
		switch {
		case err != nil:
			errs = append(errs, err)
		case busy:
			res.Busy = append(res.Busy, e)
		case removed:
			res.Removed = append(res.Removed, e)
			total -= e.Size
		}
	}
	res.Kept = total
	return res, errors.Join(errs...)
}

// remove removes entry e if its lock is free and it was not used since it
// was listed. busy: another holder has the lock.
func (c *Cache) remove(e Entry) (removed, busy bool, err error) {
	l, ok, err := tryLock(c.name(e.SHA256, lockSuffix))
	if err != nil || !ok {
		return false, !ok && err == nil, err
	}
	defer l.release()
	fi, err := os.Stat(e.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil // removed meanwhile
	}
	if err != nil {
		return false, false, fmt.Errorf("catalog cache: %w", err)
	}
	if c.lastUse(e.SHA256, fi.ModTime()).After(e.LastUse) {
		return false, false, nil // used meanwhile: no longer what the listing said
	}
	if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, false, fmt.Errorf("catalog cache: %w", err)
	}
	if err := os.Remove(c.name(e.SHA256, originSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, false, fmt.Errorf("catalog cache: %w", err)
	}
	if err := os.Remove(c.name(e.SHA256, usedSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, false, fmt.Errorf("catalog cache: %w", err)
	}
	if err := os.Remove(c.name(e.SHA256, stampSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, false, fmt.Errorf("catalog cache: %w", err)
	}
	return true, false, nil
}

// sweep removes, for each digest whose lock it can take at once, what a
// killed process left: a partial entry, a last-use record being written, a
// last-use record without its entry, and the lock file itself. It returns
// how many such files it removed (lock files not counted).
func (c *Cache) sweep() (int, error) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return 0, fmt.Errorf("catalog cache: %w", err)
	}
	names := make(map[string]bool, len(des))
	for _, de := range des {
		names[de.Name()] = true
	}
	seen := map[string]bool{}
	removed := 0
	var errs []error
	for _, de := range des {
		sum, suffix, ok := split(de.Name())
		if !ok || seen[sum] {
			continue
		}
		leftover := names[sum+partSuffix] || names[sum+newSuffix] || names[sum+originNewSuffix] || names[sum+stampNewSuffix] || names[sum+lockSuffix] ||
			((names[sum+usedSuffix] || names[sum+originSuffix] || names[sum+stampSuffix]) && !names[sum+EntrySuffix])
		if suffix == EntrySuffix || !leftover {
			continue
		}
		seen[sum] = true
		l, ok, err := tryLock(c.name(sum, lockSuffix))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue // its holder is alive
		}
		for _, s := range []string{partSuffix, newSuffix, originNewSuffix, stampNewSuffix} {
			if err := os.Remove(c.name(sum, s)); err == nil {
				removed++
			} else if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("catalog cache: %w", err))
			}
		}
		if _, err := os.Stat(c.Path(sum)); errors.Is(err, fs.ErrNotExist) {
			for _, s := range []string{usedSuffix, originSuffix, stampSuffix} {
				if err := os.Remove(c.name(sum, s)); err == nil {
					removed++
				}
			}
		}
		l.release()
	}
	return removed, errors.Join(errs...)
}

// split cuts a cache file name into its digest and suffix; ok is false
// for names that are not the cache's.
func split(name string) (sum, suffix string, ok bool) {
	if len(name) < 64 || checkDigest(name[:64]) != nil {
		return "", "", false
	}
	switch suffix = name[64:]; suffix {
	case EntrySuffix, usedSuffix, newSuffix, originSuffix, originNewSuffix, stampSuffix, stampNewSuffix, lockSuffix, partSuffix:
		return name[:64], suffix, true
	}
	return "", "", false
}
