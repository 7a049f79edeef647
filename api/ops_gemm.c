/* The grouped GEMM entry point: shapes, dtypes and scales per recipe, then dispatch. */
#include "validate.h"
#include "qgmm_layout_maps.h"

static qgmm_status absent(qgmm_context *ctx, const char *name, const qgmm_tensor *t, const char *why)
{
    if (qgmm_present(t))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s must be absent (%s)", name, why);
    return QGMM_OK;
}

/* A refused scales tensor: the message goes on with the layout the recipe expects and the
 * calls that make it (the table of docs/gemm-layouts.md). */
static qgmm_status with_layout(qgmm_context *ctx, qgmm_status s, const char *layout)
{
    return s == QGMM_OK ? s : qgmm_error_append(ctx, s, "; %s", layout);
}

static qgmm_status f32_scales_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t, int rank,
                                    int64_t d0, int64_t d1, int64_t d2, int contiguous)
{
    QGMM_TRY(qgmm_check_tensor(ctx, name, t, QGMM_MASK(QGMM_F32), rank, rank));
    if (contiguous) QGMM_TRY(qgmm_check_contiguous(ctx, name, t));
    return qgmm_check_shape(ctx, name, t, rank, d0, d1, d2);
}

static qgmm_status f32_scales(qgmm_context *ctx, const char *name, const qgmm_tensor *t, int rank,
                              int64_t d0, int64_t d1, int64_t d2, int contiguous, const char *layout)
{
    return with_layout(ctx, f32_scales_shape(ctx, name, t, rank, d0, d1, d2, contiguous), layout);
}

static qgmm_status mx_scales_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                                   qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols)
{
    QGMM_TRY(qgmm_check_tensor(ctx, name, t, QGMM_MASK_E8M0, 1, 1));
    QGMM_TRY(qgmm_check_contiguous(ctx, name, t));
    return qgmm_check_blocked_shape(ctx, name, t, v, n, rows, cols);
}

static qgmm_status mx_scales(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                             qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols,
                             const char *layout)
{
    const qgmm_status s = mx_scales_shape(ctx, name, t, v, n, rows, cols);
    if (s == QGMM_OK) return s;
    /* The usual mistake with the grouped layouts: QGMM_SCALES_BLOCKED at quantize writes
     * the one-matrix 2D layout of a rank-2 tensor. */
    int64_t bytes_2d = 0;
    if ((v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS) && qgmm_present(t) && t->rank == 1 &&
        qgmm_blocked_bytes_checked(QGMM_BLOCKED_2D, 1, rows, cols, &bytes_2d) && t->shape[0] == bytes_2d)
        qgmm_error_append(ctx, s, "; %lld bytes is the size of the QGMM_BLOCKED_2D layout, which "
                                  "quantizing with QGMM_SCALES_BLOCKED writes", (long long)bytes_2d);
    return with_layout(ctx, s, layout);
}

static qgmm_status check_operands(qgmm_context *ctx, qgmm_recipe r, const qgmm_tensor *a,
                                  const qgmm_tensor *b)
{
    const uint32_t mask = r == QGMM_RECIPE_BF16 ? QGMM_MASK(QGMM_BF16) : QGMM_MASK_FP8;
    QGMM_TRY(qgmm_check_tensor(ctx, "a", a, mask, 2, 2));
    QGMM_TRY(qgmm_check_tensor(ctx, "b", b, mask, 2, 3));
    if (r == QGMM_RECIPE_MXFP8 && (a->dtype == QGMM_F8E4M3FNUZ || b->dtype == QGMM_F8E4M3FNUZ))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "MXFP8 operands are OCP formats (f8e4m3fn/f8e5m2); got %s and %s",
                              qgmm_dtype_name(a->dtype), qgmm_dtype_name(b->dtype));
    return QGMM_OK;
}

static qgmm_status check_m_grouped(qgmm_context *ctx, qgmm_recipe r, const qgmm_tensor *a,
                                   const qgmm_tensor *b, const qgmm_tensor *sa,
                                   const qgmm_tensor *sb, const qgmm_tensor *offs,
                                   const qgmm_tensor *out)
{
    if (b->rank != 3)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "b has rank %d; M-grouped needs (E, N, K)",
                              b->rank);
    const int64_t M = a->shape[0], K = a->shape[1], E = b->shape[0], N = b->shape[1];
    if (b->shape[2] != K)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "b.shape[2] is %lld; must equal a's K=%lld",
                              (long long)b->shape[2], (long long)K);
    QGMM_TRY(qgmm_check_shape(ctx, "offs", offs, 1, E, 0, 0));
    QGMM_TRY(qgmm_check_shape(ctx, "out", out, 2, M, N, 0));
    switch (r) {
    case QGMM_RECIPE_BF16:
        QGMM_TRY(absent(ctx, "a_scales", sa, "BF16 has no scales"));
        return absent(ctx, "b_scales", sb, "BF16 has no scales");
    case QGMM_RECIPE_FP8_ROWWISE:
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 1, M, 0, 0, 1,
                            "FP8 rowwise M-grouped a_scales are f32 (M), one dequant scale per row of "
                            "a: qgmm_quantize_fp8_rowwise with reduce_dim 1, no offs, "
                            "QGMM_SCALE_RECIPROCAL"));
        return f32_scales(ctx, "b_scales", sb, 2, E, N, 0, 1,
                          "FP8 rowwise M-grouped b_scales are f32 (E, N), one dequant scale per "
                          "(expert, row of b): qgmm_quantize_fp8_rowwise of the rank-3 b with "
                          "reduce_dim 2, QGMM_SCALE_RECIPROCAL");
    case QGMM_RECIPE_FP8_BLOCKWISE:
        if (K % 128)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "K is %lld; FP8 blockwise needs a multiple of 128", (long long)K);
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 2, M, K / 128, 0, 0,
                            "FP8 blockwise M-grouped a_scales are f32 (M, K/128), any strides: "
                            "qgmm_quantize_fp8_blockwise with QGMM_BLOCK_1X128 (the torchao and "
                            "DeepGEMM layouts from qgmm_blockwise_scales_view)"));
        return f32_scales(ctx, "b_scales", sb, 3, E, qgmm_ceil_div_i64(N, 128), K / 128, 0,
                          "FP8 blockwise M-grouped b_scales are f32 (E, ceil(N/128), K/128): "
                          "qgmm_quantize_fp8_blockwise of the rank-3 b with QGMM_BLOCK_128X128");
    case QGMM_RECIPE_MXFP8:
        if (K % 32)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "K is %lld; MXFP8 needs a multiple of 32",
                                  (long long)K);
        QGMM_TRY(mx_scales(ctx, "a_scales", sa, QGMM_BLOCKED_M_GROUPS, E, M, K / 32,
                           "MXFP8 M-grouped a_scales are the QGMM_BLOCKED_M_GROUPS layout of the "
                           "(M, K/32) e8m0 scales of a (qgmm_blocked_m_groups_bytes(M, K/32, G) "
                           "bytes): qgmm_quantize_mxfp8_grouped of a with block_dim 1, "
                           "QGMM_SCALES_BLOCKED_M_GROUPS and offs, or quantize a with "
                           "qgmm_quantize_mxfp8 (block_dim 1, QGMM_SCALES_PLAIN) and convert with "
                           "qgmm_scales_to_blocked(QGMM_BLOCKED_M_GROUPS, offs)"));
        return mx_scales(ctx, "b_scales", sb, QGMM_BLOCKED_3D, E, N, K / 32,
                         "MXFP8 M-grouped b_scales are the QGMM_BLOCKED_3D layout of the "
                         "(E, N, K/32) e8m0 scales of b (E * qgmm_blocked_scales_bytes(N, K/32) "
                         "bytes): qgmm_quantize_mxfp8 of the rank-3 b with block_dim 2 and "
                         "QGMM_SCALES_BLOCKED, or QGMM_SCALES_PLAIN then "
                         "qgmm_scales_to_blocked(QGMM_BLOCKED_3D)");
    }
    return QGMM_ERR_INTERNAL;
}

static qgmm_status check_k_grouped(qgmm_context *ctx, qgmm_recipe r, const qgmm_tensor *a,
                                   const qgmm_tensor *b, const qgmm_tensor *sa,
                                   const qgmm_tensor *sb, const qgmm_tensor *offs,
                                   const qgmm_tensor *out)
{
    if (b->rank != 2)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "b has rank %d; K-grouped needs (M, K)",
                              b->rank);
    const int64_t M = a->shape[0], N = a->shape[1], K = b->shape[1], G = offs->shape[0];
    if (b->shape[0] != M)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "b.shape[0] is %lld; must equal a's M=%lld",
                              (long long)b->shape[0], (long long)M);
    QGMM_TRY(qgmm_check_shape(ctx, "out", out, 3, G, N, K));
    switch (r) {
    case QGMM_RECIPE_BF16:
        QGMM_TRY(absent(ctx, "a_scales", sa, "BF16 has no scales"));
        return absent(ctx, "b_scales", sb, "BF16 has no scales");
    case QGMM_RECIPE_FP8_ROWWISE:
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 2, G, N, 0, 1,
                            "FP8 rowwise K-grouped a_scales are f32 (G, N), per group and column of "
                            "a: qgmm_quantize_fp8_rowwise of a with reduce_dim 0 and offs, "
                            "QGMM_SCALE_RECIPROCAL (qgmm_quantize_fp8_rowwise_dual casts a and b)"));
        return f32_scales(ctx, "b_scales", sb, 2, G, K, 0, 1,
                          "FP8 rowwise K-grouped b_scales are f32 (G, K), per group and column of "
                          "b: qgmm_quantize_fp8_rowwise of b with reduce_dim 0 and offs, "
                          "QGMM_SCALE_RECIPROCAL");
    case QGMM_RECIPE_FP8_BLOCKWISE:
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 2, N, qgmm_ceil_div_i64(M, 128), 0, 0,
                            "FP8 blockwise K-grouped a_scales are f32 (N, ceil(M/128)), 128 tokens a "
                            "block: pad the groups with qgmm_pad_token_groups (alignment 128), then "
                            "qgmm_quantize_fp8_blockwise with QGMM_BLOCK_1X128 on the (N, M) "
                            "transposed view of a"));
        return f32_scales(ctx, "b_scales", sb, 2, K, qgmm_ceil_div_i64(M, 128), 0, 0,
                          "FP8 blockwise K-grouped b_scales are f32 (K, ceil(M/128)), 128 tokens a "
                          "block: pad the groups with qgmm_pad_token_groups (alignment 128), then "
                          "qgmm_quantize_fp8_blockwise with QGMM_BLOCK_1X128 on the (K, M) "
                          "transposed view of b");
    case QGMM_RECIPE_MXFP8: {
        const int64_t mc = qgmm_ceil_div_i64(M, 32);
        QGMM_TRY(mx_scales(ctx, "a_scales", sa, QGMM_BLOCKED_K_GROUPS, G, N, mc,
                           "MXFP8 K-grouped a_scales are the QGMM_BLOCKED_K_GROUPS layout of the "
                           "(N, M/32) e8m0 scales of a (qgmm_blocked_k_groups_bytes(N, M/32, G) "
                           "bytes): qgmm_quantize_mxfp8_grouped of a with block_dim 0, "
                           "QGMM_SCALES_BLOCKED_K_GROUPS and offs, or quantize a with "
                           "qgmm_quantize_mxfp8 (block_dim 0, QGMM_SCALES_PLAIN) and convert with "
                           "qgmm_scales_to_blocked(QGMM_BLOCKED_K_GROUPS, offs)"));
        return mx_scales(ctx, "b_scales", sb, QGMM_BLOCKED_K_GROUPS, G, K, mc,
                         "MXFP8 K-grouped b_scales are the QGMM_BLOCKED_K_GROUPS layout of the "
                         "(K, M/32) e8m0 scales of b (qgmm_blocked_k_groups_bytes(K, M/32, G) "
                         "bytes): qgmm_quantize_mxfp8_grouped of b with block_dim 0, "
                         "QGMM_SCALES_BLOCKED_K_GROUPS and offs, or quantize b with "
                         "qgmm_quantize_mxfp8 (block_dim 0, QGMM_SCALES_PLAIN) and convert with "
                         "qgmm_scales_to_blocked(QGMM_BLOCKED_K_GROUPS, offs)");
    }
    }
    return QGMM_ERR_INTERNAL;
}

qgmm_status qgmm_validate_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *p,
                                       const qgmm_tensor *a, const qgmm_tensor *b,
                                       const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                       const qgmm_tensor *offs, const qgmm_tensor *out)
{
    static const char op[] = "qgmm_grouped_gemm";
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p is NULL");
    if (p->kind != QGMM_GEMM_M_GROUPED && p->kind != QGMM_GEMM_K_GROUPED)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->kind is %d; not a qgmm_gemm_kind",
                              (int)p->kind);
    if (p->recipe < QGMM_RECIPE_BF16 || p->recipe > QGMM_RECIPE_MXFP8)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->recipe is %d; not a qgmm_recipe",
                              (int)p->recipe);
    QGMM_TRY(check_operands(ctx, p->recipe, a, b));
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    QGMM_TRY(qgmm_check_tensor(ctx, "out", out, QGMM_MASK_OUT, 2, 3));
    if (p->kind == QGMM_GEMM_M_GROUPED)
        QGMM_TRY(check_m_grouped(ctx, p->recipe, a, b, a_scales, b_scales, offs, out));
    else
        QGMM_TRY(check_k_grouped(ctx, p->recipe, a, b, a_scales, b_scales, offs, out));
    const qgmm_arg outs[] = {{"out", out}};
    const qgmm_arg ins[] = {{"a", a}, {"b", b}, {"a_scales", a_scales}, {"b_scales", b_scales}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, op, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    return ctx->vt->grouped_gemm ? QGMM_OK : qgmm_unsupported_op(ctx, op);
}

/* What the device check of offs requires beyond monotonic and in range: the K-grouped
 * scale blocks run along the tokens, so no block may straddle two groups. */
static const char *group_size_rule(const qgmm_grouped_gemm_params *p)
{
    if (p->kind != QGMM_GEMM_K_GROUPED) return NULL;
    if (p->recipe == QGMM_RECIPE_FP8_BLOCKWISE) return "group sizes that are not multiples of 128";
    if (p->recipe == QGMM_RECIPE_MXFP8) return "group sizes that are not multiples of 32";
    return NULL;
}

qgmm_status qgmm_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *p,
                              const qgmm_tensor *a, const qgmm_tensor *b,
                              const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                              const qgmm_tensor *offs, const qgmm_tensor *out)
{
    QGMM_TRY(qgmm_validate_grouped_gemm(ctx, p, a, b, a_scales, b_scales, offs, out));
    qgmm_gemm_problem prob;
    qgmm_gemm_problem_make(p, a, b, a_scales, b_scales, offs, out, &prob);
    const qgmm_status s = ctx->vt->grouped_gemm(ctx, &prob);
    return qgmm_offsets_enqueued(ctx, s, "qgmm_grouped_gemm", "offs", group_size_rule(p));
}
