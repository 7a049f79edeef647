/* bench_exec.c — event timing; see bench_exec.h. */
#include "bench_exec.h"
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 32
/* the fewest samples whose median interval is judged (below, min..max covers the median with
 * less than 97 % probability, so "converged" would mean little) */
#define CI_MIN_SAMPLES 8

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int failed(bench_samples *out, qgmm_context *ctx, qgmm_status st, const char *what)
{
    out->status = st;
    snprintf(out->message, sizeof out->message, "%s: %s: %s", what, qgmm_status_string(st), qgmm_last_error(ctx));
    return -1;
}

int bench_time(qgmm_context *ctx, bench_enqueue_fn fn, void *user, const bench_cfg *cfg, qgmm_buffer *flush,
               bench_samples *out)
{
    memset(out, 0, sizeof *out);
    qgmm_status st;
    /* warm-up: compiles pipelines / loads modules / faults pages in */
    double t0 = now_ms(), last = 0;
    int w = 0;
    while (w < cfg->warmup_min || now_ms() - t0 < cfg->warmup_ms) {
        double a = now_ms();
        if ((st = fn(user)) != QGMM_OK) return failed(out, ctx, st, "warm-up");
        if ((st = qgmm_synchronize(ctx)) != QGMM_OK) return failed(out, ctx, st, "warm-up synchronize");
        last = now_ms() - a;
        ++w;
        if (w >= 1000) break;
    }
    out->warmup = w;
    double est = last > 1e-3 ? last : 1e-3;
    long n = (long)(cfg->budget_ms / est);
    if (n < cfg->min_samples) n = cfg->min_samples;
    if (n > cfg->max_samples) n = cfg->max_samples;
    out->us = malloc((size_t)n * sizeof *out->us);
    if (!out->us) return failed(out, ctx, QGMM_ERR_OUT_OF_MEMORY, "samples");

    qgmm_event *ev[2 * BATCH] = {0};
    for (int i = 0; i < 2 * BATCH; ++i)
        if ((st = qgmm_event_create(ctx, &ev[i])) != QGMM_OK) {
            for (int k = 0; k < i; ++k) qgmm_event_destroy(ev[k]);
            return failed(out, ctx, st, "event create");
        }
    int rc = 0;
    long next_check = cfg->ci_pct <= 0 ? n : cfg->min_samples > CI_MIN_SAMPLES ? cfg->min_samples : CI_MIN_SAMPLES;
    for (long done = 0; done < n && rc == 0;) {
        long b = n - done < BATCH ? n - done : BATCH;
        if (next_check > done && next_check - done < b) b = next_check - done;
        for (long i = 0; i < b; ++i) {
            if (flush && (st = qgmm_buffer_fill(flush, 0, qgmm_buffer_size(flush), (uint8_t)i)) != QGMM_OK) {
                rc = failed(out, ctx, st, "cache flush");
                break;
            }
            if ((st = qgmm_event_record(ev[2 * i])) != QGMM_OK) { rc = failed(out, ctx, st, "event record"); break; }
            if ((st = fn(user)) != QGMM_OK) { rc = failed(out, ctx, st, "execute"); break; }
            if ((st = qgmm_event_record(ev[2 * i + 1])) != QGMM_OK) { rc = failed(out, ctx, st, "event record"); break; }
        }
        if (rc) break;
        for (long i = 0; i < b; ++i) {
            double ms = 0;
            if ((st = qgmm_event_elapsed_ms(ev[2 * i], ev[2 * i + 1], &ms)) != QGMM_OK) {
                rc = failed(out, ctx, st, "event elapsed");
                break;
            }
            out->us[out->n++] = ms * 1e3;
        }
        done += b;
        if (rc == 0 && done >= next_check && done < n) {
            if (stats_median_ci_rel(out->us, out->n) * 100.0 <= cfg->ci_pct) break;
            next_check = done + (done / 4 > 8 ? done / 4 : 8);
        }
    }
    out->ci_rel = stats_median_ci_rel(out->us, out->n);
    /* bad offsets or an asynchronous device error surface here */
    if (rc == 0 && (st = qgmm_synchronize(ctx)) != QGMM_OK) rc = failed(out, ctx, st, "synchronize after timing");
    for (int i = 0; i < 2 * BATCH; ++i) qgmm_event_destroy(ev[i]);
    return rc;
}

void bench_samples_free(bench_samples *s)
{
    free(s->us);
    s->us = NULL;
    s->n = 0;
}
