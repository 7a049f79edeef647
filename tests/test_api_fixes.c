/*
 * The API promises of issue 28, one function each:
 *   1. qgmm_last_error is "" after every call that returns QGMM_OK (on the context and the
 *      calling thread's copy), and the calls that return no status leave it alone;
 *   2. the QGMM_ERR_BAD_OFFSETS message of qgmm_synchronize names the op and its offsets
 *      argument: one op, the op's own rule, several ops, repeats, a composite as itself,
 *      and only the ops since the last synchronize;
 *   3. a grouped GEMM refusing its scales says which layout it wants and which call makes
 *      it (MXFP8 M-groups, 3D and K-groups; FP8 rowwise and blockwise);
 *   4. the parameter INIT macros give the documented defaults (RCEIL for MX) and their
 *      structs run as they are.
 * Compiled as C99 (tests/CMakeLists.txt); tests/cxx/ compiles the macros as C++.
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

enum { M = 64, K = 64, N = 32, E = 2 };

static qgmm_buffer *alloc_zero(size_t bytes)
{
    qgmm_buffer *b = NULL;
    OK(qgmm_buffer_alloc(g_ctx, bytes, &b));
    OK(qgmm_buffer_fill(b, 0, bytes, 0));
    return b;
}

static qgmm_tensor tensor(qgmm_buffer *b, qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t shape[3] = {d0, d1, d2};
    return qgmm_tensor_make(b, 0, dt, rank, shape);
}

static void set_offs(qgmm_buffer *b, int32_t o0, int32_t o1)
{
    const int32_t v[E] = {o0, o1};
    OK(qgmm_buffer_upload(b, 0, v, sizeof v));
}

static int says(const char *needle) { return strstr(qgmm_last_error(g_ctx), needle) != NULL; }

/* ------------------------------------------------------------------ 1 */
/* A refused call first, so that there is a message to clear. */
static void provoke(void)
{
    const qgmm_status s = qgmm_buffer_alloc(g_ctx, 16, NULL);
    CHECK(s == QGMM_ERR_INVALID_ARGUMENT && qgmm_last_error(g_ctx)[0] && qgmm_last_error(NULL)[0],
          "the provoking call left no message");
}

#define CLEARS(call, ctx_too)                                                                   \
    do {                                                                                        \
        provoke();                                                                              \
        const qgmm_status s_ = (call);                                                          \
        CHECK(s_ == QGMM_OK, "%s: %s (%s)", #call, qgmm_status_string(s_), qgmm_last_error(g_ctx)); \
        CHECK(!qgmm_last_error(NULL)[0], "%s: the thread's message stayed \"%s\"", #call,        \
              qgmm_last_error(NULL));                                                           \
        CHECK(!(ctx_too) || !qgmm_last_error(g_ctx)[0], "%s: the context's message stayed \"%s\"", \
              #call, qgmm_last_error(g_ctx));                                                   \
    } while (0)

static void last_error_cleared(const char *backend)
{
    unsigned char host[256];
    memset(host, 1, sizeof host);
    qgmm_buffer *a = NULL, *b = alloc_zero(256), *c = alloc_zero(256), *offs = alloc_zero(sizeof(int32_t) * E);
    CLEARS(qgmm_buffer_alloc(g_ctx, 256, &a), 1);
    CLEARS(qgmm_buffer_upload(a, 0, host, sizeof host), 1);
    CLEARS(qgmm_buffer_download(a, 0, host, sizeof host), 1);
    CLEARS(qgmm_buffer_fill(a, 0, 16, 7), 1);
    CLEARS(qgmm_buffer_copy(b, 0, a, 0, 64), 1);
    if (!strcmp(backend, "cpu")) {
        qgmm_buffer *w = NULL;
        CLEARS(qgmm_buffer_wrap(g_ctx, host, sizeof host, &w), 1);
        qgmm_buffer_free(w);
    }
    qgmm_event *e0 = NULL, *e1 = NULL;
    double ms = 0;
    CLEARS(qgmm_event_create(g_ctx, &e0), 1);
    OK(qgmm_event_create(g_ctx, &e1));
    CLEARS(qgmm_event_record(e0), 1);
    OK(qgmm_event_record(e1));
    CLEARS(qgmm_event_elapsed_ms(e0, e1, &ms), 1);
    qgmm_event_destroy(e0);
    qgmm_event_destroy(e1);

    /* an op and a composite */
    set_offs(offs, 1, 2);
    const qgmm_tensor x = tensor(a, QGMM_F32, 2, 2, 32, 0), q = tensor(b, QGMM_F8E4M3FN, 2, 2, 32, 0);
    const qgmm_tensor sc = tensor(c, QGMM_F32, 1, 2, 0, 0);
    const qgmm_fp8_rowwise_params rw = QGMM_FP8_ROWWISE_PARAMS_INIT(1);
    CLEARS(qgmm_quantize_fp8_rowwise(g_ctx, &rw, &x, NULL, &q, &sc), 1);
    const qgmm_tensor xb = tensor(a, QGMM_BF16, 2, 2, 8, 0), wb = tensor(b, QGMM_BF16, 3, E, 4, 8);
    const qgmm_tensor yb = tensor(c, QGMM_F32, 2, 2, 4, 0), to = tensor(offs, QGMM_I32, 1, E, 0, 0);
    const qgmm_moe_params mp = QGMM_MOE_PARAMS_INIT(QGMM_RECIPE_BF16);
    CLEARS(qgmm_moe_experts_forward(g_ctx, &mp, &xb, &wb, &to, &yb, NULL), 1);
    CLEARS(qgmm_synchronize(g_ctx), 1);

    /* calls without a context clear the thread's message only */
    const int64_t ds[2] = {128, 128};
    qgmm_tensor view;
    size_t bytes = 0;
    CLEARS(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, QGMM_BLOCKWISE_TORCHAO, 2, ds, NULL, 0, &view, &bytes), 0);
    CHECK(qgmm_last_error(g_ctx)[0], "a call on no context cleared the context's message");
    qgmm_backend_info info;
    CLEARS(qgmm_backend_get_info(0, &info), 0);
    qgmm_context *other = NULL;
    CLEARS(qgmm_context_create("cpu", 0, &other), 0);
    qgmm_context_destroy(other);

    /* calls that return no status leave the message */
    provoke();
    (void)qgmm_context_describe(g_ctx);
    (void)qgmm_buffer_size(a);
    (void)qgmm_moe_workspace_bytes(&mp, M, N, K, E);
    (void)qgmm_blocked_scales_bytes(128, 4);
    CHECK(says("out is NULL"), "an accessor cleared the message: \"%s\"", qgmm_last_error(g_ctx));
    OK(qgmm_synchronize(g_ctx));

    qgmm_buffer *all[] = {a, b, c, offs};
    for (int i = 0; i < 4; ++i) qgmm_buffer_free(all[i]);
}

/* ------------------------------------------------------------------ 2 */
typedef struct gemm_case {
    qgmm_buffer *a, *b, *out, *offs, *offs2, *x, *xp;
    qgmm_tensor ta, tb, tout, toffs, toffs2, tx, txp;
} gemm_case;

static void gemm_make(gemm_case *g)
{
    const int64_t P = qgmm_padded_rows_bound(M, E, 32);
    g->a = alloc_zero(2 * M * K);
    g->b = alloc_zero(2 * E * N * K);
    g->out = alloc_zero(4 * M * N);
    g->offs = alloc_zero(4 * E);
    g->offs2 = alloc_zero(4 * E);
    g->x = alloc_zero(2 * M * K);
    g->xp = alloc_zero((size_t)(2 * P * K));
    g->ta = tensor(g->a, QGMM_BF16, 2, M, K, 0);
    g->tb = tensor(g->b, QGMM_BF16, 3, E, N, K);
    g->tout = tensor(g->out, QGMM_F32, 2, M, N, 0);
    g->toffs = tensor(g->offs, QGMM_I32, 1, E, 0, 0);
    g->toffs2 = tensor(g->offs2, QGMM_I32, 1, E, 0, 0);
    g->tx = tensor(g->x, QGMM_BF16, 2, M, K, 0);
    g->txp = tensor(g->xp, QGMM_BF16, 2, P, K, 0);
}

static qgmm_status gemm(gemm_case *g, const qgmm_tensor *offs)
{
    const qgmm_grouped_gemm_params p = QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_BF16);
    return qgmm_grouped_gemm(g_ctx, &p, &g->ta, &g->tb, NULL, NULL, offs, &g->tout);
}

static qgmm_status pad(gemm_case *g, const qgmm_tensor *offs)
{
    return qgmm_pad_token_groups(g_ctx, 32, &g->tx, offs, &g->txp, NULL, NULL);
}

/* synchronize reports BAD_OFFSETS with a message holding every needle */
static void bad_sync(const char *what, const char *n0, const char *n1, const char *absent)
{
    const qgmm_status s = qgmm_synchronize(g_ctx);
    const char *msg = qgmm_last_error(g_ctx);
    CHECK(s == QGMM_ERR_BAD_OFFSETS, "%s: synchronize returned %s", what, qgmm_status_string(s));
    CHECK(strstr(msg, n0) && (!n1 || strstr(msg, n1)), "%s: the message lacks \"%s\" / \"%s\": %s", what, n0,
          n1 ? n1 : "", msg);
    CHECK(!absent || !strstr(msg, absent), "%s: the message names \"%s\": %s", what, absent, msg);
    CHECK(qgmm_synchronize(g_ctx) == QGMM_OK && !qgmm_last_error(g_ctx)[0], "%s: not cleared", what);
}

static void bad_offsets_named(void)
{
    gemm_case g;
    gemm_make(&g);

    /* one op */
    set_offs(g.offs, 40, 20);
    OK(gemm(&g, &g.toffs));
    bad_sync("one GEMM", "qgmm_grouped_gemm: offs holds decreasing, negative or out-of-range group offsets",
             "(device check)", NULL);

    /* the same op many times is one name */
    for (int i = 0; i < 40; ++i) OK(gemm(&g, &g.toffs));
    bad_sync("40 GEMMs", "qgmm_grouped_gemm: offs holds", NULL, "one of");

    /* an op's own rule: K-groups offsets count elements, in multiples of 32 */
    {
        qgmm_buffer *in = alloc_zero(8), *out = alloc_zero(qgmm_blocked_k_groups_bytes(4, 2, E));
        const qgmm_tensor tin = tensor(in, QGMM_E8M0, 2, 4, 2, 0);
        const qgmm_tensor tbl = tensor(out, QGMM_E8M0, 1, (int64_t)qgmm_blocked_k_groups_bytes(4, 2, E), 0, 0);
        set_offs(g.offs2, 32, 48);
        OK(qgmm_scales_to_blocked(g_ctx, QGMM_BLOCKED_K_GROUPS, &tin, &g.toffs2, &tbl, NULL));
        bad_sync("K-groups", "qgmm_scales_to_blocked: offs holds", "offsets that are not multiples of 32", NULL);
        qgmm_buffer_free(in);
        qgmm_buffer_free(out);
    }

    /* several ops: the flag cannot say which, so all are named */
    set_offs(g.offs2, 10, M);
    OK(pad(&g, &g.toffs2));
    OK(gemm(&g, &g.toffs));
    bad_sync("pad + GEMM", "qgmm_pad_token_groups (offs)", "qgmm_grouped_gemm (offs)", NULL);

    /* only the ops since the last synchronize: a good GEMM, synchronize, then a bad pad */
    OK(gemm(&g, &g.toffs2));
    CHECK(qgmm_synchronize(g_ctx) == QGMM_OK, "good offsets reported bad: %s", qgmm_last_error(g_ctx));
    set_offs(g.offs2, 10, M + 1);
    OK(pad(&g, &g.toffs2));
    bad_sync("a pad after a synchronize", "qgmm_pad_token_groups: offs holds", NULL, "qgmm_grouped_gemm");

    /* a composite is named as itself, not by its steps */
    {
        const qgmm_moe_params p = QGMM_MOE_PARAMS_INIT(QGMM_RECIPE_MXFP8);
        const size_t wsb = qgmm_moe_workspace_bytes(&p, M, N, K, E);
        qgmm_buffer *ws = alloc_zero(wsb), *dx = alloc_zero(4 * M * K), *dw = alloc_zero(4 * E * N * K);
        qgmm_buffer *dy = alloc_zero(2 * M * N);
        const qgmm_tensor tdy = tensor(dy, QGMM_BF16, 2, M, N, 0), tdx = tensor(dx, QGMM_F32, 2, M, K, 0);
        const qgmm_tensor tdw = tensor(dw, QGMM_F32, 3, E, N, K);
        OK(qgmm_moe_experts_forward(g_ctx, &p, &g.tx, &g.tb, &g.toffs, &g.tout, ws));
        bad_sync("composite forward", "qgmm_moe_experts_forward: offs holds", NULL, "qgmm_grouped_gemm");
        OK(qgmm_moe_experts_backward(g_ctx, &p, &g.tx, &g.tb, &tdy, &g.toffs, &tdx, &tdw, ws));
        bad_sync("composite backward", "qgmm_moe_experts_backward: offs holds", NULL, "pad");
        OK(qgmm_moe_experts_forward(g_ctx, &p, &g.tx, &g.tb, &g.toffs, &g.tout, ws));
        OK(gemm(&g, &g.toffs));
        bad_sync("composite + GEMM", "qgmm_moe_experts_forward (offs)", "qgmm_grouped_gemm (offs)", NULL);
        qgmm_buffer *all[] = {ws, dx, dw, dy};
        for (int i = 0; i < 4; ++i) qgmm_buffer_free(all[i]);
    }

    qgmm_buffer *all[] = {g.a, g.b, g.out, g.offs, g.offs2, g.x, g.xp};
    for (int i = 0; i < 7; ++i) qgmm_buffer_free(all[i]);
}

/* ------------------------------------------------------------------ 3 */
static void refused_with(const char *what, qgmm_status s, const char *n0, const char *n1, const char *n2)
{
    CHECK(s == QGMM_ERR_INVALID_ARGUMENT, "%s: %s", what, qgmm_status_string(s));
    CHECK(says(n0) && (!n1 || says(n1)) && (!n2 || says(n2)), "%s: the message lacks \"%s\" / \"%s\" / \"%s\": %s",
          what, n0, n1 ? n1 : "", n2 ? n2 : "", qgmm_last_error(g_ctx));
}

static void layout_errors(void)
{
    const int64_t blk2d = (int64_t)qgmm_blocked_scales_bytes(M, K / 32);
    const int64_t mgroups = (int64_t)qgmm_blocked_m_groups_bytes(M, K / 32, E);
    const int64_t w3d = E * (int64_t)qgmm_blocked_scales_bytes(N, K / 32);
    qgmm_buffer *a = alloc_zero(M * K), *b = alloc_zero(E * N * K), *out = alloc_zero(4 * M * N);
    qgmm_buffer *sa = alloc_zero((size_t)mgroups + 4096), *sb = alloc_zero((size_t)w3d + 4096);
    qgmm_buffer *offs = alloc_zero(4 * E);
    set_offs(offs, 30, M);
    const qgmm_tensor ta = tensor(a, QGMM_F8E4M3FN, 2, M, K, 0), tb = tensor(b, QGMM_F8E4M3FN, 3, E, N, K);
    const qgmm_tensor tout = tensor(out, QGMM_BF16, 2, M, N, 0), to = tensor(offs, QGMM_I32, 1, E, 0, 0);
    const qgmm_grouped_gemm_params mx = QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_MXFP8);

    /* the trap: quantized straight to BLOCKED, i.e. the 2D layout */
    qgmm_tensor tsa = tensor(sa, QGMM_E8M0, 1, blk2d, 0, 0), tsb = tensor(sb, QGMM_E8M0, 1, w3d, 0, 0);
    refused_with("MXFP8 a_scales in the 2D layout", qgmm_grouped_gemm(g_ctx, &mx, &ta, &tb, &tsa, &tsb, &to, &tout),
                 "QGMM_BLOCKED_M_GROUPS layout", "quantize a with qgmm_quantize_mxfp8 (block_dim 1, QGMM_SCALES_PLAIN) "
                 "and convert with qgmm_scales_to_blocked(QGMM_BLOCKED_M_GROUPS, offs)",
                 "the size of the QGMM_BLOCKED_2D layout");
    CHECK(strstr(qgmm_last_error(g_ctx), "qgmm_quantize_mxfp8_grouped of a with block_dim 1, "
                                         "QGMM_SCALES_BLOCKED_M_GROUPS and offs") != NULL,
          "the M-groups refusal names the one-call cast: %s", qgmm_last_error(g_ctx));
    tsa = tensor(sa, QGMM_E8M0, 1, mgroups, 0, 0);
    CHECK(qgmm_grouped_gemm(g_ctx, &mx, &ta, &tb, &tsa, &tsb, &to, &tout) == QGMM_OK, "the M-groups layout: %s",
          qgmm_last_error(g_ctx));
    tsb = tensor(sb, QGMM_E8M0, 1, w3d + 1, 0, 0);
    refused_with("MXFP8 b_scales", qgmm_grouped_gemm(g_ctx, &mx, &ta, &tb, &tsa, &tsb, &to, &tout),
                 "QGMM_BLOCKED_3D layout", "QGMM_SCALES_BLOCKED", NULL);
    tsb = tensor(sb, QGMM_F32, 1, w3d / 4, 0, 0);
    refused_with("MXFP8 f32 b_scales", qgmm_grouped_gemm(g_ctx, &mx, &ta, &tb, &tsa, &tsb, &to, &tout),
                 "b_scales has dtype f32", "QGMM_BLOCKED_3D layout", NULL);

    /* K-grouped: a (M, N), b (M, K) contracted over the tokens */
    {
        const qgmm_grouped_gemm_params kg = QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_MXFP8);
        const qgmm_tensor ka = tensor(a, QGMM_F8E4M3FN, 2, M, N, 0), kb = tensor(b, QGMM_F8E4M3FN, 2, M, K, 0);
        const qgmm_tensor kout = tensor(out, QGMM_F32, 3, E, N, K / 4);
        const qgmm_tensor kbq = tensor(b, QGMM_F8E4M3FN, 2, M, K / 4, 0);
        const qgmm_tensor ksa = tensor(sa, QGMM_E8M0, 1, (int64_t)qgmm_blocked_scales_bytes(N, M / 32), 0, 0);
        (void)kb;
        refused_with("MXFP8 K-grouped a_scales", qgmm_grouped_gemm(g_ctx, &kg, &ka, &kbq, &ksa, &ksa, &to, &kout),
                     "QGMM_BLOCKED_K_GROUPS layout", "qgmm_scales_to_blocked(QGMM_BLOCKED_K_GROUPS, offs)",
                     "the size of the QGMM_BLOCKED_2D layout");
    }

    /* FP8 rowwise and blockwise */
    {
        const qgmm_grouped_gemm_params rw = QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_FP8_ROWWISE);
        const qgmm_tensor s1 = tensor(sa, QGMM_F32, 1, M + 1, 0, 0), s2 = tensor(sb, QGMM_F32, 2, E, N, 0);
        refused_with("rowwise a_scales", qgmm_grouped_gemm(g_ctx, &rw, &ta, &tb, &s1, &s2, &to, &tout),
                     "a_scales has shape (65); expected (64)", "qgmm_quantize_fp8_rowwise with reduce_dim 1", NULL);
        const qgmm_grouped_gemm_params bw = QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_FP8_BLOCKWISE);
        qgmm_buffer *a128 = alloc_zero(M * 128), *b128 = alloc_zero(E * N * 128);
        const qgmm_tensor ta128 = tensor(a128, QGMM_F8E4M3FN, 2, M, 128, 0);
        const qgmm_tensor tb128 = tensor(b128, QGMM_F8E4M3FN, 3, E, N, 128);
        const qgmm_tensor bs = tensor(sb, QGMM_F32, 3, E, 1, 1);
        refused_with("blockwise a_scales absent", qgmm_grouped_gemm(g_ctx, &bw, &ta128, &tb128, NULL, &bs, &to, &tout),
                     "a_scales is NULL", "QGMM_BLOCK_1X128", NULL);
        qgmm_buffer_free(a128);
        qgmm_buffer_free(b128);
    }
    OK(qgmm_synchronize(g_ctx));
    qgmm_buffer *all[] = {a, b, out, sa, sb, offs};
    for (int i = 0; i < 6; ++i) qgmm_buffer_free(all[i]);
}

/* ------------------------------------------------------------------ 4 */
static void init_macros(void)
{
    const qgmm_fp8_rowwise_params rw = QGMM_FP8_ROWWISE_PARAMS_INIT(2);
    CHECK(rw.reduce_dim == 2 && rw.power_of_2 == 0 && rw.scale_kind == QGMM_SCALE_RECIPROCAL, "rowwise defaults");
    const qgmm_mxfp8_params mx = QGMM_MXFP8_PARAMS_INIT(0);
    CHECK(mx.block_dim == 0 && mx.mode == QGMM_MX_RCEIL && mx.scale_layout == QGMM_SCALES_PLAIN, "mxfp8 defaults");
    const qgmm_fp8_blockwise_params bw = QGMM_FP8_BLOCKWISE_PARAMS_INIT(QGMM_BLOCK_128X128);
    CHECK(bw.block == QGMM_BLOCK_128X128, "blockwise");
    const qgmm_quant_format f0 = QGMM_QUANT_FORMAT_FP8_ROWWISE_INIT(0);
    const qgmm_quant_format f1 = QGMM_QUANT_FORMAT_MXFP8_INIT(1);
    const qgmm_quant_format f2 = QGMM_QUANT_FORMAT_FP8_BLOCKWISE_INIT(QGMM_BLOCK_1X128);
    CHECK(f0.kind == QGMM_QUANT_FP8_ROWWISE && f0.rowwise.reduce_dim == 0 &&
              f0.rowwise.scale_kind == QGMM_SCALE_RECIPROCAL, "rowwise format");
    CHECK(f1.kind == QGMM_QUANT_MXFP8 && f1.mx.block_dim == 1 && f1.mx.mode == QGMM_MX_RCEIL, "mxfp8 format");
    CHECK(f2.kind == QGMM_QUANT_FP8_BLOCKWISE && f2.blockwise.block == QGMM_BLOCK_1X128, "blockwise format");
    const qgmm_grouped_gemm_params gp = QGMM_GROUPED_GEMM_PARAMS_INIT(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_MXFP8);
    CHECK(gp.kind == QGMM_GEMM_K_GROUPED && gp.recipe == QGMM_RECIPE_MXFP8, "gemm params");
    const qgmm_moe_params mp = QGMM_MOE_PARAMS_INIT(QGMM_RECIPE_FP8_ROWWISE);
    CHECK(mp.recipe == QGMM_RECIPE_FP8_ROWWISE && mp.fp8_dtype == QGMM_F8E4M3FN && mp.mx_mode == QGMM_MX_RCEIL,
          "moe defaults");

    /* an MXFP8 quantize and its dequantize straight from the macros */
    qgmm_buffer *x = alloc_zero(4 * 4 * 64), *q = alloc_zero(4 * 64), *s = alloc_zero(8), *y = alloc_zero(4 * 4 * 64);
    const qgmm_tensor tx = tensor(x, QGMM_F32, 2, 4, 64, 0), tq = tensor(q, QGMM_F8E4M3FN, 2, 4, 64, 0);
    const qgmm_tensor ts = tensor(s, QGMM_E8M0, 2, 4, 2, 0), ty = tensor(y, QGMM_F32, 2, 4, 64, 0);
    const qgmm_mxfp8_params mq = QGMM_MXFP8_PARAMS_INIT(1);
    const qgmm_quant_format mf = QGMM_QUANT_FORMAT_MXFP8_INIT(1);
    CHECK(qgmm_quantize_mxfp8(g_ctx, &mq, &tx, &tq, &ts) == QGMM_OK, "quantize: %s", qgmm_last_error(g_ctx));
    CHECK(qgmm_dequantize(g_ctx, &mf, &tq, &ts, NULL, &ty) == QGMM_OK, "dequantize: %s", qgmm_last_error(g_ctx));
    OK(qgmm_synchronize(g_ctx));
    qgmm_buffer *all[] = {x, q, s, y};
    for (int i = 0; i < 4; ++i) qgmm_buffer_free(all[i]);
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu";
    if (qgmm_context_create(backend, 0, &g_ctx) != QGMM_OK) {
        printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
        return 77;
    }
    last_error_cleared(backend);
    bad_offsets_named();
    layout_errors();
    init_macros();
    qgmm_context_destroy(g_ctx);
    printf("api fixes on %s: %ld failed\n", backend, g_failures);
    return g_failures ? 1 : 0;
}
