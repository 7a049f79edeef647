/* Entry points of the cast family: validation, then dispatch to the backend. */
#include "validate.h"
#include "qgmm_layout_maps.h"

#include <stdio.h>

/* Every cast is described once (problem_cast.c) and handed to the backend's cast slot. */
static qgmm_status run_cast(qgmm_context *ctx, const qgmm_quant_format *f, int dequantize,
                            const qgmm_tensor *x, const qgmm_tensor *q, const qgmm_tensor *scales,
                            const qgmm_tensor *offs)
{
    qgmm_cast_problem p;
    qgmm_cast_problem_make(f, dequantize, x, q, scales, offs, &p);
    return ctx->vt->cast(ctx, &p);
}

static qgmm_status quantize_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                    const qgmm_tensor *x, const qgmm_tensor *offs,
                                    const qgmm_tensor *q, const qgmm_tensor *scales)
{
    qgmm_quant_format f = QGMM_QUANT_FORMAT_FP8_ROWWISE_INIT(p->reduce_dim);
    f.rowwise = *p;
    return run_cast(ctx, &f, 0, x, q, scales, offs);
}

/* ---------------------------------------------------------------- FP8 rowwise */
static qgmm_status check_rowwise_params(qgmm_context *ctx, const char *pname,
                                        const qgmm_fp8_rowwise_params *p)
{
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s is NULL", pname);
    if (p->power_of_2 != 0 && p->power_of_2 != 1)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s->power_of_2 is %d; must be 0 or 1",
                              pname, p->power_of_2);
    if (p->scale_kind != QGMM_SCALE_MULTIPLIER && p->scale_kind != QGMM_SCALE_RECIPROCAL)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s->scale_kind is %d; not a qgmm_scale_kind", pname, (int)p->scale_kind);
    return QGMM_OK;
}

/* `data` is the high-precision side (x for quantize, out for dequantize). */
static qgmm_status check_rowwise_scales(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                        const char *data_name, const qgmm_tensor *data,
                                        const qgmm_tensor *offs, const qgmm_tensor *scales,
                                        const char *scales_name)
{
    const int r = data->rank;
    if (r == 2 && p->reduce_dim != 0 && p->reduce_dim != 1)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "reduce_dim is %d; a rank-2 %s takes 0 or 1", p->reduce_dim, data_name);
    if (r == 3 && p->reduce_dim != 1 && p->reduce_dim != 2)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "reduce_dim is %d; a rank-3 %s takes 1 or 2 (never the expert dim)",
                              p->reduce_dim, data_name);
    QGMM_TRY(qgmm_check_tensor(ctx, scales_name, scales, QGMM_MASK(QGMM_F32), 1, 2));
    QGMM_TRY(qgmm_check_contiguous(ctx, scales_name, scales));
    if (qgmm_present(offs)) {
        QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
        if (r != 2)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "offs is given but %s has rank %d; jagged scaling is rank 2 only",
                                  data_name, r);
        const int other = 1 - p->reduce_dim;
        return qgmm_check_shape(ctx, scales_name, scales, 2, offs->shape[0], data->shape[other], 0);
    }
    if (r == 2) return qgmm_check_shape(ctx, scales_name, scales, 1, data->shape[1 - p->reduce_dim], 0, 0);
    const int other = p->reduce_dim == 2 ? 1 : 2;
    return qgmm_check_shape(ctx, scales_name, scales, 2, data->shape[0], data->shape[other], 0);
}

static qgmm_status check_rowwise_call(qgmm_context *ctx, const char *sfx,
                                      const qgmm_fp8_rowwise_params *p, const qgmm_tensor *x,
                                      const qgmm_tensor *offs, const qgmm_tensor *q,
                                      const qgmm_tensor *scales)
{
    char pn[8], xn[8], qn[8], sn[16];
    snprintf(pn, sizeof pn, "p%s", sfx);
    snprintf(xn, sizeof xn, "x%s", sfx);
    snprintf(qn, sizeof qn, "q%s", sfx);
    snprintf(sn, sizeof sn, "scales%s", sfx);
    QGMM_TRY(check_rowwise_params(ctx, pn, p));
    QGMM_TRY(qgmm_check_tensor(ctx, xn, x, QGMM_MASK_HP, 2, 3));
    QGMM_TRY(qgmm_check_tensor(ctx, qn, q, QGMM_MASK_FP8, 2, 3));
    QGMM_TRY(qgmm_check_same_shape(ctx, qn, q, xn, x));
    return check_rowwise_scales(ctx, p, xn, x, offs, scales, sn);
}

qgmm_status qgmm_validate_quantize_fp8_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                               const qgmm_tensor *x, const qgmm_tensor *offs,
                                               const qgmm_tensor *q, const qgmm_tensor *scales)
{
    static const char op[] = "qgmm_quantize_fp8_rowwise";
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(check_rowwise_call(ctx, "", p, x, offs, q, scales));
    const qgmm_arg outs[] = {{"q", q}, {"scales", scales}}, ins[] = {{"x", x}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, op, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    return ctx->vt->cast ? QGMM_OK : qgmm_unsupported_op(ctx, op);
}

qgmm_status qgmm_quantize_fp8_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                      const qgmm_tensor *x, const qgmm_tensor *offs,
                                      const qgmm_tensor *q, const qgmm_tensor *scales)
{
    QGMM_TRY(qgmm_validate_quantize_fp8_rowwise(ctx, p, x, offs, q, scales));
    const qgmm_status s = quantize_rowwise(ctx, p, x, offs, q, scales);
    if (!qgmm_present(offs)) return s;
    return qgmm_offsets_enqueued(ctx, s, "qgmm_quantize_fp8_rowwise", "offs", NULL);
}

qgmm_status qgmm_validate_quantize_fp8_rowwise_dual(
    qgmm_context *ctx, const qgmm_fp8_rowwise_params *p0, const qgmm_tensor *x0, const qgmm_tensor *q0,
    const qgmm_tensor *scales0, const qgmm_fp8_rowwise_params *p1, const qgmm_tensor *x1,
    const qgmm_tensor *q1, const qgmm_tensor *scales1, const qgmm_tensor *offs)
{
    static const char op[] = "qgmm_quantize_fp8_rowwise_dual";
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(check_rowwise_call(ctx, "0", p0, x0, offs, q0, scales0));
    QGMM_TRY(check_rowwise_call(ctx, "1", p1, x1, offs, q1, scales1));
    /* One offs over both: the same token extent, so the device verdict on offs is the same
     * for both halves (both written, or neither). */
    if (qgmm_present(offs) && x0->shape[p0->reduce_dim] != x1->shape[p1->reduce_dim])
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: x0.shape[%d] is %lld but x1.shape[%d] is %lld; the groups of offs "
                              "run along both, so they must be equal",
                              op, p0->reduce_dim, (long long)x0->shape[p0->reduce_dim], p1->reduce_dim,
                              (long long)x1->shape[p1->reduce_dim]);
    const qgmm_arg outs[] = {{"q0", q0}, {"scales0", scales0}, {"q1", q1}, {"scales1", scales1}};
    const qgmm_arg ins[] = {{"x0", x0}, {"x1", x1}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, op, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    if (!ctx->vt->quantize_fp8_rowwise_dual && !ctx->vt->cast)
        return qgmm_unsupported_op(ctx, op);
    return QGMM_OK;
}

qgmm_status qgmm_quantize_fp8_rowwise_dual(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p0,
                                           const qgmm_tensor *x0, const qgmm_tensor *q0,
                                           const qgmm_tensor *scales0,
                                           const qgmm_fp8_rowwise_params *p1,
                                           const qgmm_tensor *x1, const qgmm_tensor *q1,
                                           const qgmm_tensor *scales1, const qgmm_tensor *offs)
{
    QGMM_TRY(qgmm_validate_quantize_fp8_rowwise_dual(ctx, p0, x0, q0, scales0, p1, x1, q1, scales1, offs));
    qgmm_status s;
    if (ctx->vt->quantize_fp8_rowwise_dual)
        s = ctx->vt->quantize_fp8_rowwise_dual(ctx, p0, x0, q0, scales0, p1, x1, q1, scales1, offs);
    else if ((s = quantize_rowwise(ctx, p0, x0, offs, q0, scales0)) == QGMM_OK)
        s = quantize_rowwise(ctx, p1, x1, offs, q1, scales1);
    if (!qgmm_present(offs)) return s;
    return qgmm_offsets_enqueued(ctx, s, "qgmm_quantize_fp8_rowwise_dual", "offs", NULL);
}

/* ---------------------------------------------------------------- MXFP8 */
static const char *qgmm_scale_layout_name(qgmm_scale_layout l)
{
    switch (l) {
    case QGMM_SCALES_PLAIN: return "QGMM_SCALES_PLAIN";
    case QGMM_SCALES_BLOCKED: return "QGMM_SCALES_BLOCKED";
    case QGMM_SCALES_BLOCKED_M_GROUPS: return "QGMM_SCALES_BLOCKED_M_GROUPS";
    case QGMM_SCALES_BLOCKED_K_GROUPS: return "QGMM_SCALES_BLOCKED_K_GROUPS";
    }
    return "not a qgmm_scale_layout";
}

static qgmm_status check_mx(qgmm_context *ctx, const qgmm_mxfp8_params *p, const char *data_name,
                            const qgmm_tensor *data, const qgmm_tensor *scales)
{
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p is NULL");
    if (p->mode != QGMM_MX_FLOOR && p->mode != QGMM_MX_RCEIL)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->mode is %d; not a qgmm_mx_mode",
                              (int)p->mode);
    if (p->scale_layout == QGMM_SCALES_BLOCKED_M_GROUPS || p->scale_layout == QGMM_SCALES_BLOCKED_K_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "p->scale_layout is %s; the grouped layouts need the group offsets: "
                              "qgmm_quantize_mxfp8_grouped writes them, qgmm_scales_from_blocked "
                              "reads them back to PLAIN", qgmm_scale_layout_name(p->scale_layout));
    if (p->scale_layout != QGMM_SCALES_PLAIN && p->scale_layout != QGMM_SCALES_BLOCKED)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "p->scale_layout is %d; not a qgmm_scale_layout", (int)p->scale_layout);
    const int r = data->rank;
    if (p->block_dim != r - 1 && p->block_dim != r - 2)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "p->block_dim is %d; a rank-%d %s takes %d or %d", p->block_dim, r,
                              data_name, r - 2, r - 1);
    const int64_t blk_extent = data->shape[p->block_dim];
    if (blk_extent % 32)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s.shape[%d] is %lld; MX blocks need a multiple of 32", data_name,
                              p->block_dim, (long long)blk_extent);
    const int other_dim = p->block_dim == r - 1 ? r - 2 : r - 1;
    const int64_t E = r == 3 ? data->shape[0] : 1;
    const int64_t other = data->shape[other_dim], blocks = blk_extent / 32;
    QGMM_TRY(qgmm_check_tensor(ctx, "scales", scales, QGMM_MASK_E8M0, 1, 3));
    QGMM_TRY(qgmm_check_contiguous(ctx, "scales", scales));
    if (p->scale_layout == QGMM_SCALES_BLOCKED)
        return qgmm_check_blocked_shape(ctx, "scales", scales, QGMM_BLOCKED_3D, E, other, blocks);
    if (r == 2) return qgmm_check_shape(ctx, "scales", scales, 2, other, blocks, 0);
    return qgmm_check_shape(ctx, "scales", scales, 3, E, other, blocks);
}

/* The aliasing rule of the three quantize ops without offsets. */
static qgmm_status check_quantize_aliasing(qgmm_context *ctx, const char *op, const qgmm_tensor *x,
                                           const qgmm_tensor *q, const qgmm_tensor *scales)
{
    const qgmm_arg outs[] = {{"q", q}, {"scales", scales}}, ins[] = {{"x", x}};
    return qgmm_check_aliasing(ctx, op, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins));
}

qgmm_status qgmm_validate_quantize_mxfp8(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                         const qgmm_tensor *x, const qgmm_tensor *q,
                                         const qgmm_tensor *scales)
{
    static const char op[] = "qgmm_quantize_mxfp8";
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK_HP, 2, 3));
    QGMM_TRY(qgmm_check_tensor(ctx, "q", q, QGMM_MASK_FP8, 2, 3));
    QGMM_TRY(qgmm_check_same_shape(ctx, "q", q, "x", x));
    QGMM_TRY(check_mx(ctx, p, "x", x, scales));
    QGMM_TRY(check_quantize_aliasing(ctx, op, x, q, scales));
    return ctx->vt->cast ? QGMM_OK : qgmm_unsupported_op(ctx, op);
}

qgmm_status qgmm_quantize_mxfp8(qgmm_context *ctx, const qgmm_mxfp8_params *p, const qgmm_tensor *x,
                                const qgmm_tensor *q, const qgmm_tensor *scales)
{
    QGMM_TRY(qgmm_validate_quantize_mxfp8(ctx, p, x, q, scales));
    qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(p->block_dim);
    f.mx = *p;
    return run_cast(ctx, &f, 0, x, q, scales, NULL);
}

/* The grouped layouts: x (T, D) with offs over T, the block dim fixed by the layout. */
static qgmm_status check_mx_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *p, const qgmm_tensor *x,
                                    const qgmm_tensor *offs, const qgmm_tensor *scales)
{
    static const char op[] = "qgmm_quantize_mxfp8_grouped";
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p is NULL", op);
    if (p->mode != QGMM_MX_FLOOR && p->mode != QGMM_MX_RCEIL)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p->mode is %d; not a qgmm_mx_mode", op,
                              (int)p->mode);
    const int mg = p->scale_layout == QGMM_SCALES_BLOCKED_M_GROUPS;
    if (p->scale_layout < QGMM_SCALES_PLAIN || p->scale_layout > QGMM_SCALES_BLOCKED_K_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p->scale_layout is %d; not a qgmm_scale_layout",
                              op, (int)p->scale_layout);
    if (!mg && p->scale_layout != QGMM_SCALES_BLOCKED_K_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: p->scale_layout is %s; it writes QGMM_SCALES_BLOCKED_M_GROUPS or "
                              "QGMM_SCALES_BLOCKED_K_GROUPS (qgmm_quantize_mxfp8 writes PLAIN and BLOCKED)",
                              op, qgmm_scale_layout_name(p->scale_layout));
    if (x->rank != 2)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: x has rank %d; the grouped layouts take rank-2 (tokens, D) x", op, x->rank);
    const int want = mg ? 1 : 0;
    if (p->block_dim != want)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: p->block_dim is %d; %s blocks run along %s, block_dim %d", op, p->block_dim,
                              qgmm_scale_layout_name(p->scale_layout), mg ? "D (the last dim)" : "the tokens",
                              want);
    const int64_t T = x->shape[0], D = x->shape[1], L = x->shape[want];
    if (L % 32)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: x.shape[%d] is %lld; MX blocks need a multiple of 32", op, want, (long long)L);
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    QGMM_TRY(qgmm_check_tensor(ctx, "scales", scales, QGMM_MASK_E8M0, 1, 1));
    QGMM_TRY(qgmm_check_contiguous(ctx, "scales", scales));
    const int64_t G = offs->shape[0];
    if (mg) return qgmm_check_blocked_shape(ctx, "scales", scales, QGMM_BLOCKED_M_GROUPS, G, T, D / 32);
    return qgmm_check_blocked_shape(ctx, "scales", scales, QGMM_BLOCKED_K_GROUPS, G, D, T / 32);
}

qgmm_status qgmm_validate_quantize_mxfp8_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                                 const qgmm_tensor *x, const qgmm_tensor *offs,
                                                 const qgmm_tensor *q, const qgmm_tensor *scales)
{
    static const char op[] = "qgmm_quantize_mxfp8_grouped";
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK_HP, 2, 3));
    QGMM_TRY(qgmm_check_tensor(ctx, "q", q, QGMM_MASK_FP8, 2, 3));
    QGMM_TRY(qgmm_check_same_shape(ctx, "q", q, "x", x));
    QGMM_TRY(check_mx_grouped(ctx, p, x, offs, scales));
    const qgmm_arg outs[] = {{"q", q}, {"scales", scales}}, ins[] = {{"x", x}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, op, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    return ctx->vt->cast ? QGMM_OK : qgmm_unsupported_op(ctx, op);
}

qgmm_status qgmm_quantize_mxfp8_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *p, const qgmm_tensor *x,
                                        const qgmm_tensor *offs, const qgmm_tensor *q, const qgmm_tensor *scales)
{
    QGMM_TRY(qgmm_validate_quantize_mxfp8_grouped(ctx, p, x, offs, q, scales));
    qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(p->block_dim);
    f.mx = *p;
    const qgmm_status s = run_cast(ctx, &f, 0, x, q, scales, offs);
    /* K-groups offsets count tokens in whole MX blocks, as QGMM_BLOCKED_K_GROUPS does */
    return qgmm_offsets_enqueued(ctx, s, "qgmm_quantize_mxfp8_grouped", "offs",
                                 p->scale_layout == QGMM_SCALES_BLOCKED_K_GROUPS
                                     ? "offsets that are not multiples of 32" : NULL);
}

/* ---------------------------------------------------------------- FP8 blockwise */
static qgmm_status check_blockwise(qgmm_context *ctx, const qgmm_fp8_blockwise_params *p,
                                   const char *data_name, const qgmm_tensor *data,
                                   const qgmm_tensor *scales)
{
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p is NULL");
    if (p->block != QGMM_BLOCK_1X128 && p->block != QGMM_BLOCK_128X128)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->block is %d; not a qgmm_block_shape",
                              (int)p->block);
    const int r = data->rank;
    const int64_t K = data->shape[r - 1], R = data->shape[r - 2];
    if (K % 128)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s.shape[%d] (K) is %lld; blockwise scaling needs a multiple of 128",
                              data_name, r - 1, (long long)K);
    const int64_t rows = p->block == QGMM_BLOCK_1X128 ? R : qgmm_ceil_div_i64(R, 128);
    QGMM_TRY(qgmm_check_tensor(ctx, "scales", scales, QGMM_MASK(QGMM_F32), 2, 3));
    if (r == 2) return qgmm_check_shape(ctx, "scales", scales, 2, rows, K / 128, 0);
    return qgmm_check_shape(ctx, "scales", scales, 3, data->shape[0], rows, K / 128);
}

qgmm_status qgmm_validate_quantize_fp8_blockwise(qgmm_context *ctx, const qgmm_fp8_blockwise_params *p,
                                                 const qgmm_tensor *x, const qgmm_tensor *q,
                                                 const qgmm_tensor *scales)
{
    static const char op[] = "qgmm_quantize_fp8_blockwise";
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK_HP, 2, 3));
    QGMM_TRY(qgmm_check_tensor(ctx, "q", q, QGMM_MASK_FP8, 2, 3));
    QGMM_TRY(qgmm_check_same_shape(ctx, "q", q, "x", x));
    QGMM_TRY(check_blockwise(ctx, p, "x", x, scales));
    QGMM_TRY(check_quantize_aliasing(ctx, op, x, q, scales));
    return ctx->vt->cast ? QGMM_OK : qgmm_unsupported_op(ctx, op);
}

qgmm_status qgmm_quantize_fp8_blockwise(qgmm_context *ctx, const qgmm_fp8_blockwise_params *p,
                                        const qgmm_tensor *x, const qgmm_tensor *q,
                                        const qgmm_tensor *scales)
{
    QGMM_TRY(qgmm_validate_quantize_fp8_blockwise(ctx, p, x, q, scales));
    qgmm_quant_format f = QGMM_QUANT_FORMAT_FP8_BLOCKWISE_INIT(p->block);
    f.blockwise = *p;
    return run_cast(ctx, &f, 0, x, q, scales, NULL);
}

/* ---------------------------------------------------------------- dequantize */
qgmm_status qgmm_dequantize(qgmm_context *ctx, const qgmm_quant_format *f, const qgmm_tensor *q,
                            const qgmm_tensor *scales, const qgmm_tensor *offs,
                            const qgmm_tensor *out)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!f) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "format is NULL");
    QGMM_TRY(qgmm_check_tensor(ctx, "q", q, QGMM_MASK_FP8, 2, 3));
    QGMM_TRY(qgmm_check_tensor(ctx, "out", out, QGMM_MASK_OUT, 2, 3));
    QGMM_TRY(qgmm_check_same_shape(ctx, "out", out, "q", q));
    switch (f->kind) {
    case QGMM_QUANT_FP8_ROWWISE:
        QGMM_TRY(check_rowwise_params(ctx, "format->rowwise", &f->rowwise));
        QGMM_TRY(check_rowwise_scales(ctx, &f->rowwise, "q", q, offs, scales, "scales"));
        break;
    case QGMM_QUANT_MXFP8:
        if (qgmm_present(offs))
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "offs must be absent for MXFP8");
        QGMM_TRY(check_mx(ctx, &f->mx, "q", q, scales));
        break;
    case QGMM_QUANT_FP8_BLOCKWISE:
        if (qgmm_present(offs))
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "offs must be absent for blockwise");
        QGMM_TRY(check_blockwise(ctx, &f->blockwise, "q", q, scales));
        break;
    default:
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "format->kind is %d; not a qgmm_quant_kind",
                              (int)f->kind);
    }
    const qgmm_arg outs[] = {{"out", out}}, ins[] = {{"q", q}, {"scales", scales}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, "qgmm_dequantize", outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    if (!ctx->vt->cast) return qgmm_unsupported_op(ctx, "qgmm_dequantize");
    const qgmm_status s = run_cast(ctx, f, 1, out, q, scales, offs);
    if (!qgmm_present(offs)) return s;
    return qgmm_offsets_enqueued(ctx, s, "qgmm_dequantize", "offs", NULL);
}
