/* Opening the results store for the views: read-only, once per request (cheap, and a view
 * can never write). The writers (ingest, triage, token commands) open it through the store
 * library (ci/store.h), which owns the schema and its migrations. */
#ifndef QGMM_DASH_DB_H
#define QGMM_DASH_DB_H
#include <sqlite3.h>
#include <stddef.h>

#include "store_ro.h"

/* Read-only open (ci/store_ro.h: SQLITE_OPEN_READONLY, nothing created or migrated; a
 * read-only file or medium reads fine). On anything but STORE_OK *db is NULL and msg holds
 * a sentence for people; a store of an older schema is not read (qgmm-dash upgrades a
 * writable one when it starts). */
store_state db_open_ro(const char *path, sqlite3 **db, int *user_version, char *msg, size_t msgn);
/* At start-up: a writable store older than this binary (written by an older qgmm-bench)
 * is upgraded in place, so every view reads the current schema. Returns 1 (upgraded, msg
 * says so), 0 (nothing to do, or not writable: views then report it), -1 on failure. */
int db_upgrade(const char *path, char *msg, size_t msgn);
/* True when `table` exists. */
int db_has_table(sqlite3 *db, const char *table);

#endif
