/*
 * What the expert-parallel layer asks of the composite MoE ops that a one-context test does
 * not: (1) several contexts on one device driven from their own threads at once, each with
 * its own number of experts (so its own grouped-GEMM shared-memory size), every recipe,
 * forward and backward: every call succeeds and gives the bytes a lone run gives; (2) an
 * expert's wgrad does not depend on where its group starts in the token dimension, as long
 * as the start keeps the alignment the EP receive layout guarantees (a multiple of 16 rows).
 * Backend: argv[1] or "cpu".
 */
#include "qgmm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks, failures;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
#define CHECK(cond, ...) do { pthread_mutex_lock(&mu); ++checks; if (!(cond)) { ++failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
    pthread_mutex_unlock(&mu); } while (0)

static const char *backend = "cpu";

static uint16_t to_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}
static float urand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static qgmm_tensor t2(qgmm_buffer *b, qgmm_dtype t, int64_t r, int64_t c)
{
    const int64_t s[2] = {r, c};
    return qgmm_tensor_make(b, 0, t, 2, s);
}
static qgmm_tensor t3(qgmm_buffer *b, qgmm_dtype t, int64_t e, int64_t r, int64_t c)
{
    const int64_t s[3] = {e, r, c};
    return qgmm_tensor_make(b, 0, t, 3, s);
}
static qgmm_buffer *upload(qgmm_context *c, const void *p, size_t n)
{
    qgmm_buffer *b = NULL;
    if (qgmm_buffer_alloc(c, n ? n : 16, &b) != QGMM_OK) return NULL;
    if (n) qgmm_buffer_upload(b, 0, p, n);
    return b;
}

/* One composite forward + backward: y, dx, dw downloaded into out (malloc'd, y|dx|dw). */
typedef struct job {
    qgmm_recipe recipe;
    int64_t M, N, K, E;
    const uint16_t *x, *w, *dy;
    const int32_t *offs;
    qgmm_context *ctx;
    int reps;
    uint8_t *out;
    size_t out_bytes;
    pthread_barrier_t *meet; /* threads that start every rep together (the loopback ranks' way) */
    qgmm_status st;
    char msg[512];
} job;

static void run_job(job *j)
{
    qgmm_context *c = j->ctx;
    const int64_t M = j->M, N = j->N, K = j->K, E = j->E;
    const qgmm_moe_params p = QGMM_MOE_PARAMS_INIT(j->recipe);
    qgmm_buffer *bx = upload(c, j->x, (size_t)(M * K) * 2), *bw = upload(c, j->w, (size_t)(E * N * K) * 2);
    qgmm_buffer *bdy = upload(c, j->dy, (size_t)(M * N) * 2), *bo = upload(c, j->offs, (size_t)E * 4);
    const size_t ny = (size_t)(M * N) * 2, ndx = (size_t)(M * K) * 2, ndw = (size_t)(E * N * K) * 2;
    qgmm_buffer *by = upload(c, NULL, ny), *bdx = upload(c, NULL, ndx), *bdw = upload(c, NULL, ndw), *ws = NULL;
    const size_t wsb = qgmm_moe_workspace_bytes(&p, M, N, K, E);
    if (wsb) ws = upload(c, NULL, wsb);
    const qgmm_tensor x = t2(bx, QGMM_BF16, M, K), dy = t2(bdy, QGMM_BF16, M, N), w = t3(bw, QGMM_BF16, E, N, K);
    const int64_t so[1] = {E};
    const qgmm_tensor o = qgmm_tensor_make(bo, 0, QGMM_I32, 1, so);
    const qgmm_tensor y = t2(by, QGMM_BF16, M, N), dx = t2(bdx, QGMM_BF16, M, K), dw = t3(bdw, QGMM_BF16, E, N, K);
    j->out_bytes = ny + ndx + ndw;
    j->out = malloc(j->out_bytes);
    uint8_t *first = malloc(j->out_bytes);
    j->st = QGMM_OK;
    for (int r = 0; r < j->reps; ++r) {
        if (j->meet) pthread_barrier_wait(j->meet); /* every thread meets every rep, failed or not */
        if (j->st != QGMM_OK) continue;
        j->st = qgmm_moe_experts_forward(c, &p, &x, &w, &o, &y, ws);
        if (j->st == QGMM_OK) j->st = qgmm_moe_experts_backward(c, &p, &x, &w, &dy, &o, &dx, &dw, ws);
        if (j->st == QGMM_OK) j->st = qgmm_synchronize(c);
        if (j->st != QGMM_OK) {
            snprintf(j->msg, sizeof j->msg, "rep %d: %s", r, qgmm_last_error(c));
            continue;
        }
        qgmm_buffer_download(by, 0, j->out, ny);
        qgmm_buffer_download(bdx, 0, j->out + ny, ndx);
        qgmm_buffer_download(bdw, 0, j->out + ny + ndx, ndw);
        if (r == 0) memcpy(first, j->out, j->out_bytes);
        else if (memcmp(first, j->out, j->out_bytes)) {
            j->st = QGMM_ERR_INTERNAL;
            snprintf(j->msg, sizeof j->msg, "rep %d differs from rep 0", r);
        }
    }
    free(first);
    qgmm_buffer *all[] = {bx, bw, bdy, bo, by, bdx, bdw, ws};
    for (int i = 0; i < 8; ++i) qgmm_buffer_free(all[i]);
}

static void *job_main(void *arg)
{
    run_job(arg);
    return NULL;
}

/* Random tokens of E experts of skewed sizes (offs unpadded). */
typedef struct data {
    int64_t M, N, K, E;
    uint16_t *x, *w, *dy;
    int32_t offs[16];
} data;

static void make_data(data *d, int64_t E, uint32_t seed)
{
    d->N = 256, d->K = 256, d->E = E, d->M = 0;
    for (int64_t e = 0; e < E; ++e) {
        d->M += 13 + 37 * ((e * 7 + seed) % 5);
        d->offs[e] = (int32_t)d->M;
    }
    d->x = malloc((size_t)(d->M * d->K) * 2), d->dy = malloc((size_t)(d->M * d->N) * 2);
    d->w = malloc((size_t)(E * d->N * d->K) * 2);
    uint32_t s = seed;
    for (int64_t i = 0; i < d->M * d->K; ++i) d->x[i] = to_bf16(urand(&s));
    for (int64_t i = 0; i < d->M * d->N; ++i) d->dy[i] = to_bf16(urand(&s));
    for (int64_t i = 0; i < E * d->N * d->K; ++i) d->w[i] = to_bf16(0.05f * urand(&s));
}
static void free_data(data *d) { free(d->x), free(d->w), free(d->dy); }

static job job_of(const data *d, qgmm_recipe r, qgmm_context *c, int reps)
{
    job j;
    memset(&j, 0, sizeof j);
    j.recipe = r, j.M = d->M, j.N = d->N, j.K = d->K, j.E = d->E;
    j.x = d->x, j.w = d->w, j.dy = d->dy, j.offs = d->offs, j.ctx = c, j.reps = reps;
    return j;
}

enum { NT = 3 };

/* (1) NT threads, one context each, E = 2, 3, 5 experts, at once; against lone runs. */
static void concurrent(qgmm_recipe r, const char *name, qgmm_context **ctx)
{
    static const int64_t experts[NT] = {2, 3, 5};
    data d[NT];
    job lone[NT], conc[NT];
    for (int i = 0; i < NT; ++i) {
        make_data(&d[i], experts[i], 101u + (uint32_t)i);
        lone[i] = job_of(&d[i], r, ctx[i], 1);
        run_job(&lone[i]);
        CHECK(lone[i].st == QGMM_OK, "%s, %lld experts alone: %s", name, (long long)experts[i], lone[i].msg);
    }
    pthread_t th[NT];
    pthread_barrier_t meet;
    pthread_barrier_init(&meet, NULL, NT);
    for (int i = 0; i < NT; ++i) {
        conc[i] = job_of(&d[i], r, ctx[i], 24);
        conc[i].meet = &meet;
        pthread_create(&th[i], NULL, job_main, &conc[i]);
    }
    for (int i = 0; i < NT; ++i) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&meet);
    for (int i = 0; i < NT; ++i) {
        CHECK(conc[i].st == QGMM_OK, "%s, %lld experts beside %d other threads: %s", name, (long long)experts[i],
              NT - 1, conc[i].msg);
        CHECK(conc[i].st != QGMM_OK || lone[i].st != QGMM_OK || !memcmp(conc[i].out, lone[i].out, lone[i].out_bytes),
              "%s, %lld experts: results beside other threads differ from a lone run", name, (long long)experts[i]);
        free(lone[i].out), free(conc[i].out), free_data(&d[i]);
    }
}

/* FP8 rowwise only: the wgrad's jagged cast (per group and column, as the composite runs
 * it) of expert 1's tokens: its fp8 data of dy and x (token-contiguous) and its scales, in
 * one malloc'd block of *bytes; NULL when a call failed. */
static uint8_t *wgrad_cast_of_group1(qgmm_context *c, const data *p, size_t *bytes)
{
    const int64_t M = p->M, N = p->N, K = p->K, at = p->offs[0], n1 = p->offs[1] - at;
    qgmm_buffer *bdy = upload(c, p->dy, (size_t)(M * N) * 2), *bx = upload(c, p->x, (size_t)(M * K) * 2);
    qgmm_buffer *bo = upload(c, p->offs, 8), *bq0 = upload(c, NULL, (size_t)(M * N)), *bq1 = upload(c, NULL, (size_t)(M * K));
    qgmm_buffer *bs0 = upload(c, NULL, (size_t)(2 * N) * 4), *bs1 = upload(c, NULL, (size_t)(2 * K) * 4);
    const int64_t so[1] = {2};
    const qgmm_tensor dy = t2(bdy, QGMM_BF16, M, N), x = t2(bx, QGMM_BF16, M, K), o = qgmm_tensor_make(bo, 0, QGMM_I32, 1, so);
    const qgmm_tensor q0 = qgmm_tensor_make_colmajor(bq0, 0, QGMM_F8E4M3FN, M, N);
    const qgmm_tensor q1 = qgmm_tensor_make_colmajor(bq1, 0, QGMM_F8E4M3FN, M, K);
    const qgmm_tensor s0 = t2(bs0, QGMM_F32, 2, N), s1 = t2(bs1, QGMM_F32, 2, K);
    const qgmm_fp8_rowwise_params pg = {0, 0, QGMM_SCALE_RECIPROCAL};
    uint8_t *out = NULL;
    *bytes = (size_t)(n1 * (N + K)) + (size_t)(N + K) * 4;
    if (qgmm_quantize_fp8_rowwise_dual(c, &pg, &dy, &q0, &s0, &pg, &x, &q1, &s1, &o) == QGMM_OK &&
        qgmm_synchronize(c) == QGMM_OK) {
        uint8_t *h0 = malloc((size_t)(M * N)), *h1 = malloc((size_t)(M * K));
        out = malloc(*bytes);
        qgmm_buffer_download(bq0, 0, h0, (size_t)(M * N));
        qgmm_buffer_download(bq1, 0, h1, (size_t)(M * K));
        uint8_t *w = out;
        for (int64_t n = 0; n < N; ++n, w += n1) memcpy(w, h0 + n * M + at, (size_t)n1);
        for (int64_t k = 0; k < K; ++k, w += n1) memcpy(w, h1 + k * M + at, (size_t)n1);
        qgmm_buffer_download(bs0, (size_t)N * 4, w, (size_t)N * 4);
        qgmm_buffer_download(bs1, (size_t)K * 4, w + N * 4, (size_t)K * 4);
        free(h0), free(h1);
    }
    qgmm_buffer *all[] = {bdy, bx, bo, bq0, bq1, bs0, bs1};
    for (int i = 0; i < 7; ++i) qgmm_buffer_free(all[i]);
    return out;
}

/* (2) expert 1's dw with its group starting at row 16 * s of the token dimension (expert
 * 0 takes the rows before it, zero rows past its 13 tokens) is the same for every s. The
 * starts 17..31 are only reported (how many dw elements differ from the start at 16). The
 * token count is a multiple of 16 throughout: with another, the CUDA GEMM falls back from
 * its Hopper kernel to the portable one (rows not 16-byte aligned), whose sums differ. */
static void group_start(qgmm_recipe r, const char *name, qgmm_context *ctx)
{
    data d;
    make_data(&d, 2, 7u);
    const int64_t n1 = d.offs[1] - d.offs[0], N = d.N, K = d.K;
    uint8_t *ref = NULL, *cast_ref = NULL;
    size_t cast_bytes = 0;
    char report[512];
    int used = snprintf(report, sizeof report, "%s: dw elements that differ with the group at row 17..31:", name);
    for (int s = 1; s <= 18; ++s) {
        const int64_t at = s <= 3 ? 16 * s : 13 + s;
        data p = d;
        p.M = (at + n1 + 15) / 16 * 16; /* zero rows past the last group: the wgrad operands'
                                           token stride stays 16-byte aligned, so the same
                                           kernel (on the H100 the Hopper one) runs for every start */
        p.offs[0] = (int32_t)at;
        p.offs[1] = (int32_t)(at + n1);
        p.x = calloc((size_t)(p.M * K), 2), p.dy = calloc((size_t)(p.M * N), 2);
        memcpy(p.x, d.x, (size_t)(13 * K) * 2), memcpy(p.dy, d.dy, (size_t)(13 * N) * 2);
        memcpy(p.x + at * K, d.x + d.offs[0] * K, (size_t)(n1 * K) * 2);
        memcpy(p.dy + at * N, d.dy + d.offs[0] * N, (size_t)(n1 * N) * 2);
        job j = job_of(&p, r, ctx, 1);
        run_job(&j);
        if (r == QGMM_RECIPE_FP8_ROWWISE && (s == 1 || s == 18)) { /* the wgrad's cast at rows 16 and 31 */
            uint8_t *cast = wgrad_cast_of_group1(ctx, &p, &cast_bytes);
            CHECK(cast != NULL, "%s: the jagged wgrad cast at row %lld failed", name, (long long)at);
            if (s == 1) cast_ref = cast;
            else if (cast && cast_ref) {
                printf("%s: the wgrad cast of the group at row 31 %s the one at row 16\n", name,
                       memcmp(cast, cast_ref, cast_bytes) ? "differs from" : "equals");
            }
            if (s != 1) free(cast);
        }
        CHECK(j.st == QGMM_OK, "%s, expert 1 at row %lld: %s", name, (long long)at, j.msg);
        const uint8_t *dw1 = j.out + (size_t)(p.M * N + p.M * K) * 2 + (size_t)(N * K) * 2;
        if (!ref) {
            ref = malloc((size_t)(N * K) * 2);
            memcpy(ref, dw1, (size_t)(N * K) * 2);
        } else if (s <= 3) {
            CHECK(j.st != QGMM_OK || !memcmp(ref, dw1, (size_t)(N * K) * 2),
                  "%s: expert 1's dw with its group at row %lld differs from at row 16", name, (long long)at);
        } else if (j.st == QGMM_OK) {
            size_t diff = 0;
            for (size_t i = 0; i < (size_t)(N * K) * 2; i += 2) diff += memcmp(ref + i, dw1 + i, 2) != 0;
            if (used < (int)sizeof report) used += snprintf(report + used, sizeof report - (size_t)used, " %zu", diff);
        }
        free(j.out), free(p.x), free(p.dy);
    }
    printf("%s\n", report);
    free(ref), free(cast_ref);
    free_data(&d);
}

int main(int argc, char **argv)
{
    backend = argc > 1 ? argv[1] : "cpu";
    qgmm_context *ctx[NT];
    for (int i = 0; i < NT; ++i)
        if (qgmm_context_create(backend, 0, &ctx[i]) != QGMM_OK) {
            printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
            return 77;
        }
    static const struct { qgmm_recipe r; const char *name; } recipes[] = {
        {QGMM_RECIPE_BF16, "bf16"}, {QGMM_RECIPE_FP8_ROWWISE, "fp8_rowwise"},
        {QGMM_RECIPE_FP8_BLOCKWISE, "fp8_blockwise"}, {QGMM_RECIPE_MXFP8, "mxfp8"}};
    for (int i = 0; i < 4; ++i) {
        concurrent(recipes[i].r, recipes[i].name, ctx);
        group_start(recipes[i].r, recipes[i].name, ctx[0]);
        printf("%s: %d checks, %d failures so far\n", recipes[i].name, checks, failures);
    }
    for (int i = 0; i < NT; ++i) qgmm_context_destroy(ctx[i]);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
