/* runrec.c — see runrec.h. */
#define _GNU_SOURCE
#include "runrec.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void rr_set(char **dst, const char *src)
{
    char *n = strdup(src ? src : "");
    if (!n) { perror("qgmm-bench: out of memory"); exit(2); }
    free(*dst);
    *dst = n;
}

void rr_set_clipped(char **dst, const char *src, size_t max)
{
    rr_set(dst, src);
    size_t n = strlen(*dst);
    if (n <= max) return;
    n = max;
    while (n > 0 && ((unsigned char)(*dst)[n] & 0xC0) == 0x80) --n; /* not inside a character */
    (*dst)[n] = 0;
}

void rr_init(run_record *r)
{
    memset(r, 0, sizeof *r);
    char **s[] = {&r->suite, &r->reason, &r->runner, &r->runner_version, &r->env_json, &r->hostname,
                  &r->cpu, &r->os, &r->sha, &r->subject, &r->branch};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; ++i) rr_set(s[i], "");
    rr_set(&r->env_json, "{}");
    rr_set(&r->reason, "manual");
    r->cores = r->memory_bytes = r->commit_time = RR_UNSET_I;
}

static void free_context(rr_context *c)
{
    free(c->backend); free(c->device_name); free(c->device_kind); free(c->device_arch);
    free(c->describe); free(c->driver); free(c->runtime); free(c->clocks_json); free(c->code_hash);
}

static void free_result(rr_result *x)
{
    free(x->benchmark); free(x->params_json); free(x->label); free(x->shape); free(x->role);
    free(x->metric); free(x->unit); free(x->status); free(x->verdict); free(x->message);
    free(x->samples_us); free(x->ceiling); free(x->threshold); free(x->output_hash);
    free(x->code_hash);
    for (size_t i = 0; i < x->n_steps; ++i) { free(x->steps[i].phase); free(x->steps[i].step); }
    free(x->steps);
}

rr_step *rr_add_step(rr_result *x, const char *phase, const char *step, double median_us, int64_t n)
{
    rr_step *s = realloc(x->steps, (x->n_steps + 1) * sizeof *s);
    if (!s) return NULL;
    x->steps = s;
    s = &x->steps[x->n_steps++];
    memset(s, 0, sizeof *s);
    rr_set(&s->phase, phase);
    rr_set(&s->step, step);
    s->median_us = median_us;
    s->n = n;
    return s;
}

void rr_free(run_record *r)
{
    free(r->suite); free(r->reason); free(r->runner); free(r->runner_version); free(r->env_json);
    free(r->hostname); free(r->cpu); free(r->os); free(r->sha); free(r->subject); free(r->branch);
    for (size_t i = 0; i < r->n_contexts; ++i) free_context(&r->contexts[i]);
    for (size_t i = 0; i < r->n_results; ++i) free_result(&r->results[i]);
    free(r->contexts);
    free(r->results);
    memset(r, 0, sizeof *r);
}

rr_context *rr_add_context(run_record *r)
{
    if (r->n_contexts == r->cap_contexts) {
        size_t nc = r->cap_contexts ? r->cap_contexts * 2 : 4;
        rr_context *n = realloc(r->contexts, nc * sizeof *n);
        if (!n) return NULL;
        r->contexts = n;
        r->cap_contexts = nc;
    }
    rr_context *c = &r->contexts[r->n_contexts++];
    memset(c, 0, sizeof *c);
    char **s[] = {&c->backend, &c->device_name, &c->device_kind, &c->device_arch, &c->describe,
                  &c->driver, &c->runtime, &c->code_hash};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; ++i) rr_set(s[i], "");
    rr_set(&c->device_kind, "other");
    rr_set(&c->clocks_json, "{}");
    c->device_memory_bytes = RR_UNSET_I;
    return c;
}

rr_result *rr_add_result(run_record *r)
{
    if (r->n_results == r->cap_results) {
        size_t nc = r->cap_results ? r->cap_results * 2 : 64;
        rr_result *n = realloc(r->results, nc * sizeof *n);
        if (!n) return NULL;
        r->results = n;
        r->cap_results = nc;
    }
    rr_result *x = &r->results[r->n_results++];
    memset(x, 0, sizeof *x);
    char **s[] = {&x->benchmark, &x->label, &x->shape, &x->message, &x->ceiling,
                  &x->threshold, &x->output_hash, &x->code_hash};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; ++i) rr_set(s[i], "");
    rr_set(&x->params_json, "{}");
    rr_set(&x->role, "case");
    rr_set(&x->metric, "time");
    rr_set(&x->unit, "us");
    rr_set(&x->status, "ok");
    rr_set(&x->verdict, "unchecked");
    x->bytes = x->flops = x->mismatched_bytes = x->checked_bytes = RR_UNSET_I;
    x->max_abs_err = x->rel_err = x->sqnr_db = NAN;
    x->gbps = x->tflops = x->pct_of_ceiling = NAN;
    return x;
}

int rr_cmp_series(const run_record *r, size_t i, size_t k)
{
    const rr_result *x = &r->results[i], *y = &r->results[k];
    int c = strcmp(x->benchmark, y->benchmark);
    if (!c) c = strcmp(x->params_json, y->params_json);
    if (!c) c = strcmp(r->contexts[x->context].device_name, r->contexts[y->context].device_name);
    if (!c) c = strcmp(r->contexts[x->context].backend, r->contexts[y->context].backend);
    if (!c) c = strcmp(x->metric, y->metric);
    return c;
}

static int by_series(const void *a, const void *b, void *rec)
{
    size_t i = *(const size_t *)a, k = *(const size_t *)b;
    int c = rr_cmp_series(rec, i, k);
    return c ? c : (i < k ? -1 : i > k);
}

size_t *rr_series_order(const run_record *r)
{
    size_t *idx = malloc((r->n_results + 1) * sizeof *idx);
    if (!idx) return NULL;
    for (size_t i = 0; i < r->n_results; ++i) idx[i] = i;
    qsort_r(idx, r->n_results, sizeof *idx, by_series, (void *)r);
    return idx;
}

double rr_median(const rr_result *res)
{
    if (res->n_samples == 0) return NAN;
    return stats_quantile(res->samples_us, res->n_samples, 0.5);
}

static void derive_rates(rr_result *x)
{
    double med = rr_median(x);
    x->gbps = x->tflops = x->pct_of_ceiling = NAN;
    if (!(med > 0)) return;
    if (x->bytes != RR_UNSET_I && x->bytes > 0) x->gbps = (double)x->bytes / (med * 1e-6) / 1e9;
    if (x->flops != RR_UNSET_I && x->flops > 0) x->tflops = (double)x->flops / (med * 1e-6) / 1e12;
}

static void derive_pct(run_record *r, rr_result *x)
{
    if (!x->ceiling[0]) return;
    for (size_t j = 0; j < r->n_results; ++j) {
        const rr_result *c = &r->results[j];
        if (c->context != x->context || strcmp(c->benchmark, x->ceiling) != 0) continue;
        if (isfinite(x->tflops) && isfinite(c->tflops) && c->tflops > 0)
            x->pct_of_ceiling = 100.0 * x->tflops / c->tflops;
        else if (isfinite(x->gbps) && isfinite(c->gbps) && c->gbps > 0)
            x->pct_of_ceiling = 100.0 * x->gbps / c->gbps;
        break;
    }
}

void rr_derive(run_record *r)
{
    for (size_t i = 0; i < r->n_results; ++i) derive_rates(&r->results[i]);
    for (size_t i = 0; i < r->n_results; ++i) derive_pct(r, &r->results[i]);
}

void rr_derive_one(run_record *r, size_t i)
{
    derive_rates(&r->results[i]);
    derive_pct(r, &r->results[i]);
}

void rr_drop_last_context(run_record *r)
{
    if (r->n_contexts) free_context(&r->contexts[--r->n_contexts]);
}

void rr_format_time(int64_t t, char out[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int rr_parse_time(const char *s, int64_t *out)
{
    int Y, M, D, h, m, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 || n != 19) return -1;
    const char *p = s + n;
    if (*p == '.') {
        ++p;
        if (*p < '0' || *p > '9') return -1;
        while (*p >= '0' && *p <= '9') ++p;
    }
    if (strcmp(p, "Z") != 0) return -1;
    if (Y < 1970 || Y > 9999 || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60) return -1;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = Y - 1900; tm.tm_mon = M - 1; tm.tm_mday = D;
    tm.tm_hour = h; tm.tm_min = m; tm.tm_sec = sec;
    time_t t = timegm(&tm);
    struct tm back;
    gmtime_r(&t, &back);
    if (back.tm_mday != D && sec != 60) return -1;  /* February 30 and the like */
    *out = (int64_t)t;
    return 0;
}

void rr_new_uuid(char out[40])
{
    unsigned char b[16];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    if (got != sizeof b) {  /* no urandom: time + pid + rand, still unique enough per host */
        srand((unsigned)time(NULL) ^ (unsigned)clock());
        for (int i = 0; i < 16; ++i) b[i] = (unsigned char)rand();
    }
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}
