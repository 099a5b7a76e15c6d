package repo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fdl-dev/fdl/internal/stamp"

	"github.com/fdl-dev/fdl/internal/filecopy"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/retention"
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
	ev := Event{Op: OpDownload, Name: key, Total: rec.Catalog.Size}
	progress := func(done int64) {
		if r.opts.Progress != nil {
			ev.Done = done
			r.opts.Progress(ev)
		}
	}
	var n int64
	var got string
	if f, ok := rc.(*os.File); ok {
		// A folder store's file: one read that hashes while it copies, or
		// a reflink and a read for the digest (filecopy.Copy).
		n, got, err = filecopy.Copy(ctx, tmp, f, progress)
	} else {
		n, got, err = filecopy.Digest(ctx, io.TeeReader(rc, tmp), progress)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fetch catalog of version %s: %w", rec.ID, err)
	}
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

// uploadBytes uploads b as the object key, create-only; an object already
// there (a resumed push) must hold the same bytes. Errors: the store's,
// store.ErrExist wrapped with both digests when the bytes differ.
func (r *Repo) uploadBytes(ctx context.Context, key string, b []byte) error {
	pr := &progressReader{r: bytes.NewReader(b), fn: r.opts.Progress, ctx: ctx, ev: Event{Op: OpUpload, Name: key, Total: int64(len(b))}}
	err := r.st.Create(ctx, key, pr)
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrExist) {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	// Resume: the object is there from an earlier attempt; it must be ours.
	sum := sha256.Sum256(b)
	wantSize, wantSHA := int64(len(b)), hex.EncodeToString(sum[:])
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

// uploadCatalog uploads a pending version's catalog, create-only, reading
// it once to check it against the record:
//
//   - where the store can take the local file itself (store.Linker: a
//     folder store on the working directory's file system), the local file
//     is read-only (commit left it mode 0444; an older one is made so
//     before it is read, so no later writer can open it) and is
//     hard-linked into the store: no byte is copied. It is hashed again
//     unless its stamp (device, inode, size, modification and change
//     times) is still the one commit wrote when it hashed it
//     (stamp.Seal), as Git's index skips rehashing unchanged files. The stored catalog and the local pending
//     copy are then one file until the push removes the local name after
//     its ref move; nothing fdl does writes to a committed catalog, and the
//     mode refuses writers other than root;
//   - else it is streamed to the store and hashed on the way; before the
//     last read returns, the digest is compared with the record, and a
//     mismatch fails the read, so the store creates nothing
//     (store.Store.Create).
//
// The push's data check runs after the uploads (confirmPush); a push it
// refuses removes what it uploaded. A catalog the store already holds (a
// resumed push) must match the record. Errors: *ChecksumError (the local
// copy differs from its record), the store's errors.
func (r *Repo) uploadCatalog(ctx context.Context, p Pending) error {
	key := VersionKey(p.Record.ID, version.CatalogFile)
	path := filepath.Join(p.Dir, version.CatalogFile)
	want := version.File{Size: p.Record.Catalog.Size, SHA256: p.Record.Catalog.SHA256}
	progress := r.progress(OpUpload, key, want.Size)
	if lk, ok := r.st.(store.Linker); ok {
		// Looked at before CanLink, whose probe link changes the stamp.
		sealed := false
		if fi, err := os.Stat(path); err == nil {
			sealed = stamp.Unchanged(p.Dir, fi, want.Size)
		}
		if lk.CanLink(path) {
			err := r.linkCatalog(ctx, lk, p, key, path, want, sealed, progress)
			if !errors.Is(err, store.ErrCannotLink) {
				return r.catalogStored(ctx, p, key, path, want, err)
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("local version %s: %w", p.Record.ID, err)
	}
	defer f.Close()
	vr := &verifyingReader{ctx: ctx, r: f, h: sha256.New(), progress: progress, atEnd: func(n int64, sum string) error {
		return localMismatch(p, path, want, n, sum)
	}}
	return r.catalogStored(ctx, p, key, path, want, r.st.Create(ctx, key, vr))
}

// linkCatalog is uploadCatalog's hard-link path.
// sealed says the catalog's stamp was the one commit left (stamp.Seal):
// it holds the bytes commit hashed, so it is not hashed again; any other
// is made read-only and hashed.
func (r *Repo) linkCatalog(ctx context.Context, lk store.Linker, p Pending, key, path string, want version.File, sealed bool, progress func(int64)) error {
	sum := want.SHA256
	if !sealed {
		if err := os.Chmod(path, 0o444); err != nil {
			return fmt.Errorf("local version %s: %w", p.Record.ID, err)
		}
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("local version %s: %w", p.Record.ID, err)
		}
		var n int64
		n, sum, err = filecopy.Digest(ctx, f, progress)
		f.Close()
		if err != nil {
			return fmt.Errorf("local version %s: %w", p.Record.ID, err)
		}
		if err := localMismatch(p, path, want, n, sum); err != nil {
			return err
		}
	} else if progress != nil {
		progress(want.Size)
	}
	// The file checked above is the one linked: only its size is looked at
	// again, through the new name.
	return lk.CreateLink(ctx, key, path, func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		return localMismatch(p, path, want, fi.Size(), sum)
	})
}

// catalogStored finishes uploadCatalog after the store's answer err: a
// typed error of the check is returned as it is; a catalog already in the
// store (ErrExist) must match the record, as the local copy must.
func (r *Repo) catalogStored(ctx context.Context, p Pending, key, path string, want version.File, err error) error {
	var ce *ChecksumError
	var dm *DataMissingError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ce
	case errors.As(err, &dm):
		return dm
	case !errors.Is(err, store.ErrExist):
		return fmt.Errorf("upload %s: %w", key, err)
	}
	if err := checkLocalFile(p, version.CatalogFile, want); err != nil {
		return err
	}
	return r.sameStored(ctx, key, want)
}

// sameStored checks that the object at key has the size and digest want (a
// resumed push found it there). Errors name both digests and wrap
// store.ErrExist.
func (r *Repo) sameStored(ctx context.Context, key string, want version.File) error {
	rc, _, err := r.st.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	defer rc.Close()
	n, got, err := filecopy.Digest(ctx, rc, nil)
	if err != nil {
		return fmt.Errorf("upload %s: read existing copy: %w", key, err)
	}
	if n != want.Size || got != want.SHA256 {
		return fmt.Errorf("upload %s: the store already holds different bytes (%d bytes, sha256 %s; local %d bytes, sha256 %s): %w", key, n, got, want.Size, want.SHA256, store.ErrExist)
	}
	return nil
}

// progress returns a function reporting op's progress on name (total
// bytes) to Options.Progress, or nil when none is set.
func (r *Repo) progress(op EventOp, name string, total int64) func(int64) {
	if r.opts.Progress == nil {
		return nil
	}
	return func(done int64) { r.opts.Progress(Event{Op: op, Name: name, Done: done, Total: total}) }
}

// verifyingReader hashes what it reads; when its source ends, it calls
// atEnd with the size and digest before returning the end, and fails the
// read with atEnd's error instead (the store then creates nothing).
type verifyingReader struct {
	ctx      context.Context
	r        io.Reader
	h        hash.Hash
	n, last  int64
	progress func(int64)
	atEnd    func(n int64, sha256 string) error
	err      error // sticky
}

func (v *verifyingReader) Read(b []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if err := v.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := v.r.Read(b)
	if n > 0 {
		v.h.Write(b[:n])
		v.n += int64(n)
		if v.progress != nil && (v.n-v.last >= 4<<20) {
			v.last = v.n
			v.progress(v.n)
		}
	}
	if err == io.EOF {
		if v.progress != nil {
			v.progress(v.n)
		}
		if v.err = v.atEnd(v.n, hex.EncodeToString(v.h.Sum(nil))); v.err != nil {
			return n, v.err
		}
		v.err = io.EOF // atEnd runs once
	}
	return n, err
}

// versionFiles are the only objects a version folder holds: its catalog,
// dataset.json and record, the record's signature when it is signed, and
// the retirement marker once it is retired (docs/spec.md §1).
var versionFiles = map[string]bool{version.CatalogFile: true, version.DatasetFile: true, version.RecordFile: true, version.SignatureFile: true, retention.MarkerFile: true}

// CheckVersionFolder is the check made before a reader is given a stored
// version's catalog location (fdl show's ATTACH line) and before a push
// moves a branch to a version it uploaded: the catalog's size matches the
// record, and the folder holds nothing but the version's own files. A file
// beside the catalog is not harmless: DuckDB replays a
// "ducklake.duckdb.wal" over the frozen catalog and reads a state the
// record does not describe. dataset.json must be there at its recorded
// size, and the record too. It lists the folder (one request); on a store
// that cannot list (a web server) it looks up the catalog and the one file
// DuckDB would read beside it. Errors: *ChecksumError (size only),
// *ExtraFilesError, the store's errors (naming the version).
func (r *Repo) CheckVersionFolder(ctx context.Context, rec *version.Record) error {
	key := VersionKey(rec.ID, version.CatalogFile)
	size, found := int64(-1), false
	var extra []string
	sizes := map[string]int64{}
	err := r.st.List(ctx, VersionKey(rec.ID, ""), func(oi store.ObjectInfo) error {
		switch name := strings.TrimPrefix(oi.Key, VersionKey(rec.ID, "")); {
		case name == version.CatalogFile:
			size, found = oi.Size, true
		case !versionFiles[name]:
			extra = append(extra, oi.Key)
		default:
			sizes[name] = oi.Size
		}
		return nil
	})
	if err == nil {
		// The rest of the version: dataset.json at its recorded size, and
		// the record itself.
		// A listing may not give sizes (-1: a web server's index); then
		// the size is read with a Stat.
		if n, ok := sizes[version.DatasetFile]; ok && n < 0 {
			oi, serr := r.st.Stat(ctx, VersionKey(rec.ID, version.DatasetFile))
			if serr != nil {
				return fmt.Errorf("version %s: %w", rec.ID, serr)
			}
			sizes[version.DatasetFile] = oi.Size
		}
		if found && size < 0 {
			oi, serr := r.st.Stat(ctx, key)
			if serr != nil {
				return fmt.Errorf("version %s: %w", rec.ID, serr)
			}
			size = oi.Size
		}
		if n, ok := sizes[version.DatasetFile]; !ok || n != rec.Dataset.Size {
			if !ok {
				return fmt.Errorf("version %s: %s: %w", rec.ID, r.st.Location(VersionKey(rec.ID, version.DatasetFile)), store.ErrNotExist)
			}
			return &ChecksumError{Version: rec.ID, WantSize: rec.Dataset.Size, GotSize: n, WantSHA: rec.Dataset.SHA256, GotSHA: "(not read)", Location: r.st.Location(VersionKey(rec.ID, version.DatasetFile))}
		}
		if _, ok := sizes[version.RecordFile]; !ok {
			return missingVersion{fmt.Errorf("version %s has no %s: %w", rec.ID, version.RecordFile, ErrIncomplete)}
		}
	}
	if errors.Is(err, store.ErrCannotList) {
		oi, serr := r.st.Stat(ctx, key)
		if serr != nil {
			return fmt.Errorf("version %s: catalog %s: %w", rec.ID, r.st.Location(key), serr)
		}
		size, found = oi.Size, true
		wal := key + ".wal"
		if _, werr := r.st.Stat(ctx, wal); werr == nil {
			extra = append(extra, wal)
		} else if !errors.Is(werr, store.ErrNotExist) {
			return fmt.Errorf("version %s: %w", rec.ID, werr)
		}
	} else if err != nil {
		return fmt.Errorf("version %s: %w", rec.ID, err)
	}
	if !found {
		return fmt.Errorf("version %s: catalog %s: %w", rec.ID, r.st.Location(key), store.ErrNotExist)
	}
	if size != rec.Catalog.Size {
		return &ChecksumError{Version: rec.ID, WantSize: rec.Catalog.Size, GotSize: size, WantSHA: rec.Catalog.SHA256, GotSHA: "(not read)", Location: r.st.Location(key)}
	}
	if len(extra) > 0 {
		return &ExtraFilesError{Version: rec.ID, Keys: extra}
	}
	return nil
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
