// Package sqlitebulk moves the rows of a SQLite table to and from a CSV
// file in C loops, for the conversions between a DuckDB and a SQLite
// DuckLake catalog: handing each value across cgo through database/sql
// cost about a microsecond a value (seconds for a catalog of millions of
// statistics rows), where SQLite itself needs a few hundred nanoseconds a
// row. DuckDB writes and reads the CSV side with its own parallel COPY and
// read_csv.
//
// The loops run on a connection opened by github.com/mattn/go-sqlite3
// (through database/sql's Conn.Raw), inside whatever transaction it holds,
// with the SQLite library that package links. The CSV dialect is fixed:
// comma-separated, "\n" line ends, fields in double quotes with quotes
// doubled, an empty unquoted field is NULL, no header.
package sqlitebulk

/*
#include <stdlib.h>
#include "bulk.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"unsafe"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Kind is how a column's values are carried.
type Kind uint8

// The column kinds.
const (
	Text    Kind = C.FDL_TEXT    // text (quoted in the CSV)
	Integer Kind = C.FDL_INTEGER // a 64-bit integer (digits)
)

// ErrOdd is wrapped by Dump's error when a value cannot be carried
// exactly as its column's kind (text or a fraction in an Integer column,
// a real number in a Text column, a blob): the caller copies that table
// another way. Nothing in the file is then meaningful.
var ErrOdd = errors.New("a value the bulk copy does not carry")

// Error is a failure of SQLite (Code, as go-sqlite3 gives it, so callers
// can tell SQLITE_BUSY) or of the loop (Code 0).
type Error struct {
	Code sqlite3.ErrNo
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, sqlite3.ErrBusy) (or any ErrNo) work.
func (e *Error) Is(target error) bool {
	n, ok := target.(sqlite3.ErrNo)
	return ok && e.Code != 0 && n == e.Code
}

// Load inserts the rows of the CSV file at path with insert (an INSERT
// statement with one parameter per column) on the go-sqlite3 connection
// driverConn, binding each field as kinds says. It returns the rows
// inserted. Errors: *Error (SQLite's, or a malformed file), ctx's error.
func Load(ctx context.Context, driverConn any, insert, path string, kinds []Kind) (int64, error) {
	return loadCSV(ctx, driverConn, insert, path, -1, kinds)
}

// LoadFrom is Load reading from f (a pipe, say) instead of a file it
// opens: from a duplicate of f's descriptor, closed at the end; f stays
// open. Errors: those of Load, and of the duplication.
func LoadFrom(ctx context.Context, driverConn any, insert string, f *os.File, kinds []Kind) (int64, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	fd := -1
	var derr error
	if err := sc.Control(func(raw uintptr) { fd, derr = dupCloexec(int(raw)) }); err != nil {
		return 0, err
	}
	if derr != nil {
		return 0, fmt.Errorf("duplicate %s: %w", f.Name(), derr)
	}
	return loadCSV(ctx, driverConn, insert, f.Name(), fd, kinds)
}

func loadCSV(ctx context.Context, driverConn any, insert, path string, fd int, kinds []Kind) (int64, error) {
	var res C.fdl_result
	err := run(ctx, driverConn, insert, path, kinds, &res, func(db unsafe.Pointer, sql, p *C.char, k *C.uchar, cancel *C.int) {
		C.fdl_load_csv((*C.sqlite3)(db), sql, p, C.int(fd), C.int(len(kinds)), k, cancel, &res)
		fd = -1 // closed by the loop
	})
	if fd >= 0 {
		closeFD(fd) // run stopped before the loop
	}
	return int64(res.rows), err
}

// Dumped says what Dump wrote.
type Dumped struct {
	Rows    int64 // rows written
	MaxLine int64 // the longest row, in bytes (line end included)
}

// Dump runs query on the go-sqlite3 connection driverConn and writes its
// rows to the CSV file at path (made or truncated), each column as kinds
// says. Errors: ErrOdd (wrapped, naming the row and column), *Error,
// ctx's error.
func Dump(ctx context.Context, driverConn any, query, path string, kinds []Kind) (Dumped, error) {
	var res C.fdl_result
	err := run(ctx, driverConn, query, path, kinds, &res, func(db unsafe.Pointer, sql, p *C.char, k *C.uchar, cancel *C.int) {
		C.fdl_dump_csv((*C.sqlite3)(db), sql, p, C.int(len(kinds)), k, cancel, &res)
	})
	if err == nil && res.odd != 0 {
		err = fmt.Errorf("row %d, column %d: %w", int64(res.odd_row), int(res.odd_col)+1, ErrOdd)
	}
	return Dumped{Rows: int64(res.rows), MaxLine: int64(res.max_line)}, err
}

// run calls loop with the connection's sqlite3 handle and C copies of the
// arguments, stopping it (through a flag it polls) when ctx is done.
func run(ctx context.Context, driverConn any, sql, path string, kinds []Kind, res *C.fdl_result,
	loop func(db unsafe.Pointer, sql, path *C.char, kinds *C.uchar, cancel *C.int)) error {
	db, err := handle(driverConn)
	if err != nil {
		return err
	}
	if len(kinds) == 0 {
		return errors.New("sqlitebulk: no columns")
	}
	csql, cpath := C.CString(sql), C.CString(path)
	defer C.free(unsafe.Pointer(csql))
	defer C.free(unsafe.Pointer(cpath))
	ck := (*C.uchar)(C.malloc(C.size_t(len(kinds))))
	defer C.free(unsafe.Pointer(ck))
	copy(unsafe.Slice((*Kind)(unsafe.Pointer(ck)), len(kinds)), kinds)
	cancel := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(cancel))
	*cancel = 0
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			*(*int32)(unsafe.Pointer(cancel)) = 1
		case <-done:
		}
	}()
	loop(db, csql, cpath, ck, cancel)
	close(done)
	<-stopped
	if err := ctx.Err(); err != nil {
		return err
	}
	if res.rc != 0 {
		return &Error{Code: sqlite3.ErrNo(res.rc & 0xff), Msg: C.GoString(&res.err[0])}
	}
	return nil
}

// RegisterFNV32 registers on the go-sqlite3 connection driverConn the SQL
// function fdl_fnv32(x): the 32-bit FNV-1a hash of x's text (its UTF-8
// bytes) as an integer from 0 to 2^32-1, NULL for NULL; FNV32 is the same
// hash in Go. A sum of it over a column compares the column's texts
// between SQLite and another engine without reading them out.
// Errors: *Error.
func RegisterFNV32(driverConn any) error {
	db, err := handle(driverConn)
	if err != nil {
		return err
	}
	if rc := C.fdl_register_fnv32((*C.sqlite3)(db)); rc != 0 {
		return &Error{Code: sqlite3.ErrNo(rc & 0xff), Msg: "register fdl_fnv32"}
	}
	return nil
}

// FNV32 is the 32-bit FNV-1a hash of b (fdl_fnv32's).
func FNV32(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

// handle returns the sqlite3 handle of a go-sqlite3 connection. The driver
// does not export it; it is its field db (tests keep this true for the
// go-sqlite3 release go.mod names).
func handle(driverConn any) (unsafe.Pointer, error) {
	sc, ok := driverConn.(*sqlite3.SQLiteConn)
	if !ok {
		return nil, fmt.Errorf("sqlitebulk: %T is not a go-sqlite3 connection", driverConn)
	}
	f := reflect.ValueOf(sc).Elem().FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return nil, errors.New("sqlitebulk: the go-sqlite3 connection has no open sqlite3 handle (field db)")
	}
	return unsafe.Pointer(f.Pointer()), nil
}
