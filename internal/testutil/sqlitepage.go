package testutil

import (
	"database/sql"
	"os"
	"testing"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver
)

// DamageSQLitePage changes, in place, the root page of the table or index
// named object in the SQLite database at path: edit gets the page's bytes
// (page_size of them, the b-tree page header first; object must not have
// its root on page 1, which starts with the file header) and changes them.
// It is how tests make damage that only some reads meet (a b-tree page
// type that does not exist, a cell count one short). It fails t on any
// error.
func DamageSQLitePage(t testing.TB, path, object string, edit func(page []byte)) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	if err := db.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = ?", object).Scan(&root); err != nil {
		t.Fatalf("%s: the root page of %s: %v", path, object, err)
	}
	if err := db.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if root < 2 {
		t.Fatalf("%s: %s has its root on page %d", path, object, root)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(b[(root-1)*pageSize : root*pageSize])
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
