package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fdl-dev/fdl/internal/ducklake"
	"github.com/fdl-dev/fdl/internal/sqlquote"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// catalogDataPath returns the global data_path of the catalog at path as
// stored. A SQLite catalog is read with one query (ducklake.Open would
// first copy the whole catalog into a private DuckDB file: 23 s of the
// package's CPU when every write of the tests did it); a DuckDB file is
// opened as fdl opens it.
func catalogDataPath(path string) (string, error) {
	if !strings.HasSuffix(path, ".sqlite") {
		c, err := ducklake.Open(context.Background(), path)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return c.DataPath(), nil
	}
	u := url.URL{Path: filepath.ToSlash(path)} // escapes ?, # and %, as ducklake does
	db, err := sql.Open("sqlite3", "file:"+u.EscapedPath()+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var dp string
	// Formats before 0.2 have no scope column: every row is global.
	err = db.QueryRow("SELECT value FROM ducklake_metadata WHERE key = 'data_path' AND scope IS NULL").Scan(&dp)
	if err != nil && strings.Contains(err.Error(), "no such column") {
		err = db.QueryRow("SELECT value FROM ducklake_metadata WHERE key = 'data_path'").Scan(&dp)
	}
	if err != nil {
		return "", fmt.Errorf("data_path of %s: %w", path, err)
	}
	return dp, nil
}

// Writing working catalogs with the real DuckDB (1.5.5 and DuckDB's own
// ducklake extension) from the Go tests, as the duck script command does
// for the scripts (duckCmd).

// lakeAttach returns the ATTACH statement that attaches the working
// catalog at catalog (a .duckdb or .sqlite file) as lake, the way fdl
// prints it for a repository in a folder, with data inlining off
// (DATA_INLINING_ROW_LIMIT 0: every insert writes a Parquet file) unless
// inline. When the catalog's data_path is not a local folder (a repository
// on an object store), the files go to a local mirror instead (mirrorRoot/
// <digest of data_path>, with DATA_PATH and OVERRIDE_DATA_PATH), which it
// returns with the data path, for uploadMirror after the write. The mirror
// must stay for later writes: the extension reads the files it already
// holds (deletes, compaction) through the same DATA_PATH.
func lakeAttach(catalog string, mirrorRoot func(dataPath string) string, inline bool) (attach, mirror, dataPath string, err error) {
	dataPath, err = catalogDataPath(catalog)
	if err != nil {
		return "", "", "", err
	}
	var opts []string
	target := "ducklake:" + filepath.ToSlash(catalog)
	if strings.HasSuffix(catalog, ".sqlite") {
		target = "ducklake:sqlite:" + filepath.ToSlash(catalog)
		opts = append(opts, repo.SQLiteAttachOptions...)
	}
	if !inline {
		opts = append(opts, "DATA_INLINING_ROW_LIMIT 0")
	}
	if strings.Contains(dataPath, "://") {
		sum := sha256.Sum256([]byte(dataPath))
		mirror = filepath.Join(mirrorRoot(dataPath), hex.EncodeToString(sum[:6]))
		if err := os.MkdirAll(mirror, 0o755); err != nil {
			return "", "", "", err
		}
		opts = append(opts, "DATA_PATH "+sqlquote.String(filepath.ToSlash(mirror)+"/"), "OVERRIDE_DATA_PATH true")
	}
	attach = "ATTACH " + sqlquote.String(target) + " AS lake"
	if len(opts) > 0 {
		attach += " (" + strings.Join(opts, ", ") + ")"
	}
	return attach + ";", mirror, dataPath, nil
}

// shared is the real DuckDB session the package's tests write with
// (started on first use, ended with the test binary): one Python start for
// all of them.
var shared struct {
	sync.Mutex
	s *realduck.Session
}

// duckSession returns the shared real DuckDB session (realduck.Find: the
// test is skipped without the real DuckDB, failed under CI).
func duckSession(t testing.TB) *realduck.Session {
	t.Helper()
	d := realduck.Find(t, realduck.V15, "ducklake", "sqlite")
	shared.Lock()
	defer shared.Unlock()
	if shared.s == nil {
		s, err := d.Launch()
		if err != nil {
			t.Fatal(err)
		}
		shared.s = s
	}
	return shared.s
}

// duckLake runs sql with the real DuckDB session s on the working catalog
// at catalog, attached as lake (lakeAttach) and made the default database,
// then detached (realduck.OnLake: data inlining off unless inline; sql may
// SET ducklake_default_data_inlining_row_limit), as a pipeline's script
// would; files written through a mirror are uploaded to the repository
// afterwards.
func duckLake(t testing.TB, s *realduck.Session, catalog, sql string, inline bool) error {
	// No DATA_INLINING_ROW_LIMIT on the ATTACH: OnLake's SET of the
	// session's default decides, so that sql may change it for a statement.
	attach, mirror, dataPath, err := lakeAttach(catalog, func(dp string) string { return mirrorFor(t, dp) }, true)
	if err != nil {
		return err
	}
	if _, err := s.Query(realduck.OnLake(attach, sql, inline)); err != nil {
		return err
	}
	if mirror == "" {
		return nil
	}
	return uploadMirror(context.Background(), filepath.Dir(catalog), mirror, dataPath)
}

// duckWrite is duckLake on the DuckDB working catalog of the working
// directory dir, with data inlining off; it fails t on error.
func duckWrite(t testing.TB, s *realduck.Session, dir, sql string) {
	t.Helper()
	if err := duckLake(t, s, filepath.Join(dir, workdir.CatalogName), sql, false); err != nil {
		t.Fatal(err)
	}
}

// attachLine returns the ATTACH statement in out, what fdl checkout
// printed (failing t when there is none).
func attachLine(t testing.TB, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "ATTACH OR REPLACE '") {
			return l
		}
	}
	t.Fatalf("fdl printed no ATTACH line:\n%s", out)
	return ""
}
