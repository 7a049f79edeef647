/* test_store.c — the SQLite store: fresh schema == ci/schema.sql, migration from an older
 * schema keeps data, a newer schema is refused, one transaction per run (a writer killed
 * mid-run leaves an intact database without that run), two concurrent writers lose
 * nothing, import is idempotent, malformed documents are refused and change nothing,
 * export -> import round-trips. */
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "runner_testutil.h"
#include "store_json.h"

static sqlite3 *open_db(const char *path)
{
    sqlite3 *db = NULL;
    char err[512];
    if (store_open(path, &db, err, sizeof err)) { fprintf(stderr, "open: %s\n", err); exit(1); }
    return db;
}

static int write_run(sqlite3 *db, run_record *r, int *already)
{
    char err[512];
    int64_t id;
    int rc = store_write_run(db, r, "local", already, &id, err, sizeof err);
    if (rc) fprintf(stderr, "write: %s\n", err);
    return rc;
}

static void test_schema_and_migrations(void)
{
    char path[1024], ref[1024];
    t_db_path("migrate", path, sizeof path);
    t_db_path("schema_ref", ref, sizeof ref);
    CHECK(store_latest_version() >= 2, "latest %d", store_latest_version());
    /* an "older" database: version 1 only, with a run in it */
    sqlite3 *db = NULL;
    char err[512];
    CHECK(store_open_version(path, 1, &db, err, sizeof err) == 0, "open v1: %s", err);
    CHECK(t_count(db, "PRAGMA user_version") == 1, "v1");
    CHECK(t_count(db, "SELECT count(*) FROM sqlite_master WHERE name = 'regression'") == 0, "no regression table yet");
    run_record r;
    int already;
    t_make_run(&r, 3, 10, 100, 0.01, 1, 1000);
    CHECK(write_run(db, &r, &already) == 0, "write into v1");
    rr_free(&r);
    store_close(db);
    /* reopening migrates to the latest and keeps the data */
    db = open_db(path);
    CHECK(t_count(db, "PRAGMA user_version") == store_latest_version(), "migrated");
    CHECK(t_count(db, "SELECT count(*) FROM run") == 1 && t_count(db, "SELECT count(*) FROM sample") == 30, "data kept");
    CHECK(t_count(db, "SELECT count(*) FROM regression") == 0, "regression table exists");
    CHECK(t_count(db, "PRAGMA journal_mode") != -1, "pragma");
    /* the migrated schema is exactly ci/schema.sql applied to an empty file */
    size_t n;
    char *text = read_file_all(QGMM_SCHEMA_FILE, 1 << 20, &n, err, sizeof err);
    sqlite3 *rdb;
    sqlite3_open(ref, &rdb);
    CHECK(text && sqlite3_exec(rdb, text, NULL, NULL, NULL) == SQLITE_OK, "schema.sql applies: %s", sqlite3_errmsg(rdb));
    free(text);
    sqlite3_stmt *a, *b;
    const char *q = "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name";
    sqlite3_prepare_v2(db, q, -1, &a, NULL);
    sqlite3_prepare_v2(rdb, q, -1, &b, NULL);
    int same = 1, rows = 0;
    for (;;) {
        int ra = sqlite3_step(a), rb = sqlite3_step(b);
        if (ra != rb) { same = 0; break; }
        if (ra != SQLITE_ROW) break;
        ++rows;
        for (int c = 0; c < 3; ++c) {
            const char *x = (const char *)sqlite3_column_text(a, c), *y = (const char *)sqlite3_column_text(b, c);
            if (!x != !y || (x && strcmp(x, y))) { same = 0; fprintf(stderr, "differs: %s / %s\n", x, y); }
        }
    }
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    CHECK(same && rows >= 10, "migrated schema == schema.sql (%d objects)", rows);
    /* STRICT: a text in an INTEGER column is refused */
    CHECK(sqlite3_exec(db, "INSERT INTO revision(sha, commit_time) VALUES('x', 'yesterday')", NULL, NULL, NULL) != SQLITE_OK,
          "STRICT tables");
    sqlite3_close(rdb);
    /* a newer schema is refused with a clear message, and left untouched */
    sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL);
    store_close(db);
    db = NULL;
    CHECK(store_open(path, &db, err, sizeof err) != 0, "newer schema must be refused");
    CHECK(strstr(err, "newer") && strstr(err, "99"), "message: %s", err);
    sqlite3 *raw;
    sqlite3_open(path, &raw);
    CHECK(t_count(raw, "PRAGMA user_version") == 99 && t_count(raw, "SELECT count(*) FROM run") == 1, "untouched");
    sqlite3_close(raw);
}

/* Migration 3 on a store written by schema 2 (and by a qgmm-dash that created its own
 * dash_token table): triage states mapped to detected/acknowledged/fixed/ignored with
 * ids, notes and tokens kept; the new kind and the new state names are accepted and the
 * old ones refused. */
static void test_migration3_triage_and_tokens(void)
{
    char path[1024], err[512];
    t_db_path("migrate3", path, sizeof path);
    sqlite3 *db = NULL;
    CHECK(store_open_version(path, 2, &db, err, sizeof err) == 0, "open v2: %s", err);
    run_record r;
    int already;
    t_make_run(&r, 5, 10, 100, 0.01, 3, 2000);
    CHECK(write_run(db, &r, &already) == 0, "write into v2");
    rr_free(&r);
    static const char *old_states[] = {"open", "confirmed", "false_positive", "fixed", "wontfix"};
    for (int i = 0; i < 5; ++i) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO regression(id, series_id, run_id, kind, severity, reason, status, note, detected_at, "
                 "updated_at) SELECT %d, (SELECT id FROM series ORDER BY id LIMIT 1 OFFSET %d), 1, 'perf', 'fail', "
                 "'r%d', '%s', %s, 5, 6",
                 10 + i, i, i, old_states[i], i == 4 ? "'known, accepted'" : "''");
        CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "v2 row %s: %s", old_states[i], sqlite3_errmsg(db));
    }
    CHECK(sqlite3_exec(db, "INSERT INTO regression(series_id, run_id, kind, severity, detected_at, updated_at, status) "
                           "VALUES(1, 1, 'numerics', 'fail', 1, 1, 'detected')", NULL, NULL, NULL) != SQLITE_OK,
          "v2 refuses the new state names");
    /* the table exactly as qgmm-dash (schema 2) created it on its own */
    CHECK(sqlite3_exec(db,
                       "CREATE TABLE IF NOT EXISTS dash_token ( id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
                       "token_hash TEXT NOT NULL UNIQUE, scope TEXT NOT NULL CHECK (scope IN ('ingest','triage','all')), "
                       "created_at INTEGER NOT NULL, revoked_at INTEGER, last_used_at INTEGER) STRICT;"
                       "INSERT INTO dash_token(name, token_hash, scope, created_at, revoked_at) VALUES"
                       "('a', 'sha256:aa', 'ingest', 1, NULL), ('b', 'sha256:bb', 'triage', 1, 7)",
                       NULL, NULL, NULL) == SQLITE_OK, "old dash_token: %s", sqlite3_errmsg(db));
    store_close(db);

    db = open_db(path);
    CHECK(t_count(db, "PRAGMA user_version") == store_latest_version() && store_latest_version() >= 3, "migrated to 3");
    CHECK(t_count(db, "SELECT count(*) FROM regression") == 5, "rows kept");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE id = 10 AND status = 'detected' AND reason = 'r0'") == 1, "open -> detected");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE id = 11 AND status = 'acknowledged'") == 1, "confirmed -> acknowledged");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE id = 12 AND status = 'ignored' AND note LIKE '%false_positive%'") == 1,
          "false_positive -> ignored, noted");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE id = 13 AND status = 'fixed' AND note = ''") == 1, "fixed kept");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE id = 14 AND status = 'ignored' "
                      "AND note = 'known, accepted [triaged wontfix before schema 3]'") == 1, "wontfix -> ignored, note kept");
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE series_id IN (SELECT id FROM series) AND run_id = 1") == 5,
          "references kept");
    CHECK(sqlite3_exec(db, "UPDATE regression SET status = 'confirmed' WHERE id = 10", NULL, NULL, NULL) != SQLITE_OK,
          "old state names refused after the migration");
    CHECK(sqlite3_exec(db, "UPDATE regression SET status = 'acknowledged' WHERE id = 10", NULL, NULL, NULL) == SQLITE_OK,
          "new state names accepted");
    CHECK(sqlite3_exec(db, "INSERT INTO regression(series_id, run_id, kind, severity, detected_at, updated_at) "
                           "VALUES(1, 1, 'changepoint', 'fail', 1, 1)", NULL, NULL, NULL) == SQLITE_OK,
          "kind changepoint: %s", sqlite3_errmsg(db));
    CHECK(t_count(db, "SELECT count(*) FROM regression WHERE kind = 'changepoint' AND status = 'detected'") == 1,
          "default state detected");
    CHECK(t_count(db, "SELECT count(*) FROM dash_token") == 2 &&
          t_count(db, "SELECT count(*) FROM dash_token WHERE name = 'b' AND revoked_at = 7") == 1, "tokens kept");
    CHECK(t_count(db, "SELECT count(*) FROM pragma_foreign_key_check") == 0,
          "foreign keys consistent");
    CHECK(t_count(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check <> 'ok'") == 0, "integrity");
    store_close(db);
}

static void test_killed_writer(void)
{
    char path[1024];
    t_db_path("killed", path, sizeof path);
    sqlite3 *db = open_db(path);
    run_record r;
    int already;
    t_make_run(&r, 2, 5, 100, 0.01, 2, 1000);
    CHECK(write_run(db, &r, &already) == 0, "first run");
    rr_free(&r);
    store_close(db);
    pid_t pid = fork();
    if (pid == 0) {
        /* the store's test hook: SIGKILL after 3 of 6 results are inserted */
        setenv("QGMM_BENCH_TEST_KILL_AFTER_RESULTS", "3", 1);
        sqlite3 *cdb = open_db(path);
        run_record cr;
        int al;
        t_make_run(&cr, 6, 5, 100, 0.01, 3, 2000);
        write_run(cdb, &cr, &al);
        _exit(0);  /* not reached */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child was killed (status %d)", status);
    db = open_db(path);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL);
    CHECK(sqlite3_step(st) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0, "integrity_check");
    sqlite3_finalize(st);
    CHECK(t_count(db, "SELECT count(*) FROM run") == 1, "killed run invisible: %lld runs", t_count(db, "SELECT count(*) FROM run"));
    CHECK(t_count(db, "SELECT count(*) FROM result") == 2 && t_count(db, "SELECT count(*) FROM sample") == 10,
          "no partial results");
    CHECK(t_count(db, "PRAGMA foreign_key_check") == -1, "foreign keys consistent");
    store_close(db);
}

static void test_concurrent_writers(void)
{
    char path[1024];
    t_db_path("concurrent", path, sizeof path);
    store_close(open_db(path));
    const int per = 15;
    pid_t kids[2];
    for (int k = 0; k < 2; ++k) {
        kids[k] = fork();
        if (kids[k] == 0) {
            sqlite3 *db = open_db(path);
            int bad = 0;
            for (int i = 0; i < per; ++i) {
                run_record r;
                int al;
                t_make_run(&r, 4, 20, 100 + k, 0.01, (unsigned)(k * 100 + i), 1000 + i);
                bad |= write_run(db, &r, &al);
                rr_free(&r);
            }
            store_close(db);
            _exit(bad ? 1 : 0);
        }
    }
    int ok = 1;
    for (int k = 0; k < 2; ++k) {
        int st;
        waitpid(kids[k], &st, 0);
        ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    CHECK(ok, "both writers succeeded");
    sqlite3 *db = open_db(path);
    CHECK(t_count(db, "SELECT count(*) FROM run") == 2 * per, "runs %lld", t_count(db, "SELECT count(*) FROM run"));
    CHECK(t_count(db, "SELECT count(*) FROM result") == 2 * per * 4, "results");
    CHECK(t_count(db, "SELECT count(*) FROM sample") == 2 * per * 4 * 20, "samples");
    CHECK(t_count(db, "SELECT count(*) FROM series") == 4, "one series per benchmark (same machine/device/backend)");
    store_close(db);
}

static void test_import_export(void)
{
    char p1[1024], p2[1024];
    t_db_path("export_src", p1, sizeof p1);
    t_db_path("import_dst", p2, sizeof p2);
    sqlite3 *a = open_db(p1), *b = open_db(p2);
    run_record r;
    int already;
    t_make_run(&r, 3, 7, 50, 0.02, 9, 5000);
    r.results[1].mismatched_bytes = 0;
    r.results[1].checked_bytes = 4096;
    rr_set(&r.results[1].threshold, "bit-exact");
    rr_set(&r.results[2].status, "unsupported");
    rr_set(&r.results[2].verdict, "unchecked");
    free(r.results[2].samples_us);
    r.results[2].samples_us = NULL;
    r.results[2].n_samples = 0;
    CHECK(write_run(a, &r, &already) == 0, "source run");
    rr_free(&r);
    run_record l;
    rr_init(&l);
    char err[1024];
    int64_t id;
    CHECK(store_resolve_run(a, "latest", &id, err, sizeof err) == 0, "resolve");
    CHECK(store_load_run(a, id, &l, err, sizeof err) == 0, "load: %s", err);
    json_buf jb;
    jb_init(&jb);
    run_to_json(&l, &jb, 1);
    int al = 0;
    long long rid = 0;
    CHECK(qgmm_store_import_json(b, jb.data, jb.len, "import", &al, &rid, NULL, err, sizeof err) == 0 && !al, "import: %s", err);
    CHECK(qgmm_store_import_json(b, jb.data, jb.len, "import", &al, &rid, NULL, err, sizeof err) == 0 && al,
          "second import is a no-op");
    CHECK(t_count(b, "SELECT count(*) FROM run") == 1 && t_count(b, "SELECT count(*) FROM sample") == 14, "counts");
    CHECK(t_count(b, "SELECT count(*) FROM result WHERE status = 'unsupported' AND median_us IS NULL") == 1, "unsupported kept");
    CHECK(t_count(b, "SELECT checked_bytes FROM result WHERE threshold = 'bit-exact'") == 4096, "numerics kept");
    /* same series fingerprints on both sides */
    CHECK(t_count(b, "SELECT count(*) FROM series") == 3, "series");
    /* re-export from b equals the export from a */
    run_record l2;
    rr_init(&l2);
    store_load_run(b, (int64_t)rid, &l2, err, sizeof err);
    json_buf jb2;
    jb_init(&jb2);
    run_to_json(&l2, &jb2, 1);
    CHECK(jb.len == jb2.len && memcmp(jb.data, jb2.data, jb.len) == 0, "round trip is byte-identical");

    /* malformed documents: refused with the field named, nothing written */
    struct { const char *from, *to, *expect; } bad[] = {
        {"\"version\": 1", "\"version\": 2", "version"},
        {"\"format\": \"qgmm-run\"", "\"format\": \"other\"", "format"},
        {"\"samples_us\": [", "\"samples_us\": [\"x\",", "samples_us[0]"},
        {"\"context\": 0", "\"context\": 7", "context"},
        {"\"status\": \"ok\"", "\"status\": \"great\"", "status"},
        {"\"started_at\": \"", "\"started_at\": \"19", "started_at"},
        {"\"hostname\": ", "\"hostname\": 5, \"x\": ", "hostname"},
        {"\"params\": {", "\"params\": {\"bad key\": 1, ", "params"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        /* a fresh uuid so idempotency does not mask the check */
        char *doc = strdup(jb.data);
        char *u = strstr(doc, "\"uuid\": \"");
        memcpy(u + 9, "00000000", 8);
        char *p = strstr(doc, bad[i].from);
        CHECK(p != NULL, "template has %s", bad[i].from);
        if (!p) { free(doc); continue; }
        size_t pre = (size_t)(p - doc);
        char *mod = malloc(strlen(doc) + strlen(bad[i].to) + 1);
        memcpy(mod, doc, pre);
        strcpy(mod + pre, bad[i].to);
        strcat(mod, p + strlen(bad[i].from));
        err[0] = 0;
        int rc = qgmm_store_import_json(b, mod, strlen(mod), "import", &al, &rid, NULL, err, sizeof err);
        CHECK(rc != 0, "case %zu accepted", i);
        CHECK(strstr(err, bad[i].expect) != NULL, "case %zu message names %s: %s", i, bad[i].expect, err);
        free(mod);
        free(doc);
    }
    const char *junk[] = {"", "{", "[1,2]", "{\"format\": \"qgmm-run\", \"version\": 1,}", "nul\x01l"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; ++i) {
        int rc = qgmm_store_import_json(b, junk[i], strlen(junk[i]), "import", &al, &rid, NULL, err, sizeof err);
        CHECK(rc != 0 && err[0], "junk %zu refused", i);
    }
    CHECK(t_count(b, "SELECT count(*) FROM run") == 1 && t_count(b, "SELECT count(*) FROM result") == 3 &&
              t_count(b, "SELECT count(*) FROM machine") == 1,
          "refusals changed nothing");
    jb_free(&jb);
    jb_free(&jb2);
    rr_free(&l);
    rr_free(&l2);
    store_close(a);
    store_close(b);
}

int main(void)
{
    test_schema_and_migrations();
    test_migration3_triage_and_tokens();
    test_killed_writer();
    test_concurrent_writers();
    test_import_export();
    return t_report("test_store");
}
