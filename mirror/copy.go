package mirror

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
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// knownFiles are the files of a version folder a mirror copies, besides
// signatures (names ending in ".sig"): anything else there (a DuckDB
// ".wal" beside a catalog) is damage, and is not copied.
var knownFiles = map[string]bool{version.CatalogFile: true, version.DatasetFile: true, version.RecordFile: true, retention.MarkerFile: true}

// copyVersions copies recs (parents first), versionWorkers at a time:
// each version's catalog and data files, its other files, its history
// pack, its record last, once its parents' records are written. A
// version's record at the destination therefore means all of its own
// objects and its parents' records are there.
func (m *mirror) copyVersions(ctx context.Context, recs []*version.Record) error {
	if len(recs) > statLimit {
		if err := m.listSourceVersions(ctx); err != nil {
			return err
		}
	}
	// A record is written once its parents' are (recorded: the channel
	// closed): a record at the destination means its history is there,
	// as every writer leaves it. recs is parents first and goroutines
	// start in its order, so a waiting one waits for one started before.
	recorded := map[version.ID]chan struct{}{}
	for _, rec := range recs {
		recorded[rec.ID] = make(chan struct{})
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(versionWorkers)
	for _, rec := range recs {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			return m.copyVersion(gctx, rec, func() error {
				for _, p := range rec.Parents {
					if ch := recorded[p]; ch != nil {
						select {
						case <-ch:
						case <-gctx.Done():
							return gctx.Err()
						}
					}
				}
				return nil
			}, recorded[rec.ID])
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rec := range recs {
		m.known[rec.ID] = true
	}
	return nil
}

// copyVersion copies one version: a version retired at the source (its
// folder holds the marker) as record and marker without catalog, any
// other with its catalog, the data files that catalog lists in the
// source's data/, dataset.json; then signatures and the marker, its
// history pack when the source has one, and the record last (its
// presence makes the version complete).
//
// parentsRecorded waits until the records of its parents being copied
// are written; done is closed once its own is.
func (m *mirror) copyVersion(ctx context.Context, rec *version.Record, parentsRecorded func() error, done chan struct{}) error {
	files, err := m.versionFiles(ctx, rec.ID)
	if err != nil {
		return err
	}
	if _, ok := files[version.RecordFile]; !ok {
		return fmt.Errorf("mirror from %s: version %s: %s: %w", m.src.Where(), rec.ID, version.RecordFile, store.ErrNotExist)
	}
	_, retired := files[retention.MarkerFile]
	if !retired {
		m.step("mirror:catalog")
		path, done, err := m.copyCatalog(ctx, rec)
		if err != nil {
			return err
		}
		m.step("mirror:data")
		err = m.copyData(ctx, rec, path)
		done()
		if err != nil {
			return err
		}
	}
	var names []string
	for name := range files {
		switch {
		case name == version.CatalogFile || name == version.RecordFile:
		case retired && name == version.DatasetFile:
		case knownFiles[name] || strings.HasSuffix(name, ".sig"):
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		m.step("mirror:file")
		var want *version.File
		if name == version.DatasetFile {
			want = &rec.Dataset
		}
		if err := m.copyObject(ctx, repo.VersionKey(rec.ID, name), files[name], want); err != nil {
			return err
		}
	}
	m.step("mirror:pack")
	err = m.copyObject(ctx, history.PacksPrefix+string(rec.ID)+".json", -1, nil)
	if err != nil && !errors.Is(err, store.ErrNotExist) {
		return err // no pack at the source: readers read the records, gc writes it
	}
	if err := parentsRecorded(); err != nil {
		return err
	}
	m.step("mirror:record")
	if err := m.copyObject(ctx, repo.VersionKey(rec.ID, version.RecordFile), files[version.RecordFile], nil); err != nil {
		return err
	}
	close(done)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.res.Versions++
	if retired {
		m.res.Retired++
	}
	return nil
}

// versionFiles returns the objects of the source's version folder id and
// their sizes (-1 when the listing gives none): from the listing of every
// version when one was made, else one listing of the folder, else (a web
// server) a Stat of each file a version folder may hold.
func (m *mirror) versionFiles(ctx context.Context, id version.ID) (map[string]int64, error) {
	if m.srcFiles != nil {
		return m.srcFiles[id], nil
	}
	files := map[string]int64{}
	prefix := repo.VersionKey(id, "")
	err := m.src.Store().List(ctx, prefix, func(oi store.ObjectInfo) error {
		files[strings.TrimPrefix(oi.Key, prefix)] = oi.Size
		return nil
	})
	if errors.Is(err, store.ErrCannotList) {
		err = nil
		for _, name := range []string{version.CatalogFile, version.DatasetFile, retention.MarkerFile, version.RecordFile + ".sig", version.RecordFile} {
			oi, serr := m.src.Store().Stat(ctx, prefix+name)
			switch {
			case serr == nil:
				files[name] = oi.Size
			case !errors.Is(serr, store.ErrNotExist):
				err = serr
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("mirror from %s: version %s: %w", m.src.Where(), id, err)
	}
	return files, nil
}

// listSourceVersions lists the source's versions/ once (a mirror of many
// versions): versionFiles then answers from it. A source that cannot
// list is left to versionFiles' lookups.
func (m *mirror) listSourceVersions(ctx context.Context) error {
	all := map[version.ID]map[string]int64{}
	err := m.src.Store().List(ctx, repo.VersionsPrefix, func(oi store.ObjectInfo) error {
		id, name, ok := strings.Cut(strings.TrimPrefix(oi.Key, repo.VersionsPrefix), "/")
		if !ok {
			return nil
		}
		f := all[version.ID(id)]
		if f == nil {
			f = map[string]int64{}
			all[version.ID(id)] = f
		}
		f[name] = oi.Size
		return nil
	})
	if errors.Is(err, store.ErrCannotList) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mirror from %s: %w", m.src.Where(), err)
	}
	m.srcFiles = all
	return nil
}

// copyCatalog copies version rec's catalog, its size and sha256 computed
// on the stream that writes the copy and compared with the record before
// the copy appears (a mismatch fails the write: the destination creates
// nothing). It returns a local path of the checked catalog for reading
// its data files (the source's own file on a folder, else a copy fetched
// and checked by repo.FetchCatalog) and what removes it. A catalog the
// destination holds already (a mirror run again) is read there and must
// match the record.
func (m *mirror) copyCatalog(ctx context.Context, rec *version.Record) (string, func(), error) {
	key := repo.VersionKey(rec.ID, version.CatalogFile)
	path, done := "", func() {}
	if lf, ok := m.src.Folder(); ok {
		path = lf.LocalPath(key)
	} else {
		tmp, err := m.tempDir()
		if err != nil {
			return "", done, err
		}
		path = filepath.Join(tmp, string(rec.ID)+".duckdb")
		if err := m.src.FetchCatalog(ctx, rec, path); err != nil {
			return "", done, err
		}
		done = func() { os.Remove(path) }
	}
	want := version.File{Size: rec.Catalog.Size, SHA256: rec.Catalog.SHA256}
	// Looked up first: an object store may answer a create-only write of a
	// key it holds before it has read the body, which the client then
	// reports as a broken connection, not as the key existing.
	if _, err := m.dst.Store().Stat(ctx, key); err == nil {
		if err := m.sameAtDest(ctx, key, &want); err != nil {
			done()
			return "", func() {}, err
		}
		return path, done, nil
	}
	f, err := os.Open(path)
	if err != nil {
		done()
		return "", func() {}, fmt.Errorf("mirror from %s: version %s: %w", m.src.Where(), rec.ID, err)
	}
	defer f.Close()
	if err := m.create(ctx, key, f, &want, rec.ID); err != nil {
		done()
		return "", func() {}, err
	}
	return path, done, nil
}

// copyData copies the data and delete files the catalog at path lists
// (every row: the files of every snapshot it holds) that lie in the
// source's data/ and the destination lacks, dataWorkers at once, each
// one's size checked against the catalog's record of it. Files outside
// the repository are out of fdl's reach: readers read them where they
// are (docs/spec.md §8).
//
// A file the source no longer holds is skipped when gc was free to
// delete it: the version cannot read it at or after its floor snapshot
// (retention.FloorSnapshot over the source's retired versions, the rule
// gc and verify --data keep; docs/spec.md §16), so the destination holds
// what the source keeps. One the version can read there is an error
// (*SourceDataMissingError): the source is damaged, and a copy would be
// too.
func (m *mirror) copyData(ctx context.Context, rec *version.Record, path string) error {
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("mirror: version %s: %w", rec.ID, err)
	}
	files, err := c.DataFiles(ctx)
	dataPath := c.DataPath()
	c.Close()
	if err != nil {
		return fmt.Errorf("mirror: version %s: %w", rec.ID, err)
	}
	norm, err := m.src.Normaliser()
	if err != nil {
		return err
	}
	m.noteAbsolute(files, dataPath, norm)
	keys, absent, sizes, rows := m.dataKeys(files, norm)
	missing, err := m.dataMissing(ctx, keys)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(dataWorkers)
	var absentMu sync.Mutex
	for _, k := range missing {
		g.Go(func() error {
			size := sizes[k]
			if size <= 0 {
				size = -1
			}
			err := m.copyObject(gctx, k, size, nil)
			if errors.Is(err, store.ErrNotExist) && gctx.Err() == nil {
				// Not at the source: whether that is gc's doing is
				// this version's to tell, and each other version that
				// lists it tells for itself.
				m.mu.Lock()
				m.srcAbsent[k], m.dataDone[k] = true, false
				m.mu.Unlock()
				absentMu.Lock()
				absent = append(absent, k)
				absentMu.Unlock()
				return nil
			}
			if err == nil {
				m.mu.Lock()
				m.dataCopied[k] = true
				m.mu.Unlock()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if len(absent) > 0 {
		if err := m.checkAbsent(ctx, rec, absent, rows); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Each file once, however many versions list it (two copying at once
	// may both find it missing at the destination).
	m.res.DataFiles, m.res.DataGone = len(m.dataCopied), len(m.srcAbsent)
	return nil
}

// noteAbsolute counts (Result.DataAbsolute, each file once) the files
// in the source's data/ that a catalog names by an absolute path, not one
// relative to its data path: the mirror copies them, but DuckDB reads an
// absolute path as written, so the mirror's readers read the source's.
func (m *mirror) noteAbsolute(files []ducklake.DataFile, dataPath string, norm *retention.Normaliser) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range files {
		if f.PathIsRelative && strings.HasPrefix(f.ResolvedPath, dataPath) {
			continue
		}
		if pl, err := norm.Place(f.ResolvedPath); err == nil && pl.Key != "" {
			m.dataAbsolute[pl.Key] = true
		}
	}
	m.res.DataAbsolute = len(m.dataAbsolute)
}

// dataKeys sorts the files a catalog lists that lie in the source's
// data/ (their store keys, each once): keys, not yet known to be at the
// destination; absent, known to be missing at the source. sizes are the
// sizes the catalog records of keys, rows the catalog's rows of each key.
func (m *mirror) dataKeys(files []ducklake.DataFile, norm *retention.Normaliser) (keys, absent []string, sizes map[string]int64, rows map[string][]ducklake.DataFile) {
	sizes, rows = map[string]int64{}, map[string][]ducklake.DataFile{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range files {
		pl, err := norm.Place(f.ResolvedPath)
		if err != nil || pl.Key == "" {
			continue
		}
		if m.srcAbsent[pl.Key] {
			if _, dup := rows[pl.Key]; !dup {
				absent = append(absent, pl.Key)
			}
			rows[pl.Key] = append(rows[pl.Key], f)
			continue
		}
		if m.dataDone[pl.Key] {
			continue
		}
		if _, dup := sizes[pl.Key]; !dup {
			keys = append(keys, pl.Key)
		}
		sizes[pl.Key] = f.Size
		rows[pl.Key] = append(rows[pl.Key], f)
	}
	return keys, absent, sizes, rows
}

// checkAbsent tells, for the data keys the source does not hold, whether
// rec's catalog can read one at or after its floor snapshot (rows: the
// catalog's rows of each key). Errors: *SourceDataMissingError naming
// those it can read; the source's errors reading records and folders.
func (m *mirror) checkAbsent(ctx context.Context, rec *version.Record, absent []string, rows map[string][]ducklake.DataFile) error {
	var lookErr error
	recOf := func(id version.ID) *version.Record {
		if id == rec.ID {
			return rec
		}
		r, err := m.src.Record(ctx, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotExist) && lookErr == nil {
				lookErr = err
			}
			return nil
		}
		return r
	}
	kept := func(id version.ID) bool {
		m.mu.Lock()
		k, ok := m.srcKept[id]
		m.mu.Unlock()
		if ok {
			return k // each version's folder is looked at once a run
		}
		files, err := m.versionFiles(ctx, id)
		if err != nil {
			if lookErr == nil {
				lookErr = err
			}
			return false
		}
		_, retired := files[retention.MarkerFile]
		m.mu.Lock()
		m.srcKept[id] = !retired
		m.mu.Unlock()
		return !retired
	}
	floor := retention.FloorSnapshot(rec.ID, recOf, kept)
	if lookErr != nil {
		return fmt.Errorf("mirror from %s: version %s: %w", m.src.Where(), rec.ID, lookErr)
	}
	e := &SourceDataMissingError{Source: m.src.Where(), Version: rec.ID, Seq: rec.Seq}
	sort.Strings(absent)
	for _, k := range absent {
		for _, f := range rows[k] {
			if retention.VisibleFrom(f, floor) {
				e.Count++
				if len(e.Missing) < 5 {
					e.Missing = append(e.Missing, k)
				}
				break
			}
		}
	}
	if e.Count > 0 {
		return e
	}
	return nil
}

// dataMissing returns the keys the destination lacks and claims them for
// the caller to copy (other workers then skip them; keys it holds are
// marked done): a Stat each while fewer than dataStatLimit have been
// looked up in this run, else one listing of the destination's data/
// (kept for the rest of the run).
func (m *mirror) dataMissing(ctx context.Context, keys []string) ([]string, error) {
	m.dataMu.Lock() // one lookup or listing at a time
	defer m.dataMu.Unlock()
	m.mu.Lock()
	listed, list := m.dataListed, !m.dataListed && m.dataStats+len(keys) > dataStatLimit
	m.mu.Unlock()
	if list {
		var have []string
		err := m.dst.Store().List(ctx, repo.DataPrefix, func(oi store.ObjectInfo) error {
			have = append(have, oi.Key)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("mirror to %s: %w", m.dst.Where(), err)
		}
		m.mu.Lock()
		for _, k := range have {
			m.dataDone[k] = true
		}
		m.dataListed, listed = true, true
		m.mu.Unlock()
	}
	gone := make([]bool, len(keys))
	if listed {
		m.mu.Lock()
		for i, k := range keys {
			gone[i] = !m.dataDone[k]
		}
		m.mu.Unlock()
	} else {
		m.mu.Lock()
		m.dataStats += len(keys)
		m.mu.Unlock()
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i, k := range keys {
			g.Go(func() error {
				_, err := m.dst.Store().Stat(gctx, k)
				if errors.Is(err, store.ErrNotExist) {
					gone[i] = true
					return nil
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, fmt.Errorf("mirror to %s: %w", m.dst.Where(), err)
		}
	}
	var missing []string
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, k := range keys {
		if gone[i] && !m.dataDone[k] {
			missing = append(missing, k)
		}
		m.dataDone[k] = true
	}
	return missing, nil
}

// copyObject copies the source's object at key to the destination,
// create-only, checking its size (size, unless -1) and, when want is
// given, its size and sha256, on the stream that writes it. Errors:
// store.ErrNotExist when the source lacks it, *repo.ChecksumError, the
// stores'.
func (m *mirror) copyObject(ctx context.Context, key string, size int64, want *version.File) error {
	rc, _, err := m.src.Store().Get(ctx, key)
	if err != nil {
		return fmt.Errorf("mirror from %s: %s: %w", m.src.Where(), key, err)
	}
	defer rc.Close()
	if want == nil && size >= 0 {
		want = &version.File{Size: size}
	}
	return m.create(ctx, key, rc, want, "")
}

// create writes r to key at the destination, create-only; want (when not
// nil) is checked on the stream before the object appears: its size, and
// its sha256 when given. A key the destination holds already (a mirror
// run again) is accepted when it holds the same: the record's size and
// digest, else the source's bytes (small objects) or size.
func (m *mirror) create(ctx context.Context, key string, r io.Reader, want *version.File, id version.ID) error {
	cr := &checkingReader{ctx: ctx, r: r, want: want}
	if m.o.Repo.Progress != nil {
		total := int64(-1)
		if want != nil {
			total = want.Size
		}
		cr.progress = func(done int64) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.o.Repo.Progress(repo.Event{Op: OpCopy, Name: key, Done: done, Total: total})
		}
	}
	if want != nil && want.SHA256 != "" {
		cr.h = sha256.New()
	}
	cr.key, cr.id, cr.where = key, id, m.src.Store().Location(key)
	err := m.dst.Store().Create(ctx, key, cr)
	if err == nil {
		m.counted(key, cr.n)
		return nil
	}
	var ce *repo.ChecksumError
	var se *SizeError
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.As(err, &se):
		return se
	}
	if !errors.Is(err, store.ErrExist) {
		return fmt.Errorf("mirror to %s: %s: %w", m.dst.Where(), key, err)
	}
	return m.sameAtDest(ctx, key, want)
}

// sameAtDest checks an object the destination already holds: against
// want's digest when given (read there), else against the source's bytes
// when small, else its size.
func (m *mirror) sameAtDest(ctx context.Context, key string, want *version.File) error {
	differ := func(what string) error {
		return fmt.Errorf("mirror to %s: %s already holds different bytes than %s (%s): %w; it is not this repository's copy: move it away, then run the mirror again", m.dst.Where(), key, m.src.Where(), what, store.ErrExist)
	}
	if want != nil && want.SHA256 != "" {
		rc, _, err := m.dst.Store().Get(ctx, key)
		if err != nil {
			return fmt.Errorf("mirror to %s: %s: %w", m.dst.Where(), key, err)
		}
		defer rc.Close()
		h := sha256.New()
		n, err := io.Copy(h, rc)
		if err != nil {
			return fmt.Errorf("mirror to %s: %s: %w", m.dst.Where(), key, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); n != want.Size || got != want.SHA256 {
			return differ(fmt.Sprintf("%d bytes, sha256 %s; the record says %d bytes, sha256 %s", n, got, want.Size, want.SHA256))
		}
		return nil
	}
	if want == nil || want.Size < store.MaxSwapSize {
		a, _, err := store.ReadAll(ctx, m.src.Store(), key)
		if err != nil {
			return fmt.Errorf("mirror from %s: %s: %w", m.src.Where(), key, err)
		}
		b, _, err := store.ReadAll(ctx, m.dst.Store(), key)
		if err != nil {
			return fmt.Errorf("mirror to %s: %s: %w", m.dst.Where(), key, err)
		}
		if !bytes.Equal(a, b) {
			return differ(fmt.Sprintf("%d bytes there, %d at the source", len(b), len(a)))
		}
		return nil
	}
	oi, err := m.dst.Store().Stat(ctx, key)
	if err != nil {
		return fmt.Errorf("mirror to %s: %s: %w", m.dst.Where(), key, err)
	}
	if oi.Size != want.Size {
		return differ(fmt.Sprintf("%d bytes there, %d at the source", oi.Size, want.Size))
	}
	return nil
}

// counted adds one object of n bytes to the result and reports it
// (Options.Progress is called from one goroutine at a time).
func (m *mirror) counted(key string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.res.Objects++
	m.res.Bytes += n
	if m.o.Repo.Progress != nil {
		m.o.Repo.Progress(repo.Event{Op: OpCopy, Name: key, Done: n, Total: n})
	}
}

// checkingReader counts (and hashes, with h) what it reads; at the end of
// its source it compares with want and fails the read on a mismatch, so
// the store creates nothing.
type checkingReader struct {
	ctx   context.Context
	r     io.Reader
	h     hash.Hash
	n     int64
	want  *version.File
	key   string
	where string
	id    version.ID
	err   error
	// progress, if set, is told the bytes read every 4 MiB (long copies).
	progress func(done int64)
	last     int64
}

func (c *checkingReader) Read(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(b)
	if n > 0 {
		c.n += int64(n)
		if c.h != nil {
			c.h.Write(b[:n])
		}
		if c.progress != nil && c.n-c.last >= 4<<20 {
			c.last = c.n
			c.progress(c.n)
		}
	}
	if err == io.EOF && c.want != nil {
		got := "(not hashed)"
		if c.h != nil {
			got = hex.EncodeToString(c.h.Sum(nil))
		}
		switch {
		case c.h != nil && (c.n != c.want.Size || got != c.want.SHA256):
			c.err = &repo.ChecksumError{Version: c.id, WantSize: c.want.Size, GotSize: c.n, WantSHA: c.want.SHA256, GotSHA: got, Location: c.where,
				Hint: "the source's copy is damaged; nothing was written at the destination for it"}
			return n, c.err
		case c.n != c.want.Size:
			c.err = &SizeError{Location: c.where, Want: c.want.Size, Got: c.n}
			return n, c.err
		}
		c.err = io.EOF
	}
	return n, err
}
