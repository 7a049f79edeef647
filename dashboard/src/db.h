/* Opening the results store. Views open it read-only per request (cheap, and a view can
 * never write); ingest, triage and token commands open it read-write. */
#ifndef QGMM_DASH_DB_H
#define QGMM_DASH_DB_H
#include <sqlite3.h>
#include <stddef.h>

/* Schema versions this binary understands (ci/schema.sql "-- @migration N"). */
#define DASH_SCHEMA_MIN 1      /* runs and series exist */
#define DASH_SCHEMA_TRIAGE 2   /* the regression table exists */

typedef enum {
  DB_OK = 0,
  DB_MISSING,     /* no file at the path */
  DB_EMPTY,       /* a file, but no qgmm schema in it (user_version 0) */
  DB_TOO_NEW,     /* user_version above what this binary knows */
  DB_TOO_OLD,     /* an older schema that this process could not upgrade (read-only) */
  DB_FOREIGN,     /* an SQLite file (or other file) that is not a qgmm store */
  DB_ERROR        /* could not open / read it */
} db_state;

/* Read-only open for the views (ci/store_ro.h: SQLITE_OPEN_READONLY, nothing created or
 * migrated; a read-only file or medium reads fine). On anything but DB_OK *db is NULL
 * and msg holds a sentence for people. */
db_state db_open_ro(const char *path, sqlite3 **db, int *user_version, char *msg, size_t msgn);
/* At start-up: a writable store older than this binary (written by an older qgmm-bench)
 * is upgraded in place, so every view reads the current schema. Returns 1 (upgraded, msg
 * says so), 0 (nothing to do, or not writable: views then report it), -1 on failure. */
int db_upgrade(const char *path, char *msg, size_t msgn);
/* Read-write open with WAL and a busy timeout; applies the pending ci/schema.sql
 * migrations to an existing store that is behind, and creates the file and the whole
 * schema when create_schema is set (a file without a qgmm schema is DB_EMPTY otherwise). */
db_state db_open_rw(const char *path, int create_schema, sqlite3 **db, char *msg, size_t msgn);
/* Newest migration number in the embedded ci/schema.sql. */
int db_schema_latest(void);
/* True when `table` exists (views use it to degrade gracefully on old stores). */
int db_has_table(sqlite3 *db, const char *table);

#endif
