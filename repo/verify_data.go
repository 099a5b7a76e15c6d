package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/parquet"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// What verify --data checks of each data and delete file beyond its
// existence (docs/spec.md §23): its size against the catalogs'
// file_size_bytes and, with --deep, its Parquet footer against their
// footer_size and record_count (delete_count).

// expectedFile is what one catalog in retention records of a file it can
// read at or after its floor.
type expectedFile struct {
	version version.ID
	file    ducklake.DataFile
}

// expectFiles records what the catalog of version id says of the files it
// can read at or after its floor snapshot, under the store key DuckDB
// reads each by (a path that does not place, lies outside the repository
// or is disputed is reported elsewhere).
func (vs *verifyState) expectFiles(norm *retention.Normaliser, id version.ID, floor int64, files []ducklake.DataFile) {
	for _, f := range files {
		if !retention.VisibleFrom(f, floor) {
			continue
		}
		pl, err := norm.Place(f.ResolvedPath)
		if err != nil || pl.Key == "" || pl.Disputed {
			continue
		}
		vs.expect[pl.Key] = append(vs.expect[pl.Key], expectedFile{version: id, file: f})
	}
}

// deepWorkers is how many files verify --deep reads footers of at once.
const deepWorkers = 8

// verifyFiles compares each listed file that catalogs in retention can
// read with what they record of it: its size with file_size_bytes
// (CodeDataSize) and, with deep, its Parquet footer with footer_size and
// the row count (CodeDataFooter). A file whose size is already wrong is
// not read. It returns how many footers were read.
func (r *Repo) verifyFiles(ctx context.Context, vs *verifyState, listing []store.ObjectInfo, deep bool, add func(code Code, obj, format string, a ...any)) (int, error) {
	var read []store.ObjectInfo
	for _, oi := range listing {
		exp := vs.expect[oi.Key]
		if len(exp) == 0 {
			continue
		}
		if oi.Size < 0 && deep {
			// A listing without sizes (http(s)): ask for the size.
			st, err := r.st.Stat(ctx, oi.Key)
			if errors.Is(err, store.ErrNotExist) {
				continue // deleted since the listing
			}
			if err != nil {
				return 0, err
			}
			oi.Size = st.Size
		}
		sizeOK := true
		seen := map[int64]bool{}
		for _, e := range exp {
			// A listing without sizes (http(s): -1) says nothing here;
			// --deep asks for the size before it reads.
			if e.file.Size <= 0 || oi.Size < 0 || e.file.Size == oi.Size || seen[e.file.Size] {
				continue
			}
			seen[e.file.Size], sizeOK = true, false
			add(CodeDataSize, oi.Key, "%s is %d bytes, but version %s records %d bytes for its %s %d (file_size_bytes): the file was truncated or replaced after DuckDB wrote it, and readers fail on it or read other rows",
				r.st.Location(oi.Key), oi.Size, e.version, e.file.Size, fileKind(e.file), e.file.ID)
		}
		if deep && sizeOK && oi.Size >= 0 && slices.ContainsFunc(exp, footerReadable) {
			read = append(read, oi)
		}
	}
	if err := r.verifyReaderPaths(ctx, vs, listing, add); err != nil {
		return 0, err
	}
	if len(read) == 0 {
		return 0, nil
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(deepWorkers)
	for _, oi := range read {
		g.Go(func() error {
			ft, err := r.readFooter(gctx, oi)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, parquet.ErrNotParquet):
				add(CodeDataFooter, oi.Key, "%s (%d bytes, as recorded): %v: readers fail on it; the file was damaged after DuckDB wrote it", r.st.Location(oi.Key), oi.Size, err)
			case errors.Is(err, store.ErrNotExist):
				// Deleted since the listing: gc, or a hand; the next
				// verify reports it missing if a catalog still reads it.
			case err != nil:
				return err
			default:
				checkFooter(r.st.Location(oi.Key), oi.Key, ft, vs.expect[oi.Key], add)
			}
			return nil
		})
	}
	return len(read), g.Wait()
}

// footerReadable reports whether fdl reads e's file's footer: a Parquet
// file (DuckLake 1.1's Puffin deletion vectors are not Parquet) whose
// footer is not encrypted.
func footerReadable(e expectedFile) bool {
	return (e.file.Format == "" || e.file.Format == "parquet") && !e.file.Encrypted
}

// checkFooter compares a footer with what each catalog records of its
// file: footer_size and the row count.
func checkFooter(loc, key string, ft *parquet.Footer, exp []expectedFile, add func(code Code, obj, format string, a ...any)) {
	type fact struct {
		what string
		n    int64
	}
	seen := map[fact]bool{}
	for _, e := range exp {
		if !footerReadable(e) {
			continue
		}
		count := "record_count"
		if e.file.Delete {
			count = "delete_count"
		}
		if e.file.FooterSize > 0 && e.file.FooterSize != ft.Length && !seen[fact{"footer", e.file.FooterSize}] {
			seen[fact{"footer", e.file.FooterSize}] = true
			add(CodeDataFooter, key, "%s has a Parquet footer of %d bytes, but version %s records %d (footer_size of its %s %d): the file was replaced or damaged after DuckDB wrote it",
				loc, ft.Length, e.version, e.file.FooterSize, fileKind(e.file), e.file.ID)
		}
		if e.file.Records >= 0 && e.file.Records != ft.Rows && !seen[fact{"rows", e.file.Records}] {
			seen[fact{"rows", e.file.Records}] = true
			add(CodeDataFooter, key, "%s holds %d rows by its Parquet footer, but version %s records %d (%s of its %s %d): the file was replaced or damaged after DuckDB wrote it, and readers read other rows",
				loc, ft.Rows, e.version, e.file.Records, count, fileKind(e.file), e.file.ID)
		}
	}
}

// footerHead is how many bytes of a file's end verify --deep reads
// first: the trailer and, mostly, the whole footer (DuckDB's footers of a
// few row groups are a few KB).
const footerHead = 64 << 10

// readFooter reads and parses the Parquet footer of a listed file: one
// ranged read of its last footerHead bytes (and one more of the rest of a
// larger footer), one of its first 4 bytes. Errors: parquet.ErrNotParquet
// (wrapped, saying what is wrong), the store's.
func (r *Repo) readFooter(ctx context.Context, oi store.ObjectInfo) (*parquet.Footer, error) {
	size := oi.Size
	if size < int64(len(parquet.Magic))+parquet.TrailerSize {
		return nil, fmt.Errorf("%w: %d bytes are too few for a Parquet file", parquet.ErrNotParquet, size)
	}
	n := min(size, footerHead)
	tail, err := store.ReadRange(ctx, r.st, oi.Key, size-n, n)
	if err != nil {
		return nil, err
	}
	if int64(len(tail)) != n {
		return nil, fmt.Errorf("%s: read %d bytes at offset %d of a %d-byte file: it changed while verify read it", r.st.Location(oi.Key), len(tail), size-n, size)
	}
	head := tail
	if n < size {
		if head, err = store.ReadRange(ctx, r.st, oi.Key, 0, int64(len(parquet.Magic))); err != nil {
			return nil, err
		}
	}
	if !parquet.HasMagic(head) {
		return nil, fmt.Errorf("%w: the file does not start with %q", parquet.ErrNotParquet, parquet.Magic)
	}
	fl, err := parquet.FooterLength(tail[n-parquet.TrailerSize:], size)
	if err != nil {
		return nil, err
	}
	var footer []byte
	if fl <= n-parquet.TrailerSize {
		footer = tail[n-parquet.TrailerSize-fl : n-parquet.TrailerSize]
	} else if footer, err = store.ReadRange(ctx, r.st, oi.Key, size-parquet.TrailerSize-fl, fl); err != nil {
		return nil, err
	}
	if int64(len(footer)) != fl {
		return nil, fmt.Errorf("%w: the footer of %d bytes ends early", parquet.ErrNotParquet, fl)
	}
	return parquet.ParseFooter(footer, size)
}

// verifyReaderPaths asks, on a store whose readers request a file by
// another URL than the store's own (store.ReaderPaths: http(s)), for what
// DuckDB asks for, for each listed file the catalogs in retention read
// whose request differs (a partition folder "k=x%20y", which DuckDB sends
// as it is and a web server decodes): CodeDataHTTPUnreachable when the
// server has no file there, or one of another size. One request each;
// files whose names the store does not escape are not asked for again.
func (r *Repo) verifyReaderPaths(ctx context.Context, vs *verifyState, listing []store.ObjectInfo, add func(code Code, obj, format string, a ...any)) error {
	rp, ok := r.st.(store.ReaderPaths)
	if !ok {
		return nil
	}
	for _, oi := range listing {
		exp := vs.expect[oi.Key]
		if len(exp) == 0 || !rp.ReaderDiffers(oi.Key) {
			continue
		}
		url, got, err := rp.StatAsReader(ctx, oi.Key)
		switch {
		case errors.Is(err, store.ErrNotExist):
			add(CodeDataHTTPUnreachable, oi.Key, "version %s reads %s, which DuckDB requests as %s: the server decodes its %%XX escapes, looks for another name and answers that no file is there (404); readers over http(s) cannot read the version (the file is at %s)",
				exp[0].version, oi.Key, url, r.st.Location(oi.Key))
		case err != nil:
			return err
		case got.Size >= 0 && exp[0].file.Size > 0 && got.Size != exp[0].file.Size:
			add(CodeDataHTTPUnreachable, oi.Key, "version %s reads %s, which DuckDB requests as %s: the server answers with another file (%d bytes, the catalog records %d): the server decodes the name's %%XX escapes; readers over http(s) read the wrong file",
				exp[0].version, oi.Key, url, got.Size, exp[0].file.Size)
		}
	}
	return nil
}

// fileKind names a file's kind in messages.
func fileKind(f ducklake.DataFile) string {
	if f.Delete {
		return "delete file"
	}
	return "data file"
}
