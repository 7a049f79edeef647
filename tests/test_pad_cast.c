/*
 * test_pad_cast.c — a GPU plugin's pad_cast slot (qgmm_backend.h: the composite's wgrad
 * operands of FP8 blockwise and MXFP8 padded and quantized along the tokens in one pass)
 * against the two public ops it replaces, qgmm_pad_token_groups followed by the cast of
 * the padded rows: padded_offs, q and every scale byte equal, on ragged groups (empty ones,
 * sizes off the token block, tokens past the last group), bf16 and f32 x, both fp8
 * formats, FLOOR and RCEIL, widths off the tile. Bad offsets: nothing written (q and the
 * scales keep their poison, padded_offs the valid-looking offsets it held) and the next
 * synchronize reports QGMM_ERR_BAD_OFFSETS.
 * The slot is reached through the plugin's own vtable (QGMM_PLUGIN_PATH), as libqgmm
 * reaches it. Usage: test_pad_cast [cuda|hip] (default: both, each where present).
 * Exit: 0 pass, 1 failure, 2 a setup call failed, 77 no such backend here (skip).
 */
#include "qgmm.h"
#include "qgmm_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static long g_failures;

#include "qgmm_test_check.h"
#include "qgmm_test_plugin.h"

#define POISON 0xA5

typedef struct kase {
    const char *name;
    int mx;           /* 0: FP8 blockwise 1x128, 1: MXFP8 K-groups */
    qgmm_mx_mode mode;
    qgmm_dtype xdt, qdt;
    int64_t T, D;
    int G;
    int32_t offs[8];
} kase;

/* The outputs of one way of running a case. */
typedef struct outs {
    qgmm_buffer *q, *s, *po;
    size_t qb, sb, pb;
} outs;

static outs outs_poisoned(size_t qb, size_t sb, size_t pb)
{
    outs o = {qgmm_test_buf_poisoned(qb, POISON), qgmm_test_buf_poisoned(sb, POISON),
              qgmm_test_buf_poisoned(pb, POISON), qb, sb, pb};
    return o;
}

static void outs_free(outs *o)
{
    qgmm_buffer_free(o->q);
    qgmm_buffer_free(o->s);
    qgmm_buffer_free(o->po);
}

static qgmm_tensor scales_of(const kase *k, qgmm_buffer *b, int64_t P)
{
    if (k->mx) return qgmm_test_t1(b, QGMM_E8M0, (int64_t)qgmm_blocked_k_groups_bytes(k->D, P / 32, k->G));
    const int64_t sh[2] = {k->D, P / 128};
    return qgmm_tensor_make(b, 0, QGMM_F32, 2, sh);
}

static qgmm_quant_format format_of(const kase *k)
{
    if (!k->mx) {
        const qgmm_quant_format f = QGMM_QUANT_FORMAT_FP8_BLOCKWISE_INIT(QGMM_BLOCK_1X128);
        return f;
    }
    qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(0);
    f.mx.mode = k->mode;
    f.mx.scale_layout = QGMM_SCALES_BLOCKED_K_GROUPS;
    return f;
}

/* One case both ways; bad: offsets made bad (decreasing) for the fused way only. */
static void run_case(const qgmm_backend_vtable *vt, const kase *k, uint64_t seed, int bad)
{
    const int A = k->mx ? 32 : 128;
    const int64_t P = qgmm_padded_rows_bound(k->T, k->G, A), D = k->D;
    const size_t esz = qgmm_dtype_size(k->xdt);
    /* x: random finite values, a few exact zeros, one large magnitude per case */
    const size_t xb = (size_t)(k->T * D) * esz;
    uint8_t *hx = (uint8_t *)malloc(xb ? xb : 1);
    for (int64_t i = 0; i < k->T * D; ++i) {
        const float v = (float)((int64_t)(qgmm_test_xorshift(&seed) % 20001) - 10000) / 1000.0f *
                        (i % 97 == 0 ? 0.0f : i == 5 ? 3.0e4f : 1.0f);
        if (k->xdt == QGMM_F32) {
            memcpy(hx + i * 4, &v, 4);
        } else {
            uint32_t u;
            memcpy(&u, &v, 4);
            const uint16_t h = (uint16_t)(u >> 16);
            memcpy(hx + i * 2, &h, 2);
        }
    }
    qgmm_buffer *bx = qgmm_test_buf_from(hx, xb);
    int32_t offs[8];
    memcpy(offs, k->offs, sizeof offs);
    if (bad && k->G > 1) {
        offs[0] = offs[k->G - 1] + 1 <= k->T ? offs[k->G - 1] + 1 : (int32_t)k->T;
        offs[1] = offs[0] - 1;
    } else if (bad) {
        offs[0] = (int32_t)k->T + 1;
    }
    qgmm_buffer *bo = qgmm_test_buf_from(k->offs, sizeof(int32_t) * (size_t)k->G);
    qgmm_buffer *bo_bad = qgmm_test_buf_from(offs, sizeof(int32_t) * (size_t)k->G);
    const int64_t xs[2] = {k->T, D}, ps[2] = {P, D};
    const qgmm_tensor x = qgmm_tensor_make(bx, 0, k->xdt, 2, xs);
    const qgmm_tensor to = qgmm_test_t1(bo, QGMM_I32, k->G);
    qgmm_buffer *bxp = qgmm_test_buf_poisoned((size_t)(P * D) * esz, 0);
    const qgmm_tensor xp = qgmm_tensor_make(bxp, 0, k->xdt, 2, ps);
    const qgmm_tensor sz = scales_of(k, NULL, P);
    const size_t qb = (size_t)(P * D), sb = (size_t)qgmm_tensor_numel(&sz) * qgmm_dtype_size(sz.dtype),
                 pb = sizeof(int32_t) * (size_t)k->G;
    outs ref = outs_poisoned(qb, sb, pb), got = outs_poisoned(qb, sb, pb);
    const qgmm_quant_format f = format_of(k);

    /* the two public ops */
    {
        const qgmm_tensor q = qgmm_tensor_make_colmajor(ref.q, 0, k->qdt, P, D), s = scales_of(k, ref.s, P);
        const qgmm_tensor po = qgmm_test_t1(ref.po, QGMM_I32, k->G);
        OK(qgmm_pad_token_groups(g_ctx, A, &x, &to, &xp, NULL, &po));
        if (k->mx) {
            OK(qgmm_quantize_mxfp8_grouped(g_ctx, &f.mx, &xp, &po, &q, &s));
        } else {
            const qgmm_tensor xpt = qgmm_tensor_make(bxp, 0, k->xdt, 2, ps);
            qgmm_tensor v = xpt, qt = q;
            v.shape[0] = D; v.shape[1] = P; v.strides[0] = 1; v.strides[1] = D;
            qt.shape[0] = D; qt.shape[1] = P; qt.strides[0] = q.strides[1]; qt.strides[1] = q.strides[0];
            OK(qgmm_quantize_fp8_blockwise(g_ctx, &f.blockwise, &v, &qt, &s));
        }
        OK(qgmm_synchronize(g_ctx));
    }
    /* the slot, with the problem the API builds (api/ops_pad_cast.c) */
    {
        const qgmm_tensor q = qgmm_tensor_make_colmajor(got.q, 0, k->qdt, P, D), s = scales_of(k, got.s, P);
        const qgmm_tensor po = qgmm_test_t1(got.po, QGMM_I32, k->G);
        qgmm_tensor xpv = xp, qv = q, xv = x;
        if (!k->mx) { /* the transposed views */
            xpv.shape[0] = D; xpv.shape[1] = P; xpv.strides[0] = 1; xpv.strides[1] = D;
            qv.shape[0] = D; qv.shape[1] = P; qv.strides[0] = q.strides[1]; qv.strides[1] = q.strides[0];
            xv.shape[0] = D; xv.shape[1] = k->T; xv.strides[0] = 1; xv.strides[1] = D;
        }
        qgmm_cast_problem p;
        qgmm_cast_problem_make(&f, 0, &xpv, &qv, &s, k->mx ? &po : NULL, &p);
        p.x.at.buffer = xv.buffer;
        p.x.at.offset = xv.offset;
        p.x.s_e = 0;
        p.x.s_o = xv.strides[p.odim];
        p.x.s_r = xv.strides[p.rdim];
        if (bad) /* valid-looking padded offsets must not make the cast write */
            OK(qgmm_buffer_copy(got.po, 0, ref.po, 0, pb));
        const qgmm_pad_gather g = qgmm_test_pad_gather(bad ? bo_bad : bo, k->G, k->T, A, got.po);
        OK(vt->pad_cast(g_ctx, &p, &g));
        const qgmm_status st = qgmm_synchronize(g_ctx);
        CHECK(st == (bad ? QGMM_ERR_BAD_OFFSETS : QGMM_OK), "%s%s: synchronize gave %s", k->name, bad ? " (bad offs)" : "",
              qgmm_status_string(st));
    }
    outs *w[2] = {&ref, &got};
    uint8_t *h[2][3];
    for (int i = 0; i < 2; ++i) {
        h[i][0] = (uint8_t *)qgmm_test_fetch(w[i]->q, qb);
        h[i][1] = (uint8_t *)qgmm_test_fetch(w[i]->s, sb);
        h[i][2] = (uint8_t *)qgmm_test_fetch(w[i]->po, pb);
    }
    const char *what[3] = {"q", "scales", "padded_offs"};
    const size_t n[3] = {qb, sb, pb};
    for (int j = 0; j < 3; ++j) {
        size_t diff = 0, first = 0;
        for (size_t i = 0; i < n[j]; ++i) {
            /* bad offsets: q and scales keep their poison, padded_offs what it held */
            const uint8_t want = bad && j < 2 ? POISON : h[0][j][i];
            if (h[1][j][i] != want && !diff++) first = i;
        }
        CHECK(diff == 0, "%s%s: %s differs in %zu of %zu bytes, first at %zu (%02x, want %02x)", k->name,
              bad ? " (bad offs)" : "", what[j], diff, n[j], first, diff ? h[1][j][first] : 0,
              diff ? (bad && j < 2 ? POISON : h[0][j][first]) : 0);
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) free(h[i][j]);
    outs_free(&ref);
    outs_free(&got);
    qgmm_buffer_free(bx);
    qgmm_buffer_free(bo);
    qgmm_buffer_free(bo_bad);
    qgmm_buffer_free(bxp);
    free(hx);
}

static const kase cases[] = {
    {"blockwise bf16 e4m3, 5 ragged groups", 0, QGMM_MX_FLOOR, QGMM_BF16, QGMM_F8E4M3FN, 1000, 256, 5,
     {0, 129, 160, 660, 960}},
    {"blockwise f32 e5m2, one group", 0, QGMM_MX_FLOOR, QGMM_F32, QGMM_F8E5M2, 700, 72, 1, {700}},
    {"blockwise bf16 e4m3, width 200, empty last", 0, QGMM_MX_FLOOR, QGMM_BF16, QGMM_F8E4M3FN, 520, 200, 4,
     {128, 255, 520, 520}},
    {"mx RCEIL bf16 e4m3, 6 ragged groups", 1, QGMM_MX_RCEIL, QGMM_BF16, QGMM_F8E4M3FN, 1000, 256, 6,
     {31, 31, 96, 500, 733, 990}},
    {"mx FLOOR f32 e5m2, 3 groups", 1, QGMM_MX_FLOOR, QGMM_F32, QGMM_F8E5M2, 300, 96, 3, {64, 65, 300}},
    {"mx FLOOR bf16 e4m3, width 40, empty first", 1, QGMM_MX_FLOOR, QGMM_BF16, QGMM_F8E4M3FN, 257, 40, 4,
     {0, 33, 200, 250}},
};

static int has_slot(const qgmm_backend_vtable *vt) { return vt->pad_cast != NULL; }

static int run_backend(const char *name)
{
    const qgmm_backend_vtable *vt = qgmm_test_plugin_open(name, "pad_cast", has_slot, &g_ctx);
    if (!vt) return 77;
    const long before = g_failures;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        for (int bad = 0; bad < 2; ++bad) run_case(vt, &cases[c], 0x9E3779B97F4A7C15ull + c, bad);
    printf("%s: %zu cases, good and bad offsets: %s\n", name, sizeof cases / sizeof cases[0],
           g_failures == before ? "ok" : "FAILED");
    qgmm_context_destroy(g_ctx);
    return 0;
}

int main(int argc, char **argv)
{
    const char *all[] = {"cuda", "hip"};
    int ran = 0;
    for (int i = 0; i < 2; ++i) {
        if (argc > 1 && strcmp(argv[1], all[i])) continue;
        if (run_backend(all[i]) == 0) ran = 1;
    }
    if (!ran) return 77;
    return g_failures ? 1 : 0;
}
