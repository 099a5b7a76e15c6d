package repo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// Reading the data-file table of a version's catalog as the store holds
// it: what gc decides which data files go from (docs/spec.md §16, step 3).

// CatalogDataFiles checks version rec's catalog against its record (size
// and sha256) and reads its data-file table (ducklake.Catalog.DataFiles:
// data and delete files, every row). On a folder store the file is
// checked and opened where it lies (frozen catalogs never change);
// elsewhere it is copied into the folder tmp first (FetchCatalog) and
// removed after. It returns the time spent checking (fetch: hashing, and
// on object stores copying) and opening and reading (scan). Errors:
// *ChecksumError (ErrChecksum), ducklake.ErrCorrupt and
// ducklake.ErrNotCatalog for a file that is not a readable catalog (each
// naming the version), the store's.
func (r *Repo) CatalogDataFiles(ctx context.Context, rec *version.Record, tmp string) (files []ducklake.DataFile, fetch, scan time.Duration, err error) {
	t0 := time.Now()
	path := ""
	if files, ok := r.Folder(); ok {
		path = files.LocalPath(VersionKey(rec.ID, version.CatalogFile))
		size, sum, err := FileDigest(path)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("version %s: catalog: %w", rec.ID, err)
		}
		if size != rec.Catalog.Size || sum != rec.Catalog.SHA256 {
			return nil, 0, 0, &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: size, WantSHA: rec.Catalog.SHA256, GotSHA: sum, Location: path}
		}
	} else {
		path = filepath.Join(tmp, string(rec.ID)+".duckdb")
		if err := r.FetchCatalog(ctx, rec, path); err != nil {
			return nil, 0, 0, err
		}
		defer os.Remove(path)
	}
	t1 := time.Now()
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("version %s: %w", rec.ID, err)
	}
	files, err = c.DataFiles(ctx)
	c.Close()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("version %s: %w", rec.ID, err)
	}
	return files, t1.Sub(t0), time.Since(t1), nil
}

// CatalogDataFilesUnchecked reads the data-file table of version id's
// catalog as the store holds it now, with no record to check it against
// (the version may still be uploading, docs/spec.md §16.1): in place on a
// folder store, else copied into the folder tmp (and removed after).
// Errors: store.ErrNotExist or os.ErrNotExist when the catalog is gone
// (its push removed its uploads), ducklake's when it cannot be read, the
// store's.
func (r *Repo) CatalogDataFilesUnchecked(ctx context.Context, id version.ID, tmp string) ([]ducklake.DataFile, error) {
	key := VersionKey(id, version.CatalogFile)
	path := ""
	if files, ok := r.Folder(); ok {
		path = files.LocalPath(key)
	} else {
		rc, _, err := r.st.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		f, err := os.CreateTemp(tmp, "new-*.duckdb")
		if err != nil {
			return nil, err
		}
		path = f.Name()
		defer os.Remove(path)
		_, err = io.Copy(f, rc)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.DataFiles(ctx)
}

// Normaliser places data-file paths for this repository: its data/ folder
// as reached now and as recorded in fdl.json at init (docs/spec.md §8).
func (r *Repo) Normaliser() (*retention.Normaliser, error) {
	_, local := r.Folder()
	return retention.NewNormaliser([]string{r.DataLocation(), r.cfg.DataPath}, local)
}
