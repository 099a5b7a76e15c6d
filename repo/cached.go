package repo

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/fdl-dev/fdl/cache"
	"github.com/fdl-dev/fdl/version"
)

// CachedCatalog returns the local file of rec's catalog in the reader's
// cache c (docs/spec.md §21.1), downloading it into the cache first when
// the cache has no entry for its sha256: the bytes are counted and hashed
// as they arrive (reported as OpDownload progress) and kept only when
// they are the record's size and sha256. An entry already there was
// checked when it was made and is not read again: nothing is downloaded.
// For a lake born in the repository, the repository's data path is
// recorded beside the entry (cache.SetOrigin; a failure is not reported),
// for OfflineAttach.
// Errors: *ChecksumError (nothing kept) naming the version and both
// digests; the store's, naming the version; the cache's.
func (r *Repo) CachedCatalog(ctx context.Context, c *cache.Cache, rec *version.Record) (string, error) {
	key := VersionKey(rec.ID, version.CatalogFile)
	path, err := c.Fetch(ctx, rec.Catalog.SHA256, rec.Catalog.Size, func(ctx context.Context, w io.Writer) error {
		rc, _, err := r.st.Get(ctx, key)
		if err != nil {
			return err
		}
		defer rc.Close()
		pr := &progressReader{r: rc, fn: r.opts.Progress, ctx: ctx, ev: Event{Op: OpDownload, Name: key, Total: rec.Catalog.Size}}
		_, err = io.Copy(w, pr)
		if err == nil && pr.fn != nil && pr.last != pr.done {
			// The last read may bring no byte with its io.EOF: report the end.
			ev := pr.ev
			ev.Done = pr.done
			pr.fn(ev)
		}
		return err
	})
	if me := (*cache.MismatchError)(nil); errors.As(err, &me) {
		return "", &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: me.GotSize, WantSHA: rec.Catalog.SHA256, GotSHA: me.GotSHA256, Location: r.st.Location(key)}
	}
	if err != nil {
		return "", fmt.Errorf("version %s: catalog: %w", rec.ID, err)
	}
	if rec.DuckLake.DataPath == r.cfg.DataPath {
		// Offline, OfflineAttach reads it to print the line printed now.
		_ = c.SetOrigin(ctx, rec.Catalog.SHA256, r.cfg.DataPath)
	}
	return path, nil
}
