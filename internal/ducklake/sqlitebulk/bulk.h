// Bulk loops between SQLite and CSV text, for package sqlitebulk.
#ifndef FDL_SQLITEBULK_H
#define FDL_SQLITEBULK_H

#include <stdint.h>

// The SQLite library itself is the one github.com/mattn/go-sqlite3 links
// into the program (its amalgamation, or the system library with its
// libsqlite3 tag); these are the functions of its C API used here
// (sqlite.org/c3ref).
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

// Column kinds.
enum { FDL_TEXT = 0, FDL_INTEGER = 1 };

// Result of a loop.
typedef struct {
	int64_t rows;    // rows inserted or written
	int rc;          // 0, or the SQLite result code of a failure
	int odd;         // dump: a value the caller must copy row by row
	int64_t odd_row; // dump: the 1-based row of that value
	int odd_col;     // dump: its 0-based column
	int64_t max_line; // dump: the longest row written, in bytes
	char err[512];   // what failed
} fdl_result;

// fdl_load_csv inserts the rows of the CSV file at path (or, when fd is
// not negative, read from the open file descriptor fd, which it closes)
// with the INSERT statement sql (one parameter per column), binding kind
// FDL_INTEGER columns as 64-bit integers and FDL_TEXT columns as text; an
// empty unquoted field is NULL. *cancel set non-zero stops it.
void fdl_load_csv(sqlite3 *db, const char *sql, const char *path, int fd, int ncols, const unsigned char *kinds, volatile int *cancel, fdl_result *res);

// fdl_dump_csv runs the query sql and writes its rows as CSV to path:
// NULL as an empty field, integers as digits, text quoted. A value a
// column of its kind cannot carry exactly this way (text or a fraction in
// an FDL_INTEGER column, a real number in an FDL_TEXT column, a blob) sets
// res->odd and stops.
void fdl_dump_csv(sqlite3 *db, const char *sql, const char *path, int ncols, const unsigned char *kinds, volatile int *cancel, fdl_result *res);

// fdl_register_fnv32 registers the SQL function fdl_fnv32(x) on db: the
// 32-bit FNV-1a hash of x's text (its UTF-8 bytes), as an integer from 0
// to 2^32-1; NULL for NULL. It returns SQLite's result code.
int fdl_register_fnv32(sqlite3 *db);

// fdl_fnv32 is that hash of n bytes at p.
uint32_t fdl_fnv32(const unsigned char *p, int n);

#endif
