/*
 * Regression tests of issue 27's API defects, one function per defect, each failing on the
 * code before the fix:
 *   1. an allocation whose 256-byte round-up wraps (SIZE_MAX) must fail, allocating nothing;
 *   2. tensor spans that overflow int64 (huge strides or shapes, negative strides) are
 *      refused naming the tensor, and the public size helpers do not wrap;
 *   3. bad device offsets in the composite write none of y, dx, dw for every recipe, even
 *      when the workspace still holds valid padded offsets from an earlier call;
 *   4. the composite is all or nothing: a refused argument leaves dx untouched, names the
 *      composite's own argument, and leaves no BAD_OFFSETS pending;
 *   5. no output may overlap an input, another output or itself (also through two wraps of
 *      one allocation);
 *   7. padding whose int32 padded offsets could pass INT32_MAX is refused.
 * Backend: argv[1] or "cpu".
 */
#include "qgmm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static long g_failures;
#include "qgmm_test_check.h"

#define POISON 0xA5

static qgmm_buffer *alloc_filled(size_t bytes, uint8_t byte)
{
    qgmm_buffer *b = NULL;
    OK(qgmm_buffer_alloc(g_ctx, bytes, &b));
    OK(qgmm_buffer_fill(b, 0, bytes, byte));
    return b;
}

static unsigned char *snapshot(qgmm_buffer *b)
{
    const size_t n = qgmm_buffer_size(b);
    unsigned char *h = malloc(n ? n : 1);
    OK(qgmm_buffer_download(b, 0, h, n));
    return h;
}

/* 1 when b still holds exactly the bytes of `before`. */
static int unchanged(qgmm_buffer *b, const unsigned char *before)
{
    unsigned char *now = snapshot(b);
    const int same = !memcmp(now, before, qgmm_buffer_size(b));
    free(now);
    return same;
}

/* 1 when every byte of [off, off + n) of b is `byte`. */
static int all_bytes(qgmm_buffer *b, size_t off, size_t n, uint8_t byte)
{
    unsigned char *h = snapshot(b);
    int ok = 1;
    for (size_t i = 0; i < n && ok; ++i) ok = h[off + i] == byte;
    free(h);
    return ok;
}

static int says(const char *a, const char *b)
{
    const char *e = qgmm_last_error(g_ctx);
    return strstr(e, a) && (!b || strstr(e, b));
}

static void upload_i32(qgmm_buffer *b, size_t off, const int32_t *v, int n)
{
    OK(qgmm_buffer_upload(b, off, v, sizeof(int32_t) * (size_t)n));
}

/* ------------------------------------------------------------------ 1 */
static void alloc_round_up_wraps(void)
{
    const size_t sizes[3] = {SIZE_MAX, SIZE_MAX - 100, (size_t)1 << 63};
    for (int i = 0; i < 3; ++i) {
        qgmm_buffer *b = (qgmm_buffer *)&g_failures; /* a sentinel that must stay */
        const qgmm_status s = qgmm_buffer_alloc(g_ctx, sizes[i], &b);
        CHECK(s == QGMM_ERR_OUT_OF_MEMORY || s == QGMM_ERR_INVALID_ARGUMENT,
              "alloc(%zu) returned %s", sizes[i], qgmm_status_string(s));
        CHECK(b == (qgmm_buffer *)&g_failures, "alloc(%zu) failed but wrote *out", sizes[i]);
        if (s == QGMM_OK) qgmm_buffer_free(b);
    }
    /* a wrap may not claim more than any buffer can hold either */
    qgmm_buffer *real = alloc_filled(256, 0), *w = NULL;
    const qgmm_status s = qgmm_buffer_wrap(g_ctx, qgmm_buffer_native(real), SIZE_MAX, &w);
    CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "wrap of SIZE_MAX bytes returned %s", qgmm_status_string(s));
    if (s == QGMM_OK) qgmm_buffer_free(w);
    qgmm_buffer_free(real);
}

/* ------------------------------------------------------------------ 2 */
/* Dequantizes q into `out` of the given shape and strides: the call must be refused naming
 * `culprit`, and no byte of out's or its neighbour's buffer may change. q and its scales
 * sit in a wrap that claims 2^62 bytes, so that only the shape or out's strides can be at
 * fault (q, checked first, is named when the shape itself overflows). */
static void refused_out(const char *what, const char *culprit, int64_t r, int64_t c, int64_t s0, int64_t s1)
{
    qgmm_buffer *qb = alloc_filled(4096, 0x38), *ob = alloc_filled(4096, POISON), *nb = alloc_filled(4096, POISON);
    qgmm_buffer *big = NULL;
    OK(qgmm_buffer_wrap(g_ctx, qgmm_buffer_native(qb), (size_t)1 << 62, &big));
    const int64_t sq[2] = {r, c}, ss[1] = {r};
    qgmm_tensor q = qgmm_tensor_make(big, 0, QGMM_F8E4M3FN, 2, sq);
    q.strides[0] = 1; /* an input may overlap itself: (r + c - 1) bytes */
    q.strides[1] = 1;
    const qgmm_tensor sc = qgmm_tensor_make(big, 1024, QGMM_F32, 1, ss);
    qgmm_tensor out = qgmm_tensor_make(ob, 64, QGMM_BF16, 2, sq);
    out.strides[0] = s0;
    out.strides[1] = s1;
    qgmm_quant_format f;
    memset(&f, 0, sizeof f);
    f.kind = QGMM_QUANT_FP8_ROWWISE;
    f.rowwise.reduce_dim = 1;
    f.rowwise.scale_kind = QGMM_SCALE_RECIPROCAL;
    unsigned char *ob0 = snapshot(ob), *nb0 = snapshot(nb);
    const qgmm_status s = qgmm_dequantize(g_ctx, &f, &q, &sc, NULL, &out);
    CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "%s: dequantize returned %s", what, qgmm_status_string(s));
    CHECK(s == QGMM_OK || says(culprit, NULL), "%s: message does not name %s: %s", what, culprit,
          qgmm_last_error(g_ctx));
    qgmm_synchronize(g_ctx);
    CHECK(unchanged(ob, ob0) && unchanged(nb, nb0), "%s: bytes changed", what);
    free(ob0);
    free(nb0);
    qgmm_buffer_free(big);
    qgmm_buffer_free(qb);
    qgmm_buffer_free(ob);
    qgmm_buffer_free(nb);
}

static void span_overflow(void)
{
    refused_out("strides (INT64_MAX, 1)", "out", 2, 32, INT64_MAX, 1);
    refused_out("strides (2^62, 1)", "out", 2, 32, (int64_t)1 << 62, 1);
    refused_out("strides (2^40, 1) over 2^30 rows", "out", (int64_t)1 << 30, 32, (int64_t)1 << 40, 1);
    refused_out("shape (2^40, 2^24+1) strides (2^24, 1)", "q", (int64_t)1 << 40, ((int64_t)1 << 24) + 1,
                (int64_t)1 << 24, 1);
    refused_out("negative stride", "out", 2, 32, -32, 1);

    const int64_t sh[2] = {2, 32};
    qgmm_tensor t = qgmm_tensor_make(NULL, 0, QGMM_BF16, 2, sh);
    t.strides[0] = INT64_MAX;
    CHECK(qgmm_tensor_span_bytes(&t) == SIZE_MAX, "span of strides (INT64_MAX, 1) is %zu",
          qgmm_tensor_span_bytes(&t));
    const int64_t big = (int64_t)1 << 62;
    CHECK(qgmm_blocked_scales_bytes(big, big) == SIZE_MAX, "blocked bytes of (2^62, 2^62) wrapped");
    CHECK(qgmm_blocked_m_groups_bytes(big, big, 8) == SIZE_MAX, "m-groups bytes wrapped");
    CHECK(qgmm_blocked_k_groups_bytes(big, big, 8) == SIZE_MAX, "k-groups bytes wrapped");
    const qgmm_moe_params mp = {QGMM_RECIPE_FP8_ROWWISE, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
    const int64_t e40 = (int64_t)1 << 40;
    CHECK(qgmm_moe_workspace_bytes(&mp, e40, e40, e40, 1) == SIZE_MAX, "workspace bytes wrapped");
    const int64_t ds[3] = {e40, e40, e40};
    qgmm_tensor view;
    size_t bytes = 0;
    CHECK(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, QGMM_BLOCKWISE_ROW_MAJOR, 3, ds, NULL, 0, &view,
                                     &bytes) == QGMM_ERR_INVALID_ARGUMENT,
          "blockwise scales view of (2^40, 2^40, 2^40) accepted (%zu bytes)", bytes);
}

/* ------------------------------------------------------------------ composite fixtures */
enum { M = 200, N = 128, K = 128, E = 3 };

typedef struct moe {
    qgmm_buffer *in, *out, *ws;
    qgmm_tensor x, w, dy, offs, y, dx, dw;
} moe;

static uint16_t bf16_of(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}

/* Inputs in one buffer, outputs (poisoned) in another, a workspace for every recipe. */
static void moe_make(moe *m)
{
    const size_t xb = (size_t)M * K * 2, wb = (size_t)E * N * K * 2, dyb = (size_t)M * N * 2;
    const size_t in_bytes = xb + wb + dyb + 256;
    uint16_t *h = malloc(in_bytes);
    uint64_t st = 88172645463325252ull;
    for (size_t i = 0; i < in_bytes / 2; ++i)
        h[i] = bf16_of((float)(qgmm_test_xorshift(&st) >> 40) / (float)(1 << 24) - 0.5f);
    OK(qgmm_buffer_alloc(g_ctx, in_bytes, &m->in));
    OK(qgmm_buffer_upload(m->in, 0, h, in_bytes));
    free(h);
    const int64_t sx[2] = {M, K}, sw[3] = {E, N, K}, sdy[2] = {M, N}, so[1] = {E}, sy[2] = {M, N};
    m->x = qgmm_tensor_make(m->in, 0, QGMM_BF16, 2, sx);
    m->w = qgmm_tensor_make(m->in, xb, QGMM_BF16, 3, sw);
    m->dy = qgmm_tensor_make(m->in, xb + wb, QGMM_BF16, 2, sdy);
    m->offs = qgmm_tensor_make(m->in, xb + wb + dyb, QGMM_I32, 1, so);
    const size_t yb = (size_t)M * N * 4, dxb = (size_t)M * K * 4, dwb = (size_t)E * N * K * 4;
    m->out = alloc_filled(yb + dxb + dwb, POISON);
    m->y = qgmm_tensor_make(m->out, 0, QGMM_F32, 2, sy);
    m->dx = qgmm_tensor_make(m->out, yb, QGMM_F32, 2, sx);
    m->dw = qgmm_tensor_make(m->out, yb + dxb, QGMM_F32, 3, sw);
    size_t need = 0;
    for (int r = QGMM_RECIPE_BF16; r <= QGMM_RECIPE_MXFP8; ++r) {
        const qgmm_moe_params p = {(qgmm_recipe)r, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
        const size_t n = qgmm_moe_workspace_bytes(&p, M, N, K, E);
        if (n > need) need = n;
    }
    m->ws = alloc_filled(need, 0);
}

static void moe_free(moe *m)
{
    qgmm_buffer_free(m->in);
    qgmm_buffer_free(m->out);
    qgmm_buffer_free(m->ws);
}

static size_t span_of(const qgmm_tensor *t) { return qgmm_tensor_span_bytes(t); }

static const char *recipe_name(int r)
{
    static const char *n[4] = {"bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"};
    return n[r];
}

/* ------------------------------------------------------------------ 3 */
static void composite_bad_offsets(void)
{
    moe m;
    moe_make(&m);
    const int32_t good[E] = {70, 70, M};
    const int32_t bad[3][E] = {{10, 20, M + 5}, {50, 20, M}, {-1, 20, M}};
    const char *why[3] = {"past M", "decreasing", "negative"};
    for (int r = QGMM_RECIPE_BF16; r <= QGMM_RECIPE_MXFP8; ++r) {
        const qgmm_moe_params p = {(qgmm_recipe)r, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
        /* a good call first: the workspace then holds valid padded offsets */
        upload_i32(m.in, m.offs.offset, good, E);
        OK(qgmm_moe_experts_backward(g_ctx, &p, &m.x, &m.w, &m.dy, &m.offs, &m.dx, &m.dw, m.ws));
        OK(qgmm_synchronize(g_ctx));
        for (int b = 0; b < 3; ++b) {
            OK(qgmm_buffer_fill(m.out, 0, qgmm_buffer_size(m.out), POISON));
            upload_i32(m.in, m.offs.offset, bad[b], E);
            qgmm_status s = qgmm_moe_experts_forward(g_ctx, &p, &m.x, &m.w, &m.offs, &m.y, m.ws);
            CHECK(s == QGMM_OK, "%s forward, offsets %s: %s", recipe_name(r), why[b], qgmm_status_string(s));
            s = qgmm_synchronize(g_ctx);
            CHECK(s == QGMM_ERR_BAD_OFFSETS, "%s forward, offsets %s: synchronize gave %s", recipe_name(r),
                  why[b], qgmm_status_string(s));
            s = qgmm_moe_experts_backward(g_ctx, &p, &m.x, &m.w, &m.dy, &m.offs, &m.dx, &m.dw, m.ws);
            CHECK(s == QGMM_OK, "%s backward, offsets %s: %s", recipe_name(r), why[b], qgmm_status_string(s));
            s = qgmm_synchronize(g_ctx);
            CHECK(s == QGMM_ERR_BAD_OFFSETS, "%s backward, offsets %s: synchronize gave %s", recipe_name(r),
                  why[b], qgmm_status_string(s));
            CHECK(all_bytes(m.out, m.y.offset, span_of(&m.y), POISON), "%s, offsets %s: y written",
                  recipe_name(r), why[b]);
            CHECK(all_bytes(m.out, m.dx.offset, span_of(&m.dx), POISON), "%s, offsets %s: dx written",
                  recipe_name(r), why[b]);
            CHECK(all_bytes(m.out, m.dw.offset, span_of(&m.dw), POISON), "%s, offsets %s: dw written",
                  recipe_name(r), why[b]);
            CHECK(qgmm_synchronize(g_ctx) == QGMM_OK, "BAD_OFFSETS reported twice");
        }
    }
    moe_free(&m);
}

/* Every grouped GEMM recipe and kind writes nothing with bad offsets, in particular the
 * all -1 pattern the composite presets its padded offsets with. */
static void gemm_bad_offsets(void)
{
    enum { GM = 256, GN = 128, GK = 128, GG = 2 };
    const int32_t bad[4][GG] = {{-1, -1}, {10, GM + 5}, {50, 20}, {100, GM}};
    const char *why[4] = {"all -1", "past M", "decreasing", "not a multiple of the block"};
    for (int kind = 0; kind < 2; ++kind)
        for (int r = QGMM_RECIPE_BF16; r <= QGMM_RECIPE_MXFP8; ++r) {
            const qgmm_dtype dt = r == QGMM_RECIPE_BF16 ? QGMM_BF16 : QGMM_F8E4M3FN;
            const qgmm_dtype st = r == QGMM_RECIPE_MXFP8 ? QGMM_E8M0 : QGMM_F32;
            qgmm_buffer *in = alloc_filled(1 << 20, 0x38), *ob = alloc_filled(GG * GN * GK * 4, POISON);
            qgmm_tensor a, b, sa, sb, out;
            const int64_t so[1] = {GG};
            const qgmm_tensor offs = qgmm_tensor_make(in, 0, QGMM_I32, 1, so);
            int64_t sas[3] = {0, 0, 0}, sbs[3] = {0, 0, 0};
            int sar = 0, sbr = 0;
            if (kind == QGMM_GEMM_M_GROUPED) {
                const int64_t sa2[2] = {GM, GK}, sb3[3] = {GG, GN, GK}, s_out[2] = {GM, GN};
                a = qgmm_tensor_make(in, 4096, dt, 2, sa2);
                b = qgmm_tensor_make(in, 4096 + 131072, dt, 3, sb3);
                out = qgmm_tensor_make(ob, 0, QGMM_F32, 2, s_out);
                if (r == QGMM_RECIPE_FP8_ROWWISE) { sar = 1; sas[0] = GM; sbr = 2; sbs[0] = GG; sbs[1] = GN; }
                if (r == QGMM_RECIPE_FP8_BLOCKWISE) {
                    sar = 2; sas[0] = GM; sas[1] = GK / 128;
                    sbr = 3; sbs[0] = GG; sbs[1] = GN / 128; sbs[2] = GK / 128;
                }
                if (r == QGMM_RECIPE_MXFP8) {
                    sar = 1; sas[0] = (int64_t)qgmm_blocked_m_groups_bytes(GM, GK / 32, GG);
                    sbr = 1; sbs[0] = GG * (int64_t)qgmm_blocked_scales_bytes(GN, GK / 32);
                }
            } else {
                const int64_t s_out[3] = {GG, GN, GK};
                a = qgmm_tensor_make_colmajor(in, 4096, dt, GM, GN);
                b = qgmm_tensor_make_colmajor(in, 4096 + 131072, dt, GM, GK);
                out = qgmm_tensor_make(ob, 0, QGMM_F32, 3, s_out);
                if (r == QGMM_RECIPE_FP8_ROWWISE) { sar = 2; sas[0] = GG; sas[1] = GN; sbr = 2; sbs[0] = GG; sbs[1] = GK; }
                if (r == QGMM_RECIPE_FP8_BLOCKWISE) {
                    sar = 2; sas[0] = GN; sas[1] = GM / 128;
                    sbr = 2; sbs[0] = GK; sbs[1] = GM / 128;
                }
                if (r == QGMM_RECIPE_MXFP8) {
                    sar = 1; sas[0] = (int64_t)qgmm_blocked_k_groups_bytes(GN, GM / 32, GG);
                    sbr = 1; sbs[0] = (int64_t)qgmm_blocked_k_groups_bytes(GK, GM / 32, GG);
                }
            }
            sa = qgmm_tensor_make(sar ? in : NULL, 600000, st, sar ? sar : 1, sas);
            sb = qgmm_tensor_make(sbr ? in : NULL, 800000, st, sbr ? sbr : 1, sbs);
            const qgmm_grouped_gemm_params gp = {(qgmm_gemm_kind)kind, (qgmm_recipe)r};
            for (int k = 0; k < 4; ++k) {
                /* the multiple rule binds K-grouped blockwise and MX only */
                if (k == 3 && !(kind == QGMM_GEMM_K_GROUPED && r >= QGMM_RECIPE_FP8_BLOCKWISE)) continue;
                upload_i32(in, 0, bad[k], GG);
                qgmm_status s = qgmm_grouped_gemm(g_ctx, &gp, &a, &b, sar ? &sa : NULL, sbr ? &sb : NULL, &offs, &out);
                CHECK(s == QGMM_OK, "%s %s-grouped, offsets %s: %s (%s)", recipe_name(r), kind ? "K" : "M", why[k],
                      qgmm_status_string(s), qgmm_last_error(g_ctx));
                s = qgmm_synchronize(g_ctx);
                CHECK(s == QGMM_ERR_BAD_OFFSETS, "%s %s-grouped, offsets %s: synchronize gave %s", recipe_name(r),
                      kind ? "K" : "M", why[k], qgmm_status_string(s));
                CHECK(all_bytes(ob, 0, qgmm_buffer_size(ob), POISON), "%s %s-grouped, offsets %s: out written",
                      recipe_name(r), kind ? "K" : "M", why[k]);
            }
            qgmm_buffer_free(in);
            qgmm_buffer_free(ob);
        }
}

/* ------------------------------------------------------------------ 4 */
static void composite_all_or_nothing(void)
{
    moe m;
    moe_make(&m);
    const int32_t good[E] = {70, 70, M}, bad[E] = {10, 20, M + 5};
    /* column-major x (MXFP8 pads x for wgrad, after dgrad): refused up front, bad offsets
     * given too so a half-run call would leave BAD_OFFSETS pending */
    {
        const qgmm_moe_params p = {QGMM_RECIPE_MXFP8, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
        upload_i32(m.in, m.offs.offset, good, E);
        qgmm_tensor xc = qgmm_tensor_make_colmajor(m.in, 0, QGMM_BF16, M, K);
        unsigned char *before = snapshot(m.out);
        qgmm_status s = qgmm_moe_experts_backward(g_ctx, &p, &xc, &m.w, &m.dy, &m.offs, &m.dx, &m.dw, m.ws);
        CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "column-major x: %s", qgmm_status_string(s));
        CHECK(says("qgmm_moe_experts_backward: x.strides[1]", "x rows must be contiguous"),
              "column-major x: message %s", qgmm_last_error(g_ctx));
        CHECK(qgmm_synchronize(g_ctx) == QGMM_OK && unchanged(m.out, before), "column-major x: dx or dw written");
        upload_i32(m.in, m.offs.offset, bad, E);
        s = qgmm_moe_experts_backward(g_ctx, &p, &xc, &m.w, &m.dy, &m.offs, &m.dx, &m.dw, m.ws);
        CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "column-major x, bad offsets: %s", qgmm_status_string(s));
        s = qgmm_synchronize(g_ctx);
        CHECK(s == QGMM_OK, "a refused call left %s pending", qgmm_status_string(s));
        CHECK(unchanged(m.out, before), "column-major x, bad offsets: outputs written");
        free(before);
    }
    /* dw over dy (BF16: the wgrad GEMM reads dy): refused before dgrad writes dx */
    {
        const qgmm_moe_params p = {QGMM_RECIPE_BF16, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
        upload_i32(m.in, m.offs.offset, good, E);
        qgmm_buffer *both = alloc_filled((size_t)E * N * K * 4, POISON);
        const int64_t sdy[2] = {M, N}, sw[3] = {E, N, K};
        const qgmm_tensor dy2 = qgmm_tensor_make(both, 0, QGMM_BF16, 2, sdy);
        const qgmm_tensor dw2 = qgmm_tensor_make(both, 0, QGMM_F32, 3, sw);
        unsigned char *before = snapshot(m.out);
        const qgmm_status s = qgmm_moe_experts_backward(g_ctx, &p, &m.x, &m.w, &dy2, &m.offs, &m.dx, &dw2, m.ws);
        CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "dw over dy: %s", qgmm_status_string(s));
        CHECK(says("qgmm_moe_experts_backward: ", "dw") && says("dy", NULL), "dw over dy: message %s",
              qgmm_last_error(g_ctx));
        CHECK(unchanged(m.out, before), "dw over dy: dx written");
        free(before);
        qgmm_buffer_free(both);
    }
    moe_free(&m);
}

/* ------------------------------------------------------------------ 5 */
/* The call must be refused naming both arguments, and change no byte of `b`. */
#define REFUSED(b, call, name_a, name_b)                                                          \
    do {                                                                                          \
        unsigned char *before_ = snapshot(b);                                                     \
        const qgmm_status s_ = (call);                                                            \
        CHECK(s_ == QGMM_ERR_INVALID_ARGUMENT, "%s over %s: %s", name_a, name_b,                  \
              qgmm_status_string(s_));                                                            \
        CHECK(s_ == QGMM_OK || says(name_a, name_b), "%s over %s: message %s", name_a, name_b,    \
              qgmm_last_error(g_ctx));                                                            \
        qgmm_synchronize(g_ctx);                                                                  \
        CHECK(unchanged(b, before_), "%s over %s: bytes changed", name_a, name_b);                \
        free(before_);                                                                            \
    } while (0)

static void outputs_overlap(void)
{
    enum { R = 64, C = 128, G = 2 };
    qgmm_buffer *b = alloc_filled(1 << 20, 0);
    /* bf16 data of moderate values, offsets {32, 64} at byte 200000 */
    uint16_t *h = malloc(sizeof(uint16_t) * R * C * 2);
    for (int i = 0; i < R * C * 2; ++i) h[i] = bf16_of((float)(i % 37) * 0.25f - 4.0f);
    OK(qgmm_buffer_upload(b, 0, h, sizeof(uint16_t) * R * C * 2));
    free(h);
    const int32_t ov[G] = {32, R};
    const size_t OFFS = 200000;
    upload_i32(b, OFFS, ov, G);
    const int64_t sx[2] = {R, C}, so[1] = {G}, ss[2] = {G, C};
    const qgmm_tensor x0 = qgmm_tensor_make(b, 0, QGMM_BF16, 2, sx);
    const qgmm_tensor x1 = qgmm_tensor_make(b, (size_t)R * C * 2, QGMM_BF16, 2, sx);
    const qgmm_tensor offs = qgmm_tensor_make(b, OFFS, QGMM_I32, 1, so);
    const qgmm_tensor q = qgmm_tensor_make(b, 300000, QGMM_F8E4M3FN, 2, sx);
    const qgmm_tensor q1 = qgmm_tensor_make(b, 400000, QGMM_F8E4M3FN, 2, sx);
    const qgmm_tensor sc = qgmm_tensor_make(b, 500000, QGMM_F32, 2, ss);
    const qgmm_tensor sc1 = qgmm_tensor_make(b, 600000, QGMM_F32, 2, ss);
    const qgmm_fp8_rowwise_params jag = {0, 0, QGMM_SCALE_RECIPROCAL}; /* jagged colwise over rows */

    /* a valid call first: the rule refuses overlaps, not these layouts */
    OK(qgmm_quantize_fp8_rowwise(g_ctx, &jag, &x0, &offs, &q, &sc));
    OK(qgmm_synchronize(g_ctx));

    qgmm_tensor q_on_offs = qgmm_tensor_make(b, OFFS, QGMM_F8E4M3FN, 2, sx);
    REFUSED(b, qgmm_quantize_fp8_rowwise(g_ctx, &jag, &x0, &offs, &q_on_offs, &sc), "q", "offs");
    qgmm_tensor sc_on_offs = qgmm_tensor_make(b, OFFS - 8, QGMM_F32, 2, ss);
    REFUSED(b, qgmm_quantize_fp8_rowwise(g_ctx, &jag, &x0, &offs, &q, &sc_on_offs), "scales", "offs");

    qgmm_quant_format f;
    memset(&f, 0, sizeof f);
    f.kind = QGMM_QUANT_FP8_ROWWISE;
    f.rowwise = jag;
    const qgmm_tensor out_on_offs = qgmm_tensor_make(b, OFFS - 64, QGMM_BF16, 2, sx);
    REFUSED(b, qgmm_dequantize(g_ctx, &f, &q, &sc, &offs, &out_on_offs), "out", "offs");

    /* dual: scales0 over x1, q0 over scales1, q1 over scales0 */
    const qgmm_tensor sc0_on_x1 = qgmm_tensor_make(b, x1.offset, QGMM_F32, 2, ss);
    REFUSED(b, qgmm_quantize_fp8_rowwise_dual(g_ctx, &jag, &x0, &q, &sc0_on_x1, &jag, &x1, &q1, &sc1, &offs),
            "scales0", "x1");
    const qgmm_tensor q0_on_sc1 = qgmm_tensor_make(b, sc1.offset, QGMM_F8E4M3FN, 2, sx);
    REFUSED(b, qgmm_quantize_fp8_rowwise_dual(g_ctx, &jag, &x0, &q0_on_sc1, &sc, &jag, &x1, &q1, &sc1, &offs),
            "scales1", "q0");
    const qgmm_tensor q1_on_sc0 = qgmm_tensor_make(b, sc.offset, QGMM_F8E4M3FN, 2, sx);
    REFUSED(b, qgmm_quantize_fp8_rowwise_dual(g_ctx, &jag, &x0, &q, &sc, &jag, &x1, &q1_on_sc0, &sc1, &offs),
            "q1", "scales0");

    /* an output whose own strides overlap: (1, 1) */
    qgmm_tensor self = qgmm_tensor_make(b, 700000, QGMM_BF16, 2, sx);
    self.strides[0] = 1;
    self.strides[1] = 1;
    REFUSED(b, qgmm_dequantize(g_ctx, &f, &q, &sc, &offs, &self), "out", "strides");
    /* while a column-major output is fine */
    const qgmm_tensor colmajor = qgmm_tensor_make_colmajor(b, 700000, QGMM_BF16, R, C);
    OK(qgmm_dequantize(g_ctx, &f, &q, &sc, &offs, &colmajor));
    OK(qgmm_synchronize(g_ctx));

    /* two wraps of one allocation: out in one, offs in the other */
    qgmm_buffer *w1 = NULL, *w2 = NULL;
    OK(qgmm_buffer_wrap(g_ctx, qgmm_buffer_native(b), qgmm_buffer_size(b), &w1));
    OK(qgmm_buffer_wrap(g_ctx, qgmm_buffer_native(b), qgmm_buffer_size(b), &w2));
    qgmm_tensor out_w = out_on_offs, offs_w = offs;
    out_w.buffer = w1;
    offs_w.buffer = w2;
    REFUSED(b, qgmm_dequantize(g_ctx, &f, &q, &sc, &offs_w, &out_w), "out", "offs");
    qgmm_buffer_free(w1);
    qgmm_buffer_free(w2);
    qgmm_buffer_free(b);

    /* the composite: y over w (forward), dx over x (backward) */
    moe m;
    moe_make(&m);
    const int32_t good[E] = {70, 70, M};
    upload_i32(m.in, m.offs.offset, good, E);
    const qgmm_moe_params p = {QGMM_RECIPE_FP8_ROWWISE, QGMM_F8E4M3FN, QGMM_MX_FLOOR};
    const int64_t sy[2] = {M, N}, sdx[2] = {M, K};
    const qgmm_tensor y_on_w = qgmm_tensor_make(m.in, m.w.offset, QGMM_BF16, 2, sy);
    REFUSED(m.in, qgmm_moe_experts_forward(g_ctx, &p, &m.x, &m.w, &m.offs, &y_on_w, m.ws), "y", "w");
    const qgmm_tensor dx_on_x = qgmm_tensor_make(m.in, 0, QGMM_BF16, 2, sdx);
    REFUSED(m.in, qgmm_moe_experts_backward(g_ctx, &p, &m.x, &m.w, &m.dy, &m.offs, &dx_on_x, &m.dw, m.ws),
            "dx", "x");
    /* the workspace is written too: no input may live in it */
    qgmm_tensor offs_in_ws = m.offs;
    offs_in_ws.buffer = m.ws;
    offs_in_ws.offset = 0;
    upload_i32(m.ws, 0, good, E);
    REFUSED(m.ws, qgmm_moe_experts_forward(g_ctx, &p, &m.x, &m.w, &offs_in_ws, &m.y, m.ws), "workspace",
            "offs");
    moe_free(&m);
}

/* ------------------------------------------------------------------ 7 */
static void pad_past_int32(void)
{
    /* INT32_MAX tokens of zero columns (no bytes), two groups, alignment 128: the padded
     * total 2^31 + 128 does not fit the int32 padded offsets */
    qgmm_buffer *b = alloc_filled(4096, POISON);
    const int64_t T = INT32_MAX, G = 2;
    const int64_t sx[2] = {T, 0}, so[1] = {G}, sout[2] = {qgmm_padded_rows_bound(T, G, 128), 0};
    const qgmm_tensor x = qgmm_tensor_make(b, 0, QGMM_BF16, 2, sx);
    const qgmm_tensor offs = qgmm_tensor_make(b, 0, QGMM_I32, 1, so);
    const qgmm_tensor out = qgmm_tensor_make(b, 0, QGMM_BF16, 2, sout);
    const qgmm_tensor poffs = qgmm_tensor_make(b, 1024, QGMM_I32, 1, so);
    const int32_t ov[2] = {1, INT32_MAX};
    upload_i32(b, 0, ov, 2);
    unsigned char *before = snapshot(b);
    const qgmm_status s = qgmm_pad_token_groups(g_ctx, 128, &x, &offs, &out, NULL, &poffs);
    CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "pad past INT32_MAX rows: %s", qgmm_status_string(s));
    CHECK(s == QGMM_OK || says("2147483647", NULL), "pad past INT32_MAX: message %s", qgmm_last_error(g_ctx));
    qgmm_synchronize(g_ctx);
    CHECK(unchanged(b, before), "pad past INT32_MAX: padded_offs written");
    free(before);
    qgmm_buffer_free(b);
}

static const struct {
    const char *name;
    void (*run)(void);
} tests[] = {
    {"alloc", alloc_round_up_wraps},          {"span", span_overflow},
    {"gemm_offsets", gemm_bad_offsets},       {"composite_offsets", composite_bad_offsets}, {"composite_refusal", composite_all_or_nothing},
    {"overlap", outputs_overlap},             {"pad_int32", pad_past_int32},
};

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu", *only = argc > 2 ? argv[2] : NULL;
    if (argc > 1 && !strcmp(argv[1], "--help")) {
        printf("usage: test_hardening [backend [test]]  (backend: cpu, vulkan, cuda, hip; tests:");
        for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) printf(" %s", tests[i].name);
        printf(")\n");
        return 0;
    }
    if (qgmm_context_create(backend, 0, &g_ctx) != QGMM_OK) {
        printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
        return 77;
    }
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
        if (only && strcmp(only, tests[i].name)) continue;
        const long before = g_failures;
        tests[i].run();
        printf("%-18s %s\n", tests[i].name, g_failures == before ? "ok" : "FAILED");
    }
    qgmm_context_destroy(g_ctx);
    printf("hardening on %s: %ld failed\n", backend, g_failures);
    return g_failures ? 1 : 0;
}
