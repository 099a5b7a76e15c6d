package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/workdir"
)

// Writing a lake whose data lives in an object store. DuckDB here cannot
// write to s3://, gs:// or az:// (its httpfs and azure extensions are not
// built in), so a working catalog whose data_path is the repository's
// data/ folder in a bucket is written through a local mirror of that
// folder (lakewriter.Writer.StageDataIn), and the files the mirror holds
// that the bucket lacks are uploaded afterwards, to the keys the catalog's
// relative paths name. The versions then read their files from the
// bucket, as a reader's DuckDB does.

// mirrors maps a data location ("s3://bucket/prefix/data/") to its local
// mirror for the Go tests (the scripts use $DATA).
var mirrors sync.Map

// mirrorFor returns the local mirror of the data location of the working
// catalog at catalog, made (in t's temporary folder) on first use.
func mirrorFor(t testing.TB, dataPath string) string {
	if m, ok := mirrors.Load(dataPath); ok {
		return m.(string)
	}
	m, _ := mirrors.LoadOrStore(dataPath, t.TempDir())
	return m.(string)
}

// writeLake opens the working catalog at catalog with the writer, stages
// its data in mirror when its data_path is not local (mirror "" picks one
// with mirrorFor), runs f, and uploads what the write added.
func writeLake(t testing.TB, catalog, mirror string, f func(w *lakewriter.Writer) error) error {
	ctx := context.Background()
	// lakewriter: behind write and the lakewrite script command, for old formats, crafted and very large catalogs only.
	w, err := lakewriter.Open(ctx, catalog)
	if err != nil {
		return err
	}
	if mirror == "" {
		mirror = mirrorFor(t, w.DataPath())
	}
	// One mirror per data location: a script with two repositories keeps
	// their files apart.
	sum := sha256.Sum256([]byte(w.DataPath()))
	mirror = filepath.Join(mirror, hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		w.Close()
		return err
	}
	staged, err := w.StageDataIn(mirror)
	if err == nil {
		err = f(w)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil || !staged {
		return err
	}
	return uploadMirror(ctx, filepath.Dir(catalog), mirror, w.DataPath())
}

// uploadMirror copies every file under mirror that the repository of the
// working directory dir lacks to data/ + its path under mirror. dataPath
// (the catalog's) must be that repository's data location.
func uploadMirror(ctx context.Context, dir, mirror, dataPath string) error {
	wd, err := workdir.Open(dir)
	if err != nil {
		return fmt.Errorf("upload staged data: %w", err)
	}
	st, err := store.Open(ctx, wd.State.Repository)
	if err != nil {
		return err
	}
	defer st.Close()
	if loc := st.Location("data") + "/"; strings.TrimRight(dataPath, "/")+"/" != loc {
		return fmt.Errorf("upload staged data: the catalog's data_path %s is not the repository's data folder %s", dataPath, loc)
	}
	return filepath.WalkDir(mirror, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(mirror, p)
		if err != nil {
			return err
		}
		key := "data/" + filepath.ToSlash(rel)
		if _, err := st.Stat(ctx, key); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrNotExist) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := st.Create(ctx, key, bytes.NewReader(b)); err != nil && !errors.Is(err, store.ErrExist) {
			return err
		}
		return nil
	})
}
