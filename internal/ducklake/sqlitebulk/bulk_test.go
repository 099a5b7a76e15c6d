package sqlitebulk

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"
)

func openConn(t *testing.T) *sql.Conn {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "x.sqlite")+"?mode=rwc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func exec(t *testing.T, c *sql.Conn, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := c.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func dump(t *testing.T, c *sql.Conn, q, path string, kinds []Kind) (Dumped, error) {
	t.Helper()
	var d Dumped
	err := c.Raw(func(dc any) error {
		var err error
		d, err = Dump(context.Background(), dc, q, path, kinds)
		return err
	})
	return d, err
}

func load(t *testing.T, c *sql.Conn, ins, path string, kinds []Kind) (int64, error) {
	t.Helper()
	var n int64
	err := c.Raw(func(dc any) error {
		var err error
		n, err = Load(context.Background(), dc, ins, path, kinds)
		return err
	})
	return n, err
}

// rows returns every row of q with each value's SQLite type, for an exact
// comparison.
func rows(t *testing.T, c *sql.Conn, q string) []string {
	t.Helper()
	r, err := c.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cols, _ := r.Columns()
	var out []string
	for r.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%#v", vals))
	}
	return out
}

// TestRoundTrip: what Dump writes, Load reads back into the same values
// with the same SQLite types: NULL apart from the empty string, quotes,
// commas, line ends, carriage returns, NUL bytes, non-ASCII text, long
// values across the loader's buffer, and the extreme integers.
func TestRoundTrip(t *testing.T) {
	c := openConn(t)
	exec(t, c, "CREATE TABLE a (i BIGINT, s VARCHAR, j BIGINT)", "CREATE TABLE b (i BIGINT, s VARCHAR, j BIGINT)")
	long := strings.Repeat(`ab,"c"`+"\n", 2<<20) // 14 MiB: longer than the 4 MiB buffer
	vals := []struct {
		i any
		s any
		j any
	}{
		{int64(0), "", nil},
		{nil, nil, int64(-1)},
		{int64(9223372036854775807), `a "quoted", value`, int64(-9223372036854775808)},
		{int64(42), "line\nend\r\nand\x00nul", int64(7)},
		{int64(-5), "élan ünïcödé 😀", nil},
		{int64(1), long, int64(2)},
		{int64(3), `"`, int64(4)},
		{int64(5), `""`, int64(6)},
		{int64(7), ",", int64(8)},
	}
	for _, v := range vals {
		if _, err := c.ExecContext(context.Background(), "INSERT INTO a VALUES (?, ?, ?)", v.i, v.s, v.j); err != nil {
			t.Fatal(err)
		}
	}
	kinds := []Kind{Integer, Text, Integer}
	path := filepath.Join(t.TempDir(), "a.csv")
	d, err := dump(t, c, "SELECT i, s, j FROM a ORDER BY rowid", path, kinds)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rows != int64(len(vals)) || d.MaxLine < int64(len(long)) {
		t.Errorf("Dump = %+v, want %d rows and a line of at least %d bytes", d, len(vals), len(long))
	}
	n, err := load(t, c, "INSERT INTO b VALUES (?, ?, ?)", path, kinds)
	if err != nil || n != int64(len(vals)) {
		t.Fatalf("Load = %d, %v", n, err)
	}
	q := "SELECT i, typeof(i), s, typeof(s), j, typeof(j) FROM %s ORDER BY rowid"
	if a, b := rows(t, c, fmt.Sprintf(q, "a")), rows(t, c, fmt.Sprintf(q, "b")); !reflect.DeepEqual(a, b) {
		t.Errorf("round trip differs:\n%q\n%q", a, b)
	}
}

// TestDumpOdd: a value a column's kind cannot carry exactly stops Dump
// with ErrOdd naming where it is; integral reals in an integer column are
// written as integers.
func TestDumpOdd(t *testing.T) {
	c := openConn(t)
	// Columns without a declared type keep each value's storage class
	// (declared BIGINT and VARCHAR columns convert most values already).
	exec(t, c, "CREATE TABLE t (i, s)", "INSERT INTO t VALUES (2.0, 'x'), (3, 4)")
	path := filepath.Join(t.TempDir(), "t.csv")
	if d, err := dump(t, c, "SELECT i, s FROM t", path, []Kind{Integer, Text}); err != nil || d.Rows != 2 {
		t.Fatalf("integral real, integer as text: %+v %v", d, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "2,\"x\"\n3,4\n" {
		t.Errorf("file %q", b)
	}
	for _, odd := range []string{"INSERT INTO t VALUES ('12', 'x')", "INSERT INTO t VALUES (1.5, 'x')", "INSERT INTO t VALUES (1, 2.5)", "INSERT INTO t VALUES (1, x'00')", "INSERT INTO t VALUES (x'01', 'x')"} {
		exec(t, c, "DELETE FROM t", "INSERT INTO t VALUES (1, 'fine')", odd)
		_, err := dump(t, c, "SELECT i, s FROM t ORDER BY rowid", path, []Kind{Integer, Text})
		if !errors.Is(err, ErrOdd) || !strings.Contains(err.Error(), "row 2") {
			t.Errorf("%s: %v, want ErrOdd at row 2", odd, err)
		}
	}
}

// TestLoadRefusals: a malformed file is refused with a clear error and
// the rows before it stay in the caller's transaction to roll back.
func TestLoadRefusals(t *testing.T) {
	c := openConn(t)
	exec(t, c, "CREATE TABLE t (i BIGINT, s VARCHAR)")
	dir := t.TempDir()
	for body, want := range map[string]string{
		"1,\"a\"\n2\n":                 "fewer fields",
		"1,\"a\",3\n":                  "more fields",
		"x,\"a\"\n":                    "not an integer",
		"99999999999999999999,\"a\"\n": "not an integer",
		"1,\"a\"":                      "no line end",
		"1,\"a\"x\n":                   "fields",
	} {
		p := filepath.Join(dir, "f.csv")
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := load(t, c, "INSERT INTO t VALUES (?, ?)", p, []Kind{Integer, Text}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	// SQLite's own error carries its code (a constraint here).
	exec(t, c, "CREATE TABLE u (i BIGINT PRIMARY KEY)")
	p := filepath.Join(dir, "u.csv")
	os.WriteFile(p, []byte("1\n1\n"), 0o644)
	_, err := load(t, c, "INSERT INTO u VALUES (?)", p, []Kind{Integer})
	var e *Error
	if !errors.As(err, &e) || e.Code != sqlite3.ErrConstraint {
		t.Errorf("duplicate key: %v", err)
	}
}

// TestCancelled: a cancelled context stops a loop.
func TestCancelled(t *testing.T) {
	c := openConn(t)
	exec(t, c, "CREATE TABLE t (i BIGINT)", "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) INSERT INTO t SELECT i FROM n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.Raw(func(dc any) error {
		_, err := Dump(ctx, dc, "SELECT i FROM t", filepath.Join(t.TempDir(), "t.csv"), []Kind{Integer})
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Dump: %v", err)
	}
}

// TestHandle: the go-sqlite3 release go.mod names still keeps its handle
// in the field the package reads.
func TestHandle(t *testing.T) {
	c := openConn(t)
	err := c.Raw(func(dc any) error {
		p, err := handle(dc)
		if err == nil && p == nil {
			err = errors.New("nil handle")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handle(struct{}{}); err == nil {
		t.Error("handle of a non-go-sqlite3 connection")
	}
}

// TestFNV32: fdl_fnv32 in SQLite gives FNV32's values (the published
// FNV-1a test vectors: "" 0x811c9dc5, "a" 0xe40c292c, "foobar" 0xbf9cf968),
// hashes a text's UTF-8 bytes, an integer's digits, and NULL as NULL.
func TestFNV32(t *testing.T) {
	t.Parallel()
	c := openConn(t)
	if err := c.Raw(func(dc any) error { return RegisterFNV32(dc) }); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]uint32{"": 0x811c9dc5, "a": 0xe40c292c, "foobar": 0xbf9cf968} {
		if got := FNV32([]byte(in)); got != want {
			t.Errorf("FNV32(%q) = %#x, want %#x", in, got, want)
		}
	}
	var a, b, n sql.NullInt64
	if err := c.QueryRowContext(context.Background(), "SELECT fdl_fnv32('foobar'), fdl_fnv32(CAST(12 AS INTEGER)), fdl_fnv32(NULL)").Scan(&a, &b, &n); err != nil {
		t.Fatal(err)
	}
	if a.Int64 != 0xbf9cf968 || b.Int64 != int64(FNV32([]byte("12"))) || n.Valid {
		t.Errorf("fdl_fnv32: %v %v %v", a, b, n)
	}
	var u sql.NullInt64
	if err := c.QueryRowContext(context.Background(), "SELECT fdl_fnv32('été ✓')").Scan(&u); err != nil || u.Int64 != int64(FNV32([]byte("été ✓"))) {
		t.Errorf("fdl_fnv32 of UTF-8 text: %v, %v", u, err)
	}
}
