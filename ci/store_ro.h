/*
 * store_ro.h — opening a results store for reading, and telling a qgmm store from any
 * other file. The read-only commands of qgmm-bench (runs, compare, history, export, upload,
 * gate/changepoints --no-record) and every view of qgmm-dash open the store this way: the
 * connection is SQLITE_OPEN_READONLY, nothing is created, installed or migrated, and a
 * store on read-only media or owned by another user reads as well as a writable one.
 *
 * Part of the store library qgmm_store (ci/shared.cmake), which qgmm-dash links too.
 */
#ifndef QGMM_CI_STORE_RO_H
#define QGMM_CI_STORE_RO_H

#include <sqlite3.h>
#include <stddef.h>

typedef enum store_state {
    STORE_OK = 0,
    STORE_MISSING,   /* no file at the path */
    STORE_EMPTY,     /* an SQLite file without any table (user_version 0): no store yet */
    STORE_FOREIGN,   /* not a qgmm store: not SQLite, or tables of something else */
    STORE_TOO_NEW,   /* user_version above what this binary knows */
    STORE_TOO_OLD,   /* a qgmm store of an older schema: a writer must upgrade it first */
    STORE_ERROR      /* cannot open or read it */
} store_state;

/* Checks that db holds a qgmm store of schema `latest`: user_version in 1..latest and the
 * tables run, series, result, machine present. Returns STORE_OK (with *version), or the
 * state with a sentence in err naming path. */
store_state store_identify(sqlite3 *db, const char *path, int latest, int *version, char *err, size_t cap);

/* Opens path read-only and identifies it (store_identify). A store in WAL mode whose
 * -shm file cannot be created (read-only directory or medium) is read through SQLite's
 * immutable mode when it has no pending write-ahead log. STORE_TOO_OLD still returns the
 * open connection in *out (callers that can read an older schema may); on any other
 * state *out is NULL. */
store_state store_open_ro(const char *path, int latest, sqlite3 **out, int *version, char *err, size_t cap);

/* Whether the store file (and its directory, for the WAL files) can be written by this
 * process: a writer that cannot write says so instead of failing inside SQLite. */
int store_writable(const char *path);

#endif
