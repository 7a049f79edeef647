/* runner_testutil.c — see runner_testutil.h. */
#include "runner_testutil.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int t_failures, t_checks;

int t_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, t_checks, t_failures);
    return t_failures ? 1 : 0;
}

void t_db_path(const char *name, char *out, size_t cap)
{
    mkdir(QGMM_TEST_TMP, 0755);
    snprintf(out, cap, "%s/%s.db", QGMM_TEST_TMP, name);
    const char *suf[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; ++i) {
        char p[1100];
        snprintf(p, sizeof p, "%s%s", out, suf[i]);
        unlink(p);
    }
}

static double urand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xFFFFFF) / (double)0x1000000;
}

void t_make_run(run_record *r, int nres, int n, double center, double noise, unsigned seed, long long t)
{
    rr_init(r);
    rr_new_uuid(r->uuid);
    rr_set(&r->suite, "synthetic");
    rr_set(&r->runner, "test");
    rr_set(&r->runner_version, "0");
    rr_set(&r->hostname, "testhost");
    rr_set(&r->cpu, "Test CPU");
    rr_set(&r->sha, "0123456789012345678901234567890123456789");
    r->started_at = t;
    r->finished_at = t + 1;
    rr_context *c = rr_add_context(r);
    rr_set(&c->backend, "cpu");
    rr_set(&c->device_name, "Test CPU");
    rr_set(&c->device_kind, "cpu");
    for (int i = 0; i < nres; ++i) {
        rr_result *x = rr_add_result(r);
        char b[32];
        snprintf(b, sizeof b, "bench%d", i);
        rr_set(&x->benchmark, b);
        rr_set(&x->params_json, "{\"m\":1}");
        rr_set(&x->verdict, "pass");
        x->context = 0;
        x->bytes = 1000000;
        x->samples_us = malloc((size_t)n * sizeof(double));
        x->n_samples = (size_t)n;
        for (int k = 0; k < n; ++k) {
            /* sum of uniforms: roughly normal, deterministic */
            double u = urand(&seed) + urand(&seed) + urand(&seed) - 1.5;
            x->samples_us[k] = center * (1.0 + noise * u);
        }
    }
}

long long t_count(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int t_sh(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, cap - 1, p) : 0;
    out[n] = 0;
    int st = p ? pclose(p) : -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
