package repo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/version"
)

// progressReader counts bytes read and reports them, at most every 4 MiB.
type progressReader struct {
	r          io.Reader
	h          hash.Hash
	done, last int64
	ev         Event
	fn         func(Event)
	ctx        context.Context
}

func (p *progressReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	if n > 0 {
		p.done += int64(n)
		if p.h != nil {
			p.h.Write(b[:n])
		}
		if p.fn != nil && (p.done-p.last >= 4<<20 || err == io.EOF) {
			p.last = p.done
			ev := p.ev
			ev.Done = p.done
			p.fn(ev)
		}
	}
	return n, err
}

// FileDigest returns the size in bytes and lower-case hex SHA-256 of a file,
// streaming it (memory does not grow with the file).
func FileDigest(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// FetchCatalog streams a version's catalog to dst, checking its size and
// sha256 against the record while it streams; dst appears (by rename of a
// temp file beside it) only when both match. dst must not exist. Errors:
// *ChecksumError (nothing written), the store's errors.
func (r *Repo) FetchCatalog(ctx context.Context, rec *version.Record, dst string) error {
	key := VersionKey(rec.ID, version.CatalogFile)
	rc, _, err := r.st.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("fetch catalog of version %s: %w", rec.ID, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".fdl-fetch-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	pr := &progressReader{r: rc, h: sha256.New(), fn: r.opts.Progress, ctx: ctx, ev: Event{Op: OpDownload, Name: key, Total: rec.Catalog.Size}}
	n, err := io.Copy(tmp, pr)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fetch catalog of version %s: %w", rec.ID, err)
	}
	got := hex.EncodeToString(pr.h.Sum(nil))
	if n != rec.Catalog.Size || got != rec.Catalog.SHA256 {
		return &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: n, WantSHA: rec.Catalog.SHA256, GotSHA: got, Location: r.st.Location(key)}
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("%s already exists: %w", dst, os.ErrExist)
	}
	return os.Rename(tmp.Name(), dst)
}

// CheckCatalog streams a version's catalog from the store and compares it
// with the record (reporting progress as OpVerify). Errors: *ChecksumError, the store's errors.
func (r *Repo) CheckCatalog(ctx context.Context, rec *version.Record) error {
	key := VersionKey(rec.ID, version.CatalogFile)
	rc, _, err := r.st.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("version %s: catalog: %w", rec.ID, err)
	}
	defer rc.Close()
	pr := &progressReader{r: rc, h: sha256.New(), fn: r.opts.Progress, ctx: ctx, ev: Event{Op: OpVerify, Name: key, Total: rec.Catalog.Size}}
	n, err := io.Copy(io.Discard, pr)
	if err != nil {
		return fmt.Errorf("version %s: read catalog: %w", rec.ID, err)
	}
	got := hex.EncodeToString(pr.h.Sum(nil))
	if n != rec.Catalog.Size || got != rec.Catalog.SHA256 {
		return &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: n, WantSHA: rec.Catalog.SHA256, GotSHA: got, Location: r.st.Location(key)}
	}
	return nil
}

// uploadFile creates key from a local file, create-only. If key already
// exists (a push that was interrupted and is now resumed), the stored bytes
// must equal the local file's; otherwise it is an error naming both.
func (r *Repo) uploadFile(ctx context.Context, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	pr := &progressReader{r: f, fn: r.opts.Progress, ctx: ctx, ev: Event{Op: OpUpload, Name: key, Total: fi.Size()}}
	err = r.st.Create(ctx, key, pr)
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrExist) {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	// Resume: the object is there from an earlier attempt; it must be ours.
	wantSize, wantSHA, err := FileDigest(path)
	if err != nil {
		return err
	}
	rc, _, err := r.st.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return fmt.Errorf("upload %s: read existing copy: %w", key, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != wantSize || got != wantSHA {
		return fmt.Errorf("upload %s: the store already holds different bytes (%d bytes, sha256 %s; local %d bytes, sha256 %s): %w", key, n, got, wantSize, wantSHA, store.ErrExist)
	}
	return nil
}

// CheckCatalogSize compares the stored catalog's size with the record, a
// cheap check (one Stat) for commands that print a reader's ATTACH line
// without fetching the catalog. Errors: *ChecksumError (size only), the
// store's errors (naming the version).
func (r *Repo) CheckCatalogSize(ctx context.Context, rec *version.Record) error {
	key := VersionKey(rec.ID, version.CatalogFile)
	oi, err := r.st.Stat(ctx, key)
	if err != nil {
		return fmt.Errorf("version %s: catalog %s: %w", rec.ID, r.st.Location(key), err)
	}
	if oi.Size != rec.Catalog.Size {
		return &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: oi.Size, WantSHA: rec.Catalog.SHA256, GotSHA: "(not read)", Location: r.st.Location(key)}
	}
	return nil
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
