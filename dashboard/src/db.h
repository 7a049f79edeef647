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
  DB_ERROR        /* could not open / not a database */
} db_state;

/* Read-only open. On anything but DB_OK *db is NULL and msg holds a sentence for people. */
db_state db_open_ro(const char *path, sqlite3 **db, int *user_version, char *msg, size_t msgn);
/* Read-write open with WAL and a busy timeout; creates the file and applies the embedded
 * ci/schema.sql migrations when create_schema is set and the store is new or behind. */
db_state db_open_rw(const char *path, int create_schema, sqlite3 **db, char *msg, size_t msgn);
/* Newest migration number in the embedded ci/schema.sql. */
int db_schema_latest(void);
/* The dashboard's own table (API tokens); created on demand by read-write opens. */
int db_ensure_dash_tables(sqlite3 *db, char *msg, size_t msgn);
/* True when `table` exists (views use it to degrade gracefully on old stores). */
int db_has_table(sqlite3 *db, const char *table);

#endif
