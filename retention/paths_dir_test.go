package retention

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlaceDirAgreesWithPlace: for every folder spelling gc normalises
// (local paths with "//", "." and "..", file:// URLs, a repository reached
// through a symbolic link, a table folder that is a link, a moved
// repository with two data locations, object-store URLs) and every simple
// name, Place(dir + name).Key is PlaceDir(dir).KeyPrefix + name; a name
// that is not simple goes through Place, so SimpleName must refuse every
// name for which the rule fails.
//
// It is one piece: one folder tree (with links into and out of it) and its
// normalisers, then the one rule checked over every case and name.
func TestPlaceDirAgreesWithPlace(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "repo", "data")
	for _, d := range []string{"main/t/year=2024", "main/u", "elsewhere"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(root, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A link to the repository, and a partition folder that links out.
	if err := os.Symlink(filepath.Join(root, "repo"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(data, "main", "t", "out")); err != nil {
		t.Fatal(err)
	}
	names := []string{
		"f.parquet", "ducklake-0192-abcd.parquet", "year=2024/f.parquet", "out/p/f.parquet",
		"a b.parquet", "a%20b.parquet", "ts=10:00/f.parquet", "é.parquet",
		// not simple: SimpleName must refuse them (Place decides)
		".hidden", "../x.parquet", "a/../b", "a//b", "a/./b", "a\\b", "a/", "/abs", "", "a\x01b",
		// not simple either: a URL's readings part at '?' and '#' (s3://…/t/a?b
		// is the object t/a for DuckDB; FuzzPlaceDir found PlaceDir keying it t/a?b)
		"a?b", "k=?/f.parquet", "a#b",
	}
	local, err := NewNormaliser([]string{data + "/", filepath.Join(root, "old", "data") + "/"}, true)
	if err != nil {
		t.Fatal(err)
	}
	cloud, err := NewNormaliser([]string{"s3://bucket/repo/data/"}, false)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		n   *Normaliser
		dir string
	}{
		{local, data + "/main/t/"},
		{local, data + "//main/./t/"},
		{local, data + "/main/x/../t/"},
		{local, "file://" + data + "/main/t/"},
		{local, filepath.Join(root, "link") + "/data/main/t/"},
		{local, data + "/main/t"}, // no trailing slash: names continue the last element
		{local, data + "/main/u/"},
		{local, outside + "/"},
		{local, filepath.Join(root, "old", "data") + "/main/"},
		{local, data + "/"},
		{cloud, "s3://bucket/repo/data/main/t/"},
		{cloud, "S3://bucket/repo//data/main/t/"},
		{cloud, "s3://bucket/repo/data/main/t"},
		{cloud, "s3://other/repo/data/"},
	}
	for _, c := range cases {
		dp, err := c.n.PlaceDir(c.dir)
		if err != nil {
			t.Fatalf("PlaceDir(%q): %v", c.dir, err)
		}
		for _, name := range names {
			if !SimpleName(name) || (!dp.Nested && strings.Contains(name, "/")) {
				continue
			}
			pl, err := c.n.Place(c.dir + name)
			if err != nil {
				t.Errorf("Place(%q): %v", c.dir+name, err)
				continue
			}
			want := pl.Key
			got := ""
			if dp.KeyPrefix != "" {
				got = dp.KeyPrefix + name
			}
			if got != want {
				t.Errorf("dir %q name %q: PlaceDir gives %q, Place %q", c.dir, name, got, want)
			}
		}
	}
	for _, name := range []string{".hidden", "../x.parquet", "a/../b", "a//b", "a/./b", "a\\b", "a/", "/abs", "", "a\x01b", "a?b", "a#b"} {
		if SimpleName(name) {
			t.Errorf("SimpleName(%q) = true", name)
		}
	}
	for _, name := range []string{"f.parquet", "year=2024/f.parquet", "é.parquet", "a%20b", "ts=10:00/f"} {
		if !SimpleName(name) {
			t.Errorf("SimpleName(%q) = false", name)
		}
	}
	// The partition folder that links out of the repository: Nested must
	// not hold where the key came from resolving links.
	if dp, _ := local.PlaceDir(filepath.Join(root, "link") + "/data/main/t/"); dp.KeyPrefix != "data/main/t/" {
		t.Errorf("through the link: %+v", dp)
	}
}
