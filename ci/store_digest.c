/* store_digest.c — the run-content digest of store.h: what "the same run" means when a
 * uuid arrives that is already stored. The run's identity fields and, per series
 * (benchmark, params, device, backend, metric) in that order, status, verdict and the raw
 * samples. Derived values (statistics, rates) and free-form maps (env, clocks) are left
 * out: they follow from these or do not change the measurement. A record and a stored run
 * are hashed through the same text. */
#include "store.h"
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void dg_field(sha256_ctx *h, const char *s)
{
    sha256_update(h, s ? s : "", s ? strlen(s) : 0);
    sha256_update(h, "\t", 1);
}

static void dg_int(sha256_ctx *h, long long v)
{
    char s[32];
    int n = snprintf(s, sizeof s, "%lld\t", v);
    sha256_update(h, s, (size_t)n);
}

static void dg_sample(sha256_ctx *h, double v)
{
    char s[40];
    int n = snprintf(s, sizeof s, "%.17g,", v);
    sha256_update(h, s, (size_t)n);
}

static void dg_head(sha256_ctx *h, const char *const f[8], long long t0, long long t1, int dirty)
{
    for (int i = 0; i < 8; ++i) dg_field(h, f[i]);
    dg_int(h, t0);
    dg_int(h, t1);
    dg_int(h, dirty);
    sha256_update(h, "\n", 1);
}

/* One series: its seven identity and outcome fields, then the samples. */
static void dg_series(sha256_ctx *h, const char *const f[7], size_t n, const double *samples)
{
    for (int k = 0; k < 7; ++k) dg_field(h, f[k]);
    dg_int(h, (long long)n);
    for (size_t s = 0; s < n; ++s) dg_sample(h, samples[s]);
    sha256_update(h, "\n", 1);
}

int store_run_digest(const run_record *r, char hex[65])
{
    size_t *order = rr_series_order(r);
    if (!order) return -1;
    sha256_ctx h;
    sha256_init(&h);
    const char *head[8] = {r->uuid, r->suite, r->reason, r->runner, r->runner_version, r->hostname, r->cpu, r->sha};
    dg_head(&h, head, (long long)r->started_at, (long long)r->finished_at, r->dirty);
    for (size_t i = 0; i < r->n_results; ++i) {
        const rr_result *x = &r->results[order[i]];
        const rr_context *c = &r->contexts[x->context];
        const char *f[7] = {x->benchmark, x->params_json, c->device_name, c->backend, x->metric, x->status, x->verdict};
        dg_series(&h, f, x->n_samples, x->samples_us);
    }
    free(order);
    sha256_final_hex(&h, hex);
    return 0;
}

static const char *col(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

int store_run_digest_db(sqlite3 *db, const char *uuid, char hex[65])
{
    sqlite3_stmt *st = NULL, *rs = NULL, *ss = NULL;
    double *samples = NULL;
    size_t cap = 0;
    int rc = -1;
    sha256_ctx h;
    sha256_init(&h);
    if (sqlite3_prepare_v2(db,
                           "SELECT r.id, r.uuid, r.suite, r.reason, r.runner, r.runner_version, m.hostname, m.cpu, "
                           "rv.sha, r.started_at, r.finished_at, r.dirty FROM run r "
                           "JOIN machine m ON m.id = r.machine_id JOIN revision rv ON rv.id = r.revision_id "
                           "WHERE r.uuid = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        goto done;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW) goto done;
    const char *head[8];
    for (int i = 0; i < 8; ++i) head[i] = col(st, i + 1);
    dg_head(&h, head, sqlite3_column_int64(st, 9), sqlite3_column_int64(st, 10), sqlite3_column_int(st, 11));
    if (sqlite3_prepare_v2(db,
                           "SELECT s.benchmark, s.params, d.name, s.backend, s.metric, x.status, x.verdict, x.id "
                           "FROM result x JOIN series s ON s.id = x.series_id JOIN device d ON d.id = s.device_id "
                           "WHERE x.run_id = ?1 ORDER BY s.benchmark, s.params, d.name, s.backend, s.metric",
                           -1, &rs, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT time_us FROM sample WHERE result_id = ?1 ORDER BY idx", -1, &ss, NULL) !=
            SQLITE_OK)
        goto done;
    sqlite3_bind_int64(rs, 1, sqlite3_column_int64(st, 0));
    int step;
    while ((step = sqlite3_step(rs)) == SQLITE_ROW) {
        const char *f[7];
        for (int k = 0; k < 7; ++k) f[k] = col(rs, k);
        sqlite3_reset(ss);
        sqlite3_bind_int64(ss, 1, sqlite3_column_int64(rs, 7));
        size_t n = 0;
        while (sqlite3_step(ss) == SQLITE_ROW) {
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                double *m = realloc(samples, cap * sizeof *m);
                if (!m) goto done;
                samples = m;
            }
            samples[n++] = sqlite3_column_double(ss, 0);
        }
        dg_series(&h, f, n, samples);
    }
    if (step == SQLITE_DONE) rc = 0;
done:
    sqlite3_finalize(st);
    sqlite3_finalize(rs);
    sqlite3_finalize(ss);
    free(samples);
    sha256_final_hex(&h, hex);
    return rc;
}
