/* store_live.c — see store_live.h. */
#include "store_live.h"
#include "store.h"
#include "store_write.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Runs body(L, ...) inside BEGIN IMMEDIATE ... COMMIT. Each BEGIN waits up to the busy
 * timeout for another writer; a transaction still refused as busy is retried a few times,
 * so a second runner or a long reader checkpoint never loses a result. */
typedef int (*txn_fn)(store_live *L, store_wctx *w, void *u);
static int in_txn(store_live *L, txn_fn body, void *u, char *err, size_t cap)
{
    store_wctx w = {.db = L->db, .err = err, .cap = cap};
    for (int attempt = 0;; ++attempt) {
        int rc = sqlite3_exec(L->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if (rc == SQLITE_OK) {
            int failed = body(L, &w, u);
            store_w_end(&w);
            if (!failed && (rc = sqlite3_exec(L->db, "COMMIT", NULL, NULL, NULL)) == SQLITE_OK) return 0;
            rc = sqlite3_extended_errcode(L->db);
            if (!err[0] || (rc & 0xff) == SQLITE_BUSY) snprintf(err, cap, "%s", sqlite3_errmsg(L->db));
            sqlite3_exec(L->db, "ROLLBACK", NULL, NULL, NULL);
        } else {
            snprintf(err, cap, "cannot start a write transaction: %s", sqlite3_errmsg(L->db));
        }
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) return -1;
        if (attempt == 4) return -1;
        err[0] = 0;
        usleep(200000u << attempt);
    }
}

static void *heartbeat_main(void *u)
{
    store_live *L = u;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(L->path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    pthread_mutex_lock(&L->mu);
    while (!L->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += STORE_HEARTBEAT_S;
        pthread_cond_timedwait(&L->cv, &L->mu, &ts);
        if (L->stop) break;
        pthread_mutex_unlock(&L->mu);
        sqlite3_stmt *st = NULL;
        /* a missed beat is harmless: the next one (or the next result) refreshes it */
        if (sqlite3_prepare_v2(db, "UPDATE run SET heartbeat_at = ?1 WHERE id = ?2 AND state = 'running'", -1, &st,
                               NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, (int64_t)time(NULL));
            sqlite3_bind_int64(st, 2, L->run_id);
            sqlite3_step(st);
        }
        sqlite3_finalize(st);
        pthread_mutex_lock(&L->mu);
    }
    pthread_mutex_unlock(&L->mu);
    sqlite3_close(db);
    return NULL;
}

static void start_heartbeat(store_live *L)
{
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    L->stop = 0;
    L->thread_on = pthread_create(&L->thread, NULL, heartbeat_main, L) == 0;
}

static void stop_heartbeat(store_live *L)
{
    if (!L->thread_on) return;
    pthread_mutex_lock(&L->mu);
    L->stop = 1;
    pthread_cond_signal(&L->cv);
    pthread_mutex_unlock(&L->mu);
    pthread_join(L->thread, NULL);
    L->thread_on = 0;
    pthread_cond_destroy(&L->cv);
    pthread_mutex_destroy(&L->mu);
}

typedef struct begin_args { const run_record *r; const char *options; int64_t expected; } begin_args;
static int begin_body(store_live *L, store_wctx *w, void *u)
{
    begin_args *a = u;
    int64_t id = store_w_run(w, a->r, "local", "running", &L->machine_id);
    if (id < 0) return -1;
    L->run_id = id;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(L->db, "UPDATE run SET options = ?1, results_expected = ?2 WHERE id = ?3", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, a->options, -1, SQLITE_TRANSIENT);
    if (a->expected >= 0) sqlite3_bind_int64(st, 2, a->expected); else sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

static void live_init(store_live *L, sqlite3 *db, const char *path)
{
    memset(L, 0, sizeof *L);
    L->db = db;
    snprintf(L->path, sizeof L->path, "%s", path);
}

int store_live_begin(store_live *L, sqlite3 *db, const char *path, const run_record *r, const char *options_json,
                     int64_t results_expected, char *err, size_t cap)
{
    live_init(L, db, path);
    err[0] = 0;
    begin_args a = {r, options_json, results_expected};
    if (in_txn(L, begin_body, &a, err, cap)) return -1;
    start_heartbeat(L);
    return 0;
}

typedef struct attach_args { const char *hostname; char *why; size_t cap; } attach_args;
static int attach_body(store_live *L, store_wctx *w, void *u)
{
    attach_args *a = u;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(L->db,
                           "SELECT run.state, s.state, run.runner_pid, m.hostname, "
                           "CAST(strftime('%s', 'now') AS INTEGER) - coalesce(run.heartbeat_at, run.started_at), run.machine_id "
                           "FROM run JOIN run_status s ON s.run_id = run.id JOIN machine m ON m.id = run.machine_id "
                           "WHERE run.id = ?1", -1, &st, NULL) != SQLITE_OK) {
        snprintf(w->err, w->cap, "%s", sqlite3_errmsg(L->db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, L->run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        snprintf(w->err, w->cap, "no run with id %lld", (long long)L->run_id);
        return -1;
    }
    char raw[16], shown[16], host[256];
    snprintf(raw, sizeof raw, "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(shown, sizeof shown, "%s", (const char *)sqlite3_column_text(st, 1));
    long long pid = sqlite3_column_type(st, 2) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 2);
    snprintf(host, sizeof host, "%s", (const char *)sqlite3_column_text(st, 3));
    long long age = sqlite3_column_int64(st, 4);
    L->machine_id = sqlite3_column_int64(st, 5);
    sqlite3_finalize(st);
    if (strcmp(raw, "complete") == 0) {
        snprintf(w->err, w->cap, "run %lld is complete: there is nothing to resume", (long long)L->run_id);
        return -1;
    }
    if (strcmp(host, a->hostname) != 0) {
        snprintf(w->err, w->cap, "run %lld was measured on host %s, not here (%s): resume it there, on the same device",
                 (long long)L->run_id, host, a->hostname);
        return -1;
    }
    if (strcmp(shown, "running") == 0 && pid > 0 && pid != (long long)getpid() &&
        (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
        snprintf(w->err, w->cap, "run %lld is still being measured by process %lld (heartbeat %lld s ago)",
                 (long long)L->run_id, pid, age);
        return -1;
    }
    if (sqlite3_prepare_v2(L->db, "UPDATE run SET state = 'running', heartbeat_at = ?1, runner_pid = ?2 WHERE id = ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)time(NULL));
    sqlite3_bind_int64(st, 2, (int64_t)getpid());
    sqlite3_bind_int64(st, 3, L->run_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

int store_live_attach(store_live *L, sqlite3 *db, const char *path, int64_t run_id, const char *hostname,
                      char *err, size_t cap)
{
    live_init(L, db, path);
    L->run_id = run_id;
    err[0] = 0;
    attach_args a = {hostname, err, cap};
    if (in_txn(L, attach_body, &a, err, cap)) return -1;
    start_heartbeat(L);
    return 0;
}

typedef struct ctx_args { const run_record *r; int ci; int64_t *ctx_id, *dev_id; } ctx_args;
static int ctx_body(store_live *L, store_wctx *w, void *u)
{
    ctx_args *a = u;
    const rr_context *c = &a->r->contexts[a->ci];
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(L->db,
                           "SELECT c.id, c.device_id FROM context c JOIN device d ON d.id = c.device_id "
                           "WHERE c.run_id = ?1 AND c.backend = ?2 AND d.name = ?3", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, L->run_id);
    sqlite3_bind_text(st, 2, c->backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, c->device_name, -1, SQLITE_TRANSIENT);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) {
        *a->ctx_id = sqlite3_column_int64(st, 0);
        *a->dev_id = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (found) return 0;
    *a->ctx_id = store_w_context(w, L->run_id, L->machine_id, c, (size_t)a->ci, a->dev_id);
    return *a->ctx_id < 0 ? -1 : 0;
}

int store_live_context(store_live *L, const run_record *r, int ci, int64_t *ctx_id, int64_t *device_id,
                       char *err, size_t cap)
{
    err[0] = 0;
    ctx_args a = {r, ci, ctx_id, device_id};
    return in_txn(L, ctx_body, &a, err, cap);
}

typedef struct res_args { const run_record *r; size_t i; int64_t ctx_id, dev_id; } res_args;
static int res_body(store_live *L, store_wctx *w, void *u)
{
    res_args *a = u;
    if (store_w_result(w, L->run_id, a->r, a->i, a->ctx_id, a->dev_id)) return -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(L->db, "UPDATE run SET heartbeat_at = ?1, finished_at = max(finished_at, ?1) WHERE id = ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)time(NULL));
    sqlite3_bind_int64(st, 2, L->run_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

int store_live_result(store_live *L, const run_record *r, size_t i, int64_t ctx_id, int64_t device_id,
                      char *err, size_t cap)
{
    err[0] = 0;
    res_args a = {r, i, ctx_id, device_id};
    return in_txn(L, res_body, &a, err, cap);
}

typedef struct close_args { const char *state; int64_t finished_at; const char *env; } close_args;
static int close_body(store_live *L, store_wctx *w, void *u)
{
    (void)w;
    close_args *a = u;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(L->db,
                           "UPDATE run SET state = ?1, finished_at = max(finished_at, ?2), heartbeat_at = ?2, env = ?3 "
                           "WHERE id = ?4", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, a->state, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, a->finished_at);
    sqlite3_bind_text(st, 3, a->env, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, L->run_id);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}

int store_live_close(store_live *L, const char *state, int64_t finished_at, const char *env_json, char *err, size_t cap)
{
    stop_heartbeat(L);
    err[0] = 0;
    close_args a = {state, finished_at, env_json};
    return in_txn(L, close_body, &a, err, cap);
}

int store_run_progress(sqlite3 *db, int64_t run_id, char state[16], int64_t *stored, int64_t *expected,
                       char *err, size_t cap)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT s.state, (SELECT count(*) FROM result r WHERE r.run_id = run.id), run.results_expected "
                           "FROM run JOIN run_status s ON s.run_id = run.id WHERE run.id = ?1", -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, run_id);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(state, 16, "%s", (const char *)sqlite3_column_text(st, 0));
        *stored = sqlite3_column_int64(st, 1);
        *expected = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
        rc = 0;
    } else {
        snprintf(err, cap, "no run with id %lld", (long long)run_id);
    }
    sqlite3_finalize(st);
    return rc;
}
