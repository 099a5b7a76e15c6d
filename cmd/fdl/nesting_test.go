package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fdl-dev/fdl/gc"
	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/store/cloudtest"
	"github.com/fdl-dev/fdl/repo"
)

// joinURL appends path elements to a folder path or a store URL (its query
// kept).
func joinURL(t *testing.T, base string, elems ...string) string {
	t.Helper()
	if !strings.Contains(base, "://") {
		return filepath.Join(append([]string{base}, elems...)...)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + strings.Join(elems, "/")
	return u.String()
}

// TestRepositoriesNeverNest: on every kind of store, init refuses a
// location inside another repository — in its data/ or anywhere else in
// it — and one around a repository, naming it; and gc, given a repository
// someone put inside data/ anyway, deletes nothing of it however old,
// while it still deletes a stray file beside it.
func TestRepositoriesNeverNest(t *testing.T) {
	for _, c := range []struct {
		name string
		base func(t *testing.T) string
	}{
		{"folder", func(t *testing.T) string { return t.TempDir() }},
		{"s3", func(t *testing.T) string { return cloudtest.S3(t) }},
		{"gcs", func(t *testing.T) string { return cloudtest.WithPrefix(cloudtest.FakeGCS(t), t.Name()) }},
		{"azure", func(t *testing.T) string { return cloudtest.Azure(t) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := c.base(t)
			outer := joinURL(t, base, "p", "outer")
			mustFdl(t, "init", outer)
			for _, inner := range []string{joinURL(t, outer, "data", "inner"), joinURL(t, outer, "data", "main", "t", "inner"), joinURL(t, outer, "elsewhere")} {
				code, out := fdlProc(t, nil, "--json", "init", inner)
				if code != exitError || !strings.Contains(out, `"kind":"nested_repository"`) || !strings.Contains(out, "lies inside the repository") {
					t.Errorf("init inside a repository (%s): exit %d\n%s", inner, code, out)
				}
			}
			if c.name == "folder" {
				// Reached through a symbolic link, it is still inside.
				link := filepath.Join(t.TempDir(), "link")
				if err := os.MkdirAll(filepath.Join(outer, "data"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(outer, "data"), link); err != nil {
					t.Fatal(err)
				}
				if code, out := fdlProc(t, nil, "init", filepath.Join(link, "inner")); code != exitError || !strings.Contains(out, "lies inside the repository") {
					t.Errorf("init inside a repository through a link: exit %d\n%s", code, out)
				}
			}
			code, out := fdlProc(t, nil, "--json", "init", joinURL(t, base, "p"))
			if code != exitError || !strings.Contains(out, `"kind":"nested_repository"`) || !strings.Contains(out, "holds the repository") {
				t.Errorf("init around a repository: exit %d\n%s", code, out)
			}
			gcSkipsNested(t, outer)
		})
	}
}

// gcSkipsNested puts a repository inside the data/ of the repository at
// outer by other means than fdl, and a stray file beside it: gc, a year
// later, plans to delete the stray file and nothing of the nested
// repository, warns about it, and leaves it whole.
func gcSkipsNested(t *testing.T, outer string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, outer)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	nested := []string{"data/nested/fdl.json", "data/nested/HEAD", "data/nested/data/main/t/x.parquet", "data/nested/versions/0192/version.json"}
	for _, k := range append(nested, "data/ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet") {
		if err := st.Create(ctx, k, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	r, err := repo.Open(ctx, outer)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	plan, err := gc.MakePlan(ctx, r, gc.Options{Now: time.Now().Add(365 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	stray := false
	for _, d := range plan.DataFiles {
		if strings.HasPrefix(d.Key, "data/nested/") {
			t.Errorf("gc plans to delete %s, inside another repository", d.Key)
		}
		stray = stray || d.Key == "data/ducklake-01a23784-9317-7442-aa55-b1a2089a1830.parquet"
	}
	if !stray {
		t.Errorf("gc does not delete the stray file: %+v", plan.DataFiles)
	}
	if !strings.Contains(strings.Join(plan.Warnings, "\n"), "data/nested/ looks like another repository") {
		t.Errorf("no warning about the nested repository: %q", plan.Warnings)
	}
	if _, err := gc.Apply(ctx, r, plan); err != nil {
		t.Fatal(err)
	}
	for _, k := range nested {
		if _, err := st.Stat(ctx, k); err != nil {
			t.Errorf("after gc: %s: %v", k, err)
		}
	}
}
