package realduck

import (
	"path/filepath"
	"testing"
)

// TestRealDuckDB checks the harness itself: each installed release runs SQL,
// reports its own version, and 1.5 writes and reads a DuckLake catalog with
// the ducklake extension from the environment (nothing downloaded).
func TestRealDuckDB(t *testing.T) {
	for _, c := range []struct {
		rel  Release
		want string
	}{{V15, "v1.5.5"}, {V151, "v1.5.1"}, {V20, "v2.0.0"}} {
		t.Run(string(c.rel), func(t *testing.T) {
			d := Find(t, c.rel)
			res := d.MustQuery(t, "PRAGMA version")
			if len(res) != 1 || len(res[0].Rows) != 1 || res[0].Rows[0][0] != c.want {
				t.Fatalf("PRAGMA version = %+v, want %s", res, c.want)
			}
		})
	}
	t.Run("ducklake", func(t *testing.T) {
		d := Find(t, V15, "ducklake")
		dir := t.TempDir()
		out, err := d.Text("ATTACH 'ducklake:" + filepath.Join(dir, "l.ducklake") + "' AS l (DATA_PATH '" + filepath.Join(dir, "data") + "/');" +
			"CREATE TABLE l.t AS SELECT range AS i FROM range(10); SELECT count(*), sum(i) FROM l.t;" +
			"SELECT value FROM __ducklake_metadata_l.ducklake_metadata WHERE key = 'version'")
		if err != nil {
			t.Fatal(err)
		}
		if out != "10\t45\n1.0\n" {
			t.Fatalf("got %q", out)
		}
	})
	t.Run("no-download", func(t *testing.T) {
		d := Find(t, V15)
		// spatial is a known extension that is not installed: with
		// autoinstall off it must fail at once rather than download.
		if _, err := d.Query("LOAD spatial"); err == nil {
			t.Fatal("LOAD spatial succeeded: the environment is not project-local")
		}
	})
}
