package ducklake

import (
	"context"
	"errors"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestAddedKeys: the keys of the files new snapshots add, for every shape
// of path (simple relative names, partition folders, relative paths that
// leave their folder, absolute paths inside and outside the repository,
// delete files), only those visible at a snapshot read and begun at or
// after since; Groups limits a listing to what the keys share; Missing
// finds exactly the keys a listing lacks.
//
// It is one piece: one catalog made with every shape of path, then
// AddedKeys, Groups and Missing checked on it; the checks name the rows the
// first half inserted.
func TestAddedKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := gunzipCatalog(t, "dltest-v04.ducklake", dir, "c.ducklake")
	ins := func(id, begin int64, end, p string, rel string) string {
		return "INSERT INTO ducklake_data_file (data_file_id, table_id, begin_snapshot, end_snapshot, path, path_is_relative, file_format, record_count, file_size_bytes) VALUES (" +
			strings.Join([]string{itoa(id), "1", itoa(begin), end, "'" + p + "'", rel, "'parquet'", "1", "1"}, ", ") + ")"
	}
	withWritable(t, src,
		"UPDATE ducklake_metadata SET value = '/repo/data/' WHERE key = 'data_path'",
		"UPDATE ducklake_snapshot SET next_file_id = 2 WHERE snapshot_id < 2", // ids from 2 on were handed out at or after snapshot 2
		ins(1, 1, "NULL", "ducklake-old.parquet", "true"),                     // before since
		ins(2, 2, "NULL", "ducklake-0193-a.parquet", "true"),                  // simple
		ins(3, 2, "NULL", "k=1/ducklake-0193-b.parquet", "true"),              // partition folder
		ins(4, 2, "NULL", "../other/ducklake-0193-c.parquet", "true"),         // leaves the folder
		ins(5, 2, "NULL", "/repo/data/abs/ducklake-0193-d.parquet", "false"),
		ins(6, 2, "NULL", "/elsewhere/ducklake-0193-e.parquet", "false"), // outside
		ins(7, 2, "3", "ducklake-0193-gone.parquet", "true"),             // ended before snapshot 3
		ins(8, 3, "NULL", "ducklake-0193-a.parquet", "true"),             // the same file again
		ins(9, 2, "NULL", ".hidden/ducklake-0193-f.parquet", "NULL"),     // NULL: relative
		ins(11, 1, "NULL", "ducklake-0193-merged.parquet", "true"),       // a merge's file: old begin_snapshot, new id
		`INSERT INTO ducklake_delete_file (delete_file_id, table_id, begin_snapshot, data_file_id, path, path_is_relative, format, delete_count, file_size_bytes)
			VALUES (10, 1, 3, 2, 'ducklake-0193-g-delete.parquet', true, 'parquet', 1, 1)`,
	)
	c, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const root = "/repo/data/"
	folder := func(dir string) (FolderKey, error) {
		if !strings.HasPrefix(dir, root) {
			return FolderKey{}, nil
		}
		return FolderKey{Prefix: "data/" + strings.TrimPrefix(dir, root), Nested: true}, nil
	}
	var placed []string
	place := func(p string) (string, error) {
		placed = append(placed, p)
		if c := path.Clean(p); strings.HasPrefix(c, root) {
			return "data/" + strings.TrimPrefix(c, root), nil
		}
		return "", nil
	}
	keys, err := c.AddedKeys(ctx, 2, []int64{3}, folder, place)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	want := []string{
		"data/abs/ducklake-0193-d.parquet",
		"data/main/other/ducklake-0193-c.parquet",
		"data/main/test/.hidden/ducklake-0193-f.parquet",
		"data/main/test/ducklake-0193-a.parquet",
		"data/main/test/ducklake-0193-g-delete.parquet",
		"data/main/test/ducklake-0193-merged.parquet",
		"data/main/test/k=1/ducklake-0193-b.parquet",
	}
	got, err := keys.Keys(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Keys = %q\nwant %q", got, want)
	}
	slices.Sort(placed)
	wantPlaced := []string{"/elsewhere/ducklake-0193-e.parquet", "/repo/data/abs/ducklake-0193-d.parquet",
		"/repo/data/main/test/../other/ducklake-0193-c.parquet", "/repo/data/main/test/.hidden/ducklake-0193-f.parquet"}
	if !slices.Equal(placed, wantPlaced) {
		t.Errorf("placed one by one: %q\nwant %q", placed, wantPlaced)
	}
	groups, err := keys.Groups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var prefixes []string
	var total int64
	for _, g := range groups {
		prefixes = append(prefixes, g.Prefix)
		total += g.Count
		if !slices.ContainsFunc(want, func(k string) bool { return strings.HasPrefix(k, g.Prefix) }) {
			t.Errorf("group prefix %q covers no key", g.Prefix)
		}
	}
	for _, k := range want {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			t.Errorf("no group covers %s (groups %q)", k, prefixes)
		}
	}
	if total != keys.Count() || keys.Count() != 8 { // a is added twice
		t.Errorf("groups count %d, Count %d, want 8", total, keys.Count())
	}
	// The store holds all but one (and more besides); it lists them twice.
	shown, n, err := keys.Missing(ctx, func(emit func([]byte) error) error {
		for _, k := range append(slices.Clone(want), want...) {
			if k != "data/main/test/k=1/ducklake-0193-b.parquet" {
				if err := emit([]byte(k)); err != nil {
					return err
				}
			}
		}
		return emit([]byte("data/main/test/unrelated.parquet"))
	}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || !slices.Equal(shown, []string{"data/main/test/k=1/ducklake-0193-b.parquet"}) {
		t.Errorf("Missing = %q, %d", shown, n)
	}

	// Straight to Missing (no Keys first): the keys still pending are
	// computed while the listing loads, on the catalog's connection.
	keys.Close()
	again, err := c.AddedKeys(ctx, 2, []int64{3}, folder, place)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	shown, n, err = again.Missing(ctx, func(emit func([]byte) error) error {
		for _, k := range want[:len(want)-1] { // not k=1/…-b
			if err := emit([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	}, 5)
	if err != nil || n != 1 || !slices.Equal(shown, []string{"data/main/test/k=1/ducklake-0193-b.parquet"}) {
		t.Errorf("Missing without Keys = %q, %d, %v", shown, n, err)
	}
	// A listing that fails fails Missing, and the catalog stays usable.
	boom := errors.New("listing failed")
	if _, _, err := again.Missing(ctx, func(emit func([]byte) error) error { return boom }, 5); !errors.Is(err, boom) {
		t.Errorf("Missing with a failing listing = %v, want %v", err, boom)
	}
	if got, err := again.Keys(ctx, 100); err != nil || !slices.Equal(got, want) {
		t.Errorf("Keys after a failed Missing = %q, %v", got, err)
	}
}

// TestAddedKeysNoFiles: a catalog with no new files has no keys.
func TestAddedKeysNoFiles(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, gunzipCatalog(t, "dltest-v04.ducklake", t.TempDir(), "c.ducklake"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keys, err := c.AddedKeys(ctx, 0, []int64{1}, func(string) (FolderKey, error) { return FolderKey{Prefix: "data/"}, nil }, func(string) (string, error) { return "", nil })
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	shown, n, err := keys.Missing(ctx, func(func([]byte) error) error { return nil }, 5)
	if keys.Count() != 0 || n != 0 || len(shown) != 0 || err != nil {
		t.Errorf("Count %d, Missing %q %d %v", keys.Count(), shown, n, err)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
