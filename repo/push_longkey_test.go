package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/internal/testutil/realduck"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/workdir"
)

// TestPushDataCheckLongKeyPresent: a data file the real DuckDB wrote in a
// folder repository, whose store key is longer than store.MaxKeyLen (hive
// partition folders of long values) beside one with a short key, is present: the push's data check
// must not report it as missing ("the store does not hold it … gc
// deletes files"), neither when it Stats the few added files nor when it
// lists the store: keys longer than a Stat takes are checked by the
// listing, which passes them on (csvKey).
func TestPushDataCheckLongKeyPresent(t *testing.T) {
	ctx := context.Background()
	long := strings.Repeat("v", 200)
	for _, listing := range []bool{false, true} {
		url, _, res := history.Empty(t)
		duck := realduck.Find(t, realduck.V15, "ducklake").Start(t)
		duck.MustQuery(t, realduck.OnLake(res.Attach, `CREATE TABLE events(a VARCHAR, b VARCHAR, c VARCHAR, d VARCHAR, e VARCHAR, k INTEGER);
INSERT INTO events VALUES ('x', 'x', 'x', 'x', 'x', -1);
ALTER TABLE events SET PARTITIONED BY (a, b, c, d, e);
INSERT INTO events SELECT '`+long+`', '`+long+`', '`+long+`', '`+long+`', '`+long+`' || i, i FROM range(5) t(i)`, false))
		var longest string
		filepath.WalkDir(filepath.Join(url, "data"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && len(p) > len(longest) {
				longest = p
			}
			return nil
		})
		if key, _ := filepath.Rel(url, longest); len(key) <= 1024 {
			t.Fatalf("the longest data file's key is %d bytes (%s), want more than 1024", len(key), key)
		}
		wd, err := workdir.Open(res.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wd.Commit(ctx, workdir.CommitOptions{Message: "long", Author: "t"}); err != nil {
			t.Fatal(err)
		}
		restore := func() {}
		if listing {
			restore = repo.SetStatMaxKeys(3) // 6 files: the store is listed
		}
		_, err = wd.Push(ctx, workdir.PushOptions{})
		restore()
		var dm *repo.DataMissingError
		if errors.As(err, &dm) {
			t.Errorf("listing %v: every data file is in the store, yet push says %d are missing: %v", listing, dm.Count, err)
		} else if err != nil {
			t.Errorf("listing %v: push: %v", listing, err)
		}
	}
}
