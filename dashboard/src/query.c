#include "query.h"

#include <stdarg.h>
#include <string.h>

static int bind_all(sqlite3_stmt *st, const char *binds, va_list ap) {
  for (int i = 0; binds && binds[i]; i++) {
    int rc;
    switch (binds[i]) {
      case 'i': rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t)); break;
      case 'd': rc = sqlite3_bind_double(st, i + 1, va_arg(ap, double)); break;
      case 't': {
        const char *s = va_arg(ap, const char *);
        rc = s ? sqlite3_bind_text(st, i + 1, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i + 1);
        break;
      }
      default: return SQLITE_MISUSE;
    }
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

/* Column names copied once per statement: rows outlive it. */
static const char **column_names(arena *a, sqlite3_stmt *st) {
  int ncol = sqlite3_column_count(st);
  const char **names = arena_alloc(a, sizeof(char *) * (size_t)(ncol ? ncol : 1));
  for (int c = 0; names && c < ncol; c++) names[c] = arena_strdup(a, sqlite3_column_name(st, c));
  return names;
}

static jval *row_object(arena *a, sqlite3_stmt *st, const char **names) {
  int ncol = sqlite3_column_count(st);
  jval *o = jobj(a);
  for (int c = 0; c < ncol && names; c++) {
    jval *v;
    switch (sqlite3_column_type(st, c)) {
      case SQLITE_INTEGER: v = jnum(a, (double)sqlite3_column_int64(st, c)); break;
      case SQLITE_FLOAT: v = jnum(a, sqlite3_column_double(st, c)); break;
      case SQLITE_TEXT: v = jstr(a, (const char *)sqlite3_column_text(st, c)); break;
      default: v = jnull(a);
    }
    jset(a, o, names[c], v);
  }
  return o;
}

jval *q_row_object(arena *a, sqlite3_stmt *st) { return row_object(a, st, column_names(a, st)); }

int q_each(arena *a, sqlite3 *db, const char **err, const char *sql, q_row_fn fn, void *ud,
           const char *binds, ...) {
  sqlite3_stmt *st = NULL;
  va_list ap;
  va_start(ap, binds);
  *err = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) rc = bind_all(st, binds, ap);
  va_end(ap);
  if (rc != SQLITE_OK) {
    *err = arena_strdup(a, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return -1;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    if (fn(st, ud)) break;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) *err = arena_strdup(a, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  if (!*err && a->oom) *err = "response too large";
  return *err ? -1 : 0;
}

static jval *run(arena *a, sqlite3 *db, const char **err, int first_only, const char *sql,
                 const char *binds, va_list ap) {
  sqlite3_stmt *st = NULL;
  if (err) *err = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
      bind_all(st, binds, ap) != SQLITE_OK) {
    if (err) *err = arena_strdup(a, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return NULL;
  }
  const char **names = column_names(a, st);
  jval *arr = jarr(a);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    jpush(a, arr, row_object(a, st, names));
    if (first_only) break;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    if (err) *err = arena_strdup(a, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return NULL;
  }
  sqlite3_finalize(st);
  if (a->oom) {
    if (err) *err = "response too large";
    return NULL;
  }
  return arr;
}

jval *q_rows(arena *a, sqlite3 *db, const char **err, const char *sql, const char *binds, ...) {
  va_list ap;
  va_start(ap, binds);
  jval *v = run(a, db, err, 0, sql, binds, ap);
  va_end(ap);
  return v;
}

jval *q_row(arena *a, sqlite3 *db, const char **err, const char *sql, const char *binds, ...) {
  va_list ap;
  va_start(ap, binds);
  jval *v = run(a, db, err, 1, sql, binds, ap);
  va_end(ap);
  return v ? json_at(v, 0) : NULL;
}

int64_t q_int(sqlite3 *db, int64_t fallback, const char *sql, const char *binds, ...) {
  sqlite3_stmt *st = NULL;
  va_list ap;
  va_start(ap, binds);
  int64_t v = fallback;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      bind_all(st, binds, ap) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_type(st, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(st, 0);
  va_end(ap);
  sqlite3_finalize(st);
  return v;
}
