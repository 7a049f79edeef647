/* store.c — see store.h. */
#include "store.h"
#include "stats.h"
#include "store_write.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t store_fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

void store_series_fingerprint(const char *benchmark, const char *params_json, const char *hostname,
                              const char *cpu, const char *device_name, const char *backend,
                              const char *metric, char out[32])
{
    const char *parts[] = {benchmark, params_json, hostname, cpu, device_name, backend, metric};
    uint64_t h = STORE_FNV_INIT;
    for (size_t i = 0; i < 7; ++i) {
        if (i) h = store_fnv1a64(h, "\n", 1);
        h = store_fnv1a64(h, parts[i], strlen(parts[i]));
    }
    snprintf(out, 32, "fnv1a64:%016llx", (unsigned long long)h);
}

/* ------------------------------------------------------------------ migrations */
#define MIGRATION_MARK "-- @migration "

/* Finds section `n` of the embedded schema: [*start, *end). Returns 0 when found. */
static int find_section(int n, const char **start, const char **end)
{
    const char *p = qgmm_schema_sql;
    while ((p = strstr(p, MIGRATION_MARK)) != NULL) {
        int k = atoi(p + strlen(MIGRATION_MARK));
        const char *next = strstr(p + 1, MIGRATION_MARK);
        if (k == n) {
            *start = p;
            *end = next ? next : p + strlen(p);
            return 0;
        }
        p = next ? next : p + strlen(p);
    }
    return -1;
}

int store_latest_version(void)
{
    int best = 0;
    const char *p = qgmm_schema_sql;
    while ((p = strstr(p, MIGRATION_MARK)) != NULL) {
        int k = atoi(p + strlen(MIGRATION_MARK));
        if (k > best) best = k;
        p += strlen(MIGRATION_MARK);
    }
    return best;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t cap)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, cap, "%s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int user_version(sqlite3 *db, int *v)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK) return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -1;
}

/* The file's size in pages (-1 when unreadable). */
static int page_count(sqlite3 *db)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA page_count", -1, &st, NULL) != SQLITE_OK) return -1;
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
}

static int migrate(sqlite3 *db, const char *path, int target, char *err, size_t cap)
{
    for (;;) {
        /* Re-read the version inside a write transaction: two processes opening a fresh
         * file at once must not both apply migration 1. */
        char e[512];
        if (exec(db, "BEGIN IMMEDIATE", e, sizeof e)) {
            snprintf(err, cap, "%s: cannot start the migration transaction: %s", path, e);
            return -1;
        }
        int v = 0;
        if (user_version(db, &v)) {
            exec(db, "ROLLBACK", e, sizeof e);
            snprintf(err, cap, "%s: not a readable SQLite database: %s", path, sqlite3_errmsg(db));
            return -1;
        }
        if (v > store_latest_version()) {
            exec(db, "ROLLBACK", e, sizeof e);
            snprintf(err, cap,
                     "%s has schema version %d but this qgmm-bench knows versions up to %d: "
                     "it was written by a newer qgmm-bench; upgrade qgmm-bench (refusing to touch it)",
                     path, v, store_latest_version());
            return -1;
        }
        if (v >= target) { exec(db, "COMMIT", e, sizeof e); return 0; }
        const char *s, *t;
        if (find_section(v + 1, &s, &t)) {
            exec(db, "ROLLBACK", e, sizeof e);
            snprintf(err, cap, "internal: migration %d missing from the embedded schema", v + 1);
            return -1;
        }
        size_t n = (size_t)(t - s);
        char *sql = malloc(n + 64);
        if (!sql) { exec(db, "ROLLBACK", e, sizeof e); snprintf(err, cap, "out of memory"); return -1; }
        memcpy(sql, s, n);
        snprintf(sql + n, 64, "\nPRAGMA user_version = %d;\n", v + 1);
        int rc = exec(db, sql, e, sizeof e);
        free(sql);
        if (rc || exec(db, "COMMIT", e, sizeof e)) {
            char e2[64];
            exec(db, "ROLLBACK", e2, sizeof e2);
            snprintf(err, cap, "%s: migration %d failed: %s", path, v + 1, e);
            return -1;
        }
    }
}

/* Every connection checks foreign keys. Hands db over to *out, or closes it. */
static int foreign_keys_on(sqlite3 *db, const char *path, sqlite3 **out, char *err, size_t cap)
{
    char e[256];
    if (exec(db, "PRAGMA foreign_keys = ON", e, sizeof e)) {
        snprintf(err, cap, "%s: %s", path, e);
        sqlite3_close(db);
        return -1;
    }
    *out = db;
    return 0;
}

static int open_common(const char *path, int flags, sqlite3 **out, char *err, size_t cap)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
    return foreign_keys_on(db, path, out, err, cap);
}

/* One attempt at opening a store for writing; *busy is set when another process held a
 * lock that SQLite does not wait for (the switch to WAL on a fresh file). Without create,
 * neither a file nor a schema is made. *state says what the file was (STORE_OK once open). */
static int open_for_writing(const char *path, int version, int create, sqlite3 **out, char *err, size_t cap,
                            int *busy, store_state *state)
{
    sqlite3 *db;
    *busy = 0;
    *state = STORE_ERROR;
    if (open_common(path, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), &db, err, cap)) return -1;
    /* A file that holds something else never gets the schema installed into it. Its version
     * and tables are read in one transaction: another writer creating the schema between two
     * reads would otherwise make a fresh store look foreign. */
    char e[256];
    const int txn = exec(db, "BEGIN", e, sizeof e) == 0;
    store_state s = store_identify(db, path, store_latest_version(), NULL, err, cap);
    const int read_busy = (sqlite3_errcode(db) & 0xff) == SQLITE_BUSY; /* before COMMIT resets it */
    if (txn) exec(db, "COMMIT", e, sizeof e);
    if ((s != STORE_OK && s != STORE_EMPTY && s != STORE_TOO_OLD) || (s == STORE_EMPTY && !create)) {
        *busy = read_busy;
        *state = s;
        sqlite3_close(db);
        return -1;
    }
    /* The switch to WAL writes page 1 of a new file in a rollback-journal transaction; a
     * writer killed before deleting that journal would leave a hot journal, which no
     * read-only connection can roll back (every reader refused until a writer opens the
     * store). A file of no pages has nothing to roll back to, so its journal stays in
     * memory. */
    if (s == STORE_EMPTY && page_count(db) == 0 && exec(db, "PRAGMA journal_mode = MEMORY", e, sizeof e)) {
        *busy = sqlite3_errcode(db) == SQLITE_BUSY;
        snprintf(err, cap, "%s: %s", path, e);
        sqlite3_close(db);
        return -1;
    }
    /* WAL lets the dashboard read while a runner writes; synchronous=NORMAL is safe
     * under WAL (a power loss may drop the last commit, never corrupt). */
    if (exec(db, "PRAGMA journal_mode = WAL", e, sizeof e) ||
        exec(db, "PRAGMA synchronous = NORMAL", e, sizeof e)) {
        *busy = sqlite3_errcode(db) == SQLITE_BUSY;
        snprintf(err, cap, "%s: %s", path, e);
        sqlite3_close(db);
        return -1;
    }
    if (migrate(db, path, version, err, cap)) {
        *busy = sqlite3_errcode(db) == SQLITE_BUSY;
        sqlite3_close(db);
        return -1;
    }
    *state = STORE_OK;
    *out = db;
    return 0;
}

static int open_retrying(const char *path, int version, int create, sqlite3 **out, char *err, size_t cap,
                         store_state *state)
{
    /* Two writers opening a fresh file at once: the loser of the WAL switch or of the first
     * migration retries (within the busy timeout) instead of failing. */
    for (int waited_ms = 0;; waited_ms += 20) {
        int busy = 0;
        if (open_for_writing(path, version, create, out, err, cap, &busy, state) == 0) return 0;
        if (!busy || waited_ms >= STORE_BUSY_TIMEOUT_MS) return -1;
        usleep(20000);
    }
}

static void unlink_store_files(const char *path, char *buf, size_t cap)
{
    unlink(path);
    snprintf(buf, cap, "%s-wal", path);
    unlink(buf);
    snprintf(buf, cap, "%s-shm", path);
    unlink(buf);
}

/* Removes the temporary files that writers killed while creating path left (those of
 * processes no longer running). */
static void remove_stale_creations(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char *dir = slash ? strndup(path, (size_t)(slash - path) + 1) : strdup("./");
    char *prefix = malloc(strlen(base) + 16);
    DIR *d = dir && prefix ? opendir(dir) : NULL;
    if (d) {
        sprintf(prefix, "%s.creating-", base);
        const size_t np = strlen(prefix);
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            if (strncmp(e->d_name, prefix, np) != 0) continue;
            char *tail;
            const long pid = strtol(e->d_name + np, &tail, 10);
            if (pid <= 0 || (*tail && strcmp(tail, "-wal") && strcmp(tail, "-shm"))) continue;
            if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
            char *f = malloc(strlen(dir) + strlen(e->d_name) + 1);
            if (f) {
                sprintf(f, "%s%s", dir, e->d_name);
                unlink(f);
                free(f);
            }
        }
        closedir(d);
    }
    free(prefix);
    free(dir);
}

/* A new store is made whole under a temporary name beside path and then linked to path:
 * readers never find it half made (an empty file, or the rollback journal of the switch
 * to WAL that a writer killed there leaves behind and no read-only connection can roll
 * back), and of two writers creating it at once one link wins and the other opens that
 * store. A writer killed while creating leaves only its temporary files, which the next
 * one to create the store removes. Where this fails (no hard links on the file system, a
 * directory not writable), path is left as it was and the caller creates the store in
 * place, and says what stops it. */
static void create_store(const char *path, int version)
{
    const size_t n = strlen(path) + 48;
    char *tmp = malloc(n), *aux = malloc(n);
    if (tmp && aux) {
        remove_stale_creations(path);
        snprintf(tmp, n, "%s.creating-%ld", path, (long)getpid());
        unlink_store_files(tmp, aux, n);
        sqlite3 *db = NULL;
        store_state s;
        char e[512];
        if (open_retrying(tmp, version, 1, &db, e, sizeof e, &s) == 0) {
            /* the last connection's close folds the write-ahead log into the file */
            const int closed = sqlite3_close(db) == SQLITE_OK;
            snprintf(aux, n, "%s-wal", tmp);
            if (closed && access(aux, F_OK) != 0) (void)link(tmp, path); /* EEXIST: another writer's store won */
        }
        unlink_store_files(tmp, aux, n);
    }
    free(tmp);
    free(aux);
}

static int open_writer(const char *path, int version, int create, sqlite3 **out, char *err, size_t cap,
                       store_state *state)
{
    *state = STORE_ERROR;
    if (access(path, F_OK) == 0 && !store_writable(path)) {
        snprintf(err, cap, "%s is read-only here: this command writes the store and needs write access to the file "
                 "and its directory", path);
        return -1;
    }
    if (create && access(path, F_OK) != 0) create_store(path, version);
    return open_retrying(path, version, create, out, err, cap, state);
}

int store_open_version(const char *path, int version, sqlite3 **out, char *err, size_t cap)
{
    store_state s;
    return open_writer(path, version, 1, out, err, cap, &s);
}

store_state store_open_upgrade(const char *path, sqlite3 **out, char *err, size_t cap)
{
    *out = NULL;
    if (access(path, F_OK) != 0) {
        snprintf(err, cap, "%s: no such results store", path);
        return STORE_MISSING;
    }
    store_state s;
    open_writer(path, store_latest_version(), 0, out, err, cap, &s);
    return s;
}

int store_open(const char *path, sqlite3 **out, char *err, size_t cap)
{
    return store_open_version(path, store_latest_version(), out, err, cap);
}

int store_open_readonly(const char *path, sqlite3 **out, char *err, size_t cap)
{
    sqlite3 *db = NULL;
    store_state s = store_open_ro(path, store_latest_version(), &db, NULL, err, cap);
    if (s == STORE_MISSING) {
        snprintf(err, cap, "%s: no such results store (`qgmm-bench run --db %s` or `qgmm-bench import --db %s` creates one)",
                 path, path, path);
    }
    if (s != STORE_OK) {
        sqlite3_close(db);
        return -1;
    }
    return foreign_keys_on(db, path, out, err, cap);
}

int store_open_existing(const char *path, sqlite3 **out, char *err, size_t cap)
{
    sqlite3 *db = NULL;
    if (store_open_readonly(path, &db, err, cap)) return -1;
    sqlite3_close(db);
    if (!store_writable(path)) {
        snprintf(err, cap, "%s is read-only here: recording needs write access to the file and its directory "
                 "(--no-record only reads)", path);
        return -1;
    }
    if (open_common(path, SQLITE_OPEN_READWRITE, &db, err, cap)) return -1;
    *out = db;
    return 0;
}

void store_close(sqlite3 *db)
{
    sqlite3_close(db);
}

/* ------------------------------------------------------------------ writing a run */
typedef store_wctx wctx;

static int fail(wctx *w, const char *what)
{
    snprintf(w->err, w->cap, "%s: %s", what, sqlite3_errmsg(w->db));
    return -1;
}

static sqlite3_stmt *prep(wctx *w, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
        fail(w, "prepare");
        return NULL;
    }
    return st;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s) { sqlite3_bind_text(st, i, s ? s : "", -1, SQLITE_TRANSIENT); }
static void bind_opt_i(sqlite3_stmt *st, int i, int64_t v)
{
    if (v == RR_UNSET_I) sqlite3_bind_null(st, i); else sqlite3_bind_int64(st, i, v);
}
static void bind_opt_d(sqlite3_stmt *st, int i, double v)
{
    if (isfinite(v)) sqlite3_bind_double(st, i, v); else sqlite3_bind_null(st, i);
}

/* The statement in *slot (prepared on first use, reset and unbound after). */
static sqlite3_stmt *cached(wctx *w, sqlite3_stmt **slot, const char *sql)
{
    if (!*slot) return *slot = prep(w, sql);
    sqlite3_reset(*slot);
    sqlite3_clear_bindings(*slot);
    return *slot;
}

void store_w_end(store_wctx *w)
{
    sqlite3_finalize(w->series);
    sqlite3_finalize(w->result);
    sqlite3_finalize(w->sample);
    sqlite3_finalize(w->step);
    w->series = w->result = w->sample = w->step = NULL;
}

/* Runs a statement with RETURNING id / or SELECT id and resets it; returns the id or -1. */
static int64_t step_id_keep(wctx *w, sqlite3_stmt *st, const char *what)
{
    int64_t id = -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) id = sqlite3_column_int64(st, 0);
    else fail(w, what);
    while (rc == SQLITE_ROW) rc = sqlite3_step(st);
    sqlite3_reset(st);
    return id;
}

/* The same for a statement used once. */
static int64_t step_id(wctx *w, sqlite3_stmt *st, const char *what)
{
    int64_t id = step_id_keep(w, st, what);
    sqlite3_finalize(st);
    return id;
}

static int64_t upsert_machine(wctx *w, const run_record *r)
{
    sqlite3_stmt *st = prep(w,
        "INSERT INTO machine(hostname, cpu, os, cores, memory_bytes) VALUES(?1,?2,?3,?4,?5) "
        "ON CONFLICT(hostname, cpu) DO UPDATE SET os = CASE WHEN excluded.os <> '' THEN excluded.os ELSE os END, "
        "cores = coalesce(excluded.cores, cores), memory_bytes = coalesce(excluded.memory_bytes, memory_bytes) "
        "RETURNING id");
    if (!st) return -1;
    bind_text(st, 1, r->hostname); bind_text(st, 2, r->cpu); bind_text(st, 3, r->os);
    bind_opt_i(st, 4, r->cores); bind_opt_i(st, 5, r->memory_bytes);
    return step_id(w, st, "machine");
}

static int64_t upsert_revision(wctx *w, const run_record *r)
{
    sqlite3_stmt *st = prep(w,
        "INSERT INTO revision(sha, commit_time, subject, branch) VALUES(?1,?2,?3,?4) "
        "ON CONFLICT(sha) DO UPDATE SET commit_time = coalesce(commit_time, excluded.commit_time), "
        "subject = CASE WHEN subject = '' THEN excluded.subject ELSE subject END, "
        "branch = CASE WHEN branch = '' THEN excluded.branch ELSE branch END RETURNING id");
    if (!st) return -1;
    bind_text(st, 1, r->sha); bind_opt_i(st, 2, r->commit_time);
    bind_text(st, 3, r->subject); bind_text(st, 4, r->branch);
    return step_id(w, st, "revision");
}

static int64_t upsert_device(wctx *w, int64_t machine_id, const rr_context *c)
{
    sqlite3_stmt *st = prep(w,
        "INSERT INTO device(machine_id, name, kind, arch, memory_bytes) VALUES(?1,?2,?3,?4,?5) "
        "ON CONFLICT(machine_id, name) DO UPDATE SET "
        "kind = CASE WHEN excluded.kind <> 'other' THEN excluded.kind ELSE kind END, "
        "arch = CASE WHEN excluded.arch <> '' THEN excluded.arch ELSE arch END, "
        "memory_bytes = coalesce(excluded.memory_bytes, memory_bytes) RETURNING id");
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, machine_id);
    bind_text(st, 2, c->device_name); bind_text(st, 3, c->device_kind); bind_text(st, 4, c->device_arch);
    bind_opt_i(st, 5, c->device_memory_bytes);
    return step_id(w, st, "device");
}

static int64_t upsert_series(wctx *w, const run_record *r, const rr_context *c, int64_t device_id,
                             const rr_result *x)
{
    char fp[32];
    store_series_fingerprint(x->benchmark, x->params_json, r->hostname, r->cpu, c->device_name,
                             c->backend, x->metric, fp);
    sqlite3_stmt *st = cached(w, &w->series,
        "INSERT INTO series(fingerprint, benchmark, params, label, shape, role, device_id, backend, metric, unit) "
        "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10) "
        "ON CONFLICT(fingerprint) DO UPDATE SET "
        "label = CASE WHEN excluded.label <> '' THEN excluded.label ELSE label END, "
        "shape = CASE WHEN excluded.shape <> '' THEN excluded.shape ELSE shape END RETURNING id");
    if (!st) return -1;
    bind_text(st, 1, fp); bind_text(st, 2, x->benchmark); bind_text(st, 3, x->params_json);
    bind_text(st, 4, x->label); bind_text(st, 5, x->shape); bind_text(st, 6, x->role);
    sqlite3_bind_int64(st, 7, device_id);
    bind_text(st, 8, c->backend); bind_text(st, 9, x->metric); bind_text(st, 10, x->unit);
    return step_id_keep(w, st, "series");
}

/* Test hook: QGMM_BENCH_TEST_KILL_AFTER_RESULTS=N makes the writer SIGKILL itself after
 * inserting N results, i.e. in the middle of the run's transaction — the store test uses
 * it to prove a killed writer leaves no partial run. */
static long kill_after_results(void)
{
    const char *s = getenv("QGMM_BENCH_TEST_KILL_AFTER_RESULTS");
    return s && *s ? atol(s) : -1;
}

int64_t store_w_run(wctx *w, const run_record *r, const char *source, const char *state, int64_t *machine_id)
{
    *machine_id = upsert_machine(w, r);
    if (*machine_id < 0) return -1;
    int64_t revision_id = upsert_revision(w, r);
    if (revision_id < 0) return -1;
    int live = strcmp(state, "complete") != 0;
    /* a whole run leaves the columns of migration 4 at their defaults (state 'complete'),
     * so it can be written into a store of any schema version (the tests build older ones) */
    sqlite3_stmt *st = prep(w, live
        ? "INSERT INTO run(uuid, machine_id, revision_id, suite, reason, started_at, finished_at, runner, "
          "runner_version, dirty, env, source, imported_at, state, heartbeat_at, runner_pid) "
          "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16) RETURNING id"
        : "INSERT INTO run(uuid, machine_id, revision_id, suite, reason, started_at, finished_at, runner, "
          "runner_version, dirty, env, source, imported_at) "
          "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13) RETURNING id");
    if (!st) return -1;
    bind_text(st, 1, r->uuid);
    sqlite3_bind_int64(st, 2, *machine_id);
    sqlite3_bind_int64(st, 3, revision_id);
    bind_text(st, 4, r->suite); bind_text(st, 5, r->reason);
    sqlite3_bind_int64(st, 6, r->started_at); sqlite3_bind_int64(st, 7, r->finished_at);
    bind_text(st, 8, r->runner); bind_text(st, 9, r->runner_version);
    sqlite3_bind_int(st, 10, r->dirty ? 1 : 0);
    bind_text(st, 11, r->env_json); bind_text(st, 12, source);
    if (strcmp(source, "local") != 0) sqlite3_bind_int64(st, 13, (int64_t)time(NULL));
    else sqlite3_bind_null(st, 13);
    if (live) {
        bind_text(st, 14, state);
        sqlite3_bind_int64(st, 15, (int64_t)time(NULL));
        sqlite3_bind_int64(st, 16, (int64_t)getpid());
    }
    return step_id(w, st, "run");
}

int64_t store_w_context(wctx *w, int64_t run_id, int64_t machine_id, const rr_context *c, size_t i, int64_t *device_id)
{
    *device_id = upsert_device(w, machine_id, c);
    if (*device_id < 0) return -1;
    sqlite3_stmt *st = prep(w, "INSERT INTO context(run_id, backend, device_id, describe, driver, runtime, clocks, code_hash) "
                               "VALUES(?1,?2,?3,?4,?5,?6,?7,?8) RETURNING id");
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run_id); bind_text(st, 2, c->backend); sqlite3_bind_int64(st, 3, *device_id);
    bind_text(st, 4, c->describe); bind_text(st, 5, c->driver); bind_text(st, 6, c->runtime);
    bind_text(st, 7, c->clocks_json); bind_text(st, 8, c->code_hash);
    int64_t id = step_id(w, st, "context");
    if (id < 0)
        snprintf(w->err, w->cap, "contexts[%zu]: backend \"%s\" on device \"%s\" appears twice in the run",
                 i, c->backend, c->device_name);
    return id;
}

int store_w_result(wctx *w, int64_t run_id, const run_record *r, size_t i, int64_t ctx_id, int64_t device_id)
{
    const rr_result *x = &r->results[i];
    const rr_context *c = &r->contexts[x->context];
    int64_t sid = upsert_series(w, r, c, device_id, x);
    if (sid < 0) return -1;
    sqlite3_stmt *ins = cached(w, &w->result,
        "INSERT INTO result(run_id, series_id, context_id, status, verdict, message, n_samples, warmup, "
        "min_us, q1_us, median_us, q3_us, max_us, mean_us, stddev_us, bytes, flops, gbps, tflops, ceiling, "
        "pct_of_ceiling, mismatched_bytes, checked_bytes, max_abs_err, rel_err, sqnr_db, threshold, output_hash, code_hash) "
        "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29)");
    sqlite3_stmt *smp = cached(w, &w->sample, "INSERT INTO sample(result_id, idx, time_us) VALUES(?1,?2,?3)");
    if (!ins || !smp) return -1;
    sample_stats ss = stats_describe(x->samples_us, x->n_samples);
    sqlite3_bind_int64(ins, 1, run_id); sqlite3_bind_int64(ins, 2, sid); sqlite3_bind_int64(ins, 3, ctx_id);
    bind_text(ins, 4, x->status); bind_text(ins, 5, x->verdict); bind_text(ins, 6, x->message);
    sqlite3_bind_int64(ins, 7, (int64_t)x->n_samples); sqlite3_bind_int64(ins, 8, x->warmup);
    if (ss.n) {
        sqlite3_bind_double(ins, 9, ss.min); sqlite3_bind_double(ins, 10, ss.q1);
        sqlite3_bind_double(ins, 11, ss.median); sqlite3_bind_double(ins, 12, ss.q3);
        sqlite3_bind_double(ins, 13, ss.max); sqlite3_bind_double(ins, 14, ss.mean);
        sqlite3_bind_double(ins, 15, ss.stddev);
    }
    bind_opt_i(ins, 16, x->bytes); bind_opt_i(ins, 17, x->flops);
    bind_opt_d(ins, 18, x->gbps); bind_opt_d(ins, 19, x->tflops);
    bind_text(ins, 20, x->ceiling); bind_opt_d(ins, 21, x->pct_of_ceiling);
    bind_opt_i(ins, 22, x->mismatched_bytes); bind_opt_i(ins, 23, x->checked_bytes);
    bind_opt_d(ins, 24, x->max_abs_err); bind_opt_d(ins, 25, x->rel_err); bind_opt_d(ins, 26, x->sqnr_db);
    bind_text(ins, 27, x->threshold); bind_text(ins, 28, x->output_hash);
    bind_text(ins, 29, x->code_hash[0] ? x->code_hash : c->code_hash);
    if (sqlite3_step(ins) != SQLITE_DONE) {
        if (sqlite3_extended_errcode(w->db) == SQLITE_CONSTRAINT_UNIQUE)
            snprintf(w->err, w->cap, "results[%zu]: a second result for series %s %s on %s/%s in one run",
                     i, x->benchmark, x->params_json, c->backend, c->device_name);
        else
            snprintf(w->err, w->cap, "results[%zu]: %s", i, sqlite3_errmsg(w->db));
        return -1;
    }
    int64_t res_id = sqlite3_last_insert_rowid(w->db);
    for (size_t k = 0; k < x->n_samples; ++k) {
        sqlite3_reset(smp);
        sqlite3_bind_int64(smp, 1, res_id);
        sqlite3_bind_int64(smp, 2, (int64_t)k);
        sqlite3_bind_double(smp, 3, x->samples_us[k]);
        if (sqlite3_step(smp) != SQLITE_DONE) return fail(w, "sample");
    }
    for (size_t k = 0; k < x->n_steps; ++k) {
        sqlite3_stmt *stp = cached(w, &w->step, "INSERT INTO result_step(result_id, idx, phase, step, median_us, n) "
                                                "VALUES(?1,?2,?3,?4,?5,?6)");
        if (!stp) return -1;
        const rr_step *p = &x->steps[k];
        sqlite3_bind_int64(stp, 1, res_id);
        sqlite3_bind_int64(stp, 2, (int64_t)k);
        bind_text(stp, 3, p->phase);
        bind_text(stp, 4, p->step);
        sqlite3_bind_double(stp, 5, p->median_us);
        sqlite3_bind_int64(stp, 6, p->n);
        if (sqlite3_step(stp) != SQLITE_DONE) return fail(w, "step");
    }
    return 0;
}

static int write_body(wctx *w, run_record *r, const char *source, int64_t *run_id)
{
    int64_t machine_id;
    int64_t rid = store_w_run(w, r, source, "complete", &machine_id);
    if (rid < 0) return -1;
    int64_t *ctx_ids = calloc(r->n_contexts + 1, sizeof *ctx_ids);
    int64_t *dev_ids = calloc(r->n_contexts + 1, sizeof *dev_ids);
    if (!ctx_ids || !dev_ids) { free(ctx_ids); free(dev_ids); snprintf(w->err, w->cap, "out of memory"); return -1; }
    int rc = -1;
    for (size_t i = 0; i < r->n_contexts; ++i) {
        ctx_ids[i] = store_w_context(w, rid, machine_id, &r->contexts[i], i, &dev_ids[i]);
        if (ctx_ids[i] < 0) goto out;
    }
    long kill_at = kill_after_results();
    for (size_t i = 0; i < r->n_results; ++i) {
        int ci = r->results[i].context;
        if (store_w_result(w, rid, r, i, ctx_ids[ci], dev_ids[ci])) goto out;
        if (kill_at >= 0 && (long)(i + 1) >= kill_at) raise(SIGKILL);
    }
    *run_id = rid;
    rc = 0;
out:
    store_w_end(w);
    free(ctx_ids);
    free(dev_ids);
    return rc;
}

static int validate_record(const run_record *r, char *err, size_t cap)
{
    if (!r->uuid[0]) { snprintf(err, cap, "uuid: missing"); return -1; }
    for (size_t i = 0; i < r->n_results; ++i) {
        const rr_result *x = &r->results[i];
        if (x->context < 0 || (size_t)x->context >= r->n_contexts) {
            snprintf(err, cap, "results[%zu].context: %d is not an index into contexts (%zu entries)", i,
                     x->context, r->n_contexts);
            return -1;
        }
    }
    return 0;
}

int store_write_run(sqlite3 *db, run_record *r, const char *source, int *already, int64_t *run_id,
                    char *err, size_t cap)
{
    *already = 0;
    if (validate_record(r, err, cap)) return -1;
    rr_derive(r);
    wctx w = {.db = db, .err = err, .cap = cap};
    char e[256];
    if (exec(db, "BEGIN IMMEDIATE", e, sizeof e)) {
        snprintf(err, cap, "cannot start the write transaction: %s", e);
        return STORE_WRITE_BUSY;
    }
    sqlite3_stmt *st = prep(&w, "SELECT id FROM run WHERE uuid = ?1");
    if (!st) { exec(db, "ROLLBACK", e, sizeof e); return -1; }
    bind_text(st, 1, r->uuid);
    if (sqlite3_step(st) == SQLITE_ROW) {
        *run_id = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        /* Compared inside the transaction: the stored run cannot change meanwhile. */
        char mine[65], stored[65];
        int rc = store_run_digest(r, mine) || store_run_digest_db(db, r->uuid, stored) ? -1 : 0;
        if (rc) snprintf(err, cap, "reading the stored run %s failed: %s", r->uuid, sqlite3_errmsg(db));
        else *already = strcmp(mine, stored) == 0 ? STORE_RUN_SAME : STORE_RUN_DIFFERENT;
        exec(db, "ROLLBACK", e, sizeof e);
        return rc;
    }
    sqlite3_finalize(st);
    if (write_body(&w, r, source, run_id)) {
        exec(db, "ROLLBACK", e, sizeof e);
        return -1;
    }
    if (exec(db, "COMMIT", e, sizeof e)) {
        snprintf(err, cap, "commit failed: %s", e);
        exec(db, "ROLLBACK", e, sizeof e);
        return STORE_WRITE_BUSY;
    }
    return 0;
}

/* ------------------------------------------------------------------ reading a run */
static const char *col_s(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? (const char *)s : "";
}
static int64_t col_opt_i(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? RR_UNSET_I : sqlite3_column_int64(st, i);
}
static double col_opt_d(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int store_load_run(sqlite3 *db, int64_t run_id, run_record *r, char *err, size_t cap)
{
    wctx w = {.db = db, .err = err, .cap = cap};
    sqlite3_stmt *st = prep(&w,
        "SELECT run.uuid, suite, reason, started_at, finished_at, runner, runner_version, dirty, env, "
        "m.hostname, m.cpu, m.os, m.cores, m.memory_bytes, v.sha, v.commit_time, v.subject, v.branch "
        "FROM run JOIN machine m ON m.id = run.machine_id JOIN revision v ON v.id = run.revision_id WHERE run.id = ?1");
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        snprintf(err, cap, "no run with id %lld", (long long)run_id);
        return -1;
    }
    snprintf(r->uuid, sizeof r->uuid, "%s", col_s(st, 0));
    rr_set(&r->suite, col_s(st, 1)); rr_set(&r->reason, col_s(st, 2));
    r->started_at = sqlite3_column_int64(st, 3); r->finished_at = sqlite3_column_int64(st, 4);
    rr_set(&r->runner, col_s(st, 5)); rr_set(&r->runner_version, col_s(st, 6));
    r->dirty = sqlite3_column_int(st, 7); rr_set(&r->env_json, col_s(st, 8));
    rr_set(&r->hostname, col_s(st, 9)); rr_set(&r->cpu, col_s(st, 10)); rr_set(&r->os, col_s(st, 11));
    r->cores = col_opt_i(st, 12); r->memory_bytes = col_opt_i(st, 13);
    rr_set(&r->sha, col_s(st, 14)); r->commit_time = col_opt_i(st, 15);
    rr_set(&r->subject, col_s(st, 16)); rr_set(&r->branch, col_s(st, 17));
    sqlite3_finalize(st);

    st = prep(&w, "SELECT c.id, backend, d.name, d.kind, d.arch, d.memory_bytes, describe, driver, runtime, clocks, code_hash "
                  "FROM context c JOIN device d ON d.id = c.device_id WHERE run_id = ?1 ORDER BY c.id");
    if (!st) return -1;
    sqlite3_bind_int64(st, 1, run_id);
    int64_t ctx_db_ids[256];
    size_t nctx = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (nctx >= 256) { sqlite3_finalize(st); snprintf(err, cap, "run has more than 256 contexts"); return -1; }
        rr_context *c = rr_add_context(r);
        if (!c) { sqlite3_finalize(st); snprintf(err, cap, "out of memory"); return -1; }
        ctx_db_ids[nctx++] = sqlite3_column_int64(st, 0);
        rr_set(&c->backend, col_s(st, 1)); rr_set(&c->device_name, col_s(st, 2));
        rr_set(&c->device_kind, col_s(st, 3)); rr_set(&c->device_arch, col_s(st, 4));
        c->device_memory_bytes = col_opt_i(st, 5);
        rr_set(&c->describe, col_s(st, 6)); rr_set(&c->driver, col_s(st, 7)); rr_set(&c->runtime, col_s(st, 8));
        rr_set(&c->clocks_json, col_s(st, 9)); rr_set(&c->code_hash, col_s(st, 10));
    }
    sqlite3_finalize(st);

    st = prep(&w, "SELECT r.id, r.context_id, s.benchmark, s.params, s.label, s.shape, s.role, s.metric, s.unit, "
                  "r.status, r.verdict, r.message, r.warmup, r.bytes, r.flops, r.ceiling, r.mismatched_bytes, "
                  "r.checked_bytes, r.max_abs_err, r.rel_err, r.sqnr_db, r.threshold, r.output_hash, r.code_hash "
                  "FROM result r JOIN series s ON s.id = r.series_id WHERE r.run_id = ?1 ORDER BY r.id");
    sqlite3_stmt *sm = prep(&w, "SELECT time_us FROM sample WHERE result_id = ?1 ORDER BY idx");
    sqlite3_stmt *sp = prep(&w, "SELECT phase, step, median_us, n FROM result_step WHERE result_id = ?1 ORDER BY idx");
    if (!st || !sm || !sp) { sqlite3_finalize(st); sqlite3_finalize(sm); sqlite3_finalize(sp); return -1; }
    sqlite3_bind_int64(st, 1, run_id);
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        rr_result *x = rr_add_result(r);
        if (!x) { rc = -1; snprintf(err, cap, "out of memory"); break; }
        int64_t cid = sqlite3_column_int64(st, 1);
        x->context = -1;
        for (size_t k = 0; k < nctx; ++k) if (ctx_db_ids[k] == cid) x->context = (int)k;
        rr_set(&x->benchmark, col_s(st, 2)); rr_set(&x->params_json, col_s(st, 3));
        rr_set(&x->label, col_s(st, 4)); rr_set(&x->shape, col_s(st, 5)); rr_set(&x->role, col_s(st, 6));
        rr_set(&x->metric, col_s(st, 7)); rr_set(&x->unit, col_s(st, 8));
        rr_set(&x->status, col_s(st, 9)); rr_set(&x->verdict, col_s(st, 10)); rr_set(&x->message, col_s(st, 11));
        x->warmup = sqlite3_column_int64(st, 12);
        x->bytes = col_opt_i(st, 13); x->flops = col_opt_i(st, 14);
        rr_set(&x->ceiling, col_s(st, 15));
        x->mismatched_bytes = col_opt_i(st, 16); x->checked_bytes = col_opt_i(st, 17);
        x->max_abs_err = col_opt_d(st, 18); x->rel_err = col_opt_d(st, 19); x->sqnr_db = col_opt_d(st, 20);
        rr_set(&x->threshold, col_s(st, 21)); rr_set(&x->output_hash, col_s(st, 22)); rr_set(&x->code_hash, col_s(st, 23));
        sqlite3_reset(sm);
        sqlite3_bind_int64(sm, 1, sqlite3_column_int64(st, 0));
        size_t capn = 0;
        while (sqlite3_step(sm) == SQLITE_ROW) {
            if (x->n_samples == capn) {
                capn = capn ? capn * 2 : 32;
                double *n = realloc(x->samples_us, capn * sizeof *n);
                if (!n) { rc = -1; snprintf(err, cap, "out of memory"); break; }
                x->samples_us = n;
            }
            x->samples_us[x->n_samples++] = sqlite3_column_double(sm, 0);
        }
        if (rc) break;
        sqlite3_reset(sp);
        sqlite3_bind_int64(sp, 1, sqlite3_column_int64(st, 0));
        while (sqlite3_step(sp) == SQLITE_ROW)
            if (!rr_add_step(x, col_s(sp, 0), col_s(sp, 1), sqlite3_column_double(sp, 2), sqlite3_column_int64(sp, 3))) {
                rc = -1;
                snprintf(err, cap, "out of memory");
                break;
            }
        if (rc) break;
    }
    sqlite3_finalize(st);
    sqlite3_finalize(sm);
    sqlite3_finalize(sp);
    if (rc == 0) rr_derive(r);
    return rc;
}

int store_resolve_run(sqlite3 *db, const char *spec, int64_t *run_id, char *err, size_t cap)
{
    sqlite3_stmt *st = NULL;
    const char *sql;
    int numeric = spec[0] != 0;
    for (const char *p = spec; *p; ++p) if (*p < '0' || *p > '9') numeric = 0;
    if (strcmp(spec, "latest") == 0)
        sql = "SELECT id FROM run ORDER BY started_at DESC, id DESC LIMIT 2";
    else if (numeric)
        sql = "SELECT id FROM run WHERE id = ?1 OR uuid LIKE ?1 || '%' LIMIT 2";
    else
        sql = "SELECT id FROM run WHERE uuid = ?1 UNION ALL SELECT id FROM run WHERE uuid LIKE ?1 || '%' AND uuid <> ?1 LIMIT 2";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, cap, "%s", sqlite3_errmsg(db));
        return -1;
    }
    if (strcmp(spec, "latest") != 0) sqlite3_bind_text(st, 1, spec, -1, SQLITE_TRANSIENT);
    int n = 0;
    int64_t first = -1, exact = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (n == 0) first = id;
        if (numeric && id == atoll(spec)) exact = id;
        ++n;
    }
    sqlite3_finalize(st);
    if (n == 0) { snprintf(err, cap, "no run matches \"%s\" (give a run id, a uuid or a uuid prefix, or \"latest\")", spec); return -1; }
    if (strcmp(spec, "latest") == 0 || n == 1) { *run_id = first; return 0; }
    if (exact >= 0) { *run_id = exact; return 0; }
    if (!numeric) {
        /* the first row is an exact uuid match when there is one */
        sqlite3_stmt *e = NULL;
        sqlite3_prepare_v2(db, "SELECT id FROM run WHERE uuid = ?1", -1, &e, NULL);
        sqlite3_bind_text(e, 1, spec, -1, SQLITE_TRANSIENT);
        int found = sqlite3_step(e) == SQLITE_ROW;
        if (found) *run_id = sqlite3_column_int64(e, 0);
        sqlite3_finalize(e);
        if (found) return 0;
    }
    snprintf(err, cap, "\"%s\" matches more than one run; give more of the uuid", spec);
    return -1;
}
