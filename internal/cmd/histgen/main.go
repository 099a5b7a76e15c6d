// Command histgen builds a repository with a long history for fdl's history
// benchmark (scripts/bench-history.sh): what an hourly publishing job leaves
// after about a year with the retention policy keep-last REAL.
//
//	histgen [-n 10000] [-real 2] [-every 1h] [-cache FILE] URL
//
// It makes the repository at URL (a folder or an object-store URL) with
// fdl's library, and one DuckLake catalog with N snapshots (a table
// created at snapshot 1, one inlined row added by each later snapshot,
// written by lakewriter). Version i is frozen at snapshot i. The last REAL
// versions are real: the catalog frozen at their snapshot (ducklake.Freeze),
// their dataset.json and record built as commit builds them, pushed with
// Repo.Push (which uploads them, writes their history packs and creates
// the branch main). The N-REAL versions before them are retired versions,
// as gc leaves them: a record (version.json, made with the version package,
// created_at and id timestamps EVERY apart, ending before the real ones)
// and a retirement marker, no catalog; their history packs are written by
// the library's pack writer, as the pushes that made them would have.
//
// -cache FILE keeps the working catalog at snapshot N-REAL between runs
// (making it takes about a minute): the benchmark builds a folder and an
// S3 repository from one catalog.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/fdl-dev/fdl/history"
	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/ducklake/meta"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/folder"
	"github.com/fdl-dev/fdl/internal/store/s3"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

func main() {
	n := flag.Int("n", 10000, "versions in all")
	real := flag.Int("real", 2, "newest versions with a real catalog (the rest are retired)")
	every := flag.Duration("every", time.Hour, "time between two retired versions")
	cache := flag.String("cache", "", "keep the working catalog at snapshot N-REAL in this file between runs")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: histgen [-n N] [-real K] [-every DURATION] [-cache FILE] URL")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *real < 1 || *n <= *real {
		flag.Usage()
		os.Exit(2)
	}
	store.Register(folder.Backend())
	store.Register(s3.Backend())
	g := &gen{n: *n, real: *real, every: *every}
	if err := g.run(context.Background(), flag.Arg(0), *cache); err != nil {
		fmt.Fprintln(os.Stderr, "histgen:", err)
		os.Exit(1)
	}
}

type gen struct {
	n, real int
	every   time.Duration
	tmp     string
	r       *repo.Repo
}

func (g *gen) retired() int { return g.n - g.real }

func (g *gen) run(ctx context.Context, url, cache string) error {
	t0 := time.Now()
	var err error
	if g.tmp, err = os.MkdirTemp("", "histgen-"); err != nil {
		return err
	}
	defer os.RemoveAll(g.tmp)
	work := filepath.Join(g.tmp, "work.duckdb")
	if err := g.catalog(ctx, cache, work); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "histgen: catalog at snapshot %d (%.1fs)\n", g.retired(), time.Since(t0).Seconds())
	if g.r, err = repo.Init(ctx, url, repo.InitOptions{}); err != nil {
		return err
	}
	defer g.r.Close()
	if _, err := g.r.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = g.real; return nil }); err != nil {
		return err
	}
	snaps, format, dataPath, err := snapshots(ctx, work)
	if err != nil {
		return err
	}
	recs, err := g.retiredRecords(snaps, format, dataPath)
	if err != nil {
		return err
	}
	if err := g.writeRetired(ctx, recs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "histgen: %d retired versions written (%.1fs)\n", len(recs), time.Since(t0).Seconds())
	pending, err := g.realVersions(ctx, work, recs[len(recs)-1])
	if err != nil {
		return err
	}
	main, _ := refs.Branch("main")
	if _, err := g.r.Publish(ctx, main, pending[len(pending)-1].Record.ID, pending, repo.PushOptions{}); err != nil {
		return err
	}
	// Markers last, as gc writes them after the versions that keep the
	// newest catalogs exist: a push on a retired base is refused.
	if err := g.markers(ctx, recs); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "histgen: %d versions in %s, main at seq %d (%.1fs)\n", g.n, url, g.n, time.Since(t0).Seconds())
	return nil
}

// catalog makes the working catalog at snapshot N-REAL in work, or copies
// it from cache.
func (g *gen) catalog(ctx context.Context, cache, work string) error {
	if cache != "" {
		if err := copyFile(cache, work); err == nil {
			if snaps, _, _, err := snapshots(ctx, work); err == nil && int(snaps[len(snaps)-1].ID) == g.retired() {
				return nil
			}
		}
	}
	if err := lakewriter.Create(ctx, work, lakewriter.CreateOptions{DataPath: "/nonexistent/histgen-data/"}); err != nil {
		return err
	}
	w, err := lakewriter.Open(ctx, work)
	if err != nil {
		return err
	}
	w.Author = "histgen"
	if _, err := w.CreateTable(ctx, "main", "loads", []lakewriter.ColumnDef{{Name: "k", Type: "int64", Nullable: true}}); err != nil {
		w.Close()
		return err
	}
	for i := 2; i <= g.retired(); i++ {
		if err := w.InsertInlined(ctx, "main", "loads", fmt.Sprintf("SELECT %d AS k", i)); err != nil {
			w.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if cache != "" {
		return copyFile(work, cache)
	}
	return nil
}

// snapshots returns the catalog's snapshots (sorted by id), its DuckLake
// format and its data_path.
func snapshots(ctx context.Context, path string) ([]ducklake.Snapshot, string, string, error) {
	c, err := ducklake.Open(ctx, path)
	if err != nil {
		return nil, "", "", err
	}
	defer c.Close()
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		return nil, "", "", err
	}
	if len(snaps) == 0 {
		return nil, "", "", errors.New(path + " has no snapshot")
	}
	return snaps, c.Format(), c.DataPath(), nil
}

// idAt returns a fresh UUIDv7 whose timestamp is t's millisecond.
func idAt(t time.Time) (version.ID, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return version.ParseID(u.String())
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// retiredRecords makes the records of versions 1..N-REAL: version i frozen
// at snapshot i, created EVERY after the one before, the last one EVERY
// before now.
func (g *gen) retiredRecords(snaps []ducklake.Snapshot, format, dataPath string) ([]*version.Record, error) {
	at := map[int64]ducklake.Snapshot{}
	for _, s := range snaps {
		at[s.ID] = s
	}
	start := time.Now().Add(-time.Duration(g.retired()) * g.every).UTC().Truncate(time.Millisecond)
	recs := make([]*version.Record, 0, g.retired())
	var parent *version.Record
	for i := 1; i <= g.retired(); i++ {
		created := start.Add(time.Duration(i-1) * g.every)
		id, err := idAt(created)
		if err != nil {
			return nil, err
		}
		s, ok := at[int64(i)]
		if !ok {
			return nil, fmt.Errorf("the catalog has no snapshot %d", i)
		}
		rec := &version.Record{
			RecordFormat: version.RecordFormat, ID: id, Seq: int64(i), Parents: []version.ID{},
			Author: "loader@example.org", Message: fmt.Sprintf("hourly load %d\n\nrows from the source system up to %s", i, created.Format(time.RFC3339)),
			CreatedAt: created, Readers: version.NewReaders(format, storageOf()),
			Catalog: version.Catalog{Size: 1 << 20, SHA256: digest("catalog " + string(id)), Storage: storageOf()},
			Dataset: version.File{Size: 2048, SHA256: digest("dataset " + string(id))},
			DuckLake: version.DuckLake{Format: format, Snapshot: s.ID, SnapshotTime: s.Time,
				Adds: version.SnapshotRange{First: s.ID, Last: s.ID}, DataPath: dataPath},
		}
		if parent != nil {
			rec.Parents = []version.ID{parent.ID}
		} else {
			rec.DuckLake.Adds.First = 0
		}
		if err := rec.Validate(); err != nil {
			return nil, err
		}
		recs = append(recs, rec)
		parent = rec
	}
	return recs, nil
}

// storageOf is the storage format a retired version's record names: what
// lakewriter's new catalogs are written in.
func storageOf() meta.Storage {
	return meta.Storage{Number: 68, MinDuckDB: "v1.5.0"}
}

// writeRetired writes the records of the retired versions (create-only, 32
// at a time) and their history packs, oldest first, as their pushes would
// have.
func (g *gen) writeRetired(ctx context.Context, recs []*version.Record) error {
	st := g.r.Store()
	err := parallel(len(recs), func(i int) error {
		b, err := recs[i].Marshal()
		if err != nil {
			return err
		}
		return st.Create(ctx, repo.VersionKey(recs[i].ID, version.RecordFile), strings.NewReader(string(b)))
	})
	if err != nil {
		return err
	}
	w := history.NewWriter(st, g.r)
	for _, rec := range recs {
		b, err := rec.Marshal()
		if err != nil {
			return err
		}
		e, err := history.NewEntry(b, rec.ID)
		if err != nil {
			return err
		}
		if _, err := w.Write(ctx, e, history.NoBudget); err != nil {
			return err
		}
	}
	return nil
}

// markers retires versions 1..N-REAL as gc does: a marker each.
func (g *gen) markers(ctx context.Context, recs []*version.Record) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	st := g.r.Store()
	return parallel(len(recs), func(i int) error {
		m := retention.Marker{Format: retention.Format, Version: recs[i].ID, RetiredAt: now, Floor: 1,
			Reason: fmt.Sprintf("not among the last %d versions of refs/heads/main", g.real), DataFiles: []string{}}
		b, err := m.Marshal()
		if err != nil {
			return err
		}
		return st.Create(ctx, repo.VersionKey(recs[i].ID, retention.MarkerFile), strings.NewReader(string(b)))
	})
}

// realVersions adds REAL snapshots to the working catalog, freezing it
// after each into a local version (catalog, dataset.json, record) on top
// of parent, as commit does.
func (g *gen) realVersions(ctx context.Context, work string, parent *version.Record) ([]repo.Pending, error) {
	var out []repo.Pending
	for k := 1; k <= g.real; k++ {
		w, err := lakewriter.Open(ctx, work)
		if err != nil {
			return nil, err
		}
		w.Author = "histgen"
		err = w.InsertInlined(ctx, "main", "loads", fmt.Sprintf("SELECT %d AS k", g.retired()+k))
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		p, err := g.freeze(ctx, work, parent)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
		parent = p.Record
	}
	return out, nil
}

// freeze freezes work into a new local version on top of parent.
func (g *gen) freeze(ctx context.Context, work string, parent *version.Record) (repo.Pending, error) {
	id, err := version.NewIDAfter(parent.ID)
	if err != nil {
		return repo.Pending{}, err
	}
	dir := filepath.Join(g.tmp, string(id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return repo.Pending{}, err
	}
	frozen := filepath.Join(dir, version.CatalogFile)
	info, err := ducklake.Freeze(ctx, work, frozen)
	if err != nil {
		return repo.Pending{}, err
	}
	c, err := ducklake.Open(ctx, frozen)
	if err != nil {
		return repo.Pending{}, err
	}
	st, err := c.State(ctx, info.Snapshot.ID)
	dataPath := c.DataPath()
	c.Close()
	if err != nil {
		return repo.Pending{}, err
	}
	ds, err := version.NewDataset(id, info.Format, dataPath, st).Marshal()
	if err != nil {
		return repo.Pending{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, version.DatasetFile), ds, 0o644); err != nil {
		return repo.Pending{}, err
	}
	size, sum, err := repo.FileDigest(frozen)
	if err != nil {
		return repo.Pending{}, err
	}
	dsum := sha256.Sum256(ds)
	rec := &version.Record{
		RecordFormat: version.RecordFormat, ID: id, Seq: parent.Seq + 1, Parents: []version.ID{parent.ID},
		Author: "loader@example.org", Message: fmt.Sprintf("hourly load %d", parent.Seq+1),
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond), Readers: version.NewReaders(info.Format, info.Storage),
		Catalog: version.Catalog{Size: size, SHA256: sum, Storage: info.Storage},
		Dataset: version.File{Size: int64(len(ds)), SHA256: hex.EncodeToString(dsum[:])},
		DuckLake: version.DuckLake{Format: info.Format, Snapshot: info.Snapshot.ID, SnapshotTime: info.Snapshot.Time,
			Adds: version.SnapshotRange{First: parent.DuckLake.Snapshot + 1, Last: info.Snapshot.ID}, DataPath: dataPath},
	}
	if err := rec.Validate(); err != nil {
		return repo.Pending{}, err
	}
	b, err := rec.Marshal()
	if err != nil {
		return repo.Pending{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, version.RecordFile), b, 0o644); err != nil {
		return repo.Pending{}, err
	}
	return repo.Pending{Record: rec, Dir: dir}, nil
}

// parallel runs fn(0..n-1), 32 at a time, and returns the first error.
func parallel(n int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	sem := make(chan struct{}, 32)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				mu.Lock()
				if ferr == nil {
					ferr = err
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return ferr
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
