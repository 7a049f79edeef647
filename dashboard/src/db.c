#include "db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "assets.h"
#include "store_ro.h"

static int user_version(sqlite3 *db) {
  sqlite3_stmt *st;
  int v = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
  }
  return v;
}

int db_has_table(sqlite3 *db, const char *table) {
  sqlite3_stmt *st;
  int found = 0;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE type='table' AND name=?1", -1,
                         &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
  }
  return found;
}

/* Walks the embedded schema: calls fn(n, text, len) for each "-- @migration N" section. */
typedef int (*section_fn)(int n, const char *sql, size_t len, void *ud);
static int each_migration(section_fn fn, void *ud) {
  const dash_asset *s = dash_asset_find("schema.sql");
  if (!s) return -1;
  const char *text = (const char *)s->data, *end = text + s->size;
  const char *mark = "-- @migration ";
  const char *p = text;
  int latest = 0;
  while (p < end) {
    const char *m = strstr(p, mark);
    if (!m || m >= end) break;
    int n = atoi(m + strlen(mark));
    const char *body = m + strlen(mark);
    const char *next = strstr(body, mark);
    if (!next || next > end) next = end;
    if (n > latest) latest = n;
    if (fn && fn(n, m, (size_t)(next - m), ud)) return -1;
    p = next;
  }
  return latest;
}

int db_schema_latest(void) { return each_migration(NULL, NULL); }

typedef struct {
  sqlite3 *db;
  int from;
  char *msg;
  size_t msgn;
} migrate_ctx;

static int apply_one(int n, const char *sql, size_t len, void *ud) {
  migrate_ctx *c = ud;
  if (n <= c->from) return 0;
  char *text = strndup(sql, len);
  if (!text) return 1;
  char *err = NULL;
  char pragma[64];
  snprintf(pragma, sizeof pragma, "PRAGMA user_version=%d", n);
  int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, &err);
  if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, text, NULL, NULL, &err);
  if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, pragma, NULL, NULL, &err);
  if (rc == SQLITE_OK) rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, &err);
  free(text);
  if (rc != SQLITE_OK) {
    snprintf(c->msg, c->msgn, "applying schema migration %d failed: %s", n,
             err ? err : sqlite3_errmsg(c->db));
    sqlite3_free(err);
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return 1;
  }
  return 0;
}

db_state db_open_ro(const char *path, sqlite3 **db, int *uv, char *msg, size_t msgn) {
  int v = 0;
  store_state s = store_open_ro(path, db_schema_latest(), db, &v, msg, msgn);
  if (s == STORE_TOO_OLD) {
    /* qgmm-dash upgrades a writable store when it starts (db_upgrade); one it cannot
     * write is read by no view rather than misread under the current schema. */
    sqlite3_close(*db);
    *db = NULL;
  }
  switch (s) {
    case STORE_OK:
      sqlite3_busy_timeout(*db, 5000);
      if (uv) *uv = v;
      return DB_OK;
    case STORE_MISSING:
      snprintf(msg, msgn,
               "No results database at %s yet. Create one with `qgmm-bench run --db %s`, or "
               "upload a run to POST /api/v1/runs.",
               path, path);
      return DB_MISSING;
    case STORE_EMPTY:
      snprintf(msg, msgn,
               "%s holds no qgmm results yet (schema version 0). Run `qgmm-bench run --db %s` "
               "or upload a run.",
               path, path);
      return DB_EMPTY;
    case STORE_TOO_NEW: return DB_TOO_NEW;
    case STORE_TOO_OLD: return DB_TOO_OLD;
    case STORE_FOREIGN: return DB_FOREIGN;
    default: return DB_ERROR;
  }
}

int db_upgrade(const char *path, char *msg, size_t msgn) {
  sqlite3 *db = NULL;
  int v = 0;
  store_state s = store_open_ro(path, db_schema_latest(), &db, &v, msg, msgn);
  sqlite3_close(db);
  if (s != STORE_TOO_OLD || !store_writable(path)) return 0;
  if (db_open_rw(path, 0, &db, msg, msgn) != DB_OK) return -1;
  sqlite3_close(db);
  snprintf(msg, msgn, "upgraded %s from schema version %d to %d", path, v, db_schema_latest());
  return 1;
}

db_state db_open_rw(const char *path, int create_schema, sqlite3 **db, char *msg, size_t msgn) {
  *db = NULL;
  struct stat sb;
  if (!create_schema && stat(path, &sb) != 0) {
    snprintf(msg, msgn, "No results database at %s", path);
    return DB_MISSING;
  }
  sqlite3 *d = NULL;
  int flags = SQLITE_OPEN_READWRITE | (create_schema ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path, &d, flags, NULL) != SQLITE_OK) {
    snprintf(msg, msgn, "Cannot open %s for writing: %s", path,
             d ? sqlite3_errmsg(d) : "out of memory");
    sqlite3_close(d);
    return DB_ERROR;
  }
  sqlite3_busy_timeout(d, 10000);
  /* The schema is installed into an empty file only, never into one that holds
   * something else. */
  store_state id = store_identify(d, path, db_schema_latest(), NULL, msg, msgn);
  if (id == STORE_FOREIGN || id == STORE_ERROR) {
    sqlite3_close(d);
    return id == STORE_FOREIGN ? DB_FOREIGN : DB_ERROR;
  }
  sqlite3_exec(d, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
  sqlite3_exec(d, "PRAGMA foreign_keys=ON", NULL, NULL, NULL);
  int v = user_version(d);
  if (v < 0) {
    snprintf(msg, msgn, "%s is not a SQLite database: %s", path, sqlite3_errmsg(d));
    sqlite3_close(d);
    return DB_ERROR;
  }
  int latest = db_schema_latest();
  if (latest > 0 && v > latest) {
    snprintf(msg, msgn, "%s has schema version %d, newer than this qgmm-dash knows (%d)", path,
             v, latest);
    sqlite3_close(d);
    return DB_TOO_NEW;
  }
  if (v < latest) {
    /* An existing store is upgraded in place (the migrations are the runner's, and the
     * runner does the same at open); an empty file only gets a schema on request. */
    if (v == 0 && !create_schema) {
      snprintf(msg, msgn, "%s holds no qgmm schema yet (schema version 0)", path);
      sqlite3_close(d);
      return DB_EMPTY;
    }
    migrate_ctx c = {d, v, msg, msgn};
    if (each_migration(apply_one, &c) < 0) {
      sqlite3_close(d);
      return DB_ERROR;
    }
  }
  *db = d;
  return DB_OK;
}
