package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/testutil"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/retention"
	"github.com/fdl-dev/fdl/version"
)

// gcTemplate builds, once per test, a folder repository with 10 versions
// (appends, deletes, both kinds of compaction, a dropped table, inlined
// rows), keep-last 3, an abandoned upload, a stray data file and a
// folder store's temporary file of an interrupted write, all 10 days old. It returns the repository's path.
func gcTemplate(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	h := history.BuildReal(t, 10, gcSQL)
	url := h.URL
	if _, err := h.Repo.UpdatePolicy(ctx, func(p *retention.Policy) error { p.KeepLast = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	// A repository made before history packs: gc writes those of main's
	// history.
	if err := os.RemoveAll(filepath.Join(url, "index")); err != nil {
		t.Fatal(err)
	}
	// An abandoned upload, a stray data file and the history pack of a
	// version that is gone, ten days old.
	old := time.Now().Add(-10 * 24 * time.Hour)
	id, _ := version.NewID()
	gone, _ := version.NewID()
	for _, p := range []string{filepath.Join(url, "versions", string(id), version.CatalogFile), filepath.Join(url, "versions", string(id), version.DatasetFile), filepath.Join(url, "data", "main", "orders", "ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet"),
		filepath.Join(url, "data", "main", "orders", ".tmp-killedupload"), filepath.Join(url, "index", "packs", string(gone)+".json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("abandoned"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	return url
}

// gcSQL is what version i of gcTemplate writes, with the real DuckDB
// (history.BuildReal: data inlining off but for small): compaction is the
// extension's own, ducklake_rewrite_data_files of orders' files with
// deletes and ducklake_merge_adjacent_files of events'.
func gcSQL(i int) string {
	var q []string
	if i == 1 {
		q = append(q, "CREATE TABLE orders(id BIGINT)", "CREATE TABLE events(id BIGINT)", "CREATE TABLE tmp(id BIGINT)",
			"CREATE TABLE small(id BIGINT)", "INSERT INTO tmp VALUES (1)")
	}
	q = append(q, fmt.Sprintf("INSERT INTO orders SELECT %d + i AS id FROM range(20) t(i)", i*100), fmt.Sprintf("INSERT INTO events VALUES (%d)", i))
	if i%3 == 0 {
		q = append(q, fmt.Sprintf("DELETE FROM orders WHERE id %% 7 = %d", i%7))
	}
	if i%4 == 0 {
		q = append(q, "CALL ducklake_rewrite_data_files('lake', 'orders', delete_threshold => 0)")
	}
	if i%5 == 0 {
		q = append(q, "CALL ducklake_merge_adjacent_files('lake', 'events')")
	}
	if i == 5 {
		q = append(q, "DROP TABLE tmp")
	}
	if i == 6 {
		q = append(q, "SET ducklake_default_data_inlining_row_limit = 10", "INSERT INTO small VALUES (6)")
	}
	return strings.Join(q, ";\n")
}

// copyTree copies a repository keeping modification times.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "repo")
	testutil.RestoreTree(t, src, dst)
	return dst
}

// endState digests a repository after gc: every key, and the bytes of
// every object except those carrying the time gc ran (the floor, markers).
func endState(t *testing.T, url string) map[string]string {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string]string{}
	err = st.List(context.Background(), "", func(o store.ObjectInfo) error {
		if strings.HasPrefix(o.Key, "retention/") || strings.HasSuffix(o.Key, "/"+retention.MarkerFile) {
			out[o.Key] = "(timestamped)"
			return nil
		}
		b, _, err := store.ReadAll(context.Background(), st, o.Key)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[o.Key] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = st.(store.TempCleaner).Temps(context.Background(), "", func(o store.ObjectInfo) error {
		out[o.Key] = "(temporary file)"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// neededFiles returns the data files the kept catalogs can read at or after
// their floor, by path, read from the catalogs of a repository after gc.
func neededFiles(t *testing.T, url string) []string {
	t.Helper()
	ctx := context.Background()
	r, err := repo.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := branchHead(t, url)
	log, err := r.Log(ctx, head, 3)
	if err != nil {
		t.Fatal(err)
	}
	floor := log[len(log)-1].DuckLake.Snapshot
	var out []string
	for _, rec := range log {
		for _, f := range history.CatalogFiles(t, r, rec) {
			if f.EndSnapshot == nil || *f.EndSnapshot > max(f.BeginSnapshot, floor) {
				out = append(out, f.ResolvedPath)
			}
		}
	}
	return out
}

// TestGCKillAtEveryStep kills 'fdl gc --yes' (SIGKILL) at each of its
// steps — before the floor moves, before its deletion intent, at the first
// and a later marker, catalog and dataset deletion, data file,
// abandoned-upload and temporary-file deletion, the deletion of a gone
// version's history pack and the writing of missing ones (a killed gc
// leaves its intent: the next gc on this host sees its process is gone) —
// then checks that no file a kept catalog reads is missing, runs gc again,
// and compares the end state with an uninterrupted run: the same objects,
// verify --data clean (docs/spec.md §10.7).
func TestGCKillAtEveryStep(t *testing.T) {
	tmpl := gcTemplate(t)
	env := []string{"TMPDIR=" + t.TempDir()}
	ref := copyTree(t, tmpl)
	out := mustFdl(t, "--repo", ref, "gc", "--yes")
	if !strings.Contains(out, "moved the floor to generation 1") {
		t.Fatalf("reference gc:\n%s", out)
	}
	want := endState(t, ref)
	needed := neededFiles(t, ref)
	if len(needed) == 0 {
		t.Fatal("no needed files")
	}
	for _, k := range []string{"data/main/orders/ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet", "data/main/orders/.tmp-killedupload"} {
		if _, ok := want[k]; ok {
			t.Fatalf("the reference run kept %s", k)
		}
	}
	steps := []string{"gc:floor", "gc:intent", "gc:marker", "gc:marker#4", "gc:catalog", "gc:catalog#5", "gc:dataset", "gc:dataset#7",
		"gc:data", "gc:data#4", "gc:abandoned", "gc:abandoned#2", "gc:temp", "gc:pack", "gc:pack#2", "gc:pack#3"}
	// Each step kills a gc on a copy of its own: the steps run at once.
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			url := copyTree(t, tmpl)
			code, out := fdlProc(t, append(env, "FDL_TEST_KILL_AT="+step), "--repo", url, "gc", "--yes")
			if code != -1 {
				t.Fatalf("gc was not killed at %s: exit %d\n%s", step, code, out)
			}
			for _, p := range needed {
				// needed names the files as the catalogs do, in the
				// template the copies were made from: the same ones
				// in this copy.
				rel, err := filepath.Rel(tmpl, p)
				if err != nil || !strings.HasPrefix(rel, "data"+string(filepath.Separator)) {
					t.Fatalf("needed file %s lies outside the template's data/ %s", p, tmpl)
				}
				if _, err := os.Stat(filepath.Join(url, rel)); err != nil {
					t.Fatalf("after a kill at %s a kept file is missing: %v", step, err)
				}
			}
			if code, out := fdlProc(t, env, "--repo", url, "log"); code != 0 {
				t.Fatalf("log after a kill: exit %d\n%s", code, out)
			}
			if code, out := fdlProc(t, env, "--repo", url, "gc", "--yes"); code != 0 {
				t.Fatalf("gc after a kill at %s: exit %d\n%s", step, code, out)
			}
			got := endState(t, url)
			var diff []string
			for k, v := range want {
				if got[k] != v {
					diff = append(diff, fmt.Sprintf("%s: want %.12s, got %.12s", k, v, got[k]))
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					diff = append(diff, fmt.Sprintf("%s: extra %.12s", k, v))
				}
			}
			slices.Sort(diff)
			if len(diff) > 0 {
				t.Fatalf("end state after a kill at %s differs from an uninterrupted gc:\n%s", step, strings.Join(diff, "\n"))
			}
			if code, out := fdlProc(t, env, "--repo", url, "verify", "--data"); code != 0 {
				t.Fatalf("verify --data after a kill at %s and a rerun: exit %d\n%s", step, code, out)
			}
		})
	}
}
