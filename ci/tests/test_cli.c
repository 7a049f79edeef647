/* test_cli.c — every subcommand answers --help (exit 0, a usage line); bad usage exits 2;
 * `import` of a malformed file exits 1 naming the problem and stores nothing; export ->
 * import through the CLI is idempotent. */
#include <string.h>
#include <sys/wait.h>

#include "runner_testutil.h"

int main(void)
{
    static char out[1 << 16];
    char cmd[4096];
    const char *subs[] = {"run", "gate", "compare", "history", "runs", "cases", "export", "import", "upload", "changepoints", "references"};
    snprintf(cmd, sizeof cmd, "%s --help 2>&1", QGMM_BENCH_EXE);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "usage:"), "top-level --help");
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; ++i) {
        snprintf(cmd, sizeof cmd, "%s %s --help 2>&1", QGMM_BENCH_EXE, subs[i]);
        int rc = t_sh(cmd, out, sizeof out);
        char want[64];
        snprintf(want, sizeof want, "usage: qgmm-bench %s", subs[i]);
        CHECK(rc == 0 && strstr(out, want), "%s --help: rc %d: %.200s", subs[i], rc, out);
    }
    snprintf(cmd, sizeof cmd, "%s frobnicate 2>&1", QGMM_BENCH_EXE);
    CHECK(t_sh(cmd, out, sizeof out) == 2, "unknown command exits 2");
    snprintf(cmd, sizeof cmd, "%s gate --bogus 2>&1", QGMM_BENCH_EXE);
    CHECK(t_sh(cmd, out, sizeof out) == 2, "unknown option exits 2");

    char db[1024], db2[1024];
    t_db_path("cli", db, sizeof db);
    t_db_path("cli2", db2, sizeof db2);
    /* a run document made by the library, exported through the CLI */
    sqlite3 *h;
    char err[512];
    if (store_open(db, &h, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    run_record r;
    int al;
    int64_t id;
    t_make_run(&r, 2, 5, 10, 0.01, 3, 1234);
    store_write_run(h, &r, "local", &al, &id, err, sizeof err);
    rr_free(&r);
    store_close(h);
    snprintf(cmd, sizeof cmd, "%s export --db %s -o %s/cli.json 2>&1", QGMM_BENCH_EXE, db, QGMM_TEST_TMP);
    CHECK(t_sh(cmd, out, sizeof out) == 0, "export: %s", out);
    snprintf(cmd, sizeof cmd, "%s import --db %s %s/cli.json 2>&1", QGMM_BENCH_EXE, db2, QGMM_TEST_TMP);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "imported"), "import: %s", out);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "already present"), "re-import: %s", out);
    snprintf(cmd, sizeof cmd, "printf '{\"format\": \"qgmm-run\", \"version\": 1, \"uuid\": 3}' > %s/bad.json && %s import --db %s %s/bad.json 2>&1",
             QGMM_TEST_TMP, QGMM_BENCH_EXE, db2, QGMM_TEST_TMP);
    CHECK(t_sh(cmd, out, sizeof out) == 1 && strstr(out, "uuid") && strstr(out, "nothing written"), "malformed: %s", out);
    snprintf(cmd, sizeof cmd, "%s runs --db %s 2>&1", QGMM_BENCH_EXE, db2);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "testhost"), "runs: %s", out);
    snprintf(cmd, sizeof cmd, "%s history --db %s bench1 2>&1", QGMM_BENCH_EXE, db2);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "bench1"), "history: %s", out);
    snprintf(cmd, sizeof cmd, "%s compare --db %s latest latest 2>&1", QGMM_BENCH_EXE, db2);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "1.000"), "compare: %s", out);
    sqlite3_open(db2, &h);
    CHECK(t_count(h, "SELECT count(*) FROM run") == 1, "one run after import, re-import and a refusal");
    sqlite3_close(h);
    return t_report("test_cli");
}
