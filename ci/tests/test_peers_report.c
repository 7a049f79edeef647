/* test_peers_report.c — `run --peers torch` where python3 has no torch (one line, the run
 * stored and complete, exit 0) and with a mock torch (its context and results in the same
 * run; unsupported cases recorded as such; FP8 GEMM peers name use_fast_accum=True);
 * `report --markdown` on that run; and the reference worker: a Vulkan (lavapipe in CI)
 * run stores the same results as one computing every reference in line (--serial-checks). */
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#include "runner_testutil.h"

static char g_dir[1024];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* A `torch` package under g_dir/<name>/torch with this body. */
static void fake_torch(const char *name, const char *body)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/torch", g_dir, name);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/torch/__init__.py", g_dir, name);
    write_file(p, body);
}

static const char MOCK_TORCH[] =
    "import sys\n"
    "from unittest import mock\n"
    "t = mock.MagicMock(name='torch')\n"
    "t.__version__ = '0.0.0+mock'\n"
    "t.__file__ = __file__\n"
    "t.cuda.is_available.return_value = True\n"
    "t.cuda.Event.return_value.elapsed_time.return_value = 0.25\n"
    "p = t.cuda.get_device_properties.return_value\n"
    "p.name, p.major, p.minor, p.total_memory = 'Mock GPU', 9, 0, 80 << 30\n"
    "t.compile.side_effect = lambda f: f\n"
    "sys.modules['torch'] = t\n";

static long long count(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    long long n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) n = t_count(h, sql);
    sqlite3_close(h);
    return n;
}

static void peers_absent(void)
{
    char db[1100], cmd[4000], out[4096];
    t_db_path("peers_absent", db, sizeof db);
    fake_torch("notorch", "raise ImportError('no torch on this machine (test)')\n");
    snprintf(cmd, sizeof cmd,
             "PYTHONPATH=%s/notorch %s run --suite smoke --backend cpu --filter gemm.m.bf16 --no-ceilings "
             "--ref-cache none --budget-ms 2 --db %s --peers torch 2>&1 >/dev/null | grep -c -- '--peers torch'",
             g_dir, QGMM_BENCH_EXE, db);
    t_sh(cmd, out, sizeof out);
    CHECK(atoi(out) == 1, "want one line about the missing peers, got %s", out);
    snprintf(cmd, sizeof cmd,
             "PYTHONPATH=%s/notorch %s run --suite smoke --backend cpu --filter gemm.m.bf16 --no-ceilings "
             "--ref-cache none --budget-ms 2 --db %s --peers torch 2>&1 >/dev/null | grep -- '--peers torch'",
             g_dir, QGMM_BENCH_EXE, db);
    int rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 0 && strstr(out, "no PyTorch peers on this machine") && strstr(out, "no torch on this machine (test)"),
          "the line names why: %s", out);
    snprintf(cmd, sizeof cmd, "%s run --suite smoke --backend cpu --filter gemm.m.bf16 --no-ceilings --ref-cache none "
             "--budget-ms 2 --db %s --peers torch,nope 2>&1", QGMM_BENCH_EXE, db);
    rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 2 && strstr(out, "unknown peer \"nope\""), "an unknown peer is a usage error: rc %d %s", rc, out);
    CHECK(count(db, "SELECT count(*) FROM run_status WHERE state = 'complete'") == 2, "both runs complete");
    CHECK(count(db, "SELECT count(*) FROM context WHERE backend = 'torch'") == 0, "no torch context");
}

static void peers_mock_and_report(void)
{
    char db[1100], cmd[4000], out[16384];
    t_db_path("peers_mock", db, sizeof db);
    fake_torch("mocktorch", MOCK_TORCH);
    snprintf(cmd, sizeof cmd,
             "PYTHONPATH=%s/mocktorch %s run --suite smoke --backend cpu --filter gemm.m --ref-cache none "
             "--budget-ms 2 --db %s --peers torch >/dev/null 2>&1",
             g_dir, QGMM_BENCH_EXE, db);
    int rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 0, "run --peers torch with a mock torch: exit %d", rc);
    CHECK(count(db, "SELECT count(*) FROM run_status WHERE state = 'complete'") == 1, "one complete run");
    CHECK(count(db, "SELECT count(DISTINCT run_id) FROM context") == 1, "peers in the same run");
    CHECK(count(db, "SELECT count(*) FROM result x JOIN context c ON c.id = x.context_id WHERE c.backend = 'torch'") ==
              count(db, "SELECT count(*) FROM result x JOIN series s ON s.id = x.series_id "
                        "WHERE s.backend = 'cpu' AND s.role = 'case'"),
          "one peer result per case");
    CHECK(count(db, "SELECT count(*) FROM result x JOIN series s ON s.id = x.series_id WHERE s.backend = 'torch' AND "
                    "s.benchmark LIKE 'gemm.m.fp8_rowwise%' AND x.status = 'ok' AND "
                    "x.message LIKE '%use_fast_accum=True%'") == 1,
          "the FP8 rowwise GEMM peer states its accumulation");
    CHECK(count(db, "SELECT count(*) FROM result x JOIN series s ON s.id = x.series_id WHERE s.backend = 'torch' AND "
                    "s.benchmark LIKE 'gemm.m.mxfp8%' AND x.status = 'unsupported' AND x.message <> ''") == 1,
          "a peer that cannot do the case's work is unsupported, with why");
    CHECK(count(db, "SELECT count(*) FROM result x JOIN series s ON s.id = x.series_id WHERE s.backend = 'torch' AND "
                    "x.verdict = 'pass'") == 0,
          "peers are never a pass");

    snprintf(cmd, sizeof cmd, "%s report --db %s --markdown", QGMM_BENCH_EXE, db);
    rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 0, "report: exit %d", rc);
    CHECK(strstr(out, "### Ceilings and canary") && strstr(out, "### gemm.m.fp8_rowwise") &&
              strstr(out, "| case | shape | cpu | torch | cpu / torch |") && strstr(out, "unsupported") &&
              strstr(out, "x |"),
          "report tables: %s", out);
    snprintf(cmd, sizeof cmd, "%s report --db %s --run 999 2>&1", QGMM_BENCH_EXE, db);
    rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 2, "report of a missing run: exit %d (%s)", rc, out);
}

/* The stored results of a run that decide anything (timings aside), one line each. */
static void results_of(const char *db, char *out, size_t cap)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    out[0] = 0;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h,
                           "SELECT s.backend || '|' || s.benchmark || '|' || s.params || '|' || x.status || '|' || "
                           "x.verdict || '|' || x.output_hash || '|' || x.threshold || '|' || "
                           "coalesce(x.checked_bytes, '') || '|' || coalesce(x.mismatched_bytes, '') || '|' || "
                           "x.message FROM result x JOIN series s ON s.id = x.series_id ORDER BY 1",
                           -1, &st, NULL) == SQLITE_OK)
        while (sqlite3_step(st) == SQLITE_ROW && n + 1 < cap)
            n += (size_t)snprintf(out + n, cap - n, "%s\n", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

static void worker_equals_serial(void)
{
    char dbs[1100], dbw[1100], cmd[4000], a[65536], b[65536];
    t_db_path("refs_serial", dbs, sizeof dbs);
    t_db_path("refs_worker", dbw, sizeof dbw);
    const char *args = "run --suite smoke --backend vulkan --no-ceilings --ref-cache none --budget-ms 2 "
                       "--filter .";
    snprintf(cmd, sizeof cmd, "%s %s --serial-checks --db %s >/dev/null 2>&1", QGMM_BENCH_EXE, args, dbs);
    if (t_sh(cmd, a, sizeof a) != 0) {
        printf("no Vulkan device here: the worker comparison is skipped\n");
        return;
    }
    snprintf(cmd, sizeof cmd, "%s %s --db %s 2>&1 >/dev/null | grep -c 'reference worker computed'", QGMM_BENCH_EXE,
             args, dbw);
    t_sh(cmd, a, sizeof a);
    CHECK(atoi(a) == 1, "the worker computed the references (%s)", a);
    results_of(dbs, a, sizeof a);
    results_of(dbw, b, sizeof b);
    CHECK(strlen(a) > 100 && strcmp(a, b) == 0, "worker and serial results differ:\n--- serial\n%s\n--- worker\n%s", a,
          b);
    CHECK(strstr(a, "vulkan|fp8_rowwise") && strstr(a, "output hash vs the cpu reference"),
          "Vulkan's exact cases checked by hash: %s", a);
}

int main(void)
{
    mkdir(QGMM_TEST_TMP, 0755);
    snprintf(g_dir, sizeof g_dir, "%s/peers_report", QGMM_TEST_TMP);
    mkdir(g_dir, 0755);
    peers_absent();
    peers_mock_and_report();
    worker_equals_serial();
    return t_report("test_peers_report");
}
