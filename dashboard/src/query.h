/* Prepared-statement helpers: every SQL string here is a constant and every value is
 * bound (no value is ever formatted into SQL). Rows come back as JSON objects keyed by
 * column name, which is also what the API returns and what the HTML renders. */
#ifndef QGMM_DASH_QUERY_H
#define QGMM_DASH_QUERY_H
#include <sqlite3.h>
#include <stdint.h>

#include "dom.h"

/* binds: one char per parameter: 'i' int64_t, 'd' double, 't' const char* (NULL binds
 * NULL). Returns an array of row objects, or NULL on an SQL error (message in *err,
 * allocated in the arena). */
jval *q_rows(arena *a, sqlite3 *db, const char **err, const char *sql, const char *binds, ...);
/* First row or NULL (no row, or error: then *err is set). */
jval *q_row(arena *a, sqlite3 *db, const char **err, const char *sql, const char *binds, ...);
/* The current row of st as an object keyed by column name (what q_rows returns per row). */
jval *q_row_object(arena *a, sqlite3_stmt *st);
/* Streams the rows of sql to fn (return non-zero to stop early), so a view can aggregate
 * every row and keep only the ones it shows. Returns 0, or -1 with *err set. */
typedef int (*q_row_fn)(sqlite3_stmt *st, void *ud);
int q_each(arena *a, sqlite3 *db, const char **err, const char *sql, q_row_fn fn, void *ud,
           const char *binds, ...);
/* Single integer (first column of the first row); fallback on no row / error. */
int64_t q_int(sqlite3 *db, int64_t fallback, const char *sql, const char *binds, ...);

#endif
