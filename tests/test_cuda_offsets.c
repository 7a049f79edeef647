/*
 * test_cuda_offsets.c — device-side offset validation of the CUDA backend: every op that
 * takes group offsets, given bad offsets (decreasing, past the extent, negative, not a
 * multiple of 32 for K-groups), must return QGMM_OK at enqueue (the offsets live on the
 * device), write NOTHING (every output byte keeps its poison), and make the next
 * qgmm_synchronize report QGMM_ERR_BAD_OFFSETS — then clear it (a second synchronize is
 * QGMM_OK). The same ops with good offsets must then write their outputs (poison gone)
 * and synchronize to QGMM_OK, so "writes nothing" is not "never writes".
 * Run under compute-sanitizer memcheck/racecheck on the device: no access may leave the
 * tensors even with offsets far out of range.
 * Exit: 0 pass, 1 failure, 2 a setup call failed, 77 no CUDA backend here (skip).
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static long g_failures;
static int g_checks;

#include "qgmm_test_check.h"

#define POISON 0xA5

typedef struct out_buf {
    const char *name;
    qgmm_buffer *buf;
    size_t bytes;
} out_buf;

static qgmm_buffer *alloc_random(size_t bytes, unsigned seed)
{
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(g_ctx, bytes, &b));
    uint8_t *h = (uint8_t *)malloc(bytes ? bytes : 1);
    /* bf16/f32 data: random bytes with the exponent byte kept moderate, never NaN-heavy */
    for (size_t i = 0; i < bytes; ++i) h[i] = (uint8_t)((seed += 0x9E3779B9u) >> 24) & ((i & 1) ? 0x3F : 0xFF);
    OK(qgmm_buffer_upload(b, 0, h, bytes));
    free(h);
    return b;
}

static qgmm_buffer *alloc_offs(const int32_t *v, int64_t g) { return qgmm_test_buf_from(v, (size_t)g * 4); }

static void poison(out_buf *o, int n)
{
    for (int i = 0; i < n; ++i) OK(qgmm_buffer_fill(o[i].buf, 0, o[i].bytes, POISON));
}

/* Returns the number of output bytes that changed from the poison. */
static size_t changed(out_buf *o, int n)
{
    size_t c = 0;
    for (int i = 0; i < n; ++i) {
        uint8_t *h = (uint8_t *)qgmm_test_fetch(o[i].buf, o[i].bytes);
        for (size_t k = 0; k < o[i].bytes; ++k) c += h[k] != POISON;
        free(h);
    }
    return c;
}

typedef qgmm_status (*op_fn)(void *ud, const qgmm_tensor *offs);

/* Runs op with `bad` offsets (expect nothing written + BAD_OFFSETS) then `good` ones. */
static void check_op(const char *name, op_fn op, void *ud, out_buf *outs, int nouts,
                     const int32_t *bad, const int32_t *good, int64_t G, const char *why)
{
    qgmm_buffer *ob = alloc_offs(bad, G);
    const int64_t gs[1] = {G};
    qgmm_tensor offs = qgmm_tensor_make(ob, 0, QGMM_I32, 1, gs);
    poison(outs, nouts);
    OK(qgmm_synchronize(g_ctx));
    qgmm_status s = op(ud, &offs);
    g_checks++;
    CHECK(s == QGMM_OK, "%s (%s): enqueue returned %s: %s", name, why, qgmm_status_string(s), qgmm_last_error(g_ctx));
    s = qgmm_synchronize(g_ctx);
    CHECK(s == QGMM_ERR_BAD_OFFSETS, "%s (%s): synchronize returned %s, want QGMM_ERR_BAD_OFFSETS", name, why,
          qgmm_status_string(s));
    s = qgmm_synchronize(g_ctx);
    CHECK(s == QGMM_OK, "%s (%s): second synchronize returned %s (status not cleared)", name, why,
          qgmm_status_string(s));
    const size_t ch = changed(outs, nouts);
    CHECK(ch == 0, "%s (%s): %zu output bytes written despite bad offsets", name, why, ch);
    qgmm_buffer_free(ob);

    /* good offsets: must write and sync clean */
    ob = alloc_offs(good, G);
    offs = qgmm_tensor_make(ob, 0, QGMM_I32, 1, gs);
    poison(outs, nouts);
    OK(op(ud, &offs));
    s = qgmm_synchronize(g_ctx);
    CHECK(s == QGMM_OK, "%s (good offsets): synchronize returned %s", name, qgmm_status_string(s));
    CHECK(changed(outs, nouts) != 0, "%s (good offsets): nothing written", name);
    qgmm_buffer_free(ob);
}

/* ------------------------------------------------------------------ the ops */
enum { M = 512, K = 256, G = 4, D = 64 };

typedef struct env {
    qgmm_tensor x, q_row, q_col, s_row, s_col, deq;
    qgmm_tensor sc_plain, blk_m, blk_k, starts, sc_plain_out;
    qgmm_tensor tok, padded, pstart, poffs, unpadded, ids;
} env;

static qgmm_status op_row_jagged(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    qgmm_fp8_rowwise_params p = {1, 0, QGMM_SCALE_RECIPROCAL};
    return qgmm_quantize_fp8_rowwise(g_ctx, &p, &e->x, offs, &e->q_row, &e->s_row);
}
static qgmm_status op_col_jagged(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    qgmm_fp8_rowwise_params p = {0, 1, QGMM_SCALE_MULTIPLIER};
    return qgmm_quantize_fp8_rowwise(g_ctx, &p, &e->x, offs, &e->q_col, &e->s_col);
}
static qgmm_status op_dequant_jagged(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    qgmm_quant_format f;
    memset(&f, 0, sizeof f);
    f.kind = QGMM_QUANT_FP8_ROWWISE;
    f.rowwise.reduce_dim = 1;
    f.rowwise.scale_kind = QGMM_SCALE_RECIPROCAL;
    return qgmm_dequantize(g_ctx, &f, &e->q_row, &e->s_row, offs, &e->deq);
}
static qgmm_status op_to_blocked_m(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    return qgmm_scales_to_blocked(g_ctx, QGMM_BLOCKED_M_GROUPS, &e->sc_plain, offs, &e->blk_m, &e->starts);
}
static qgmm_status op_to_blocked_k(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    return qgmm_scales_to_blocked(g_ctx, QGMM_BLOCKED_K_GROUPS, &e->sc_plain, offs, &e->blk_k, &e->starts);
}
static qgmm_status op_from_blocked_m(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    return qgmm_scales_from_blocked(g_ctx, QGMM_BLOCKED_M_GROUPS, &e->blk_m, offs, &e->sc_plain_out);
}
static qgmm_status op_from_blocked_k(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    return qgmm_scales_from_blocked(g_ctx, QGMM_BLOCKED_K_GROUPS, &e->blk_k, offs, &e->sc_plain_out);
}
static qgmm_status op_pad(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    return qgmm_pad_token_groups(g_ctx, 32, &e->tok, offs, &e->padded, &e->pstart, &e->poffs);
}
static qgmm_status op_unpad(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    return qgmm_unpad_token_groups(g_ctx, 32, &e->padded, offs, &e->unpadded);
}
static qgmm_status op_row_ids(void *ud, const qgmm_tensor *offs)
{
    env *e = (env *)ud;
    return qgmm_group_row_ids(g_ctx, offs, NULL, &e->ids);
}

static qgmm_tensor t2(qgmm_buffer *b, qgmm_dtype t, int64_t r, int64_t c)
{
    const int64_t s[2] = {r, c};
    return qgmm_tensor_make(b, 0, t, 2, s);
}
static qgmm_tensor t1(qgmm_buffer *b, qgmm_dtype t, int64_t n)
{
    const int64_t s[1] = {n};
    return qgmm_tensor_make(b, 0, t, 1, s);
}
static qgmm_buffer *out_alloc(out_buf *o, const char *name, size_t bytes)
{
    OK(qgmm_buffer_alloc(g_ctx, bytes, &o->buf));
    o->name = name;
    o->bytes = bytes;
    return o->buf;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: test_cuda_offsets\nBad device offsets on every grouped CUDA op: nothing written,\n"
               "QGMM_ERR_BAD_OFFSETS at synchronize. Exit 77 when the cuda backend is unavailable.\n");
        return 0;
    }
    if (qgmm_context_create("cuda", 0, &g_ctx) != QGMM_OK) {
        printf("SKIP: cuda backend unavailable: %s\n", qgmm_last_error(NULL));
        return 77;
    }
    printf("%s\n", qgmm_context_describe(g_ctx));
    env e;
    memset(&e, 0, sizeof e);
    e.x = t2(alloc_random((size_t)M * K * 2, 1), QGMM_BF16, M, K);
    out_buf o_row[2], o_col[2], o_deq[1], o_bm[2], o_bk[2], o_fb[1], o_pad[3], o_unpad[1], o_ids[1];
    e.q_row = t2(out_alloc(&o_row[0], "q", (size_t)M * K), QGMM_F8E4M3FN, M, K);
    e.s_row = t2(out_alloc(&o_row[1], "scales", (size_t)G * M * 4), QGMM_F32, G, M);
    e.q_col = qgmm_tensor_make_colmajor(out_alloc(&o_col[0], "q", (size_t)M * K), 0, QGMM_F8E4M3FN, M, K);
    e.s_col = t2(out_alloc(&o_col[1], "scales", (size_t)G * K * 4), QGMM_F32, G, K);
    e.deq = t2(out_alloc(&o_deq[0], "out", (size_t)M * K * 4), QGMM_F32, M, K);

    const int64_t SC = K / 32; /* plain MX scales (M, K/32) */
    e.sc_plain = t2(alloc_random((size_t)M * SC, 7), QGMM_U8, M, SC);
    const size_t bm = qgmm_blocked_m_groups_bytes(M, SC, G), bk = qgmm_blocked_k_groups_bytes(M, SC, G);
    e.blk_m = t1(out_alloc(&o_bm[0], "blocked", bm), QGMM_U8, (int64_t)bm);
    e.starts = t1(out_alloc(&o_bm[1], "starts", G * 4), QGMM_I32, G);
    o_bk[1] = o_bm[1];
    e.blk_k = t1(out_alloc(&o_bk[0], "blocked", bk), QGMM_U8, (int64_t)bk);
    e.sc_plain_out = t2(out_alloc(&o_fb[0], "plain", (size_t)M * SC), QGMM_U8, M, SC);

    const int64_t bound = qgmm_padded_rows_bound(M, G, 32);
    e.tok = t2(alloc_random((size_t)M * D * 2, 3), QGMM_BF16, M, D);
    e.padded = t2(out_alloc(&o_pad[0], "padded", (size_t)bound * D * 2), QGMM_BF16, bound, D);
    e.pstart = t1(out_alloc(&o_pad[1], "padded_start", G * 4), QGMM_I32, G);
    e.poffs = t1(out_alloc(&o_pad[2], "padded_offs", G * 4), QGMM_I32, G);
    e.unpadded = t2(out_alloc(&o_unpad[0], "out", (size_t)M * D * 2), QGMM_BF16, M, D);
    e.ids = t1(out_alloc(&o_ids[0], "row_ids", (size_t)M * 4), QGMM_I32, M);

    /* bad patterns over an extent n (rows or columns) */
    const int32_t decreasing_m[G] = {100, 50, 300, M}, past_m[G] = {100, 200, 300, M + 1},
                  negative[G] = {-32, 64, 128, 256}, huge[G] = {64, 0x7FFFFFF0, 0x7FFFFFF0, 0x7FFFFFF0};
    const int32_t good_m[G] = {96, 96, 300, 480};
    const int32_t decreasing_k[G] = {128, 64, 192, K}, past_k[G] = {64, 128, 192, K + 32};
    const int32_t good_k[G] = {64, 64, 160, 224};
    const int32_t unaligned_k[G] = {64, 100, 160, 224};
    const int32_t good_kscale[G] = {64, 64, 160, 224};
    /* M-grouped K-scale offsets count elements along K = SC*32 */

    struct { const char *name; op_fn fn; out_buf *o; int n; int over_k; } ops[] = {
        {"fp8_rowwise jagged rowwise (groups over K)", op_row_jagged, o_row, 2, 1},
        {"fp8_rowwise jagged colwise (groups over M)", op_col_jagged, o_col, 2, 0},
        {"dequantize jagged rowwise", op_dequant_jagged, o_deq, 1, 1},
        {"scales_to_blocked M-groups", op_to_blocked_m, o_bm, 2, 0},
        {"scales_from_blocked M-groups", op_from_blocked_m, o_fb, 1, 0},
        {"pad_token_groups", op_pad, o_pad, 3, 0},
        {"unpad_token_groups", op_unpad, o_unpad, 1, 0},
        {"group_row_ids", op_row_ids, o_ids, 1, 0},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
        const int32_t *good = ops[i].over_k ? good_k : good_m;
        check_op(ops[i].name, ops[i].fn, &e, ops[i].o, ops[i].n, ops[i].over_k ? decreasing_k : decreasing_m, good,
                 G, "decreasing");
        check_op(ops[i].name, ops[i].fn, &e, ops[i].o, ops[i].n, ops[i].over_k ? past_k : past_m, good, G,
                 "past the extent");
        check_op(ops[i].name, ops[i].fn, &e, ops[i].o, ops[i].n, negative, good, G, "negative");
        check_op(ops[i].name, ops[i].fn, &e, ops[i].o, ops[i].n, huge, good, G, "huge");
    }
    /* K-groups: offsets along K in elements, multiples of 32 */
    check_op("scales_to_blocked K-groups", op_to_blocked_k, &e, o_bk, 2, decreasing_k, good_kscale, G, "decreasing");
    check_op("scales_to_blocked K-groups", op_to_blocked_k, &e, o_bk, 2, past_k, good_kscale, G, "past the extent");
    check_op("scales_to_blocked K-groups", op_to_blocked_k, &e, o_bk, 2, unaligned_k, good_kscale, G,
             "not a multiple of 32");
    check_op("scales_from_blocked K-groups", op_from_blocked_k, &e, o_fb, 1, unaligned_k, good_kscale, G,
             "not a multiple of 32");
    check_op("scales_from_blocked K-groups", op_from_blocked_k, &e, o_fb, 1, huge, good_kscale, G, "huge");

    qgmm_context_destroy(g_ctx);
    printf("%d bad-offset checks, %ld failures\n", g_checks, g_failures);
    return g_failures ? 1 : 0;
}
