/*
 * test_gemm_reference.c — the CPU grouped GEMM (ops-spec §6) against a float64 reference
 * written here independently: a naive triple loop in double over the dequantized
 * operands (fp8/bf16 value times its scale, read from the PLAIN logical scales the test
 * drew; the MXFP8 blocked buffers are made from them by qgmm_scales_to_blocked).
 *
 * Every recipe (BF16, FP8 rowwise, FP8 blockwise, MXFP8) x kind (M-grouped, K-grouped) x
 * output dtype (f32, bf16), over ragged groups, empty groups, 1 group, 128 groups, a tail
 * no group covers, K not a multiple of 128 (BF16/rowwise), N not a multiple of the tile,
 * transposed operand / scale / output strides. Checks:
 *  - relative Frobenius error <= 1e-5 (f32 out) / 1e-2 (bf16 out) (ops-spec §7);
 *  - M-grouped: rows past offs[E-1] keep their poison bytes; K-grouped: empty groups are
 *    exactly zero;
 *  - bad offsets (decreasing, past the end, group sizes not a multiple of 128 for
 *    blockwise / 32 for MXFP8 K-grouped) leave the output untouched and make
 *    qgmm_synchronize return QGMM_ERR_BAD_OFFSETS.
 * Prints case counts; exits non-zero on any failure.
 *
 * usage: test_gemm_reference [BACKEND] [--path portable|hopper|auto] [--quick] [--big] [--verbose]
 * The same cases run on any backend (ctest registers one test per GPU backend). A GPU
 * backend may refuse only the documented combinations (mixed fp8 operands, e4m3fnuz):
 * those are counted as refused, anything else it refuses is a failure. --path sets
 * QGMM_CUDA_GEMM_PATH; --quick keeps two shapes per recipe (for compute-sanitizer);
 * --big adds multi-tile shapes for the GPU kernels.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "qgmm.h"
#include "qgmm_fp8_codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static long g_cases, g_failures;
static double g_worst[2]; /* worst relative error seen, f32 and bf16 outputs */
static int g_quick, g_big, g_verbose;

#include "qgmm_test_check.h"

/* ------------------------------------------------------------------ random data */

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) { return qgmm_test_xorshift(&g_rng); }
static int64_t rnd_below(int64_t n) { return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0; }
static double rnd_unit(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static double randn(void)
{
    double u = rnd_unit(), v = rnd_unit();
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* G end offsets over `extent`, sizes multiples of `mult`. pattern: 0 ragged, 1 with empty
 * groups (first, a middle one, last), 2 single group (G forced 1 by caller), 3 tail left
 * uncovered, 4 (G == 3, mult 1) one long group between 7 and 3 tokens (starting and ending
 * off a 16-token boundary). */
static void make_offs(int32_t *offs, int G, int64_t extent, int64_t mult, int pattern)
{
    const int64_t units = extent / mult;
    if (pattern == 4 && G == 3 && mult == 1) {
        offs[0] = 7;
        offs[1] = (int32_t)(extent - 3);
        offs[2] = (int32_t)extent;
        return;
    }
    int64_t end_units = units;
    if (pattern == 3) end_units = units > 1 ? units - 1 - rnd_below(units / 2) : 0;
    int64_t *cut = malloc(sizeof(int64_t) * (size_t)G);
    for (int g = 0; g < G - 1; ++g) cut[g] = rnd_below(end_units + 1);
    for (int i = 1; i < G - 1; ++i)
        for (int j = i; j > 0 && cut[j - 1] > cut[j]; --j) {
            int64_t t = cut[j]; cut[j] = cut[j - 1]; cut[j - 1] = t;
        }
    cut[G - 1] = end_units;
    if (pattern == 1 && G > 1) {
        cut[0] = 0;
        if (G > 2) cut[G / 2] = cut[G / 2 - 1];
        if (G > 3) cut[G - 2] = end_units;
    }
    for (int g = 0; g < G; ++g) offs[g] = (int32_t)(cut[g] * mult);
    free(cut);
}

/* ------------------------------------------------------------------ host tensors */

/* A device tensor plus the host copy of its LOGICAL values (row-major logical order),
 * so the reference never looks at strides. */
typedef struct htensor {
    qgmm_tensor t;
    qgmm_buffer *buf;
    size_t bytes;
    double *val;   /* logical values (unscaled), numel entries */
} htensor;

static int64_t numel(const qgmm_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; ++d) n *= t->shape[d];
    return n;
}

/* Strides of a dense layout: row-major, or the last two dims swapped in memory. */
static void set_layout(qgmm_tensor *t, int transposed)
{
    const int r = t->rank;
    int64_t s = 1;
    for (int d = r - 1; d >= 0; --d) { t->strides[d] = s; s *= t->shape[d]; }
    if (transposed && r >= 2) {
        t->strides[r - 2] = 1;
        t->strides[r - 1] = t->shape[r - 2];
        if (r == 3) t->strides[0] = t->shape[1] * t->shape[2];
    }
}

static int64_t storage_index(const qgmm_tensor *t, int64_t lin)
{
    int64_t idx = 0;
    for (int d = t->rank - 1; d >= 0; --d) {
        idx += (lin % t->shape[d]) * t->strides[d];
        lin /= t->shape[d];
    }
    return idx;
}

/* kind: 0 operand values (bf16 / fp8), 1 positive f32 scales, 2 raw e8m0 bytes near 127. */
static htensor make_tensor(qgmm_dtype dt, int rank, const int64_t *shape, int transposed, int kind)
{
    htensor h;
    memset(&h, 0, sizeof h);
    h.t.dtype = dt;
    h.t.rank = rank;
    for (int d = 0; d < rank; ++d) h.t.shape[d] = shape[d];
    set_layout(&h.t, transposed);
    const int64_t n = numel(&h.t);
    const size_t esz = qgmm_dtype_size(dt);
    h.bytes = (size_t)n * esz;
    uint8_t *store = calloc(h.bytes ? h.bytes : 1, 1);
    h.val = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t si = storage_index(&h.t, i);
        if (kind == 2) {
            const uint8_t b = (uint8_t)(121 + rnd_below(13));
            store[si] = b;
            h.val[i] = ldexp(1.0, (int)b - 127);
        } else if (kind == 1) {
            const float s = (float)(0.125 + 8.0 * rnd_unit());
            memcpy(store + si * 4, &s, 4);
            h.val[i] = s;
        } else if (dt == QGMM_BF16) {
            const uint16_t b = qgmm_f32_to_bf16((float)randn());
            memcpy(store + si * 2, &b, 2);
            h.val[i] = qgmm_bf16_to_f32(b);
        } else { /* fp8: values spread over the format's range, never NaN */
            const uint8_t q = qgmm_f32_to_fp8((float)(randn() * 16.0), (int)dt);
            store[si] = q;
            h.val[i] = qgmm_fp8_to_f32(q, (int)dt);
        }
    }
    OK(qgmm_buffer_alloc(g_ctx, h.bytes ? h.bytes : 1, &h.buf));
    if (h.bytes) OK(qgmm_buffer_upload(h.buf, 0, store, h.bytes));
    h.t.buffer = h.buf;
    free(store);
    return h;
}

static void free_tensor(htensor *h)
{
    qgmm_buffer_free(h->buf);
    free(h->val);
    memset(h, 0, sizeof *h);
}

/* A blocked e8m0 buffer made by the library from plain scales (M-groups / 3D / K-groups). */
static htensor to_blocked(qgmm_blocked_variant v, const htensor *plain, const qgmm_tensor *offs, size_t bytes)
{
    htensor h;
    memset(&h, 0, sizeof h);
    OK(qgmm_buffer_alloc(g_ctx, bytes, &h.buf));
    const int64_t s[1] = {(int64_t)bytes};
    h.t = qgmm_tensor_make(h.buf, 0, QGMM_E8M0, 1, s);
    h.bytes = bytes;
    OK(qgmm_scales_to_blocked(g_ctx, v, &plain->t, offs, &h.t, NULL));
    return h;
}

/* ------------------------------------------------------------------ one case */

typedef struct gcase {
    qgmm_gemm_kind kind;
    qgmm_recipe recipe;
    int64_t M, N, K;
    int G, pattern;
    qgmm_dtype adt, bdt, odt;
    int a_t, b_t, s_t, o_t;   /* transposed layouts: a, b, (blockwise) scales, out */
} gcase;

static const char *recipe_name(qgmm_recipe r)
{
    static const char *n[4] = {"bf16", "fp8-rowwise", "fp8-blockwise", "mxfp8"};
    return n[r];
}

static void describe(char *s, size_t cap, const gcase *c)
{
    snprintf(s, cap, "%s %s M=%lld N=%lld K=%lld G=%d pat=%d %s x %s -> %s layouts a%d b%d s%d o%d",
             c->kind == QGMM_GEMM_M_GROUPED ? "M-grouped" : "K-grouped", recipe_name(c->recipe),
             (long long)c->M, (long long)c->N, (long long)c->K, c->G, c->pattern, qgmm_dtype_name(c->adt),
             qgmm_dtype_name(c->bdt), qgmm_dtype_name(c->odt), c->a_t, c->b_t, c->s_t, c->o_t);
}

typedef struct operands {
    htensor a, b, sa, sb;        /* sa/sb: plain logical scales (f32 or e8m0) */
    htensor bsa, bsb;            /* MXFP8: blocked buffers the GEMM reads */
    htensor offs;
    int32_t *o;
} operands;

static void make_operands(const gcase *c, operands *op, const int32_t *offs)
{
    memset(op, 0, sizeof *op);
    const int64_t M = c->M, N = c->N, K = c->K, G = c->G;
    const int mgrp = c->kind == QGMM_GEMM_M_GROUPED;
    const int64_t ash[2] = {M, mgrp ? K : N};
    op->a = make_tensor(c->adt, 2, ash, c->a_t, 0);
    if (mgrp) {
        const int64_t bsh[3] = {G, N, K};
        op->b = make_tensor(c->bdt, 3, bsh, c->b_t, 0);
    } else {
        const int64_t bsh[2] = {M, K};
        op->b = make_tensor(c->bdt, 2, bsh, c->b_t, 0);
    }
    {
        const int64_t s[1] = {G};
        qgmm_buffer *b;
        OK(qgmm_buffer_alloc(g_ctx, sizeof(int32_t) * (size_t)G, &b));
        OK(qgmm_buffer_upload(b, 0, offs, sizeof(int32_t) * (size_t)G));
        op->offs.buf = b;
        op->offs.t = qgmm_tensor_make(b, 0, QGMM_I32, 1, s);
        op->o = malloc(sizeof(int32_t) * (size_t)G);
        memcpy(op->o, offs, sizeof(int32_t) * (size_t)G);
    }
    switch (c->recipe) {
    case QGMM_RECIPE_BF16:
        break;
    case QGMM_RECIPE_FP8_ROWWISE:
        if (mgrp) {
            const int64_t s1[1] = {M}, s2[2] = {G, N};
            op->sa = make_tensor(QGMM_F32, 1, s1, 0, 1);
            op->sb = make_tensor(QGMM_F32, 2, s2, 0, 1);
        } else {
            const int64_t s1[2] = {G, N}, s2[2] = {G, K};
            op->sa = make_tensor(QGMM_F32, 2, s1, 0, 1);
            op->sb = make_tensor(QGMM_F32, 2, s2, 0, 1);
        }
        break;
    case QGMM_RECIPE_FP8_BLOCKWISE:
        if (mgrp) {
            const int64_t s1[2] = {M, K / 128}, s2[3] = {G, cdiv(N, 128), K / 128};
            op->sa = make_tensor(QGMM_F32, 2, s1, c->s_t, 1);
            op->sb = make_tensor(QGMM_F32, 3, s2, c->s_t, 1);
        } else {
            const int64_t s1[2] = {N, cdiv(M, 128)}, s2[2] = {K, cdiv(M, 128)};
            op->sa = make_tensor(QGMM_F32, 2, s1, c->s_t, 1);
            op->sb = make_tensor(QGMM_F32, 2, s2, c->s_t, 1);
        }
        break;
    case QGMM_RECIPE_MXFP8:
        if (mgrp) {
            const int64_t s1[2] = {M, K / 32}, s2[3] = {G, N, K / 32};
            op->sa = make_tensor(QGMM_E8M0, 2, s1, 0, 2);
            op->sb = make_tensor(QGMM_E8M0, 3, s2, 0, 2);
            op->bsa = to_blocked(QGMM_BLOCKED_M_GROUPS, &op->sa, &op->offs.t, qgmm_blocked_m_groups_bytes(M, K / 32, G));
            op->bsb = to_blocked(QGMM_BLOCKED_3D, &op->sb, NULL, (size_t)G * qgmm_blocked_scales_bytes(N, K / 32));
        } else {
            const int64_t mc = cdiv(M, 32);
            const int64_t s1[2] = {N, mc}, s2[2] = {K, mc};
            op->sa = make_tensor(QGMM_E8M0, 2, s1, 0, 2);
            op->sb = make_tensor(QGMM_E8M0, 2, s2, 0, 2);
            op->bsa = to_blocked(QGMM_BLOCKED_K_GROUPS, &op->sa, &op->offs.t, qgmm_blocked_k_groups_bytes(N, mc, G));
            op->bsb = to_blocked(QGMM_BLOCKED_K_GROUPS, &op->sb, &op->offs.t, qgmm_blocked_k_groups_bytes(K, mc, G));
        }
        break;
    }
}

static void free_operands(operands *op)
{
    free_tensor(&op->a); free_tensor(&op->b); free_tensor(&op->sa); free_tensor(&op->sb);
    free_tensor(&op->bsa); free_tensor(&op->bsb); free_tensor(&op->offs);
    free(op->o);
}

/* Dequant multiplier of A's element (row m, col x) and B's (group g, row y, col x), read
 * from the plain logical scales. M-grouped: A (M,K) x = k; B (E,N,K) y = n, x = k.
 * K-grouped: A (M,N) x = n; B (M,K) y = m, x = k (g is the group of m). */
static double a_mult(const gcase *c, const operands *op, int g, int64_t m, int64_t x)
{
    const double *s = op->sa.val;
    if (c->kind == QGMM_GEMM_M_GROUPED) {
        switch (c->recipe) {
        case QGMM_RECIPE_FP8_ROWWISE: return s[m];
        case QGMM_RECIPE_FP8_BLOCKWISE: return s[m * (c->K / 128) + x / 128];
        case QGMM_RECIPE_MXFP8: return s[m * (c->K / 32) + x / 32];
        default: return 1.0;
        }
    }
    switch (c->recipe) {
    case QGMM_RECIPE_FP8_ROWWISE: return s[g * c->N + x];
    case QGMM_RECIPE_FP8_BLOCKWISE: return s[x * cdiv(c->M, 128) + m / 128];
    case QGMM_RECIPE_MXFP8: return s[x * cdiv(c->M, 32) + m / 32];
    default: return 1.0;
    }
}

static double b_mult(const gcase *c, const operands *op, int g, int64_t y, int64_t x)
{
    const double *s = op->sb.val;
    if (c->kind == QGMM_GEMM_M_GROUPED) {
        switch (c->recipe) {
        case QGMM_RECIPE_FP8_ROWWISE: return s[g * c->N + y];
        case QGMM_RECIPE_FP8_BLOCKWISE: return s[(g * cdiv(c->N, 128) + y / 128) * (c->K / 128) + x / 128];
        case QGMM_RECIPE_MXFP8: return s[(g * c->N + y) * (c->K / 32) + x / 32];
        default: return 1.0;
        }
    }
    switch (c->recipe) {
    case QGMM_RECIPE_FP8_ROWWISE: return s[g * c->K + x];
    case QGMM_RECIPE_FP8_BLOCKWISE: return s[x * cdiv(c->M, 128) + y / 128];
    case QGMM_RECIPE_MXFP8: return s[x * cdiv(c->M, 32) + y / 32];
    default: return 1.0;
    }
}

/* The float64 reference: naive loops over the dequantized operands, in logical indices.
 * M-grouped ref is (M, N) (rows past offs[E-1] unused); K-grouped ref is (G, N, K). */
static double *reference(const gcase *c, const operands *op)
{
    const int64_t M = c->M, N = c->N, K = c->K;
    if (c->kind == QGMM_GEMM_M_GROUPED) {
        double *ref = calloc((size_t)(M * N), sizeof(double));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
        for (int g = 0; g < c->G; ++g)
            for (int64_t m = g ? op->o[g - 1] : 0; m < op->o[g]; ++m)
                for (int64_t n = 0; n < N; ++n) {
                    double s = 0.0;
                    for (int64_t k = 0; k < K; ++k)
                        s += op->a.val[m * K + k] * a_mult(c, op, g, m, k) *
                             (op->b.val[(g * N + n) * K + k] * b_mult(c, op, g, n, k));
                    ref[m * N + n] = s;
                }
        return ref;
    }
    double *ref = calloc((size_t)(c->G * N * K), sizeof(double));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
    for (int g = 0; g < c->G; ++g)
        for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < K; ++k) {
                double s = 0.0;
                for (int64_t m = g ? op->o[g - 1] : 0; m < op->o[g]; ++m)
                    s += op->a.val[m * N + n] * a_mult(c, op, g, m, n) *
                         (op->b.val[m * K + k] * b_mult(c, op, g, m, k));
                ref[(g * N + n) * K + k] = s;
            }
    return ref;
}

static double read_out(const uint8_t *store, qgmm_dtype dt, int64_t si)
{
    if (dt == QGMM_F32) {
        float f;
        memcpy(&f, store + si * 4, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, store + si * 2, 2);
    return qgmm_bf16_to_f32(h);
}

static long g_skipped;

static void run_case(const gcase *c)
{
    g_cases++;
    char name[256];
    describe(name, sizeof name, c);
    if (g_verbose) {
        printf("case %s\n", name);
        fflush(stdout);
    }
    const int mgrp = c->kind == QGMM_GEMM_M_GROUPED;
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)c->G);
    const int64_t mult = mgrp ? 1 : c->recipe == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : c->recipe == QGMM_RECIPE_MXFP8 ? 32 : 1;
    make_offs(offs, c->G, c->M, mult, c->pattern);
    operands op;
    make_operands(c, &op, offs);

    qgmm_tensor out;
    memset(&out, 0, sizeof out);
    out.dtype = c->odt;
    out.rank = mgrp ? 2 : 3;
    out.shape[0] = mgrp ? c->M : c->G;
    out.shape[1] = c->N;
    out.shape[2] = mgrp ? 0 : c->K;
    set_layout(&out, c->o_t);
    const int64_t on = numel(&out);
    const size_t obytes = (size_t)on * qgmm_dtype_size(c->odt);
    OK(qgmm_buffer_alloc(g_ctx, obytes, &out.buffer));
    OK(qgmm_buffer_fill(out.buffer, 0, obytes, 0x7F)); /* poison: 0x7F7F... is a huge finite value */

    const qgmm_grouped_gemm_params p = {c->kind, c->recipe};
    const qgmm_tensor *sa = NULL, *sb = NULL;
    if (c->recipe == QGMM_RECIPE_FP8_ROWWISE || c->recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        sa = &op.sa.t;
        sb = &op.sb.t;
    } else if (c->recipe == QGMM_RECIPE_MXFP8) {
        sa = &op.bsa.t;
        sb = &op.bsb.t;
    }
    const qgmm_status gs = qgmm_grouped_gemm(g_ctx, &p, &op.a.t, &op.b.t, sa, sb, &op.offs.t, &out);
    if (gs == QGMM_ERR_UNSUPPORTED && strcmp(qgmm_context_backend_name(g_ctx), "cpu") != 0 &&
        (c->adt != c->bdt || c->adt == QGMM_F8E4M3FNUZ)) {
        /* A GPU backend may refuse the documented combinations (mixed fp8 operands,
         * e4m3fnuz on NVIDIA); counted as refused, never as passed. The cpu reference must
         * do all, and any other refusal fails below. */
        printf("  refused (documented): %s: %s\n", name, qgmm_last_error(g_ctx));
        g_cases--;
        g_skipped++;
        qgmm_buffer_free(out.buffer);
        free_operands(&op);
        free(offs);
        return;
    }
    OK(gs);
    OK(qgmm_synchronize(g_ctx));
    uint8_t *store = malloc(obytes);
    OK(qgmm_buffer_download(out.buffer, 0, store, obytes));

    double *ref = reference(c, &op);
    double num = 0.0, den = 0.0;
    int64_t poison_hit = 0, empty_nonzero = 0;
    const int64_t covered = offs[c->G - 1];
    for (int64_t i = 0; i < on; ++i) {
        const int64_t si = storage_index(&out, i);
        if (mgrp && i / c->N >= covered) { /* untouched rows keep the poison bytes */
            const size_t esz = qgmm_dtype_size(c->odt);
            for (size_t b = 0; b < esz; ++b) poison_hit += store[si * (int64_t)esz + (int64_t)b] != 0x7F;
            continue;
        }
        const double v = read_out(store, c->odt, si);
        if (!mgrp) { /* an empty group must give exact zeros */
            const int64_t g = i / (c->N * c->K);
            if (offs[g] == (g ? offs[g - 1] : 0) && v != 0.0) empty_nonzero++;
        }
        num += (v - ref[i]) * (v - ref[i]);
        den += ref[i] * ref[i];
    }
    const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    const double tol = c->odt == QGMM_F32 ? 1e-5 : 1e-2;
    double *worst = &g_worst[c->odt == QGMM_F32 ? 0 : 1];
    if (rel > *worst) *worst = rel;
    CHECK(rel <= tol && rel == rel, "%s: relative Frobenius error %.3g > %.0e", name, rel, tol);
    CHECK(poison_hit == 0, "%s: %lld bytes of rows past offs[E-1] were written", name, (long long)poison_hit);
    CHECK(empty_nonzero == 0, "%s: %lld outputs of empty groups are not zero", name, (long long)empty_nonzero);

    free(ref);
    free(store);
    qgmm_buffer_free(out.buffer);
    free_operands(&op);
    free(offs);
}

/* ------------------------------------------------------------------ bad offsets */

static void bad_offsets_case(qgmm_gemm_kind kind, qgmm_recipe recipe, const int32_t *offs, int G,
                             const char *why)
{
    g_cases++;
    gcase c = {kind, recipe, 256, 40, 128, G, 0, QGMM_BF16, QGMM_BF16, QGMM_F32, 0, 0, 0, 0};
    if (recipe != QGMM_RECIPE_BF16) c.adt = c.bdt = QGMM_F8E4M3FN;
    /* operands with valid offsets (the MXFP8 layouts need valid offsets to be built),
     * then the GEMM is handed the bad ones */
    int32_t good[8];
    make_offs(good, G, c.M, kind == QGMM_GEMM_K_GROUPED ? 128 : 1, 0);
    operands op;
    make_operands(&c, &op, good);
    OK(qgmm_buffer_upload(op.offs.buf, 0, offs, sizeof(int32_t) * (size_t)G));

    qgmm_tensor out;
    memset(&out, 0, sizeof out);
    out.dtype = QGMM_F32;
    out.rank = kind == QGMM_GEMM_M_GROUPED ? 2 : 3;
    out.shape[0] = kind == QGMM_GEMM_M_GROUPED ? c.M : G;
    out.shape[1] = c.N;
    out.shape[2] = kind == QGMM_GEMM_M_GROUPED ? 0 : c.K;
    set_layout(&out, 0);
    const size_t obytes = (size_t)numel(&out) * 4;
    OK(qgmm_buffer_alloc(g_ctx, obytes, &out.buffer));
    OK(qgmm_buffer_fill(out.buffer, 0, obytes, 0xA5));
    const qgmm_grouped_gemm_params p = {kind, recipe};
    const qgmm_tensor *sa = NULL, *sb = NULL;
    if (recipe == QGMM_RECIPE_FP8_ROWWISE || recipe == QGMM_RECIPE_FP8_BLOCKWISE) { sa = &op.sa.t; sb = &op.sb.t; }
    if (recipe == QGMM_RECIPE_MXFP8) { sa = &op.bsa.t; sb = &op.bsb.t; }
    qgmm_status s = qgmm_grouped_gemm(g_ctx, &p, &op.a.t, &op.b.t, sa, sb, &op.offs.t, &out);
    CHECK(s == QGMM_OK, "bad offsets (%s, %s %s): the op returned %s; the offsets are device data",
          why, kind == QGMM_GEMM_M_GROUPED ? "M" : "K", recipe_name(recipe), qgmm_status_string(s));
    s = qgmm_synchronize(g_ctx);
    CHECK(s == QGMM_ERR_BAD_OFFSETS, "bad offsets (%s, %s %s): synchronize returned %s", why,
          kind == QGMM_GEMM_M_GROUPED ? "M" : "K", recipe_name(recipe), qgmm_status_string(s));
    CHECK(qgmm_synchronize(g_ctx) == QGMM_OK, "bad offsets (%s): status not cleared", why);
    uint8_t *store = malloc(obytes);
    OK(qgmm_buffer_download(out.buffer, 0, store, obytes));
    size_t changed = 0;
    for (size_t i = 0; i < obytes; ++i) changed += store[i] != 0xA5;
    CHECK(changed == 0, "bad offsets (%s, %s %s): %zu output bytes written", why,
          kind == QGMM_GEMM_M_GROUPED ? "M" : "K", recipe_name(recipe), changed);
    free(store);
    qgmm_buffer_free(out.buffer);
    free_operands(&op);
}

static void bad_offsets_suite(void)
{
    const int32_t decreasing[3] = {128, 0, 256}, past_end[3] = {0, 128, 384}, negative[3] = {-128, 0, 256};
    for (int k = 0; k < 2; ++k)
        for (int r = 0; r < 4; ++r) {
            bad_offsets_case((qgmm_gemm_kind)k, (qgmm_recipe)r, decreasing, 3, "decreasing");
            bad_offsets_case((qgmm_gemm_kind)k, (qgmm_recipe)r, past_end, 3, "past the end");
            bad_offsets_case((qgmm_gemm_kind)k, (qgmm_recipe)r, negative, 3, "negative");
        }
    const int32_t not128[3] = {64, 128, 256}, not32[3] = {48, 128, 256};
    bad_offsets_case(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_FP8_BLOCKWISE, not128, 3, "size not a multiple of 128");
    bad_offsets_case(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_MXFP8, not32, 3, "size not a multiple of 32");
}

/* ------------------------------------------------------------------ the matrix of cases */

static void recipe_suite(qgmm_gemm_kind kind, qgmm_recipe r)
{
    const qgmm_dtype odts[2] = {QGMM_F32, QGMM_BF16};
    qgmm_dtype adt = QGMM_BF16, bdt = QGMM_BF16;
    if (r != QGMM_RECIPE_BF16) adt = bdt = QGMM_F8E4M3FN;
    const int mgrp = kind == QGMM_GEMM_M_GROUPED;
    /* (M, N, K, G, pattern, layouts a b s o) */
    struct { int64_t M, N, K; int G, pat, at, bt, st, ot; } shapes[] = {
        {700, 136, 256, 5, 0, 0, 0, 0, 0},     /* ragged; N not a tile multiple */
        {700, 136, 256, 6, 1, 1, 1, 1, 0},     /* empty groups; transposed operands/scales */
        {512, 72, 128, 1, 2, 0, 0, 0, 1},      /* one group; transposed output */
        {1536, 40, 128, 128, 1, 0, 1, 0, 0},   /* 128 groups, many empty */
        {768, 64, 192, 4, 3, 1, 0, 1, 0},      /* a tail no group covers */
        {256, 130, 384, 3, 0, 0, 0, 0, 0},     /* N past a 128 boundary (blockwise B tiles) */
    };
    const size_t nshapes = g_quick ? 2 : sizeof shapes / sizeof shapes[0];
    for (size_t i = 0; i < nshapes; ++i)
        for (int o = 0; o < 2; ++o) {
            gcase c = {kind, r, shapes[i].M, shapes[i].N, shapes[i].K, shapes[i].G, shapes[i].pat,
                       adt, bdt, odts[o], shapes[i].at, shapes[i].bt, shapes[i].st, shapes[i].ot};
            if (mgrp && r == QGMM_RECIPE_FP8_BLOCKWISE) c.K = cdiv(c.K, 128) * 128; /* K % 128 == 0 */
            if (!mgrp) { /* K-grouped contracts over M: keep the output (G, N, K) small */
                c.N = shapes[i].N / 2 + 3;
                c.K = shapes[i].K / 4 + 5;
            }
            run_case(&c);
        }
    if (g_big) { /* multi-tile shapes: many k-slices, full and partial 128/256-wide tiles */
        for (int o = 0; o < 2; ++o) {
            gcase c = {kind, r, 2048, 384, 1024, 8, 0, adt, bdt, odts[o], 0, 0, 0, 0};
            if (!mgrp) { c.M = 4096; c.N = 200; c.K = 264; c.a_t = c.b_t = 1; } /* token-contiguous */
            run_case(&c);
            gcase d = {kind, r, 3000, 520, 640, 16, 1, adt, bdt, odts[o], 0, 0, 0, 0};
            if (mgrp && r == QGMM_RECIPE_FP8_BLOCKWISE) d.K = 768;
            if (!mgrp) { d.M = 4096; d.N = 136; d.K = 300; d.a_t = d.b_t = 1; }
            run_case(&d);
            if (r != QGMM_RECIPE_BF16) continue;
            /* BF16 operands contiguous along their rows / columns (the MoE layer's dgrad
             * weights as an (E, K, N) view, row-major dy and x in wgrad): the Hopper
             * kernel's MN-major path, tails along every dim, groups starting anywhere */
            gcase e = {kind, r, 3000, 520, 600, 16, 1, adt, bdt, odts[o], 0, 1, 0, 0};
            if (!mgrp) { e.M = 4096; e.N = 200; e.K = 264; e.b_t = 0; }
            run_case(&e);
            /* one operand of each layout (K-grouped: token-contiguous dy, row-major x);
             * M-grouped: a column-major x too, which the portable kernel takes */
            gcase f = {kind, r, 2048, 384, 1000, 8, 0, adt, bdt, odts[o], 1, 1, 0, 0};
            if (!mgrp) { f.M = 3008; f.N = 136; f.K = 304; f.G = 5; f.b_t = 0; }
            run_case(&f);
        }
    }
    if (!mgrp) { /* token-contiguous operands (the GPU kernels' layout): ragged groups starting
                  * anywhere, last slices running into the next group */
        for (int o = 0; o < 2; ++o) {
            gcase c = {kind, r, 1024, 150, 90, 5, 1, adt, bdt, odts[o], 1, 1, 0, 0};
            run_case(&c);
        }
        if (r == QGMM_RECIPE_FP8_ROWWISE) { /* a contraction of 131065 tokens in one group (bf16
                                             * out): past the CUDA Hopper fast kernel's bound,
                                             * its coarse promotion (docs/numerics.md) */
            gcase c = {kind, r, 131072, 72, 40, 3, 4, adt, bdt, QGMM_BF16, 1, 1, 0, 0};
            run_case(&c);
        }
    }
    if (g_quick) return;
    if (!mgrp && r == QGMM_RECIPE_FP8_ROWWISE) { /* past the bound with 700 groups, empty ones
                                                  * included: on CUDA Hopper the coarse
                                                  * promotion's 2-stage form (3 stages do not
                                                  * fit beside that schedule) */
        gcase c = {kind, r, 40000, 136, 200, 700, 1, adt, bdt, QGMM_BF16, 1, 1, 0, 0};
        run_case(&c);
    }
    if (!mgrp) { /* K-grouped with N, K > 128: several 128-row tiles in each blocked group */
        gcase c = {kind, r, 768, 200, 160, 5, 1, adt, bdt, QGMM_F32, 1, 1, 0, 0};
        run_case(&c);
    }
    /* K not a multiple of 128 (and of 32) where the recipe allows it */
    if (r == QGMM_RECIPE_BF16 || r == QGMM_RECIPE_FP8_ROWWISE) {
        gcase c = {kind, r, 333, 50, 200, 3, 0, adt, bdt, QGMM_F32, 0, 0, 0, 0};
        run_case(&c);
        c.K = 37;
        c.odt = QGMM_BF16;
        run_case(&c);
    }
    if (r == QGMM_RECIPE_MXFP8 && mgrp) { /* K a multiple of 32 but not of 128 */
        gcase c = {kind, r, 300, 48, 96, 3, 0, adt, bdt, QGMM_F32, 0, 0, 0, 0};
        run_case(&c);
    }
    if (r != QGMM_RECIPE_BF16) { /* other fp8 formats: e5m2 gradients, e4m3fnuz (AMD) */
        gcase c = {kind, r, 400, 64, 256, 4, 0, QGMM_F8E5M2, QGMM_F8E5M2, QGMM_BF16, 0, 0, 0, 0};
        run_case(&c); /* e5m2 x e5m2 */
        c.bdt = QGMM_F8E4M3FN;
        c.odt = QGMM_F32;
        run_case(&c);
        if (r != QGMM_RECIPE_MXFP8) {
            c.adt = c.bdt = QGMM_F8E4M3FNUZ;
            run_case(&c);
        }
    }
}

int main(int argc, char **argv)
{
    /* argv[1]: the backend to test (default cpu); the same checks run on every backend. */
    const int positional = argc > 1 && argv[1][0] != '-';
    const char *backend = positional ? argv[1] : "cpu", *path = NULL;
    for (int i = positional ? 2 : 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: %s [BACKEND] [--path portable|hopper|auto] [--quick] [--big] [--verbose]\n"
                   "  The grouped GEMM of BACKEND (default cpu) vs a float64 reference for every\n"
                   "  recipe and kind, and bad offsets. --path sets QGMM_CUDA_GEMM_PATH; --quick:\n"
                   "  two shapes per recipe (for compute-sanitizer); --big: adds multi-tile shapes;\n"
                   "  --verbose: names each case before it runs (which one a device fault hit).\n"
                   "  Prints case counts and the worst relative errors; exits 1 on any failure.\n", argv[0]);
            return 0;
        } else if (!strcmp(argv[i], "--path") && i + 1 < argc) {
            path = argv[++i];
        } else if (!strcmp(argv[i], "--quick")) {
            g_quick = 1;
        } else if (!strcmp(argv[i], "--big")) {
            g_big = 1;
        } else if (!strcmp(argv[i], "--verbose")) {
            g_verbose = 1;
        } else {
            fprintf(stderr, "unknown argument %s (try --help)\n", argv[i]);
            return 2;
        }
    }
    if (path) setenv("QGMM_CUDA_GEMM_PATH", path, 1);
    if (qgmm_context_create(backend, 0, &g_ctx) != QGMM_OK) {
        if (strcmp(backend, "cpu") != 0) { /* a GPU backend this machine lacks */
            printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
            return 77;
        }
        fprintf(stderr, "cannot create a cpu context: %s\n", qgmm_last_error(NULL));
        return 2;
    }
    for (int k = 0; k < 2; ++k)
        for (int r = 0; r < 4; ++r) {
            const long c0 = g_cases, f0 = g_failures;
            recipe_suite((qgmm_gemm_kind)k, (qgmm_recipe)r);
            printf("%-9s %-13s: %ld cases, %ld failures\n", k ? "K-grouped" : "M-grouped",
                   recipe_name((qgmm_recipe)r), g_cases - c0, g_failures - f0);
        }
    const long c0 = g_cases;
    bad_offsets_suite();
    printf("bad offsets: %ld cases\n", g_cases - c0);
    printf("worst relative Frobenius error: f32 out %.3g (limit 1e-5), bf16 out %.3g (limit 1e-2)\n",
           g_worst[0], g_worst[1]);
    qgmm_context_destroy(g_ctx);
    printf("test_gemm_reference: %ld cases, %ld failures, %ld refused as documented (unsupported on this backend)\n",
           g_cases, g_failures, g_skipped);
    return g_failures ? 1 : 0;
}
