/* db.c — see db.h. */
#include "db.h"

#include <stdio.h>

#include "store.h"

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

store_state db_open_ro(const char *path, sqlite3 **db, int *uv, char *msg, size_t msgn) {
  int v = 0;
  store_state s = store_open_ro(path, store_latest_version(), db, &v, msg, msgn);
  if (s == STORE_TOO_OLD) {
    /* qgmm-dash upgrades a writable store when it starts (db_upgrade); one it cannot
     * write is read by no view rather than misread under the current schema. */
    sqlite3_close(*db);
    *db = NULL;
  }
  if (s == STORE_OK) {
    sqlite3_busy_timeout(*db, 5000);
    if (uv) *uv = v;
  } else if (s == STORE_MISSING) {
    snprintf(msg, msgn,
             "No results database at %s yet. Create one with `qgmm-bench run --db %s`, or "
             "upload a run to POST /api/v1/runs.",
             path, path);
  } else if (s == STORE_EMPTY) {
    snprintf(msg, msgn,
             "%s holds no qgmm results yet (schema version 0). Run `qgmm-bench run --db %s` "
             "or upload a run.",
             path, path);
  }
  return s;
}

int db_upgrade(const char *path, char *msg, size_t msgn) {
  sqlite3 *db = NULL;
  int v = 0;
  store_state s = store_open_ro(path, store_latest_version(), &db, &v, msg, msgn);
  sqlite3_close(db);
  if (s != STORE_TOO_OLD || !store_writable(path)) return 0;
  if (store_open_upgrade(path, &db, msg, msgn) != STORE_OK) return -1;
  sqlite3_close(db);
  snprintf(msg, msgn, "upgraded %s from schema version %d to %d", path, v, store_latest_version());
  return 1;
}
