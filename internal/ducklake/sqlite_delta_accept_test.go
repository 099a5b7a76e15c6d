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

// acceptanceChains are the lakes the acceptance scripts
// (internal/acceptance/testdata/script) write through a SQLite working
// catalog: for each script, its SQL files in the order the script runs
// them, grouped by the commits it makes. The SQL is read from the scripts
// themselves, so the lakes here are theirs. (Left out: format04, whose
// lakes are DuckLake 0.4 written by DuckDB 1.5.1, which an incremental
// commit does not take; import and oldformats, whose SQLite catalogs are
// imported and committed once, a full conversion.)
var acceptanceChains = []struct {
	script string
	steps  [][]string
}{
	{"pipeline", [][]string{{"create"}, {"insert", "update-delete"}, {"alter", "views"}, {"inline", "flush", "merge"}, {"more"}, {"more-sqlite", "flush"}}},
	// maintain2 + cleanup and expire-all are the writes whose commit the
	// script expects fdl to refuse (files of the base deleted, the base's
	// snapshot expired): FreezeOnto itself still writes their catalog.
	{"maintenance", [][]string{{"write", "v1"}, {"maintain", "checkpoint"}, {"merge-again"}, {"maintain2", "cleanup"}, {"expire-all"}}},
	{"newlake", [][]string{{"load"}, {"change"}}},
	{"http", [][]string{{"load"}, {"change"}}},
}

// TestFreezeOntoEqualsFreezeOnAcceptanceLakes: the lakes of the acceptance
// scripts, made as fdl makes a new lake (lakewriter.Create, then the SQLite
// conversion) and written by the real DuckDB 1.5 with the scripts' own SQL,
// commit by commit: after each commit the catalog FreezeOnto makes from
// the last one equals, table by table and row by row, the one a full
// conversion (Freeze) makes, and at least one commit of each chain is
// incremental (not a fallback to the full conversion).
func TestFreezeOntoEqualsFreezeOnAcceptanceLakes(t *testing.T) {
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	for _, chain := range acceptanceChains {
		t.Run(chain.script, func(t *testing.T) {
			t.Parallel()
			files := acceptanceSQL(t, chain.script)
			dir := t.TempDir()
			lite := newSQLiteLake(t, dir)
			base := ducklake.FullBase(t, lite, filepath.Join(dir, "base0.duckdb"))
			attach := fmt.Sprintf("ATTACH 'ducklake:sqlite:%s' AS lake", lite)
			lake := d.Start(t)
			deltas := 0
			for k, step := range chain.steps {
				for _, name := range step {
					sql, ok := files[name]
					if !ok {
						t.Fatalf("%s.txtar has no %s.sql", chain.script, name)
					}
					if _, err := lake.Query(realduck.OnLake(attach, sql, true)); err != nil {
						t.Fatalf("%s.sql: %v", name, err)
					}
				}
				inc := filepath.Join(dir, fmt.Sprintf("inc%d.duckdb", k))
				info, delta, err := ducklake.FreezeOnto(context.Background(), lite, inc, base)
				if err != nil {
					t.Fatalf("commit after %v: %v", step, err)
				}
				how := "incremental"
				if delta.Full == "" {
					deltas++
				} else {
					how = "a full conversion: " + delta.Full
				}
				t.Logf("commit after %v: %s", step, how)
				base = ducklake.EqualsFull(t, lite, inc, filepath.Join(dir, fmt.Sprintf("full%d.duckdb", k)), info)
			}
			if deltas == 0 {
				t.Errorf("no commit of the chain was incremental")
			}
		})
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
