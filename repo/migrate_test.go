package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// importLake makes a repository whose main branch holds one version: the
// real catalog file (a 0.x lake), imported with checkout --from (migrated
// there when migrate is set), committed and pushed. It returns the
// repository, the working directory and the version.
func importLake(t *testing.T, file string, migrate bool) (*repo.Repo, *workdir.Workdir, *version.Record) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src", file)
	testutil.Gunzip(t, file, src)
	r, err := repo.Init(ctx, filepath.Join(dir, "repo"), repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "w"), From: src, Migrate: migrate})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workdir.Open(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := w.Commit(ctx, workdir.CommitOptions{Message: "import", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return r, w, rec
}

// TestMigrateBranch: a branch whose head is a 0.3 lake gets a migrated
// version on top: DuckLake 1.0, the same snapshot and dataset, recorded as
// migrated from 0.3 with no snapshot added; the old version stays; verify
// passes; a second migration is refused; new work continues on top.
func TestMigrateBranch(t *testing.T) {
	ctx := context.Background()
	r, w, old := importLake(t, "dltest-per-table-schema.ducklake", false)
	// From the working directory, as the CLI does inside one.
	res, err := w.Migrate(ctx, repo.MigrateOptions{Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Version
	if rec.Seq != 2 || rec.Parent() != old.ID || rec.DuckLake.Format != "1.0" || rec.DuckLake.MigratedFrom != "0.3" {
		t.Fatalf("record %+v", rec)
	}
	if rec.DuckLake.Snapshot != old.DuckLake.Snapshot || !rec.DuckLake.SnapshotTime.Equal(old.DuckLake.SnapshotTime) || !rec.AddsNothing() {
		t.Fatalf("snapshots: %+v, parent %+v", rec.DuckLake, old.DuckLake)
	}
	if !strings.HasPrefix(rec.Message, "Migrate DuckLake 0.3 to 1.0") || !res.WorkdirBehind || res.Parent != old.ID {
		t.Fatalf("result %+v", res)
	}
	if got, err := r.Resolve(ctx, "main"); err != nil || got.ID != rec.ID {
		t.Fatalf("main = %v %v", got, err)
	}
	oldDS, err := r.Dataset(ctx, old.ID)
	if err != nil {
		t.Fatal(err)
	}
	newDS, err := r.Dataset(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if newDS.DuckLake != "1.0" || !reflect.DeepEqual(newDS.Schemas, oldDS.Schemas) || !reflect.DeepEqual(newDS.Totals, oldDS.Totals) {
		t.Fatalf("dataset changed in the migration:\n%+v\n%+v", newDS, oldDS)
	}
	// What the migrated version publishes is recorded for the commits on
	// top (docs/spec.md §24).
	if h := newDS.History; h == nil || h.Snapshot != rec.DuckLake.Snapshot || h.Format != "1.0" || h.Tables["ducklake_snapshot"].Rows != 1 {
		t.Fatalf("migrated version's history: %+v", h)
	}
	// The old version is kept, in its format, for its readers.
	if _, err := r.Record(ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}

	// Nothing left to migrate.
	if _, err := r.MigrateBranch(ctx, repo.MigrateOptions{}); !errors.Is(err, ducklake.ErrCurrentFormat) {
		t.Fatalf("second migration: %v, want ErrCurrentFormat", err)
	}

	// Work continues on the migrated version: a fresh checkout, a write
	// (snapshot ids continue), commit, push.
	res2, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(t.TempDir(), "w2")})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Format != "1.0" || res2.NeedsMigration || res2.Base != rec.ID {
		t.Fatalf("checkout of the migrated branch: %+v", res2)
	}
	// DuckDB 1.5.5 writes the migrated catalog through the line checkout printed.
	realduck.Find(t, realduck.V15, "ducklake").MustQuery(t, realduck.OnLake(res2.Attach, "CREATE TABLE after(x INTEGER)", false))
	w2, err := workdir.Open(res2.Dir)
	if err != nil {
		t.Fatal(err)
	}
	next, err := w2.Commit(ctx, workdir.CommitOptions{Message: "after", Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if next.DuckLake.Adds.First != rec.DuckLake.Snapshot+1 || next.DuckLake.MigratedFrom != "" {
		t.Fatalf("next version %+v", next.DuckLake)
	}
	if _, err := w2.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.Verify(ctx, repo.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestMigrateBranchRefusals: a branch without a version, and a working
// directory of the branch with unpushed versions or uncommitted snapshots
// (which the migration would strand) are refused and nothing moves.
func TestMigrateBranchRefusals(t *testing.T) {
	ctx := context.Background()
	r, w, old := importLake(t, "wikigrams-v0.3.ducklake", false)
	if _, err := r.MigrateBranch(ctx, repo.MigrateOptions{Branch: "nothing-here"}); !errors.Is(err, refs.ErrNotFound) {
		t.Fatalf("missing branch: %v, want refs.ErrNotFound", err)
	}
	empty, err := repo.Init(ctx, filepath.Join(t.TempDir(), "empty"), repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	var noVersion *refs.NoVersionYetError
	if _, err := empty.MigrateBranch(ctx, repo.MigrateOptions{}); !errors.As(err, &noVersion) {
		t.Fatalf("HEAD's branch without a version: %v, want *refs.NoVersionYetError", err)
	}
	// Uncommitted snapshots, written by DuckDB 1.4.4, whose ducklake
	// extension writes DuckLake 0.3 (1.5.5 would migrate the catalog).
	realduck.Find(t, realduck.V144, "ducklake").MustQuery(t, "ATTACH "+sqlquote.String("ducklake:"+w.CatalogPath())+" AS lake; CREATE TABLE lake.local(x INTEGER);")
	if _, err := w.Migrate(ctx, repo.MigrateOptions{}); !errors.Is(err, workdir.ErrLocalWork) || !strings.Contains(err.Error(), "1 snapshot(s) not committed") {
		t.Fatalf("uncommitted: %v, want ErrLocalWork", err)
	}
	// Committed, not pushed.
	if _, err := w.Commit(ctx, workdir.CommitOptions{Message: "local", Author: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Migrate(ctx, repo.MigrateOptions{}); !errors.Is(err, workdir.ErrLocalWork) || !strings.Contains(err.Error(), "1 version(s) committed and not pushed") {
		t.Fatalf("unpushed: %v, want ErrLocalWork", err)
	}
	// Outside the working directory (or from one of another branch) the
	// branch migrates; the local version can then no longer be pushed.
	if got, err := r.Resolve(ctx, "main"); err != nil || got.ID != old.ID {
		t.Fatalf("a refused migration moved main: %v %v", got, err)
	}
	if _, err := r.MigrateBranch(ctx, repo.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Push(ctx, workdir.PushOptions{}); !errors.Is(err, refs.ErrRefused) {
		t.Fatalf("push of work made on the unmigrated version: %v, want a refusal", err)
	}
}

// TestCheckoutFromMigrate: checkout --from with Migrate makes a 1.0 working
// catalog from a 0.2 lake; the first commit records where it came from;
// without Migrate the result says the lake needs a migration and who reads
// it; Migrate without From is refused.
func TestCheckoutFromMigrate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src", "airduck-v0.2.ducklake")
	testutil.Gunzip(t, "airduck-v0.2.ducklake", src)
	r, err := repo.Init(ctx, filepath.Join(dir, "repo"), repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plain, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "plain"), From: src})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Format != "0.2" || !plain.NeedsMigration || plain.Readers.Attach != "1.3.1 - 1.3.2" || plain.Migration != nil {
		t.Fatalf("plain checkout: %+v", plain)
	}
	for _, form := range []string{"duckdb", "sqlite"} {
		res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, form), From: src, Migrate: true, CatalogFormat: ducklake.Backend(form)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Format != "1.0" || res.NeedsMigration || res.Migration == nil || res.Migration.From != "0.2" || len(res.Migration.Steps) != 3 {
			t.Fatalf("%s: checkout --migrate: %+v", form, res)
		}
		w, err := workdir.Open(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := w.Commit(ctx, workdir.CommitOptions{Message: "import", Author: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if rec.DuckLake.Format != "1.0" || rec.DuckLake.MigratedFrom != "0.2" || rec.DuckLake.Adds.First != 0 || rec.AddsNothing() {
			t.Fatalf("%s: first version %+v", form, rec.DuckLake)
		}
	}
	// A lake already current is checked out as it is.
	cur := filepath.Join(dir, "current.duckdb")
	if _, err := ducklake.Migrate(ctx, src, cur); err != nil {
		t.Fatal(err)
	}
	res, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "cur"), From: cur, Migrate: true})
	if err != nil || res.Migration != nil || res.Format != "1.0" {
		t.Fatalf("--migrate of a 1.0 lake: %+v %v", res, err)
	}
	if _, err := workdir.Checkout(ctx, r, workdir.CheckoutOptions{Dir: filepath.Join(dir, "x"), Migrate: true}); !errors.Is(err, repo.ErrInvalidArguments) {
		t.Fatalf("--migrate without --from: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused checkout left its directory")
	}
}

// TestMigrateBranchRealDuckDB: the line printed for the migrated version
// attaches READ_ONLY in DuckDB 1.5.5 and returns the old version's tables
// and counts at every snapshot, while the old version's line is refused by
// 1.5.5 (it asks for a migration) and still read by DuckDB 1.4.4, its
// format's reader.
func TestMigrateBranchRealDuckDB(t *testing.T) {
	d15 := realduck.Find(t, realduck.V15, "ducklake")
	ctx := context.Background()
	r, _, _ := importLake(t, "dltest-per-table-schema.ducklake", false)
	res, err := r.MigrateBranch(ctx, repo.MigrateOptions{Author: "t"})
	if err != nil {
		t.Fatal(err)
	}
	q := "SELECT snapshot_id FROM v2.snapshots() ORDER BY 1 DESC LIMIT 1; SELECT table_name FROM information_schema.tables WHERE table_catalog = 'v2' ORDER BY 1; SELECT count(*) FROM v2.main.\"T\" AT (VERSION => 3);"
	got, err := d15.Text(res.Attach + "\n" + q)
	if err != nil {
		t.Fatalf("DuckDB 1.5.5 on the printed line %s: %v", res.Attach, err)
	}
	if !strings.HasPrefix(got, "6\nT\nT_1\nT_2\n0\n") {
		t.Fatalf("DuckDB 1.5.5 read:\n%s", got)
	}
	if _, err := d15.Text(res.ParentAttach + "\nSELECT 1;"); err == nil || !strings.Contains(err.Error(), "AUTOMATIC_MIGRATION") {
		t.Fatalf("DuckDB 1.5.5 on the old version: %v", err)
	}
	d14 := realduck.Find(t, realduck.V144, "ducklake")
	old, err := d14.Text(strings.ReplaceAll(res.ParentAttach, "v1", "v2") + "\n" + q)
	if err != nil || old != got {
		t.Fatalf("DuckDB 1.4.4 on the old version: %q %v, want %q", old, err, got)
	}
}

// TestMigrateBranchRace: two migrations of one branch at once (two
// processes' worth of Repo values): exactly one moves it, the other is
// refused as a push is, and the branch holds one migrated version.
func TestMigrateBranchRace(t *testing.T) {
	ctx := context.Background()
	r, _, old := importLake(t, "wikigrams-v0.3.ducklake", false)
	type out struct {
		res *repo.MigrateResult
		err error
	}
	results := make(chan out, 2)
	for range 2 {
		other, err := repo.Open(ctx, r.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		go func() {
			res, err := other.MigrateBranch(ctx, repo.MigrateOptions{Author: "t"})
			results <- out{res, err}
		}()
	}
	var won *repo.MigrateResult
	for range 2 {
		o := <-results
		switch {
		case o.err == nil && won == nil:
			won = o.res
		case errors.Is(o.err, refs.ErrRefused), errors.Is(o.err, ducklake.ErrCurrentFormat):
			// lost the race, or started after the winner moved the branch
		default:
			t.Fatalf("migration: %v (a second winner: %v)", o.err, o.err == nil)
		}
	}
	if won == nil {
		t.Fatal("no migration won")
	}
	got, err := r.Resolve(ctx, "main")
	if err != nil || got.ID != won.Version.ID || won.Parent != old.ID {
		t.Fatalf("main = %v %v, want the winner %s on top of %s", got, err, won.Version.ID, old.ID)
	}
}
