#include "bulk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The SQLite C API (sqlite.org/c3ref), as linked by go-sqlite3.
#define SQLITE_OK 0
#define SQLITE_ROW 100
#define SQLITE_DONE 101
#define SQLITE_INTEGER 1
#define SQLITE_FLOAT 2
#define SQLITE_TEXT 3
#define SQLITE_BLOB 4
#define SQLITE_NULL 5
#define SQLITE_STATIC ((void (*)(void *))0)
extern int sqlite3_prepare_v2(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
extern int sqlite3_finalize(sqlite3_stmt *);
extern int sqlite3_step(sqlite3_stmt *);
extern int sqlite3_reset(sqlite3_stmt *);
extern int sqlite3_bind_int64(sqlite3_stmt *, int, long long);
extern int sqlite3_bind_text(sqlite3_stmt *, int, const char *, int, void (*)(void *));
extern int sqlite3_bind_null(sqlite3_stmt *, int);
extern int sqlite3_column_type(sqlite3_stmt *, int);
extern long long sqlite3_column_int64(sqlite3_stmt *, int);
extern double sqlite3_column_double(sqlite3_stmt *, int);
extern const unsigned char *sqlite3_column_text(sqlite3_stmt *, int);
extern int sqlite3_column_bytes(sqlite3_stmt *, int);
extern int sqlite3_column_count(sqlite3_stmt *);
extern const char *sqlite3_errmsg(sqlite3 *);
extern int sqlite3_extended_errcode(sqlite3 *);

#define BUF (4 << 20)

static void fail_sqlite(fdl_result *res, sqlite3 *db, int rc, const char *doing) {
	res->rc = rc ? rc : 1;
	snprintf(res->err, sizeof res->err, "%s: %s", doing, sqlite3_errmsg(db));
}

static void fail(fdl_result *res, const char *what) {
	res->rc = 1;
	snprintf(res->err, sizeof res->err, "%s", what);
}

// parse_int reads a whole field as a base-10 int64 (an optional '-', then
// digits, no overflow).
static int parse_int(const char *s, size_t n, long long *out) {
	size_t i = 0;
	int neg = 0;
	if (n > 0 && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == n || n - i > 19) return -1;
	unsigned long long u = 0;
	for (; i < n; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9) return -1;
		u = u * 10 + d;
	}
	if (neg ? u > 9223372036854775808ULL : u > 9223372036854775807ULL) return -1;
	*out = neg ? (long long)(0ULL - u) : (long long)u;
	return 0;
}

// row_end returns the offset just past the line end of the row starting at
// p (n bytes available), or 0 when the row does not end within them.
static size_t row_end(const char *p, size_t n) {
	size_t i = 0;
	while (i < n) {
		if (p[i] == '"') { // a quoted field: to its closing quote
			i++;
			for (;;) {
				const char *q = memchr(p + i, '"', n - i);
				if (!q) return 0;
				i = (size_t)(q - p) + 1;
				if (i < n && p[i] == '"') {
					i++; // a doubled quote
					continue;
				}
				if (i == n) return 0;
				break;
			}
		}
		// an unquoted field (or what follows a closing quote): to the
		// next comma or line end
		while (i < n && p[i] != ',' && p[i] != '\n') i++;
		if (i == n) return 0;
		if (p[i++] == '\n') return i;
	}
	return 0;
}

// insert_row splits the complete row p[0:n] (its line end included) into
// fields, unquoting in place, binds them and inserts the row.
static int insert_row(sqlite3 *db, sqlite3_stmt *st, int ncols, const unsigned char *kinds, char *p, size_t n, fdl_result *res) {
	size_t i = 0;
	for (int col = 0; col < ncols; col++) {
		char *f = p + i;
		size_t len;
		int quoted = 0;
		if (p[i] == '"') {
			quoted = 1;
			i++;
			f = p + i;
			char *w = f;
			for (;;) {
				char *q = memchr(p + i, '"', n - i);
				size_t k = (size_t)(q - (p + i));
				if (w != p + i) memmove(w, p + i, k);
				w += k;
				i += k + 1;
				if (p[i] == '"') {
					*w++ = '"';
					i++;
					continue;
				}
				break;
			}
			len = (size_t)(w - f);
		} else {
			while (p[i] != ',' && p[i] != '\n') i++;
			len = (size_t)(p + i - f);
		}
		char sep = p[i++];
		if ((sep == '\n') != (col == ncols - 1) || (sep != ',' && sep != '\n')) {
			snprintf(res->err, sizeof res->err, "row %lld has %s fields than the table has columns", (long long)res->rows + 1, sep == '\n' ? "fewer" : "more");
			res->rc = 1;
			return -1;
		}
		int rc;
		if (len == 0 && !quoted) {
			rc = sqlite3_bind_null(st, col + 1);
		} else if (kinds[col] == FDL_INTEGER) {
			long long v;
			if (parse_int(f, len, &v) != 0) {
				snprintf(res->err, sizeof res->err, "row %lld, column %d: %.*s is not an integer", (long long)res->rows + 1, col + 1, (int)(len > 40 ? 40 : len), f);
				res->rc = 1;
				return -1;
			}
			rc = sqlite3_bind_int64(st, col + 1, v);
		} else {
			rc = sqlite3_bind_text(st, col + 1, len ? f : "", (int)len, SQLITE_STATIC);
		}
		if (rc != SQLITE_OK) {
			fail_sqlite(res, db, rc, "bind");
			return -1;
		}
	}
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE) {
		fail_sqlite(res, db, sqlite3_extended_errcode(db), "insert");
		return -1;
	}
	res->rows++;
	return 0;
}

void fdl_load_csv(sqlite3 *db, const char *sql, const char *path, int fd, int ncols, const unsigned char *kinds, volatile int *cancel, fdl_result *res) {
	memset(res, 0, sizeof *res);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		if (fd >= 0) close(fd);
		fail_sqlite(res, db, rc, "prepare");
		return;
	}
	FILE *in = fd >= 0 ? fdopen(fd, "rb") : fopen(path, "rb");
	if (!in && fd >= 0) close(fd);
	size_t cap = BUF, pos = 0, end = 0;
	char *b = malloc(cap);
	if (!in || !b) {
		fail(res, in ? "out of memory" : strerror(errno));
		goto done;
	}
	for (;;) {
		// Complete rows in b[pos:end] go to SQLite; the rest moves to the
		// front and more is read after it (the buffer grows for a row
		// longer than it).
		size_t k;
		while (pos < end && (k = row_end(b + pos, end - pos)) > 0) {
			if (insert_row(db, st, ncols, kinds, b + pos, k, res)) goto done;
			pos += k;
			if ((res->rows & 0xffff) == 0 && *cancel) {
				fail(res, "cancelled");
				goto done;
			}
		}
		memmove(b, b + pos, end - pos);
		end -= pos;
		pos = 0;
		if (end == cap) {
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				fail(res, "out of memory");
				goto done;
			}
			b = nb;
			cap *= 2;
		}
		size_t got = fread(b + end, 1, cap - end, in);
		if (got == 0) break;
		end += got;
	}
	if (ferror(in)) fail(res, strerror(errno));
	else if (end > 0) fail(res, "the last row has no line end");
done:
	if (in) fclose(in);
	free(b);
	sqlite3_finalize(st);
}

// out is a buffered writer.
typedef struct {
	FILE *f;
	char *p;
	size_t n;
	int err;
	size_t total; // bytes flushed
} out;

static void out_flush(out *o) {
	if (o->n && fwrite(o->p, 1, o->n, o->f) != o->n) o->err = errno ? errno : EIO;
	o->total += o->n;
	o->n = 0;
}

static inline void out_put(out *o, char c) {
	if (o->n == BUF) out_flush(o);
	o->p[o->n++] = c;
}

static void out_write(out *o, const char *s, size_t n) {
	while (n > 0) {
		if (o->n == BUF) out_flush(o);
		size_t k = BUF - o->n;
		if (k > n) k = n;
		memcpy(o->p + o->n, s, k);
		o->n += k;
		s += k;
		n -= k;
	}
}

static void out_int(out *o, long long v) {
	char tmp[24];
	char *e = tmp + sizeof tmp, *p = e;
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0) *--p = '-';
	out_write(o, p, (size_t)(e - p));
}

void fdl_dump_csv(sqlite3 *db, const char *sql, const char *path, int ncols, const unsigned char *kinds, volatile int *cancel, fdl_result *res) {
	memset(res, 0, sizeof *res);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		fail_sqlite(res, db, sqlite3_extended_errcode(db), "prepare");
		return;
	}
	if (sqlite3_column_count(st) != ncols) {
		fail(res, "the query has another number of columns than kinds");
		sqlite3_finalize(st);
		return;
	}
	out o = {fopen(path, "wb"), malloc(BUF), 0, 0, 0};
	if (!o.f || !o.p) {
		fail(res, o.f ? "out of memory" : strerror(errno));
		goto done;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t line_start = o.total + o.n;
		for (int i = 0; i < ncols; i++) {
			if (i) out_put(&o, ',');
			int t = sqlite3_column_type(st, i);
			if (t == SQLITE_NULL) continue;
			if (t == SQLITE_INTEGER) {
				out_int(&o, sqlite3_column_int64(st, i));
				continue;
			}
			if (t == SQLITE_FLOAT && kinds[i] == FDL_INTEGER) {
				double d = sqlite3_column_double(st, i);
				if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double)(long long)d) {
					out_int(&o, (long long)d);
					continue;
				}
			}
			if (t == SQLITE_TEXT && kinds[i] == FDL_TEXT) {
				const char *s = (const char *)sqlite3_column_text(st, i);
				int n = sqlite3_column_bytes(st, i);
				out_put(&o, '"');
				const char *q;
				while (n > 0 && (q = memchr(s, '"', (size_t)n)) != NULL) {
					out_write(&o, s, (size_t)(q - s + 1));
					out_put(&o, '"');
					n -= (int)(q - s + 1);
					s = q + 1;
				}
				out_write(&o, s, (size_t)n);
				out_put(&o, '"');
				continue;
			}
			res->odd = 1;
			res->odd_row = res->rows + 1;
			res->odd_col = i;
			goto done;
		}
		out_put(&o, '\n');
		if ((int64_t)(o.total + o.n - line_start) > res->max_line) res->max_line = (int64_t)(o.total + o.n - line_start);
		res->rows++;
		if ((res->rows & 0xffff) == 0 && *cancel) {
			fail(res, "cancelled");
			goto done;
		}
	}
	if (rc != SQLITE_DONE) fail_sqlite(res, db, sqlite3_extended_errcode(db), "read");
done:
	if (o.f) {
		out_flush(&o);
		if (fclose(o.f) != 0 && !o.err) o.err = errno ? errno : EIO;
		if (o.err && !res->rc) fail(res, strerror(o.err));
	}
	free(o.p);
	sqlite3_finalize(st);
}

// The SQL function fdl_fnv32 (bulk.h).
typedef struct sqlite3_context sqlite3_context;
typedef struct sqlite3_value sqlite3_value;
extern int sqlite3_create_function_v2(sqlite3 *, const char *, int, int, void *,
	void (*)(sqlite3_context *, int, sqlite3_value **), void (*)(sqlite3_context *, int, sqlite3_value **),
	void (*)(sqlite3_context *), void (*)(void *));
extern int sqlite3_value_type(sqlite3_value *);
extern const unsigned char *sqlite3_value_text(sqlite3_value *);
extern int sqlite3_value_bytes(sqlite3_value *);
extern void sqlite3_result_int64(sqlite3_context *, long long);
extern void sqlite3_result_null(sqlite3_context *);
#define FDL_SQLITE_UTF8 1
#define FDL_SQLITE_DETERMINISTIC 0x000000800

uint32_t fdl_fnv32(const unsigned char *p, int n) {
	uint32_t h = 2166136261u;
	for (int i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static void fnv32_sql(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
	(void)argc;
	if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
		sqlite3_result_null(ctx);
		return;
	}
	const unsigned char *p = sqlite3_value_text(argv[0]);
	int n = sqlite3_value_bytes(argv[0]);
	sqlite3_result_int64(ctx, (long long)fdl_fnv32(p, n));
}

int fdl_register_fnv32(sqlite3 *db) {
	return sqlite3_create_function_v2(db, "fdl_fnv32", 1, FDL_SQLITE_UTF8 | FDL_SQLITE_DETERMINISTIC, 0, fnv32_sql, 0, 0, 0);
}
