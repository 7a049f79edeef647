/* test_smoke_e2e.c — the smoke suite end to end on the CPU backend into a fresh database:
 * `run` records every case (plus ceilings and canary) in one run, the table is printed,
 * `gate` reaches a verdict (0 or 1, never a usage/database error), and the stored run
 * exports and re-imports. (Kills and --resume: test_durable.c. Vulkan/cuda are exercised the same way by CI's
 * `qgmm-bench run --backend all`; this test pins the path that needs no GPU.) */
#include <string.h>
#include <sys/wait.h>

#include "runner_testutil.h"

int main(void)
{
    static char out[1 << 18];
    char db[1024], db2[1024], cmd[4096];
    t_db_path("smoke_e2e", db, sizeof db);
    t_db_path("smoke_e2e_copy", db2, sizeof db2);
    snprintf(cmd, sizeof cmd, "%s cases --suite smoke | wc -l", QGMM_BENCH_EXE);
    t_sh(cmd, out, sizeof out);
    long ncases = atol(out);
    CHECK(ncases >= 20, "smoke has %ld cases", ncases);
    /* --backend all: cpu, plus Vulkan on lavapipe where the plugin was built (CI) */
    snprintf(cmd, sizeof cmd, "%s run --suite smoke --backend all --db %s --reason test --budget-ms 5 2>/dev/null",
             QGMM_BENCH_EXE, db);
    int rc = t_sh(cmd, out, sizeof out);
    CHECK(rc == 0, "run exit %d", rc);
    CHECK(strstr(out, "median") && strstr(out, "ceiling.copy") && strstr(out, "canary"), "table printed");
    sqlite3 *h;
    sqlite3_open(db, &h);
    CHECK(t_count(h, "SELECT count(*) FROM run WHERE state = 'complete'") == 1, "one run, complete");
    long long nctx = t_count(h, "SELECT count(*) FROM context");
    printf("contexts: %lld (cpu%s)\n", nctx, nctx > 1 ? " + others" : " only");
    CHECK(nctx >= 1 && t_count(h, "SELECT count(*) FROM context WHERE backend = 'cpu'") == 1, "cpu context");
    /* per context: every case + copy + 4 gemm ceilings + canary */
    CHECK(t_count(h, "SELECT count(*) FROM result") == nctx * (ncases + 6), "results %lld", t_count(h, "SELECT count(*) FROM result"));
    CHECK(t_count(h, "SELECT count(*) FROM result WHERE status = 'ok' AND n_samples >= 3") >= nctx * ncases, "timed");
    CHECK(t_count(h, "SELECT count(*) FROM result r JOIN series s ON s.id = r.series_id WHERE s.role = 'case' AND r.verdict = 'unchecked'") == 0,
          "every case checked");
    CHECK(t_count(h, "SELECT count(*) FROM result WHERE output_hash LIKE 'fnv1a64c:%'") == nctx * ncases, "output hashes");
    CHECK(t_count(h, "SELECT count(*) FROM context WHERE code_hash LIKE 'fnv1a64:%'") == nctx, "code hash");
    CHECK(t_count(h, "SELECT count(*) FROM result WHERE pct_of_ceiling > 0") >= nctx * ncases, "%% of ceiling");
    /* the same case on every backend gives the same output bytes (casts are bit-exact) */
    CHECK(t_count(h, "SELECT count(*) FROM (SELECT s.benchmark, s.params FROM result r JOIN series s ON s.id = r.series_id "
                     "WHERE s.role = 'case' AND r.mismatched_bytes = 0 GROUP BY 1, 2 HAVING count(DISTINCT r.output_hash) > 1)") == 0,
          "exact cases hash the same on every backend");
    /* the MoE composite cases carry their per-step times (forward: two casts and a GEMM) */
    CHECK(t_count(h, "SELECT count(DISTINCT result_id) FROM result_step") == nctx * 2, "composite cases have steps");
    CHECK(t_count(h, "SELECT count(*) FROM result_step p JOIN result r ON r.id = p.result_id JOIN series s ON "
                     "s.id = r.series_id WHERE s.benchmark LIKE 'moe_experts.forward.%' AND p.phase = 'forward' AND "
                     "p.median_us > 0 AND p.n > 0") == nctx * 3,
          "forward steps: %lld", t_count(h, "SELECT count(*) FROM result_step"));
    long long nsteps = t_count(h, "SELECT count(*) FROM result_step");
    sqlite3_close(h);
    snprintf(cmd, sizeof cmd, "%s report --db %s --markdown 2>&1", QGMM_BENCH_EXE, db);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "### Composite cases step by step") &&
              strstr(out, "| forward | quantize_fp8_rowwise x |"),
          "report shows the steps: %s", out);
    snprintf(cmd, sizeof cmd, "%s gate --db %s 2>&1", QGMM_BENCH_EXE, db);
    rc = t_sh(cmd, out, sizeof out);
    CHECK((rc == 0 || rc == 1) && strstr(out, "gate: "), "gate verdict (exit %d): %s", rc, out);
    printf("%s", out);
    /* two runners writing to the same database at once: both runs stored */
    snprintf(cmd, sizeof cmd,
             "(%s run --suite smoke --backend cpu --db %s --filter pad --no-ceilings --budget-ms 1 >/dev/null 2>&1 & "
             " %s run --suite smoke --backend cpu --db %s --filter pad --no-ceilings --budget-ms 1 >/dev/null 2>&1 & wait)",
             QGMM_BENCH_EXE, db, QGMM_BENCH_EXE, db);
    t_sh(cmd, out, sizeof out);
    sqlite3_open(db, &h);
    CHECK(t_count(h, "SELECT count(*) FROM run") == 3, "concurrent runners: %lld runs", t_count(h, "SELECT count(*) FROM run"));
    CHECK(t_count(h, "SELECT count(*) FROM result WHERE run_id IN (SELECT id FROM run ORDER BY id DESC LIMIT 2)") == 4,
          "concurrent runners: every result");
    sqlite3_close(h);
    snprintf(cmd, sizeof cmd, "%s export --db %s --run 1 | %s import --db %s - 2>&1", QGMM_BENCH_EXE, db, QGMM_BENCH_EXE, db2);
    CHECK(t_sh(cmd, out, sizeof out) == 0 && strstr(out, "imported"), "export | import: %s", out);
    sqlite3_open(db2, &h);
    CHECK(t_count(h, "SELECT count(*) FROM result_step") == nsteps, "the steps survive export | import");
    sqlite3_close(h);
    return t_report("test_smoke_e2e");
}
