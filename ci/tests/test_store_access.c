/* test_store_access.c — which commands may create, migrate or write a store: a missing
 * --db path is refused by the commands that do not create (runs, gate, changepoints,
 * export) and no file appears; a SQLite file that is not a qgmm store is refused by every
 * command, import and run included, and left byte for byte as it was; a read-only store
 * (file 0444 in a 0555 directory, commands run as an unprivileged user when the test runs
 * as root) is read by runs, export, gate --no-record and changepoints --no-record, and
 * gate with recording says the store is read-only. */
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner_testutil.h"

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 20];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char *c = malloc(*n + 1);
    memcpy(c, buf, *n);
    return c;
}

int main(void)
{
    static char out[1 << 16];
    char cmd[4096], db[1024], err[512];

    /* a missing path: refused, nothing created */
    snprintf(db, sizeof db, "%s/access-missing.db", QGMM_TEST_TMP);
    mkdir(QGMM_TEST_TMP, 0755);
    unlink(db);
    const char *readers[] = {"runs", "gate", "gate --no-record", "changepoints --all", "export", "history x",
                             "compare latest latest"};
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; ++i) {
        snprintf(cmd, sizeof cmd, "%s %s --db %s 2>&1", QGMM_BENCH_EXE, readers[i], db);
        int rc = t_sh(cmd, out, sizeof out);
        CHECK(rc == 2 && strstr(out, "no such results store"), "%s on a missing path: rc %d: %.200s", readers[i], rc, out);
        CHECK(access(db, F_OK) != 0, "%s on a missing path created %s", readers[i], db);
    }

    /* an unrelated SQLite file: refused by every command, untouched */
    char foreign[1024];
    snprintf(foreign, sizeof foreign, "%s/access-foreign.db", QGMM_TEST_TMP);
    unlink(foreign);
    sqlite3 *h;
    sqlite3_open(foreign, &h);
    sqlite3_exec(h, "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes(text) VALUES('mine');",
                 NULL, NULL, NULL);
    sqlite3_close(h);
    size_t n0 = 0, n1 = 0;
    char *before = slurp(foreign, &n0);
    const char *all[] = {"runs", "gate", "gate --no-record", "changepoints --all", "export", "import /dev/null"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        snprintf(cmd, sizeof cmd, "%s %s --db %s 2>&1", QGMM_BENCH_EXE, all[i], foreign);
        int rc = t_sh(cmd, out, sizeof out);
        CHECK(rc == 2 && strstr(out, "not a qgmm results store"), "%s on a foreign file: rc %d: %.200s", all[i], rc, out);
    }
    CHECK(store_open(foreign, &h, err, sizeof err) != 0 && strstr(err, "not a qgmm results store"),
          "store_open (run) refuses a foreign file: %s", err);
    char *after = slurp(foreign, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0) == 0, "the foreign file is unchanged");
    free(before);
    free(after);

    /* a read-only store */
    char dir[1024], ro[1100];
    snprintf(dir, sizeof dir, "%s/access-ro", QGMM_TEST_TMP);
    snprintf(ro, sizeof ro, "%s/results.db", dir);
    chmod(dir, 0755);
    unlink(ro);
    mkdir(dir, 0755);
    if (store_open(ro, &h, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    for (int k = 0; k < 4; ++k) {
        run_record r;
        int al;
        int64_t id;
        t_make_run(&r, 2, 5, 10, 0.01, 11 + (unsigned)k, 1000 + k);
        store_write_run(h, &r, "local", &al, &id, err, sizeof err);
        rr_free(&r);
    }
    store_close(h);  /* the last connection checkpoints and removes the -wal and -shm files */
    chmod(ro, 0444);
    chmod(dir, 0555);
    const char *as = "";
    if (geteuid() == 0) {
        if (system("setpriv --help >/dev/null 2>&1") != 0) {
            printf("test_store_access: no setpriv: the read-only part needs an unprivileged user; skipped\n");
            chmod(dir, 0755);
            return t_report("test_store_access");
        }
        as = "setpriv --reuid 65534 --regid 65534 --clear-groups ";
    }
    struct { const char *args; int rc; const char *want; } ros[] = {
        {"runs", 0, "testhost"},
        {"export", 0, "qgmm-run"},
        {"history bench1", 0, "bench1"},
        {"gate --no-record", 0, ""},
        {"changepoints --all --no-record", 0, ""},
        {"gate", 2, "read-only"},
    };
    for (size_t i = 0; i < sizeof ros / sizeof ros[0]; ++i) {
        snprintf(cmd, sizeof cmd, "%s%s %s --db %s 2>&1", as, QGMM_BENCH_EXE, ros[i].args, ro);
        int rc = t_sh(cmd, out, sizeof out);
        CHECK(rc == ros[i].rc && strstr(out, ros[i].want) && !strstr(out, "attempt to write"),
              "%s on a read-only store: rc %d: %.300s", ros[i].args, rc, out);
    }
    snprintf(cmd, sizeof cmd, "ls %s", dir);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strcmp(out, "results.db\n") == 0, "nothing new beside the store: %s", out);
    chmod(dir, 0755);
    chmod(ro, 0644);
    return t_report("test_store_access");
}
