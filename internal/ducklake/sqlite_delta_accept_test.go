package ducklake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/ducklake/lakewriter"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
)

// acceptanceSteps are the writes the acceptance scripts
// (internal/acceptance/testdata/script) make through a SQLite working
// catalog, as "script/file": their SQL is read from the scripts themselves.
// They run on one lake, in each script's order, grouped into three commits,
// the first a full conversion as a new lake's first commit is (the scripts
// make more commits: each incremental one costs two conversions and two
// comparisons, two to three seconds of CPU, and this test's budget is ten).
// The http script is left out (its SQL is newlake's on fewer rows), as are
// format04 (DuckLake 0.4 lakes written by DuckDB 1.5.1, which an
// incremental commit does not take), import and oldformats (catalogs
// imported and committed once: a full conversion), and maintenance's
// expire-all (expiring the base's snapshot: a full conversion, which
// TestFreezeOntoFallsBack covers).
var acceptanceSteps = [][]string{
	{"maintenance/write", "maintenance/v1", "pipeline/create", "pipeline/insert", "pipeline/update-delete"},
	// maintain and maintain2 expire the snapshots older than the last
	// commit's, so each begins a commit, as in the script.
	{"maintenance/maintain", "maintenance/checkpoint", "maintenance/merge-again",
		"pipeline/alter", "pipeline/views", "pipeline/inline", "pipeline/flush", "pipeline/merge"},
	{"maintenance/maintain2", "maintenance/cleanup", "pipeline/more", "pipeline/more-sqlite", "pipeline/flush",
		"newlake/load", "newlake/change"},
}

// TestFreezeOntoEqualsFreezeOnAcceptanceLakes: a lake made as fdl makes a
// new one (lakewriter.Create, then the SQLite conversion) and written by
// the real DuckDB 1.5 with the acceptance scripts' own SQL
// (acceptanceSteps): after each commit but the first, the catalog
// FreezeOnto makes from the last one equals, table by table and row by row,
// the one a full conversion (Freeze) makes, and every commit is incremental
// (none falls back to the full conversion); another working catalog that
// pulls each commit's version by what changed (PullSQLite) then equals a
// checkout of it.
func TestFreezeOntoEqualsFreezeOnAcceptanceLakes(t *testing.T) {
	t.Parallel()
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	files := map[string]map[string]string{}
	for _, script := range []string{"maintenance", "pipeline", "newlake"} {
		files[script] = acceptanceSQL(t, script)
	}
	dir := t.TempDir()
	lite := newSQLiteLake(t, dir)
	attach := fmt.Sprintf("ATTACH 'ducklake:sqlite:%s' AS lake", lite)
	lake := d.Start(t)
	// A commit's files in one session of the lake (an ATTACH costs more
	// than most of the files).
	write := func(k int) {
		var sql strings.Builder
		for _, name := range acceptanceSteps[k] {
			script, file, _ := strings.Cut(name, "/")
			text, ok := files[script][file]
			if !ok {
				t.Fatalf("%s.txtar has no %s.sql run on the working catalog", script, file)
			}
			sql.WriteString(strings.TrimSpace(text) + "\n")
		}
		if _, err := lake.Query(realduck.OnLake(attach, sql.String(), true)); err != nil {
			t.Fatalf("commit %d (%v): %v", k+1, acceptanceSteps[k], err)
		}
	}
	write(0)
	base := ducklake.FullBase(t, lite, filepath.Join(dir, "base0.duckdb"))
	pulled := filepath.Join(dir, "pulled.sqlite") // another working directory, which pulls each version
	if err := ducklake.ConvertToSQLite(context.Background(), base.Path, pulled); err != nil {
		t.Fatal(err)
	}
	for k := 1; k < len(acceptanceSteps); k++ {
		write(k)
		inc := filepath.Join(dir, fmt.Sprintf("inc%d.duckdb", k))
		info, delta, err := ducklake.FreezeOnto(context.Background(), lite, inc, base)
		if err != nil {
			t.Fatalf("commit %d: %v", k+1, err)
		}
		if delta.Full != "" {
			t.Errorf("commit %d: a full conversion: %s", k+1, delta.Full)
		}
		prev := base
		base = ducklake.EqualsFull(t, lite, inc, filepath.Join(dir, fmt.Sprintf("full%d.duckdb", k)), info)
		pd := ducklake.PullEqualsCheckout(t, pulled, base.Path, prev)
		t.Logf("commit %d: pulled: delta %v, whole %v", k+1, pd.Delta, pd.Whole)
	}
}

// acceptanceSQL returns the SQL files of an acceptance script by name
// (without ".sql"), each without its first line, the ATTACH line the
// script substitutes (${A} or ${ATTACH_SQ}).
func acceptanceSQL(t *testing.T, script string) map[string]string {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("..", "acceptance", "testdata", "script", script+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range ar.Files {
		name, ok := strings.CutSuffix(f.Name, ".sql")
		if !ok {
			continue
		}
		first, rest, _ := strings.Cut(string(f.Data), "\n")
		if first != "${A}" && first != "${ATTACH_SQ}" {
			continue // not run on the working catalog
		}
		out[name] = rest
	}
	return out
}

// newSQLiteLake makes a new empty lake as fdl checkout makes one in an
// empty repository: DuckLake 1.0 written by lakewriter with its data path
// and delete_older_than, converted to a SQLite working catalog.
func newSQLiteLake(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	duck := filepath.Join(dir, "new.duckdb")
	if err := lakewriter.Create(ctx, duck, lakewriter.CreateOptions{DataPath: data}); err != nil {
		t.Fatal(err)
	}
	if _, err := ducklake.SetOptionIfAbsent(ctx, duck, "delete_older_than", ducklake.DeleteOlderThan); err != nil {
		t.Fatal(err)
	}
	lite := filepath.Join(dir, "work.sqlite")
	if err := ducklake.ConvertToSQLite(ctx, duck, lite); err != nil {
		t.Fatal(err)
	}
	return lite
}
