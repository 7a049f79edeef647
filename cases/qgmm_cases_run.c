/*
 * qgmm_cases_run.c — instances: buffers with poisoned guard bands, prepare / execute /
 * check / release, and the comparison every EXACT case shares.
 *
 * The check runs the op twice with two different poison bytes. A byte the op must write
 * (inside an output view) holds the same value after both runs; a byte it must not touch
 * (guard bands, gaps between strided elements, GEMM rows past the last group) holds the
 * poison of each run. That finds unwritten elements and stray writes on any backend,
 * without trusting the reference — which is why cpu-vs-cpu still checks something.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, setenv */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qgmm_cases_impl.h"
#include "qgmm_thresholds.h"

#define POISON_A 0xA5u
#define POISON_B 0x5Au

_Thread_local qgmm_case_clocks qc_clk;

static double now_ms(void);
double qc_now(void) { return now_ms() * 1e-3; }

void qgmm_case_clocks_get(qgmm_case_clocks *out) { *out = qc_clk; }

static qgmm_case_output_hook g_hook;
static void *g_hook_user;

void qgmm_case_set_output_hook(qgmm_case_output_hook hook, void *user)
{
    g_hook = hook;
    g_hook_user = user;
}

const char *qgmm_verdict_name(qgmm_verdict v)
{
    switch (v) {
    case QGMM_VERDICT_PASS: return "PASS";
    case QGMM_VERDICT_FAIL: return "FAIL";
    case QGMM_VERDICT_UNSUPPORTED: return "unsupported";
    case QGMM_VERDICT_SKIPPED: return "skipped";
    }
    return "?";
}

const qgmm_case *qgmm_case_of(const qgmm_case_instance *inst) { return inst ? &inst->c : NULL; }
qgmm_context *qgmm_case_context(const qgmm_case_instance *inst) { return inst ? inst->ctx : NULL; }

static qgmm_context *g_helper;
static int g_helper_tried;

static void helper_destroy(void) { qgmm_context_destroy(g_helper); g_helper = NULL; }

qgmm_context *qc_helper_ctx(void)
{
    if (!g_helper_tried) {
        g_helper_tried = 1;
        if (qgmm_context_create("cpu", 0, &g_helper) != QGMM_OK) g_helper = NULL;
        else atexit(helper_destroy);
    }
    return g_helper;
}

/* ------------------------------------------------------------------ slots */
int qc_add_slot(qgmm_case_instance *in, const char *name, qc_role role, size_t span,
                const void *init, qgmm_status *st)
{
    if (in->nslots >= QC_MAX_SLOTS) { *st = QGMM_ERR_INTERNAL; return -1; }
    qc_slot *s = &in->slots[in->nslots];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->role = role;
    s->span = span;
    s->guard = role == QC_IN ? 0 : QC_GUARD;
    s->total = span + 2 * s->guard;
    const double t0 = qc_now();
    *st = qgmm_buffer_alloc(in->ctx, s->total, &s->buf);
    if (*st != QGMM_OK) return -1;
    s->host = malloc(s->total ? s->total : 1);
    if (!s->host) { *st = QGMM_ERR_OUT_OF_MEMORY; qgmm_buffer_free(s->buf); return -1; }
    if (role != QC_IN) {
        s->mask = calloc(s->total ? s->total : 1, 1);
        if (!s->mask) { *st = QGMM_ERR_OUT_OF_MEMORY; free(s->host); qgmm_buffer_free(s->buf); return -1; }
    } else if (init && span) {
        memcpy(s->host, init, span);
        const double t1 = qc_now();
        qc_clk.setup += t1 - t0;
        *st = qgmm_buffer_upload(s->buf, 0, s->host, span);
        qc_clk.upload += qc_now() - t1;
        if (*st != QGMM_OK) { free(s->host); qgmm_buffer_free(s->buf); return -1; }
        in->nslots++;
        return in->nslots - 1;
    }
    qc_clk.setup += qc_now() - t0;
    in->nslots++;
    *st = QGMM_OK;
    return in->nslots - 1;
}

qgmm_status qc_upload_slot(qgmm_case_instance *in, int s)
{
    const double t0 = qc_now();
    const qgmm_status st = qgmm_buffer_upload(in->slots[s].buf, 0, in->slots[s].host, in->slots[s].span);
    qc_clk.upload += qc_now() - t0;
    return st;
}

qgmm_tensor qc_view(qgmm_case_instance *in, int s, qgmm_dtype dt, int rank, const int64_t *shape,
                    const int64_t *strides)
{
    qgmm_tensor t;
    memset(&t, 0, sizeof t);
    t.buffer = in->slots[s].buf;
    t.offset = in->slots[s].guard;
    t.dtype = dt;
    t.rank = rank;
    int64_t st = 1;
    for (int d = rank - 1; d >= 0; --d) {
        t.shape[d] = shape[d];
        t.strides[d] = strides ? strides[d] : st;
        st *= shape[d] > 0 ? shape[d] : 1;
    }
    return t;
}

static void mark_view(qc_slot *s, const qgmm_tensor *v, int64_t lo0, int64_t hi0);

void qc_mark_view(qc_slot *s, const qgmm_tensor *v, int64_t lo0, int64_t hi0)
{
    const double t0 = qc_now();
    mark_view(s, v, lo0, hi0);
    qc_clk.setup += qc_now() - t0;
}

static void mark_view(qc_slot *s, const qgmm_tensor *v, int64_t lo0, int64_t hi0)
{
    const size_t es = qgmm_dtype_size(v->dtype);
    s->view = *v; /* remembered for messages (element size and dtype) */
    int64_t sh[3] = {1, 1, 1}, sd[3] = {0, 0, 0};
    for (int d = 0; d < v->rank; ++d) { sh[d] = v->shape[d]; sd[d] = v->strides[d]; }
    const int64_t a0 = hi0 >= 0 ? lo0 : 0, b0 = hi0 >= 0 ? hi0 : sh[0];
    const size_t base = v->offset;
    /* a contiguous innermost dim is marked a run at a time (element by element, the
     * nightly shapes' masks took a third of a case's preparation) */
    const int inner = v->rank > 0 ? v->rank - 1 : 2;
    const int64_t run = sd[inner] == 1 ? sh[inner] : 1;
    if (run <= 0) return; /* an empty view */
    int64_t n[3] = {sh[0], sh[1], sh[2]};
    n[inner] = sh[inner] / run;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if ((b0 - a0) * sh[1] * sh[2] > (1 << 16))
#endif
    for (int64_t i = a0; i < b0; ++i)
        for (int64_t j = 0; j < (inner == 0 ? 1 : n[1]); ++j)
            for (int64_t k = 0; k < n[2]; ++k) {
                const int64_t ii = inner == 0 ? (i - a0) * run + a0 : i;
                if (inner == 0 && ii >= b0) continue;
                const int64_t jj = inner == 1 ? j * run : j, kk = inner == 2 ? k * run : k;
                const size_t off = base + (size_t)((ii * sd[0] + jj * sd[1] + kk * sd[2])) * es;
                const int64_t len = inner == 0 && ii + run > b0 ? b0 - ii : run;
                if (off + es * (size_t)len <= s->total) memset(s->mask + off, 1, es * (size_t)len);
                else
                    for (int64_t e = 0; e < len; ++e)
                        if (off + es * (size_t)(e + 1) <= s->total) memset(s->mask + off + es * (size_t)e, 1, es);
            }
}

/* ------------------------------------------------------------------ lifecycle */
static void free_slots(qgmm_case_instance *in)
{
    for (int i = 0; i < in->nslots; ++i) {
        qgmm_buffer_free(in->slots[i].buf);
        free(in->slots[i].host);
        free(in->slots[i].mask);
    }
    in->nslots = 0;
}

void qgmm_case_release(qgmm_case_instance *inst)
{
    if (!inst) return;
    qc_release_gemm(inst);
    free_slots(inst);
    free(inst->offs);
    free(inst);
}

static qgmm_status poison(qgmm_case_instance *in, uint8_t byte)
{
    const double t0 = qc_now();
    qgmm_status st = QGMM_OK;
    for (int i = 0; i < in->nslots && st == QGMM_OK; ++i) {
        qc_slot *s = &in->slots[i];
        if (s->role == QC_IN || !s->total) continue;
        st = qgmm_buffer_fill(s->buf, 0, s->total, byte);
    }
    qc_clk.setup += qc_now() - t0;
    return st;
}

qgmm_status qgmm_case_prepare(const qgmm_case *c, qgmm_context *ctx, qgmm_case_instance **out)
{
    if (!out) return QGMM_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!c || !ctx) return QGMM_ERR_INVALID_ARGUMENT;
    qgmm_case_instance *in = calloc(1, sizeof *in);
    if (!in) return QGMM_ERR_OUT_OF_MEMORY;
    /* what prepare spends outside uploads, allocation, masks and poison is generation */
    const double t0 = qc_now(), other0 = qc_clk.upload + qc_clk.setup;
    in->c = *c;
    in->ctx = ctx;
    in->offs_slot = -1;
    qgmm_status st = QGMM_OK;
    in->G = qgmm_case_offsets(c, NULL, 0);
    if (in->G > 0) {
        in->offs = malloc((size_t)in->G * sizeof *in->offs);
        if (!in->offs) { free(in); return QGMM_ERR_OUT_OF_MEMORY; }
        qgmm_case_offsets(c, in->offs, in->G);
        in->offs_slot = qc_add_slot(in, "offs", QC_IN, (size_t)in->G * 4, in->offs, &st);
        if (in->offs_slot < 0) goto fail;
    }
    st = c->check == QGMM_CHECK_NUMERIC ? qc_prepare_gemm(in) : qc_prepare_op(in);
    if (st != QGMM_OK) goto fail;
    if (c->groups == QGMM_GROUPS_BAD) /* invalid offsets: no output byte may change */
        for (int i = 0; i < in->nslots; ++i)
            if (in->slots[i].role == QC_OUT) memset(in->slots[i].mask, 0, in->slots[i].total);
    st = poison(in, POISON_A);
    if (st != QGMM_OK) goto fail;
    *out = in;
fail:
    if (st != QGMM_OK) qgmm_case_release(in);
    qc_clk.generate += qc_now() - t0 - (qc_clk.upload + qc_clk.setup - other0);
    return st;
}

/* The slot whose buffer t views, or -1. */
static int slot_of(const qgmm_case_instance *in, const qgmm_tensor *t)
{
    for (int i = 0; i < in->nslots; ++i)
        if (t->buffer && t->buffer == in->slots[i].buf) return i;
    return -1;
}

qgmm_status qgmm_case_prepare_from(qgmm_case_instance *from, qgmm_context *ctx, qgmm_case_instance **out)
{
    if (out) *out = NULL;
    if (!from) return QGMM_ERR_INVALID_ARGUMENT;
    if (!out || !ctx) { qgmm_case_release(from); return QGMM_ERR_INVALID_ARGUMENT; }
    qgmm_case_instance *in = malloc(sizeof *in);
    if (!in) { qgmm_case_release(from); return QGMM_ERR_OUT_OF_MEMORY; }
    /* every view remembers its slot before the old buffers go */
    int gn = 0;
    qgmm_tensor *gt = qc_gemm_tensors(from, &gn);
    int vmap[QC_MAX_SLOTS], gmap[32];
    if (gn > 32) { free(in); qgmm_case_release(from); return QGMM_ERR_INTERNAL; }
    for (int k = 0; k < QC_MAX_SLOTS; ++k) vmap[k] = slot_of(from, &from->v[k]);
    for (int k = 0; k < gn; ++k) gmap[k] = slot_of(from, &gt[k]);
    const double t0 = qc_now();
    *in = *from; /* host bytes, masks, offsets and GEMM state move */
    in->ctx = ctx;
    for (int i = 0; i < in->nslots; ++i) {
        qgmm_buffer_free(in->slots[i].buf); /* the old device copy, before the new one */
        in->slots[i].buf = NULL;
    }
    free(from);
    qgmm_status st = QGMM_OK;
    for (int i = 0; i < in->nslots && st == QGMM_OK; ++i) st = qgmm_buffer_alloc(ctx, in->slots[i].total, &in->slots[i].buf);
    qc_clk.setup += qc_now() - t0;
    for (int i = 0; i < in->nslots && st == QGMM_OK; ++i)
        if (in->slots[i].role == QC_IN && in->slots[i].span) st = qc_upload_slot(in, i);
    if (st == QGMM_OK) {
        for (int k = 0; k < QC_MAX_SLOTS; ++k)
            if (vmap[k] >= 0) in->v[k].buffer = in->slots[vmap[k]].buf;
        gt = qc_gemm_tensors(in, &gn);
        for (int k = 0; k < gn; ++k)
            if (gmap[k] >= 0) gt[k].buffer = in->slots[gmap[k]].buf;
        for (int i = 0; i < in->nslots; ++i) in->slots[i].view.buffer = in->slots[i].buf;
        st = poison(in, POISON_A);
    }
    if (st != QGMM_OK) { qgmm_case_release(in); return st; }
    *out = in;
    return QGMM_OK;
}

qgmm_status qgmm_case_execute_profiled(qgmm_case_instance *inst, qgmm_moe_profile *prof)
{
    if (!inst || !prof) return QGMM_ERR_INVALID_ARGUMENT;
    if (inst->c.op != QGMM_CASE_MOE_FORWARD && inst->c.op != QGMM_CASE_MOE_BACKWARD) return QGMM_ERR_UNSUPPORTED;
    return qc_execute_gemm_profiled(inst, prof);
}

qgmm_status qgmm_case_execute(qgmm_case_instance *inst)
{
    if (!inst) return QGMM_ERR_INVALID_ARGUMENT;
    return inst->c.check == QGMM_CHECK_NUMERIC ? qc_execute_gemm(inst) : qc_execute_op(inst);
}

/* ------------------------------------------------------------------ checking */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Poison, run once, synchronize, download every non-input slot into dst[i] (NULL:
 * into slot->host). Returns the first non-OK status. */
static qgmm_status run_once(qgmm_case_instance *in, uint8_t byte, uint8_t **dst, double *ms,
                            int apply_hook)
{
    qgmm_status st = poison(in, byte);
    if (st != QGMM_OK) return st;
    st = qgmm_synchronize(in->ctx);
    if (st != QGMM_OK) return st;
    const double t0 = now_ms();
    st = qgmm_case_execute(in);
    const qgmm_status sy = qgmm_synchronize(in->ctx);
    const double t1 = now_ms();
    if (ms) *ms = t1 - t0;
    qc_clk.execute += (t1 - t0) * 1e-3;
    if (st != QGMM_OK) return st;
    /* a bad-offsets case expects BAD_OFFSETS here, and still checks every output byte */
    const int expected_bad = in->c.groups == QGMM_GROUPS_BAD && sy == QGMM_ERR_BAD_OFFSETS;
    if (sy != QGMM_OK && !expected_bad) return sy;
    for (int i = 0; i < in->nslots; ++i) {
        qc_slot *s = &in->slots[i];
        if (s->role == QC_IN) continue;
        uint8_t *d = dst ? dst[i] : s->host;
        if (s->total) {
            const double a = qc_now();
            st = qgmm_buffer_download(s->buf, 0, d, s->total);
            qc_clk.download += qc_now() - a;
            if (st != QGMM_OK) return st;
        }
        if (apply_hook && g_hook && s->role == QC_OUT) g_hook(&in->c, s->name, d, s->total, s->guard, g_hook_user);
    }
    return sy;
}

static void set_msg(qgmm_case_result *r, const char *fmt, const char *a, const char *b)
{
    if (r->message[0]) return; /* keep the first reason */
    snprintf(r->message, sizeof r->message, fmt, a, b);
}

static void fail_status(qgmm_case_result *r, qgmm_status st, const char *what, qgmm_context *ctx)
{
    char buf[400];
    snprintf(buf, sizeof buf, "%s returned %s: %s", what, qgmm_status_string(st), qgmm_last_error(ctx));
    if (st == QGMM_ERR_UNSUPPORTED) {
        r->verdict = QGMM_VERDICT_UNSUPPORTED;
    } else {
        r->verdict = QGMM_VERDICT_FAIL;
    }
    if (r->status == QGMM_OK) r->status = st;
    set_msg(r, "%s%s", buf, "");
}

/* Coverage: bytes that must be written are, bytes that must not be are not. */
static void check_coverage(qgmm_case_instance *in, uint8_t **b, qgmm_case_result *r)
{
    const int exact = in->c.check == QGMM_CHECK_EXACT;
    for (int i = 0; i < in->nslots; ++i) {
        qc_slot *s = &in->slots[i];
        if (s->role != QC_OUT) continue;
        const uint8_t *A = s->host, *B = b[i], *mask = s->mask;
        uint64_t unwritten = 0, stray = 0, unstable = 0;
        size_t first = (size_t)-1;
        /* in parallel over the bytes (a nightly cast's outputs are gigabytes): the counts and
         * the first offending byte are the serial loop's */
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : unwritten, stray, unstable) reduction(min : first) \
    if (s->total > (1u << 20))
#endif
        for (size_t k = 0; k < s->total; ++k) {
            const int keep_a = A[k] == POISON_A, keep_b = B[k] == POISON_B;
            if (mask[k]) {
                if (keep_a && keep_b) unwritten++;
                else if (exact && A[k] != B[k]) unstable++;
                else continue;
            } else {
                if (keep_a && keep_b) continue;
                stray++;
            }
            if (k < first) first = k;
        }
        const uint64_t bad = unwritten + stray + unstable;
        if (!bad) continue;
        r->poison_violations += bad;
        char what[200];
        snprintf(what, sizeof what,
                 "output '%s': %llu bytes never written, %llu poisoned bytes overwritten, %llu bytes "
                 "differing between two runs (first at byte %lld of the region)",
                 s->name, (unsigned long long)unwritten, (unsigned long long)stray,
                 (unsigned long long)unstable, (long long)first - (long long)s->guard);
        set_msg(r, "%s%s", what, "");
    }
}

static uint64_t hash_outputs(const qgmm_case_instance *in)
{
    uint64_t h = QGMM_FNV1A_INIT;
    for (int i = 0; i < in->nslots; ++i) {
        const qc_slot *s = &in->slots[i];
        if (s->role != QC_OUT) continue;
        h = qgmm_case_hash(h, s->host + s->guard, s->span);
    }
    return h;
}

static void compare_exact(qgmm_case_instance *in, qgmm_case_instance *ref, qgmm_case_result *r)
{
    for (int i = 0; i < in->nslots; ++i) {
        qc_slot *s = &in->slots[i], *t = &ref->slots[i];
        if (s->role != QC_OUT) continue;
        r->compared_bytes += s->total;
        const uint8_t *x = s->host, *y = t->host;
        uint64_t diff = 0;
        size_t first = (size_t)-1;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) reduction(+ : diff) reduction(min : first) if (s->total > (1u << 20))
#endif
        for (size_t k = 0; k < s->total; ++k)
            if (x[k] != y[k]) {
                ++diff;
                if (k < first) first = k;
            }
        if (diff) {
            const size_t k = first;
            if (!r->mismatched_bytes) {
                /* byte offset in the region, and the element it falls in (guards: negative
                 * or past the span) */
                const long long off = (long long)k - (long long)s->guard;
                const long long es = (long long)qgmm_dtype_size(s->view.dtype ? s->view.dtype : QGMM_U8);
                snprintf(r->first_mismatch, sizeof r->first_mismatch,
                         "%s%+lld (element %lld of %s): got 0x%02x want 0x%02x", s->name, off,
                         off >= 0 ? off / (es ? es : 1) : -1, qgmm_dtype_name(s->view.dtype),
                         s->host[k], t->host[k]);
            }
            r->mismatched_bytes += diff;
        }
    }
    if (r->mismatched_bytes) {
        char buf[256];
        snprintf(buf, sizeof buf, "%llu of %llu bytes differ from the reference; first %s",
                 (unsigned long long)r->mismatched_bytes, (unsigned long long)r->compared_bytes,
                 r->first_mismatch);
        set_msg(r, "%s%s", buf, "");
    }
}

qgmm_status qgmm_case_check(qgmm_case_instance *in, qgmm_context *ref_ctx,
                            const qgmm_check_options *opts, qgmm_case_result *r)
{
    if (!in || !r) return QGMM_ERR_INVALID_ARGUMENT;
    memset(r, 0, sizeof *r);
    r->check = in->c.check;
    r->recipe_sqnr_db = NAN;
    r->min_recipe_sqnr_db = NAN;
    r->sqnr_db = NAN;
    r->rel_fro_err = NAN;
    r->max_abs_err = NAN;
    r->max_rel_fro_allowed = NAN;
    qgmm_check_options defaults = {0};
    if (!opts) opts = &defaults;

    const int hash_only = in->c.check == QGMM_CHECK_EXACT && opts->hash_only;
    if (in->c.check == QGMM_CHECK_EXACT && !ref_ctx && !hash_only) {
        r->verdict = QGMM_VERDICT_SKIPPED;
        snprintf(r->message, sizeof r->message, "no reference context: a cast cannot be checked");
        return QGMM_OK;
    }
    if (ref_ctx && !hash_only)
        r->reference_is_same_backend =
            strcmp(qgmm_context_backend_name(ref_ctx), qgmm_context_backend_name(in->ctx)) == 0;

    const int bad = in->c.groups == QGMM_GROUPS_BAD;
    /* run A (the one compared and timed), run B (coverage) */
    qgmm_status st = run_once(in, POISON_A, NULL, &r->ms, 1);
    if (bad && st == QGMM_OK) {
        r->verdict = QGMM_VERDICT_FAIL;
        snprintf(r->message, sizeof r->message,
                 "invalid offsets were not detected: synchronize returned QGMM_OK, want QGMM_ERR_BAD_OFFSETS");
        return QGMM_OK;
    }
    if (st != QGMM_OK && !(bad && st == QGMM_ERR_BAD_OFFSETS)) {
        fail_status(r, st, "the op", in->ctx);
        return QGMM_OK;
    }
    uint8_t *b[QC_MAX_SLOTS] = {0};
    qgmm_status hst = QGMM_OK;
    const int second_run = !(hash_only && opts->single_run);
    double t0 = qc_now();
    for (int i = 0; second_run && i < in->nslots; ++i) {
        if (in->slots[i].role == QC_IN) continue;
        b[i] = malloc(in->slots[i].total ? in->slots[i].total : 1);
        if (!b[i]) hst = QGMM_ERR_OUT_OF_MEMORY;
    }
    qc_clk.setup += qc_now() - t0;
    if (hst == QGMM_OK && second_run) {
        /* keep A: run B downloads into b[] */
        st = run_once(in, POISON_B, b, NULL, 0);
        if (bad && st == QGMM_ERR_BAD_OFFSETS) st = QGMM_OK;
        else if (bad && st == QGMM_OK) st = QGMM_ERR_INTERNAL; /* detected once, not twice */
        t0 = qc_now();
        if (st != QGMM_OK) fail_status(r, st, "the second run of the op", in->ctx);
        else check_coverage(in, b, r);
        qc_clk.compare += qc_now() - t0;
    }
    for (int i = 0; i < in->nslots; ++i) free(b[i]);
    if (hst != QGMM_OK) return hst;
    t0 = qc_now();
    r->output_hash = hash_outputs(in);
    qc_clk.compare += qc_now() - t0;

    if (bad) {
        /* nothing to compare: the outputs must still hold the poison (checked above) */
        r->status = QGMM_ERR_BAD_OFFSETS;
        if (r->verdict == QGMM_VERDICT_PASS && (r->poison_violations || r->message[0]))
            r->verdict = QGMM_VERDICT_FAIL;
        return QGMM_OK;
    } else if (hash_only) {
        /* the caller compares the hash with the reference's: every output byte was looked at
         * (coverage) and every byte of the regions hashed */
        for (int i = 0; i < in->nslots; ++i)
            if (in->slots[i].role == QC_OUT) r->compared_bytes += in->slots[i].total;
    } else if (in->c.check == QGMM_CHECK_EXACT) {
        qgmm_case_instance *ref = NULL;
        st = qgmm_case_prepare(&in->c, ref_ctx, &ref);
        if (st != QGMM_OK) {
            fail_status(r, st, "preparing the case on the reference", ref_ctx);
            if (r->verdict == QGMM_VERDICT_UNSUPPORTED) r->verdict = QGMM_VERDICT_FAIL;
            return QGMM_OK;
        }
        st = run_once(ref, POISON_A, NULL, NULL, 0);
        if (st != QGMM_OK) {
            fail_status(r, st, "the reference (cpu) op", ref_ctx);
            r->verdict = QGMM_VERDICT_FAIL; /* the reference implements everything */
        } else {
            t0 = qc_now();
            compare_exact(in, ref, r);
            qc_clk.compare += qc_now() - t0;
        }
        qgmm_case_release(ref);
    } else {
        t0 = qc_now();
        st = qc_check_gemm(in, opts, r);
        qc_clk.compare += qc_now() - t0;
        if (st != QGMM_OK) return st;
    }

    if (r->verdict == QGMM_VERDICT_PASS) {
        const int bad = r->mismatched_bytes > QGMM_THRESH_CAST_MISMATCHED_BYTES ||
                        r->poison_violations > 0 || r->message[0];
        if (bad) r->verdict = QGMM_VERDICT_FAIL;
    }
    return QGMM_OK;
}
