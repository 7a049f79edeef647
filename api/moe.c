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
 *
 * All or nothing: each entry point checks its own arguments (naming them, never an inner
 * op's), then runs every step's validator in a dry pass over the real workspace layout,
 * and only then enqueues the first step. Bad device offsets make each step that reads
 * them write nothing; the padded offsets that the wgrad GEMM reads are preset to -1 so a
 * refused pad step refuses that GEMM too, on the device, with no host sync.
 *
 * The _profiled entry points record one of the caller's events before the first step and
 * one after each step (step_done); the plain ones are those with no profile.
 */
#include "checked.h"
#include "validate.h"
#include "qgmm_layout_maps.h"

#include <string.h>

/* ---------------------------------------------------------------- workspace carving */
typedef enum arena_mode {
    ARENA_SIZE,  /* lay the temporaries out, call nothing */
    ARENA_CHECK, /* the dry pass: run every step's validator, enqueue nothing */
    ARENA_RUN    /* enqueue the steps */
} arena_mode;

typedef struct arena {
    qgmm_context *ctx;
    qgmm_buffer *buf; /* the caller's workspace (NULL while sizing, or for BF16) */
    size_t used;
    int overflow;     /* a temporary's size did not fit: the layout is unusable */
    arena_mode mode;
    const char *phase; /* "forward", "dgrad", "wgrad": names the step a validator refused */
    int steps;         /* ARENA_CHECK: the steps validated (events a profile needs, less one) */
    qgmm_moe_profile *prof; /* ARENA_RUN: an event recorded after each step, or NULL */
    int mx_as_bf16;    /* MXFP8 as round trips and BF16 GEMMs (mx_as_bf16) */
} arena;

/* MXFP8 on a backend whose MXFP8 GEMM multiplies its operands dequantized to bf16 (it has
 * the mx_round_trip slot, qgmm_backend.h): every operand is round-tripped to bf16 in one
 * pass (the wgrad ones padded on the way) and the BF16 GEMM multiplies them, the same
 * values without the fp8 bytes and scales written, read back and expanded by the GEMM.
 * The one place this is chosen. */
static int mx_as_bf16(const qgmm_context *ctx) { return ctx && ctx->vt->mx_round_trip != NULL; }

static arena arena_make(qgmm_context *ctx, qgmm_buffer *buf, arena_mode mode, const char *phase)
{
    arena a = {ctx, buf, 0, 0, mode, phase, 0, NULL, mx_as_bf16(ctx)};
    return a;
}

static size_t arena_take(arena *a, size_t bytes)
{
    size_t at = 0, end = 0;
    if (!qgmm_round_up_size(a->used, 256, &at) || !qgmm_add_size(at, bytes, &end)) {
        a->overflow = 1;
        return 0;
    }
    a->used = end;
    return at;
}

static qgmm_tensor arena_place(arena *a, qgmm_tensor t)
{
    size_t span = 0;
    if (!qgmm_span_checked(&t, &span)) a->overflow = 1;
    t.offset = arena_take(a, span + 1);
    return t;
}

static qgmm_tensor arena_tensor(arena *a, qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t shape[3] = {d0, d1, d2};
    return arena_place(a, qgmm_tensor_make(a->buf, 0, dt, rank, shape));
}

/* A column-major (rows, cols) view: what the K-grouped GEMM wants for its operands. */
static qgmm_tensor arena_colmajor(arena *a, qgmm_dtype dt, int64_t rows, int64_t cols)
{
    return arena_place(a, qgmm_tensor_make_colmajor(a->buf, 0, dt, rows, cols));
}

/* Rank-1 e8m0 scales in a blocked layout (n: experts for 3D, groups for M/K groups). */
static qgmm_tensor arena_blocked(arena *a, qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols)
{
    int64_t bytes = 0;
    if (!qgmm_blocked_bytes_checked(v, n, rows, cols, &bytes)) a->overflow = 1;
    return arena_tensor(a, QGMM_E8M0, 1, bytes, 0, 0);
}

/* The dry pass names the step whose validator refused; the entry point adds its own name. */
static qgmm_status step_checked(const arena *a, const char *op, qgmm_status st)
{
    return st == QGMM_OK ? st : qgmm_error_prefix(a->ctx, st, "%s step qgmm_%s: ", a->phase, op);
}

/* After a step: counted in the dry pass; in the run pass, named in the profile and
 * followed by its event. */
static qgmm_status step_done(arena *a, const char *name, qgmm_status st)
{
    if (st != QGMM_OK) return st;
    if (a->mode == ARENA_CHECK) ++a->steps;
    if (a->mode != ARENA_RUN || !a->prof) return st;
    qgmm_moe_profile *pr = a->prof;
    pr->phase[pr->steps] = a->phase;
    pr->step[pr->steps] = name;
    return qgmm_event_record(pr->events[++pr->steps]);
}

/* One step of a recipe, `what` naming its operand: validated in the dry pass, enqueued in
 * the run pass. */
#define STEP(a, what, op, ...)                                                                       \
    step_done((a), #op " " what,                                                                   \
              (a)->mode == ARENA_CHECK ? step_checked((a), #op, qgmm_validate_##op((a)->ctx, __VA_ARGS__)) \
                                       : qgmm_##op((a)->ctx, __VA_ARGS__))

/* (E, N, K) viewed as (E, K, N): no copy. */
static qgmm_tensor transposed_3d(const qgmm_tensor *t) { return qgmm_tensor_swap_dims(t, 1, 2); }

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

/* ---------------------------------------------------------------- forward */
static qgmm_status forward_steps(arena *a, const qgmm_moe_params *p, const qgmm_tensor *x,
                                 const qgmm_tensor *w, const qgmm_tensor *offs, const qgmm_tensor *y,
                                 int64_t M, int64_t N, int64_t K, int64_t E)
{
    const int size_only = a->mode == ARENA_SIZE;
    const qgmm_dtype f8 = fp8_of(p);
    const qgmm_grouped_gemm_params gp = {QGMM_GEMM_M_GROUPED, p->recipe};
    switch (p->recipe) {
    case QGMM_RECIPE_BF16:
        return size_only ? QGMM_OK : STEP(a, "x w", grouped_gemm, &gp, x, w, NULL, NULL, offs, y);
    case QGMM_RECIPE_FP8_ROWWISE: {
        qgmm_tensor xq = arena_tensor(a, f8, 2, M, K, 0), xs = arena_tensor(a, QGMM_F32, 1, M, 0, 0);
        qgmm_tensor wq = arena_tensor(a, f8, 3, E, N, K), ws = arena_tensor(a, QGMM_F32, 2, E, N, 0);
        if (size_only) return QGMM_OK;
        const qgmm_fp8_rowwise_params per_row = {1, 0, QGMM_SCALE_RECIPROCAL};
        const qgmm_fp8_rowwise_params per_en = {2, 0, QGMM_SCALE_RECIPROCAL};
        QGMM_TRY(STEP(a, "x", quantize_fp8_rowwise, &per_row, x, NULL, &xq, &xs));
        QGMM_TRY(STEP(a, "w", quantize_fp8_rowwise, &per_en, w, NULL, &wq, &ws));
        return STEP(a, "xq wq", grouped_gemm, &gp, &xq, &wq, &xs, &ws, offs, y);
    }
    case QGMM_RECIPE_FP8_BLOCKWISE: {
        qgmm_tensor xq = arena_tensor(a, f8, 2, M, K, 0), wq = arena_tensor(a, f8, 3, E, N, K);
        qgmm_tensor xs = arena_tensor(a, QGMM_F32, 2, M, K / 128, 0);
        qgmm_tensor ws = arena_tensor(a, QGMM_F32, 3, E, N / 128, K / 128);
        if (size_only) return QGMM_OK;
        const qgmm_fp8_blockwise_params act = {QGMM_BLOCK_1X128}, wt = {QGMM_BLOCK_128X128};
        QGMM_TRY(STEP(a, "x", quantize_fp8_blockwise, &act, x, &xq, &xs));
        QGMM_TRY(STEP(a, "w", quantize_fp8_blockwise, &wt, w, &wq, &ws));
        return STEP(a, "xq wq", grouped_gemm, &gp, &xq, &wq, &xs, &ws, offs, y);
    }
    case QGMM_RECIPE_MXFP8: {
        if (a->mx_as_bf16) {
            qgmm_tensor xb = arena_tensor(a, QGMM_BF16, 2, M, K, 0), wb = arena_tensor(a, QGMM_BF16, 3, E, N, K);
            if (size_only) return QGMM_OK;
            const qgmm_mxfp8_params x_along_k = {1, p->mx_mode, QGMM_SCALES_PLAIN};
            const qgmm_mxfp8_params w_along_k = {2, p->mx_mode, QGMM_SCALES_PLAIN};
            const qgmm_grouped_gemm_params gb = {QGMM_GEMM_M_GROUPED, QGMM_RECIPE_BF16};
            QGMM_TRY(STEP(a, "x", mx_round_trip, &x_along_k, f8, x, &xb));
            QGMM_TRY(STEP(a, "w", mx_round_trip, &w_along_k, f8, w, &wb));
            return STEP(a, "xb wb", grouped_gemm, &gb, &xb, &wb, NULL, NULL, offs, y);
        }
        qgmm_tensor xq = arena_tensor(a, f8, 2, M, K, 0), wq = arena_tensor(a, f8, 3, E, N, K);
        qgmm_tensor xsb = arena_blocked(a, QGMM_BLOCKED_M_GROUPS, E, M, K / 32);
        qgmm_tensor wsb = arena_blocked(a, QGMM_BLOCKED_3D, E, N, K / 32);
        if (size_only) return QGMM_OK;
        const qgmm_mxfp8_params along_k = {1, p->mx_mode, QGMM_SCALES_BLOCKED_M_GROUPS};
        const qgmm_mxfp8_params w_blocked = {2, p->mx_mode, QGMM_SCALES_BLOCKED};
        QGMM_TRY(STEP(a, "x", quantize_mxfp8_grouped, &along_k, x, offs, &xq, &xsb));
        QGMM_TRY(STEP(a, "w", quantize_mxfp8, &w_blocked, w, &wq, &wsb));
        return STEP(a, "xq wq", grouped_gemm, &gp, &xq, &wq, &xsb, &wsb, offs, y);
    }
    }
    return QGMM_ERR_INTERNAL;
}

/* ---------------------------------------------------------------- backward */
static qgmm_status dgrad_steps(arena *a, const qgmm_moe_params *p, const qgmm_tensor *w,
                               const qgmm_tensor *dy, const qgmm_tensor *offs, const qgmm_tensor *dx,
                               int64_t M, int64_t N, int64_t K, int64_t E)
{
    const int size_only = a->mode == ARENA_SIZE;
    const qgmm_dtype f8 = fp8_of(p);
    const qgmm_tensor wt = transposed_3d(w); /* (E, K, N) view of the weights */
    const qgmm_grouped_gemm_params gp = {QGMM_GEMM_M_GROUPED, p->recipe};
    switch (p->recipe) {
    case QGMM_RECIPE_BF16:
        return size_only ? QGMM_OK : STEP(a, "dy w", grouped_gemm, &gp, dy, &wt, NULL, NULL, offs, dx);
    case QGMM_RECIPE_FP8_ROWWISE: {
        qgmm_tensor dyq = arena_tensor(a, f8, 2, M, N, 0), dys = arena_tensor(a, QGMM_F32, 1, M, 0, 0);
        /* the "3D transpose rhs" cast: w (E, N, K) itself, one scale per (e, k) over N,
         * written through the (E, N, K) view of the (E, K, N) bytes (q R-contiguous: the
         * backends' column kernels; the (E, K, N) view of w as input would be strided) */
        qgmm_tensor wtq = arena_tensor(a, f8, 3, E, K, N), wts = arena_tensor(a, QGMM_F32, 2, E, K, 0);
        if (size_only) return QGMM_OK;
        const qgmm_fp8_rowwise_params along_n = {1, 0, QGMM_SCALE_RECIPROCAL}; /* dim 1 of both */
        const qgmm_tensor wtq_nk = transposed_3d(&wtq);
        QGMM_TRY(STEP(a, "dy", quantize_fp8_rowwise, &along_n, dy, NULL, &dyq, &dys));
        QGMM_TRY(STEP(a, "w", quantize_fp8_rowwise, &along_n, w, NULL, &wtq_nk, &wts));
        return STEP(a, "dyq wq", grouped_gemm, &gp, &dyq, &wtq, &dys, &wts, offs, dx);
    }
    case QGMM_RECIPE_FP8_BLOCKWISE: {
        qgmm_tensor dyq = arena_tensor(a, f8, 2, M, N, 0), wtq = arena_tensor(a, f8, 3, E, K, N);
        qgmm_tensor dys = arena_tensor(a, QGMM_F32, 2, M, N / 128, 0);
        qgmm_tensor wts = arena_tensor(a, QGMM_F32, 3, E, K / 128, N / 128);
        if (size_only) return QGMM_OK;
        const qgmm_fp8_blockwise_params act = {QGMM_BLOCK_1X128}, wt128 = {QGMM_BLOCK_128X128};
        QGMM_TRY(STEP(a, "dy", quantize_fp8_blockwise, &act, dy, &dyq, &dys));
        QGMM_TRY(STEP(a, "w", quantize_fp8_blockwise, &wt128, &wt, &wtq, &wts));
        return STEP(a, "dyq wq", grouped_gemm, &gp, &dyq, &wtq, &dys, &wts, offs, dx);
    }
    case QGMM_RECIPE_MXFP8: {
        if (a->mx_as_bf16) { /* dy and w (E, N, K) in blocks along N; the GEMM reads w's (E, K, N) view */
            qgmm_tensor dyb = arena_tensor(a, QGMM_BF16, 2, M, N, 0), wb = arena_tensor(a, QGMM_BF16, 3, E, N, K);
            if (size_only) return QGMM_OK;
            const qgmm_mxfp8_params along_n = {1, p->mx_mode, QGMM_SCALES_PLAIN};
            const qgmm_grouped_gemm_params gb = {QGMM_GEMM_M_GROUPED, QGMM_RECIPE_BF16};
            const qgmm_tensor wbt = transposed_3d(&wb);
            QGMM_TRY(STEP(a, "dy", mx_round_trip, &along_n, f8, dy, &dyb));
            QGMM_TRY(STEP(a, "w", mx_round_trip, &along_n, f8, w, &wb));
            return STEP(a, "dyb wb", grouped_gemm, &gb, &dyb, &wbt, NULL, NULL, offs, dx);
        }
        qgmm_tensor dyq = arena_tensor(a, f8, 2, M, N, 0), wtq = arena_tensor(a, f8, 3, E, K, N);
        qgmm_tensor dysb = arena_blocked(a, QGMM_BLOCKED_M_GROUPS, E, M, N / 32);
        qgmm_tensor wtsb = arena_blocked(a, QGMM_BLOCKED_3D, E, K, N / 32);
        if (size_only) return QGMM_OK;
        const qgmm_mxfp8_params along_n = {1, p->mx_mode, QGMM_SCALES_BLOCKED_M_GROUPS};
        /* w (E, N, K) in 32x1 blocks along N, through the (E, N, K) view of the (E, K, N)
         * bytes: the same bytes and scales as 1x32 blocks of the (E, K, N) view of w */
        const qgmm_mxfp8_params w_along_n = {1, p->mx_mode, QGMM_SCALES_BLOCKED};
        const qgmm_tensor wtq_nk = transposed_3d(&wtq);
        QGMM_TRY(STEP(a, "dy", quantize_mxfp8_grouped, &along_n, dy, offs, &dyq, &dysb));
        QGMM_TRY(STEP(a, "w", quantize_mxfp8, &w_along_n, w, &wtq_nk, &wtsb));
        return STEP(a, "dyq wq", grouped_gemm, &gp, &dyq, &wtq, &dysb, &wtsb, offs, dx);
    }
    }
    return QGMM_ERR_INTERNAL;
}

static int wgrad_alignment(qgmm_recipe r)
{
    return r == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : r == QGMM_RECIPE_MXFP8 ? 32 : 0;
}

/* Presets the padded offsets to -1 (stream-ordered fill) before the pad step that writes
 * them: when bad offsets make the pad write nothing, every later step reading them sees
 * invalid offsets on the device and writes nothing either. */
static qgmm_status preset_padded_offsets(arena *a, const qgmm_tensor *poffs)
{
    qgmm_status st = QGMM_OK;
    if (a->mode == ARENA_RUN) st = qgmm_buffer_fill(poffs->buffer, poffs->offset, qgmm_tensor_span_bytes(poffs), 0xFF);
    return step_done(a, "buffer_fill padded offs", st);
}

static qgmm_status wgrad_steps(arena *a, const qgmm_moe_params *p, const qgmm_tensor *x,
                               const qgmm_tensor *dy, const qgmm_tensor *offs, const qgmm_tensor *dw,
                               int64_t M, int64_t N, int64_t K, int64_t E)
{
    const int size_only = a->mode == ARENA_SIZE;
    const qgmm_dtype f8 = fp8_of(p);
    const qgmm_grouped_gemm_params gp = {QGMM_GEMM_K_GROUPED, p->recipe};
    if (p->recipe == QGMM_RECIPE_BF16)
        return size_only ? QGMM_OK : STEP(a, "dy x", grouped_gemm, &gp, dy, x, NULL, NULL, offs, dw);
    if (p->recipe == QGMM_RECIPE_FP8_ROWWISE) {
        /* jagged per-group scales along the token dim; column-major fp8 operands */
        qgmm_tensor dyq = arena_colmajor(a, f8, M, N), xq = arena_colmajor(a, f8, M, K);
        qgmm_tensor dys = arena_tensor(a, QGMM_F32, 2, E, N, 0), xs = arena_tensor(a, QGMM_F32, 2, E, K, 0);
        if (size_only) return QGMM_OK;
        const qgmm_fp8_rowwise_params per_group_col = {0, 0, QGMM_SCALE_RECIPROCAL};
        QGMM_TRY(STEP(a, "dy x", quantize_fp8_rowwise_dual, &per_group_col, dy, &dyq, &dys, &per_group_col,
                      x, &xq, &xs, offs));
        return STEP(a, "dyq xq", grouped_gemm, &gp, &dyq, &xq, &dys, &xs, offs, dw);
    }
    /* Blockwise / MX: pad each group to the token block first. */
    const int A = wgrad_alignment(p->recipe);
    const int64_t P = qgmm_padded_rows_bound(M, E, A);
    qgmm_tensor dyp = arena_tensor(a, dy->dtype, 2, P, N, 0), xp = arena_tensor(a, x->dtype, 2, P, K, 0);
    qgmm_tensor poffs = arena_tensor(a, QGMM_I32, 1, E, 0, 0);
    if (p->recipe == QGMM_RECIPE_MXFP8 && a->mx_as_bf16) {
        /* MXFP8 as bf16: the round trips, padded on the way, then the BF16 GEMM */
        if (size_only) return QGMM_OK;
        QGMM_TRY(preset_padded_offsets(a, &poffs));
        const qgmm_mxfp8_params along_tokens = {0, p->mx_mode, QGMM_SCALES_PLAIN};
        const qgmm_grouped_gemm_params gb = {QGMM_GEMM_K_GROUPED, QGMM_RECIPE_BF16};
        QGMM_TRY(STEP(a, "dy", mx_round_trip_padded, &along_tokens, f8, dy, offs, &dyp, &poffs));
        QGMM_TRY(STEP(a, "x", mx_round_trip_padded, &along_tokens, f8, x, offs, &xp, &poffs));
        return STEP(a, "dyp xp", grouped_gemm, &gb, &dyp, &xp, NULL, NULL, &poffs, dw);
    }
    qgmm_tensor dyq = arena_colmajor(a, f8, P, N), xq = arena_colmajor(a, f8, P, K);
    if (p->recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        qgmm_tensor dys = arena_tensor(a, QGMM_F32, 2, N, P / 128, 0), xs = arena_tensor(a, QGMM_F32, 2, K, P / 128, 0);
        if (size_only) return QGMM_OK;
        QGMM_TRY(preset_padded_offsets(a, &poffs));
        /* 1x128 blocks along the tokens (of the (N, P) / (K, P) transposed views) */
        const qgmm_quant_format blk = QGMM_QUANT_FORMAT_FP8_BLOCKWISE_INIT(QGMM_BLOCK_1X128);
        QGMM_TRY(STEP(a, "dy", quantize_tokens_padded, &blk, dy, offs, &dyp, &poffs, &dyq, &dys));
        QGMM_TRY(STEP(a, "x", quantize_tokens_padded, &blk, x, offs, &xp, &poffs, &xq, &xs));
        return STEP(a, "dyq xq", grouped_gemm, &gp, &dyq, &xq, &dys, &xs, &poffs, dw);
    }
    /* MXFP8: 32x1 blocks along the tokens, scales written in the K-groups layout */
    qgmm_tensor dysb = arena_blocked(a, QGMM_BLOCKED_K_GROUPS, E, N, P / 32);
    qgmm_tensor xsb = arena_blocked(a, QGMM_BLOCKED_K_GROUPS, E, K, P / 32);
    if (size_only) return QGMM_OK;
    QGMM_TRY(preset_padded_offsets(a, &poffs));
    qgmm_quant_format along_tokens = QGMM_QUANT_FORMAT_MXFP8_INIT(0);
    along_tokens.mx.mode = p->mx_mode;
    along_tokens.mx.scale_layout = QGMM_SCALES_BLOCKED_K_GROUPS;
    QGMM_TRY(STEP(a, "dy", quantize_tokens_padded, &along_tokens, dy, offs, &dyp, &poffs, &dyq, &dysb));
    QGMM_TRY(STEP(a, "x", quantize_tokens_padded, &along_tokens, x, offs, &xp, &poffs, &xq, &xsb));
    return STEP(a, "dyq xq", grouped_gemm, &gp, &dyq, &xq, &dysb, &xsb, &poffs, dw);
}

/* ---------------------------------------------------------------- public entry points */
/* The workspace of every step, sized by running the steps in ARENA_SIZE mode: SIZE_MAX
 * when a temporary's size does not fit. */
static size_t workspace_need(const qgmm_moe_params *p, int64_t M, int64_t N, int64_t K, int64_t E)
{
    qgmm_tensor none;
    memset(&none, 0, sizeof none);
    none.dtype = QGMM_BF16;
    /* forward and backward reuse the same workspace; backward runs dgrad then wgrad. No
     * context here: MXFP8 is sized both ways (mx_as_bf16). */
    size_t need = 0;
    for (int as_bf16 = 0; as_bf16 < 2; ++as_bf16) {
        arena fa = arena_make(NULL, NULL, ARENA_SIZE, "forward"), da = fa, wa = fa;
        fa.mx_as_bf16 = da.mx_as_bf16 = wa.mx_as_bf16 = as_bf16;
        forward_steps(&fa, p, &none, &none, &none, &none, M, N, K, E);
        dgrad_steps(&da, p, &none, &none, &none, &none, M, N, K, E);
        wgrad_steps(&wa, p, &none, &none, &none, &none, M, N, K, E);
        if (fa.overflow || da.overflow || wa.overflow) return SIZE_MAX;
        if (fa.used > need) need = fa.used;
        if (da.used > need) need = da.used;
        if (wa.used > need) need = wa.used;
    }
    return need;
}

size_t qgmm_moe_workspace_bytes(const qgmm_moe_params *p, int64_t M, int64_t N, int64_t K, int64_t E)
{
    if (!p || M < 0 || N <= 0 || K <= 0 || E <= 0) return 0;
    if (M > QGMM_MAX_EXTENT || N > QGMM_MAX_EXTENT || K > QGMM_MAX_EXTENT || E > QGMM_MAX_EXTENT)
        return SIZE_MAX;
    return workspace_need(p, M, N, K, E);
}

/* The caller's workspace: big enough, of this context, and as a byte tensor for the
 * aliasing rule (*t stays absent when no workspace is needed). */
static qgmm_status check_workspace(qgmm_context *ctx, qgmm_buffer *ws, const qgmm_moe_params *p,
                                   int64_t M, int64_t N, int64_t K, int64_t E, qgmm_tensor *t)
{
    memset(t, 0, sizeof *t);
    const size_t need = qgmm_moe_workspace_bytes(p, M, N, K, E);
    if (need == SIZE_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "the workspace for M=%lld N=%lld K=%lld E=%lld does not fit in 2^64 bytes",
                              (long long)M, (long long)N, (long long)K, (long long)E);
    if (need == 0) return QGMM_OK;
    if (!ws) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "workspace is NULL; %zu bytes needed", need);
    if (ws->ctx != ctx)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "workspace belongs to another context");
    if (qgmm_buffer_size(ws) < need)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "workspace has %zu bytes; qgmm_moe_workspace_bytes says %zu",
                              qgmm_buffer_size(ws), need);
    const int64_t shape[1] = {(int64_t)need};
    *t = qgmm_tensor_make(ws, 0, QGMM_U8, 1, shape);
    return QGMM_OK;
}

/* The arguments both directions share; *M, *N, *K, *E receive the problem size. */
static qgmm_status check_common(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                const qgmm_tensor *w, const qgmm_tensor *offs, int64_t *M, int64_t *N,
                                int64_t *K, int64_t *E)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(check_params(ctx, p));
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK(QGMM_BF16), 2, 2));
    QGMM_TRY(qgmm_check_tensor(ctx, "w", w, QGMM_MASK(QGMM_BF16), 3, 3));
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    if (w->shape[2] != x->shape[1])
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "w.shape[2] is %lld; must equal x's K=%lld",
                              (long long)w->shape[2], (long long)x->shape[1]);
    if (w->shape[1] < 1 || w->shape[2] < 1)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "w has N=%lld and K=%lld; both must be at least 1", (long long)w->shape[1],
                              (long long)w->shape[2]);
    QGMM_TRY(qgmm_check_shape(ctx, "offs", offs, 1, w->shape[0], 0, 0));
    QGMM_TRY(check_dims(ctx, p, w->shape[1], w->shape[2]));
    *M = x->shape[0];
    *K = x->shape[1];
    *E = w->shape[0];
    *N = w->shape[1];
    return QGMM_OK;
}

/* A profile needs steps + 1 events of this context (the dry pass counted the steps). */
static qgmm_status check_profile(qgmm_context *ctx, const qgmm_moe_profile *prof, int steps, const char *dir)
{
    if (!prof) return QGMM_OK;
    if (steps > QGMM_MOE_PROFILE_MAX_STEPS) /* the recipes stay under it; a guard for new steps */
        return qgmm_set_error(ctx, QGMM_ERR_INTERNAL, "%s has %d steps; a profile holds %d", dir, steps,
                              QGMM_MOE_PROFILE_MAX_STEPS);
    for (int i = 0; i <= steps; ++i)
        if (!prof->events[i] || prof->events[i]->ctx != ctx)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "prof->events[%d] is %s; this %s has %d steps and needs events[0..%d] "
                                  "of this context",
                                  i, prof->events[i] ? "of another context" : "NULL", dir, steps, steps);
    return QGMM_OK;
}

/* Records the profile's first event; each step records the next (step_done). */
static qgmm_status start_profile(arena *a, qgmm_moe_profile *prof)
{
    a->prof = prof;
    if (!prof) return QGMM_OK;
    prof->steps = 0;
    return qgmm_event_record(prof->events[0]);
}

static qgmm_status forward_check(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                 const qgmm_tensor *w, const qgmm_tensor *offs, const qgmm_tensor *y,
                                 qgmm_buffer *workspace, const qgmm_moe_profile *prof)
{
    int64_t M = 0, N = 0, K = 0, E = 0;
    qgmm_tensor wst;
    QGMM_TRY(check_common(ctx, p, x, w, offs, &M, &N, &K, &E));
    QGMM_TRY(qgmm_check_tensor(ctx, "y", y, QGMM_MASK_OUT, 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "y", y, 2, M, N, 0));
    QGMM_TRY(check_workspace(ctx, workspace, p, M, N, K, E, &wst));
    const qgmm_arg outs[] = {{"y", y}, {"workspace", &wst}};
    const qgmm_arg ins[] = {{"x", x}, {"w", w}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, NULL, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    arena a = arena_make(ctx, workspace, ARENA_CHECK, "forward");
    QGMM_TRY(forward_steps(&a, p, x, w, offs, y, M, N, K, E));
    return check_profile(ctx, prof, a.steps, "forward");
}

qgmm_status qgmm_moe_experts_forward_profiled(qgmm_context *ctx, const qgmm_moe_params *p,
                                              const qgmm_tensor *x, const qgmm_tensor *w,
                                              const qgmm_tensor *offs, const qgmm_tensor *y,
                                              qgmm_buffer *workspace, qgmm_moe_profile *prof)
{
    static const char op[] = "qgmm_moe_experts_forward";
    qgmm_status st = forward_check(ctx, p, x, w, offs, y, workspace, prof);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    arena a = arena_make(ctx, workspace, ARENA_RUN, "forward");
    st = start_profile(&a, prof);
    if (st != QGMM_OK) return st;
    qgmm_offsets_owner(ctx, op, "offs");
    st = forward_steps(&a, p, x, w, offs, y, x->shape[0], w->shape[1], w->shape[2], w->shape[0]);
    qgmm_offsets_owner(ctx, NULL, NULL);
    return st;
}

qgmm_status qgmm_moe_experts_forward(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                     const qgmm_tensor *w, const qgmm_tensor *offs, const qgmm_tensor *y,
                                     qgmm_buffer *workspace)
{
    return qgmm_moe_experts_forward_profiled(ctx, p, x, w, offs, y, workspace, NULL);
}

static qgmm_status backward_check(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                  const qgmm_tensor *w, const qgmm_tensor *dy, const qgmm_tensor *offs,
                                  const qgmm_tensor *dx, const qgmm_tensor *dw, qgmm_buffer *workspace,
                                  const qgmm_moe_profile *prof)
{
    int64_t M = 0, N = 0, K = 0, E = 0;
    qgmm_tensor wst;
    QGMM_TRY(check_common(ctx, p, x, w, offs, &M, &N, &K, &E));
    QGMM_TRY(qgmm_check_tensor(ctx, "dy", dy, QGMM_MASK(QGMM_BF16), 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "dy", dy, 2, M, N, 0));
    QGMM_TRY(qgmm_check_tensor(ctx, "dx", dx, QGMM_MASK_OUT, 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "dx", dx, 2, M, K, 0));
    QGMM_TRY(qgmm_check_tensor(ctx, "dw", dw, QGMM_MASK_OUT, 3, 3));
    QGMM_TRY(qgmm_check_shape(ctx, "dw", dw, 3, E, N, K));
    const int A = wgrad_alignment(p->recipe);
    if (A) { /* wgrad pads x and dy by whole rows */
        QGMM_TRY(qgmm_check_rows_contiguous(ctx, "x", x));
        QGMM_TRY(qgmm_check_rows_contiguous(ctx, "dy", dy));
    }
    if (A && qgmm_padded_rows_bound(M, E, A) > INT32_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "x has %lld tokens; padded to %d in %lld groups for wgrad they may need "
                              "%lld rows, past the int32 padded offsets",
                              (long long)M, A, (long long)E, (long long)qgmm_padded_rows_bound(M, E, A));
    QGMM_TRY(check_workspace(ctx, workspace, p, M, N, K, E, &wst));
    const qgmm_arg outs[] = {{"dx", dx}, {"dw", dw}, {"workspace", &wst}};
    const qgmm_arg ins[] = {{"x", x}, {"w", w}, {"dy", dy}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, NULL, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    arena a = arena_make(ctx, workspace, ARENA_CHECK, "dgrad");
    QGMM_TRY(dgrad_steps(&a, p, w, dy, offs, dx, M, N, K, E));
    arena b = arena_make(ctx, workspace, ARENA_CHECK, "wgrad");
    QGMM_TRY(wgrad_steps(&b, p, x, dy, offs, dw, M, N, K, E));
    return check_profile(ctx, prof, a.steps + b.steps, "backward");
}

qgmm_status qgmm_moe_experts_backward_profiled(qgmm_context *ctx, const qgmm_moe_params *p,
                                               const qgmm_tensor *x, const qgmm_tensor *w,
                                               const qgmm_tensor *dy, const qgmm_tensor *offs,
                                               const qgmm_tensor *dx, const qgmm_tensor *dw,
                                               qgmm_buffer *workspace, qgmm_moe_profile *prof)
{
    static const char op[] = "qgmm_moe_experts_backward";
    qgmm_status st = backward_check(ctx, p, x, w, dy, offs, dx, dw, workspace, prof);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    const int64_t M = x->shape[0], K = x->shape[1], E = w->shape[0], N = w->shape[1];
    arena a = arena_make(ctx, workspace, ARENA_RUN, "dgrad");
    st = start_profile(&a, prof);
    if (st != QGMM_OK) return st;
    qgmm_offsets_owner(ctx, op, "offs");
    st = dgrad_steps(&a, p, w, dy, offs, dx, M, N, K, E);
    /* The wgrad temporaries reuse the workspace from offset 0: ops on one context run in
     * order, so dgrad's reads are finished before wgrad's first write. */
    arena b = arena_make(ctx, workspace, ARENA_RUN, "wgrad");
    b.prof = prof;
    if (st == QGMM_OK) st = wgrad_steps(&b, p, x, dy, offs, dw, M, N, K, E);
    qgmm_offsets_owner(ctx, NULL, NULL);
    return st;
}

qgmm_status qgmm_moe_experts_backward(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                      const qgmm_tensor *w, const qgmm_tensor *dy, const qgmm_tensor *offs,
                                      const qgmm_tensor *dx, const qgmm_tensor *dw, qgmm_buffer *workspace)
{
    return qgmm_moe_experts_backward_profiled(ctx, p, x, w, dy, offs, dx, dw, workspace, NULL);
}
