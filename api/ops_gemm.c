/* The grouped GEMM entry point: shapes, dtypes and scales per recipe, then dispatch. */
#include "validate.h"
#include "qgmm_layout_maps.h"

static qgmm_status absent(qgmm_context *ctx, const char *name, const qgmm_tensor *t, const char *why)
{
    if (qgmm_present(t))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s must be absent (%s)", name, why);
    return QGMM_OK;
}

static qgmm_status f32_scales(qgmm_context *ctx, const char *name, const qgmm_tensor *t, int rank,
                              int64_t d0, int64_t d1, int64_t d2, int contiguous)
{
    QGMM_TRY(qgmm_check_tensor(ctx, name, t, QGMM_MASK(QGMM_F32), rank, rank));
    if (contiguous) QGMM_TRY(qgmm_check_contiguous(ctx, name, t));
    return qgmm_check_shape(ctx, name, t, rank, d0, d1, d2);
}

static qgmm_status mx_scales(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                             qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols)
{
    QGMM_TRY(qgmm_check_tensor(ctx, name, t, QGMM_MASK_E8M0, 1, 1));
    QGMM_TRY(qgmm_check_contiguous(ctx, name, t));
    return qgmm_check_blocked_shape(ctx, name, t, v, n, rows, cols);
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
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 1, M, 0, 0, 1));
        return f32_scales(ctx, "b_scales", sb, 2, E, N, 0, 1);
    case QGMM_RECIPE_FP8_BLOCKWISE:
        if (K % 128)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "K is %lld; FP8 blockwise needs a multiple of 128", (long long)K);
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 2, M, K / 128, 0, 0));
        return f32_scales(ctx, "b_scales", sb, 3, E, qgmm_ceil_div_i64(N, 128), K / 128, 0);
    case QGMM_RECIPE_MXFP8:
        if (K % 32)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "K is %lld; MXFP8 needs a multiple of 32",
                                  (long long)K);
        QGMM_TRY(mx_scales(ctx, "a_scales", sa, QGMM_BLOCKED_M_GROUPS, E, M, K / 32));
        return mx_scales(ctx, "b_scales", sb, QGMM_BLOCKED_3D, E, N, K / 32);
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
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 2, G, N, 0, 1));
        return f32_scales(ctx, "b_scales", sb, 2, G, K, 0, 1);
    case QGMM_RECIPE_FP8_BLOCKWISE:
        QGMM_TRY(f32_scales(ctx, "a_scales", sa, 2, N, qgmm_ceil_div_i64(M, 128), 0, 0));
        return f32_scales(ctx, "b_scales", sb, 2, K, qgmm_ceil_div_i64(M, 128), 0, 0);
    case QGMM_RECIPE_MXFP8: {
        const int64_t mc = qgmm_ceil_div_i64(M, 32);
        QGMM_TRY(mx_scales(ctx, "a_scales", sa, QGMM_BLOCKED_K_GROUPS, G, N, mc));
        return mx_scales(ctx, "b_scales", sb, QGMM_BLOCKED_K_GROUPS, G, K, mc);
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

qgmm_status qgmm_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *p,
                              const qgmm_tensor *a, const qgmm_tensor *b,
                              const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                              const qgmm_tensor *offs, const qgmm_tensor *out)
{
    QGMM_TRY(qgmm_validate_grouped_gemm(ctx, p, a, b, a_scales, b_scales, offs, out));
    return ctx->vt->grouped_gemm(ctx, p, a, b, a_scales, b_scales, offs, out);
}
