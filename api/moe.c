/*
 * Composite MoE expert forward/backward: one recipe's casts, padding and grouped GEMMs,
 * written once on top of the public ops so every backend gets it. The sequence of each
 * recipe follows torchao's moe_training (fp8_grouped_mm.py, mxfp8/blockwise grouped mm):
 *
 *   forward  y  = x . w_g^T      A: x quantized per row / 1x128 / 1x32;  B: w per (e,n) /
 *                                128x128 / 1x32 along K
 *   dgrad    dx = dy . w_g       A: dy along N;  B: w transposed to (E,K,N) while it is cast
 *   wgrad    dw = dy_g^T . x_g   both operands scaled along the token dim per group (jagged
 *                                rowwise) or in token blocks (blockwise 128, MX 32): those
 *                                recipes first pad every group to the block so no block
 *                                straddles two groups (qgmm_pad_token_groups, on the device)
 *
 * The GEMMs of qgmm mask any group size, so forward and dgrad need no padding. All
 * temporaries live in the caller's workspace; nothing is allocated or read back.
 */
#include "validate.h"
#include "qgmm_layout_maps.h"

#include <string.h>

/* ---------------------------------------------------------------- workspace carving */
typedef struct arena {
    qgmm_buffer *buf; /* the caller's workspace (NULL while sizing, or for BF16) */
    size_t used;
    int run;          /* 0: only size the temporaries, call no op */
} arena;

static size_t arena_take(arena *a, size_t bytes)
{
    const size_t at = (a->used + 255) & ~(size_t)255;
    a->used = at + bytes;
    return at;
}

static qgmm_tensor arena_tensor(arena *a, qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t shape[3] = {d0, d1, d2};
    qgmm_tensor t = qgmm_tensor_make(a->buf, 0, dt, rank, shape);
    t.offset = arena_take(a, qgmm_tensor_span_bytes(&t) + 1);
    return t;
}

/* A column-major (rows, cols) view: what the K-grouped GEMM wants for its operands. */
static qgmm_tensor arena_colmajor(arena *a, qgmm_dtype dt, int64_t rows, int64_t cols)
{
    qgmm_tensor t = qgmm_tensor_make_colmajor(a->buf, 0, dt, rows, cols);
    t.offset = arena_take(a, qgmm_tensor_span_bytes(&t) + 1);
    return t;
}

static qgmm_tensor transposed_2d(const qgmm_tensor *t)
{
    qgmm_tensor r = *t;
    r.shape[0] = t->shape[1];
    r.shape[1] = t->shape[0];
    r.strides[0] = t->strides[1];
    r.strides[1] = t->strides[0];
    return r;
}

/* (E, N, K) viewed as (E, K, N): no copy. */
static qgmm_tensor transposed_3d(const qgmm_tensor *t)
{
    qgmm_tensor r = *t;
    r.shape[1] = t->shape[2];
    r.shape[2] = t->shape[1];
    r.strides[1] = t->strides[2];
    r.strides[2] = t->strides[1];
    return r;
}

static qgmm_dtype fp8_of(const qgmm_moe_params *p)
{
    return qgmm_dtype_is_fp8(p->fp8_dtype) ? p->fp8_dtype : QGMM_F8E4M3FN;
}

/* ---------------------------------------------------------------- validation */
static qgmm_status check_params(qgmm_context *ctx, const qgmm_moe_params *p)
{
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p is NULL");
    if (p->recipe < QGMM_RECIPE_BF16 || p->recipe > QGMM_RECIPE_MXFP8)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->recipe is %d; not a qgmm_recipe",
                              (int)p->recipe);
    if (p->fp8_dtype != QGMM_DTYPE_INVALID && !qgmm_dtype_is_fp8(p->fp8_dtype))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->fp8_dtype is %s; not an fp8 dtype",
                              qgmm_dtype_name(p->fp8_dtype));
    if (p->recipe == QGMM_RECIPE_MXFP8 && fp8_of(p) == QGMM_F8E4M3FNUZ)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "p->fp8_dtype is f8e4m3fnuz; MXFP8 uses the OCP formats");
    if (p->mx_mode != QGMM_MX_FLOOR && p->mx_mode != QGMM_MX_RCEIL)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->mx_mode is %d; not a qgmm_mx_mode",
                              (int)p->mx_mode);
    return QGMM_OK;
}

static qgmm_status check_dims(qgmm_context *ctx, const qgmm_moe_params *p, int64_t N, int64_t K)
{
    if (p->recipe == QGMM_RECIPE_FP8_BLOCKWISE && (K % 128 || N % 128))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "FP8 blockwise needs N and K multiples of 128; got N=%lld K=%lld",
                              (long long)N, (long long)K);
    if (p->recipe == QGMM_RECIPE_MXFP8 && (K % 32 || N % 32))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "MXFP8 needs N and K multiples of 32; got N=%lld K=%lld", (long long)N,
                              (long long)K);
    return QGMM_OK;
}

static qgmm_status check_workspace(qgmm_context *ctx, qgmm_buffer *ws, size_t need)
{
    if (need == 0) return QGMM_OK;
    if (!ws) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "workspace is NULL; %zu bytes needed", need);
    if (qgmm_buffer_size(ws) < need)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "workspace has %zu bytes; qgmm_moe_workspace_bytes says %zu",
                              qgmm_buffer_size(ws), need);
    return QGMM_OK;
}

/* ---------------------------------------------------------------- forward */
/* With a->run 0 only sizes the arena (no op is called). */
static qgmm_status forward_steps(qgmm_context *ctx, const qgmm_moe_params *p, arena *a,
                                 const qgmm_tensor *x, const qgmm_tensor *w, const qgmm_tensor *offs,
                                 const qgmm_tensor *y, int64_t M, int64_t N, int64_t K, int64_t E)
{
    const int run = a->run;
    const qgmm_dtype f8 = fp8_of(p);
    qgmm_grouped_gemm_params gp = {QGMM_GEMM_M_GROUPED, p->recipe};
    switch (p->recipe) {
    case QGMM_RECIPE_BF16:
        return run ? qgmm_grouped_gemm(ctx, &gp, x, w, NULL, NULL, offs, y) : QGMM_OK;
    case QGMM_RECIPE_FP8_ROWWISE: {
        qgmm_tensor xq = arena_tensor(a, f8, 2, M, K, 0), xs = arena_tensor(a, QGMM_F32, 1, M, 0, 0);
        qgmm_tensor wq = arena_tensor(a, f8, 3, E, N, K), ws = arena_tensor(a, QGMM_F32, 2, E, N, 0);
        if (!run) return QGMM_OK;
        const qgmm_fp8_rowwise_params per_row = {1, 0, QGMM_SCALE_RECIPROCAL};
        const qgmm_fp8_rowwise_params per_en = {2, 0, QGMM_SCALE_RECIPROCAL};
        QGMM_TRY(qgmm_quantize_fp8_rowwise(ctx, &per_row, x, NULL, &xq, &xs));
        QGMM_TRY(qgmm_quantize_fp8_rowwise(ctx, &per_en, w, NULL, &wq, &ws));
        return qgmm_grouped_gemm(ctx, &gp, &xq, &wq, &xs, &ws, offs, y);
    }
    case QGMM_RECIPE_FP8_BLOCKWISE: {
        qgmm_tensor xq = arena_tensor(a, f8, 2, M, K, 0), wq = arena_tensor(a, f8, 3, E, N, K);
        qgmm_tensor xs = arena_tensor(a, QGMM_F32, 2, M, K / 128, 0);
        qgmm_tensor ws = arena_tensor(a, QGMM_F32, 3, E, N / 128, K / 128);
        if (!run) return QGMM_OK;
        const qgmm_fp8_blockwise_params act = {QGMM_BLOCK_1X128}, wt = {QGMM_BLOCK_128X128};
        QGMM_TRY(qgmm_quantize_fp8_blockwise(ctx, &act, x, &xq, &xs));
        QGMM_TRY(qgmm_quantize_fp8_blockwise(ctx, &wt, w, &wq, &ws));
        return qgmm_grouped_gemm(ctx, &gp, &xq, &wq, &xs, &ws, offs, y);
    }
    case QGMM_RECIPE_MXFP8: {
        qgmm_tensor xq = arena_tensor(a, f8, 2, M, K, 0), wq = arena_tensor(a, f8, 3, E, N, K);
        qgmm_tensor xs = arena_tensor(a, QGMM_E8M0, 2, M, K / 32, 0);
        qgmm_tensor xsb = arena_tensor(a, QGMM_E8M0, 1, (int64_t)qgmm_blocked_m_groups_bytes(M, K / 32, E), 0, 0);
        qgmm_tensor wsb = arena_tensor(a, QGMM_E8M0, 1, E * (int64_t)qgmm_blocked_scales_bytes(N, K / 32), 0, 0);
        if (!run) return QGMM_OK;
        const qgmm_mxfp8_params along_k_plain = {1, p->mx_mode, QGMM_SCALES_PLAIN};
        const qgmm_mxfp8_params w_blocked = {2, p->mx_mode, QGMM_SCALES_BLOCKED};
        QGMM_TRY(qgmm_quantize_mxfp8(ctx, &along_k_plain, x, &xq, &xs));
        QGMM_TRY(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_M_GROUPS, &xs, offs, &xsb, NULL));
        QGMM_TRY(qgmm_quantize_mxfp8(ctx, &w_blocked, w, &wq, &wsb));
        return qgmm_grouped_gemm(ctx, &gp, &xq, &wq, &xsb, &wsb, offs, y);
    }
    }
    return QGMM_ERR_INTERNAL;
}

/* ---------------------------------------------------------------- backward */
static qgmm_status dgrad_steps(qgmm_context *ctx, const qgmm_moe_params *p, arena *a,
                               const qgmm_tensor *w, const qgmm_tensor *dy, const qgmm_tensor *offs,
                               const qgmm_tensor *dx, int64_t M, int64_t N, int64_t K, int64_t E)
{
    const int run = a->run;
    const qgmm_dtype f8 = fp8_of(p);
    const qgmm_tensor wt = transposed_3d(w); /* (E, K, N) view of the weights */
    qgmm_grouped_gemm_params gp = {QGMM_GEMM_M_GROUPED, p->recipe};
    switch (p->recipe) {
    case QGMM_RECIPE_BF16:
        return run ? qgmm_grouped_gemm(ctx, &gp, dy, &wt, NULL, NULL, offs, dx) : QGMM_OK;
    case QGMM_RECIPE_FP8_ROWWISE: {
        qgmm_tensor dyq = arena_tensor(a, f8, 2, M, N, 0), dys = arena_tensor(a, QGMM_F32, 1, M, 0, 0);
        /* the "3D transpose rhs" cast: one scale per (e, k) over N, written as (E, K, N) */
        qgmm_tensor wtq = arena_tensor(a, f8, 3, E, K, N), wts = arena_tensor(a, QGMM_F32, 2, E, K, 0);
        if (!run) return QGMM_OK;
        const qgmm_fp8_rowwise_params per_row = {1, 0, QGMM_SCALE_RECIPROCAL};
        const qgmm_fp8_rowwise_params per_ek = {2, 0, QGMM_SCALE_RECIPROCAL};
        QGMM_TRY(qgmm_quantize_fp8_rowwise(ctx, &per_row, dy, NULL, &dyq, &dys));
        QGMM_TRY(qgmm_quantize_fp8_rowwise(ctx, &per_ek, &wt, NULL, &wtq, &wts));
        return qgmm_grouped_gemm(ctx, &gp, &dyq, &wtq, &dys, &wts, offs, dx);
    }
    case QGMM_RECIPE_FP8_BLOCKWISE: {
        qgmm_tensor dyq = arena_tensor(a, f8, 2, M, N, 0), wtq = arena_tensor(a, f8, 3, E, K, N);
        qgmm_tensor dys = arena_tensor(a, QGMM_F32, 2, M, N / 128, 0);
        qgmm_tensor wts = arena_tensor(a, QGMM_F32, 3, E, K / 128, N / 128);
        if (!run) return QGMM_OK;
        const qgmm_fp8_blockwise_params act = {QGMM_BLOCK_1X128}, wt128 = {QGMM_BLOCK_128X128};
        QGMM_TRY(qgmm_quantize_fp8_blockwise(ctx, &act, dy, &dyq, &dys));
        QGMM_TRY(qgmm_quantize_fp8_blockwise(ctx, &wt128, &wt, &wtq, &wts));
        return qgmm_grouped_gemm(ctx, &gp, &dyq, &wtq, &dys, &wts, offs, dx);
    }
    case QGMM_RECIPE_MXFP8: {
        qgmm_tensor dyq = arena_tensor(a, f8, 2, M, N, 0), wtq = arena_tensor(a, f8, 3, E, K, N);
        qgmm_tensor dys = arena_tensor(a, QGMM_E8M0, 2, M, N / 32, 0);
        qgmm_tensor dysb = arena_tensor(a, QGMM_E8M0, 1, (int64_t)qgmm_blocked_m_groups_bytes(M, N / 32, E), 0, 0);
        qgmm_tensor wtsb = arena_tensor(a, QGMM_E8M0, 1, E * (int64_t)qgmm_blocked_scales_bytes(K, N / 32), 0, 0);
        if (!run) return QGMM_OK;
        const qgmm_mxfp8_params along_n = {1, p->mx_mode, QGMM_SCALES_PLAIN};
        const qgmm_mxfp8_params wt_blocked = {2, p->mx_mode, QGMM_SCALES_BLOCKED};
        QGMM_TRY(qgmm_quantize_mxfp8(ctx, &along_n, dy, &dyq, &dys));
        QGMM_TRY(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_M_GROUPS, &dys, offs, &dysb, NULL));
        QGMM_TRY(qgmm_quantize_mxfp8(ctx, &wt_blocked, &wt, &wtq, &wtsb));
        return qgmm_grouped_gemm(ctx, &gp, &dyq, &wtq, &dysb, &wtsb, offs, dx);
    }
    }
    return QGMM_ERR_INTERNAL;
}

static int wgrad_alignment(qgmm_recipe r)
{
    return r == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : r == QGMM_RECIPE_MXFP8 ? 32 : 0;
}

static qgmm_status wgrad_steps(qgmm_context *ctx, const qgmm_moe_params *p, arena *a,
                               const qgmm_tensor *x, const qgmm_tensor *dy, const qgmm_tensor *offs,
                               const qgmm_tensor *dw, int64_t M, int64_t N, int64_t K, int64_t E)
{
    const int run = a->run;
    const qgmm_dtype f8 = fp8_of(p);
    qgmm_grouped_gemm_params gp = {QGMM_GEMM_K_GROUPED, p->recipe};
    if (p->recipe == QGMM_RECIPE_BF16)
        return run ? qgmm_grouped_gemm(ctx, &gp, dy, x, NULL, NULL, offs, dw) : QGMM_OK;
    if (p->recipe == QGMM_RECIPE_FP8_ROWWISE) {
        /* jagged per-group scales along the token dim; column-major fp8 operands */
        qgmm_tensor dyq = arena_colmajor(a, f8, M, N), xq = arena_colmajor(a, f8, M, K);
        qgmm_tensor dys = arena_tensor(a, QGMM_F32, 2, E, N, 0), xs = arena_tensor(a, QGMM_F32, 2, E, K, 0);
        if (!run) return QGMM_OK;
        const qgmm_fp8_rowwise_params per_group_col = {0, 0, QGMM_SCALE_RECIPROCAL};
        QGMM_TRY(qgmm_quantize_fp8_rowwise_dual(ctx, &per_group_col, dy, &dyq, &dys, &per_group_col, x,
                                                &xq, &xs, offs));
        return qgmm_grouped_gemm(ctx, &gp, &dyq, &xq, &dys, &xs, offs, dw);
    }
    /* Blockwise / MX: pad each group to the token block first. */
    const int A = wgrad_alignment(p->recipe);
    const int64_t P = qgmm_padded_rows_bound(M, E, A);
    qgmm_tensor dyp = arena_tensor(a, dy->dtype, 2, P, N, 0), xp = arena_tensor(a, x->dtype, 2, P, K, 0);
    qgmm_tensor poffs = arena_tensor(a, QGMM_I32, 1, E, 0, 0);
    qgmm_tensor dyq = arena_colmajor(a, f8, P, N), xq = arena_colmajor(a, f8, P, K);
    if (p->recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        qgmm_tensor dys = arena_tensor(a, QGMM_F32, 2, N, P / 128, 0), xs = arena_tensor(a, QGMM_F32, 2, K, P / 128, 0);
        if (!run) return QGMM_OK;
        QGMM_TRY(qgmm_pad_token_groups(ctx, A, dy, offs, &dyp, NULL, &poffs));
        QGMM_TRY(qgmm_pad_token_groups(ctx, A, x, offs, &xp, NULL, NULL));
        /* 1x128 blocks along the tokens: quantize the (N, P) / (K, P) transposed views */
        const qgmm_fp8_blockwise_params blk = {QGMM_BLOCK_1X128};
        const qgmm_tensor dypt = transposed_2d(&dyp), xpt = transposed_2d(&xp);
        const qgmm_tensor dyqt = transposed_2d(&dyq), xqt = transposed_2d(&xq);
        QGMM_TRY(qgmm_quantize_fp8_blockwise(ctx, &blk, &dypt, &dyqt, &dys));
        QGMM_TRY(qgmm_quantize_fp8_blockwise(ctx, &blk, &xpt, &xqt, &xs));
        return qgmm_grouped_gemm(ctx, &gp, &dyq, &xq, &dys, &xs, &poffs, dw);
    }
    /* MXFP8: 32x1 blocks along the tokens, scales regrouped into the K-groups layout */
    qgmm_tensor dys = arena_tensor(a, QGMM_E8M0, 2, N, P / 32, 0), xs = arena_tensor(a, QGMM_E8M0, 2, K, P / 32, 0);
    qgmm_tensor dysb = arena_tensor(a, QGMM_E8M0, 1, (int64_t)qgmm_blocked_k_groups_bytes(N, P / 32, E), 0, 0);
    qgmm_tensor xsb = arena_tensor(a, QGMM_E8M0, 1, (int64_t)qgmm_blocked_k_groups_bytes(K, P / 32, E), 0, 0);
    if (!run) return QGMM_OK;
    QGMM_TRY(qgmm_pad_token_groups(ctx, A, dy, offs, &dyp, NULL, &poffs));
    QGMM_TRY(qgmm_pad_token_groups(ctx, A, x, offs, &xp, NULL, NULL));
    const qgmm_mxfp8_params along_tokens = {0, p->mx_mode, QGMM_SCALES_PLAIN};
    QGMM_TRY(qgmm_quantize_mxfp8(ctx, &along_tokens, &dyp, &dyq, &dys));
    QGMM_TRY(qgmm_quantize_mxfp8(ctx, &along_tokens, &xp, &xq, &xs));
    QGMM_TRY(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_K_GROUPS, &dys, &poffs, &dysb, NULL));
    QGMM_TRY(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_K_GROUPS, &xs, &poffs, &xsb, NULL));
    return qgmm_grouped_gemm(ctx, &gp, &dyq, &xq, &dysb, &xsb, &poffs, dw);
}

/* ---------------------------------------------------------------- public entry points */
size_t qgmm_moe_workspace_bytes(const qgmm_moe_params *p, int64_t M, int64_t N, int64_t K, int64_t E)
{
    if (!p || M < 0 || N <= 0 || K <= 0 || E <= 0) return 0;
    arena fa = {NULL, 0, 0}, da = {NULL, 0, 0}, wa = {NULL, 0, 0};
    qgmm_tensor none;
    memset(&none, 0, sizeof none);
    none.dtype = QGMM_BF16;
    forward_steps(NULL, p, &fa, &none, &none, &none, &none, M, N, K, E);
    dgrad_steps(NULL, p, &da, &none, &none, &none, &none, M, N, K, E);
    wgrad_steps(NULL, p, &wa, &none, &none, &none, &none, M, N, K, E);
    /* forward and backward reuse the same workspace; backward runs dgrad then wgrad */
    size_t need = fa.used > da.used ? fa.used : da.used;
    if (wa.used > need) need = wa.used;
    return need;
}

static qgmm_status check_common(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                const qgmm_tensor *w, const qgmm_tensor *offs)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(check_params(ctx, p));
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK(QGMM_BF16), 2, 2));
    QGMM_TRY(qgmm_check_tensor(ctx, "w", w, QGMM_MASK(QGMM_BF16), 3, 3));
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    if (w->shape[2] != x->shape[1])
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "w.shape[2] is %lld; must equal x's K=%lld",
                              (long long)w->shape[2], (long long)x->shape[1]);
    QGMM_TRY(qgmm_check_shape(ctx, "offs", offs, 1, w->shape[0], 0, 0));
    return check_dims(ctx, p, w->shape[1], w->shape[2]);
}

qgmm_status qgmm_moe_experts_forward(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                     const qgmm_tensor *w, const qgmm_tensor *offs, const qgmm_tensor *y,
                                     qgmm_buffer *workspace)
{
    QGMM_TRY(check_common(ctx, p, x, w, offs));
    const int64_t M = x->shape[0], K = x->shape[1], E = w->shape[0], N = w->shape[1];
    QGMM_TRY(qgmm_check_tensor(ctx, "y", y, QGMM_MASK_OUT, 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "y", y, 2, M, N, 0));
    const size_t need = qgmm_moe_workspace_bytes(p, M, N, K, E);
    QGMM_TRY(check_workspace(ctx, workspace, need));
    arena a = {workspace, 0, 1};
    return forward_steps(ctx, p, &a, x, w, offs, y, M, N, K, E);
}

qgmm_status qgmm_moe_experts_backward(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                      const qgmm_tensor *w, const qgmm_tensor *dy, const qgmm_tensor *offs,
                                      const qgmm_tensor *dx, const qgmm_tensor *dw, qgmm_buffer *workspace)
{
    QGMM_TRY(check_common(ctx, p, x, w, offs));
    const int64_t M = x->shape[0], K = x->shape[1], E = w->shape[0], N = w->shape[1];
    QGMM_TRY(qgmm_check_tensor(ctx, "dy", dy, QGMM_MASK(QGMM_BF16), 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "dy", dy, 2, M, N, 0));
    QGMM_TRY(qgmm_check_tensor(ctx, "dx", dx, QGMM_MASK_OUT, 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "dx", dx, 2, M, K, 0));
    QGMM_TRY(qgmm_check_tensor(ctx, "dw", dw, QGMM_MASK_OUT, 3, 3));
    QGMM_TRY(qgmm_check_shape(ctx, "dw", dw, 3, E, N, K));
    QGMM_TRY(qgmm_check_no_overlap(ctx, "dx", dx, "dw", dw));
    const size_t need = qgmm_moe_workspace_bytes(p, M, N, K, E);
    QGMM_TRY(check_workspace(ctx, workspace, need));
    arena a = {workspace, 0, 1};
    QGMM_TRY(dgrad_steps(ctx, p, &a, w, dy, offs, dx, M, N, K, E));
    /* The wgrad temporaries reuse the workspace from offset 0: ops on one context run in
     * order, so dgrad's reads are finished before wgrad's first write. */
    a.used = 0;
    return wgrad_steps(ctx, p, &a, x, dy, offs, dw, M, N, K, E);
}
