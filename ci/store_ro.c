/* store_ro.c — see store_ro.h. */
#include "store_ro.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int table_count(sqlite3 *db, const char *where, int *n)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' %s", where);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

store_state store_identify(sqlite3 *db, const char *path, int latest, int *version, char *err, size_t cap)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    int any = 0, ours = 0;
    if (v < 0 || table_count(db, "", &any) ||
        table_count(db, "AND name IN ('run', 'series', 'result', 'machine')", &ours)) {
        int code = sqlite3_errcode(db);
        snprintf(err, cap, "%s: %s: %s", path,
                 code == SQLITE_NOTADB ? "not an SQLite database, so not a qgmm results store" : "cannot read it",
                 sqlite3_errmsg(db));
        return code == SQLITE_NOTADB ? STORE_FOREIGN : STORE_ERROR;
    }
    if (version) *version = v;
    if (v == 0 && any == 0) {
        snprintf(err, cap, "%s holds no qgmm results store yet (an empty SQLite file)", path);
        return STORE_EMPTY;
    }
    if (v > latest) {
        snprintf(err, cap, "%s has schema version %d, newer than this binary knows (%d): it was written by a newer "
                 "qgmm-bench; upgrade this tool (the store is left untouched)", path, v, latest);
        return STORE_TOO_NEW;
    }
    if (v == 0 || ours != 4) {
        snprintf(err, cap, "%s is an SQLite database but not a qgmm results store (user_version %d; the tables "
                 "run, series, result and machine are not all among its %d); refusing to read or change it",
                 path, v, any);
        return STORE_FOREIGN;
    }
    if (v < latest) {
        snprintf(err, cap, "%s has schema version %d, older than this binary's %d; a writer upgrades it in place "
                 "(`qgmm-bench run` or `qgmm-bench import` on it, or qgmm-dash started with write access)",
                 path, v, latest);
        return STORE_TOO_OLD;
    }
    return STORE_OK;
}

/* store_identify in one read transaction: a writer installing or migrating the schema
 * between its reads would otherwise make the store look foreign or empty. *code: the
 * primary result code of the reads. */
static store_state identify_snapshot(sqlite3 *db, const char *path, int latest, int *version, char *err, size_t cap,
                                     int *code)
{
    const int txn = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    store_state s = store_identify(db, path, latest, version, err, cap);
    *code = sqlite3_errcode(db) & 0xff;
    if (txn) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    return s;
}

/* "file:PATH?immutable=1" with PATH percent-encoded as RFC 3986 asks of a URI path. */
static char *immutable_uri(const char *path)
{
    size_t n = strlen(path);
    char *u = malloc(3 * n + 32);
    if (!u) return NULL;
    size_t k = (size_t)sprintf(u, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; ++p) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/-._~", *p))
            u[k++] = (char)*p;
        else
            k += (size_t)sprintf(u + k, "%%%02X", *p);
    }
    strcpy(u + k, "?immutable=1");
    return u;
}

static int wal_pending(const char *path)
{
    char *w = malloc(strlen(path) + 8);
    if (!w) return 1;
    sprintf(w, "%s-wal", path);
    struct stat sb;
    int pending = stat(w, &sb) == 0 && sb.st_size > 0;
    free(w);
    return pending;
}

store_state store_open_ro(const char *path, int latest, sqlite3 **out, int *version, char *err, size_t cap)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(err, cap, "%s: no such results store", path);
        return STORE_MISSING;
    }
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return STORE_ERROR;
    }
    sqlite3_busy_timeout(db, 10000);
    int v = 0;
    int code = SQLITE_OK;
    store_state s = identify_snapshot(db, path, latest, &v, err, cap, &code);
    if (s == STORE_ERROR && (code == SQLITE_READONLY || code == SQLITE_CANTOPEN)) {
        /* A WAL store whose -shm cannot be created: without a pending log the main file
         * is the whole store, and immutable mode reads it without the shared memory. */
        sqlite3_close(db);
        db = NULL;
        if (wal_pending(path)) {
            snprintf(err, cap, "%s: cannot read it: the store is read-only here and its write-ahead log %s-wal "
                     "holds changes not yet in the main file; open it once with write access", path, path);
            return STORE_ERROR;
        }
        char *uri = immutable_uri(path);
        if (!uri || sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
            snprintf(err, cap, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
            free(uri);
            sqlite3_close(db);
            return STORE_ERROR;
        }
        free(uri);
        s = identify_snapshot(db, path, latest, &v, err, cap, &code);
    }
    if (version) *version = v;
    if (s != STORE_OK && s != STORE_TOO_OLD) {
        sqlite3_close(db);
        return s;
    }
    *out = db;
    return s;
}

int store_writable(const char *path)
{
    char *dir = strdup(path);
    if (!dir) return 0;
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    int ok = access(path, W_OK) == 0 && access(dir, W_OK) == 0;
    free(dir);
    return ok;
}
