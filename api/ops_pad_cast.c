/*
 * ops_pad_cast.c — the wgrad operands of the block-scaled recipes: x's token groups padded
 * to the recipe's token block (qgmm_pad_token_groups), then quantized along the tokens.
 * Internal, for the composite (api/moe.c); a user calls the two public ops. A backend with
 * the pad_cast slot does both in one pass and never writes the padded tensor (which costs
 * a write and a read of every byte of x); otherwise, or when the backend declines the
 * layout, the two public ops run with xp (the caller's workspace) as the padded tensor.
 * q, the scales and padded_offs get the same bytes either way.
 */
#include "validate.h"

static const char op_name[] = "qgmm_quantize_tokens_padded";

static int is_blockwise(const qgmm_quant_format *f) { return f->kind == QGMM_QUANT_FP8_BLOCKWISE; }

/* The token block of the format: 128 (FP8 blockwise 1x128), 32 (MXFP8). */
static int token_block(const qgmm_quant_format *f) { return is_blockwise(f) ? 128 : 32; }

/* The cast of the padded rows as the public ops take it: FP8 blockwise 1x128 blocks of the
 * transposed (D, P) views; MXFP8 (P, D) with K-groups scales over the padded offsets. */
static qgmm_status padded_cast(qgmm_context *ctx, int validate_only, const qgmm_quant_format *f,
                               const qgmm_tensor *xp, const qgmm_tensor *padded_offs, const qgmm_tensor *q,
                               const qgmm_tensor *scales)
{
    if (is_blockwise(f)) {
        const qgmm_tensor xpt = qgmm_tensor_swap_dims(xp, 0, 1), qt = qgmm_tensor_swap_dims(q, 0, 1);
        return validate_only ? qgmm_validate_quantize_fp8_blockwise(ctx, &f->blockwise, &xpt, &qt, scales)
                             : qgmm_quantize_fp8_blockwise(ctx, &f->blockwise, &xpt, &qt, scales);
    }
    return validate_only ? qgmm_validate_quantize_mxfp8_grouped(ctx, &f->mx, xp, padded_offs, q, scales)
                         : qgmm_quantize_mxfp8_grouped(ctx, &f->mx, xp, padded_offs, q, scales);
}

qgmm_status qgmm_validate_quantize_tokens_padded(qgmm_context *ctx, const qgmm_quant_format *f, const qgmm_tensor *x,
                                              const qgmm_tensor *offs, const qgmm_tensor *xp,
                                              const qgmm_tensor *padded_offs, const qgmm_tensor *q,
                                              const qgmm_tensor *scales)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!f) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: f is NULL", op_name);
    const int blockwise_1x128 = is_blockwise(f) && f->blockwise.block == QGMM_BLOCK_1X128;
    const int mx_k_groups = f->kind == QGMM_QUANT_MXFP8 && f->mx.block_dim == 0 &&
                            f->mx.scale_layout == QGMM_SCALES_BLOCKED_K_GROUPS;
    if (!blockwise_1x128 && !mx_k_groups)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: f is not FP8 blockwise 1x128 or MXFP8 along the tokens (block_dim 0) with "
                              "K-groups blocked scales", op_name);
    QGMM_TRY(qgmm_validate_pad_token_groups(ctx, token_block(f), x, offs, xp, NULL, padded_offs));
    QGMM_TRY(padded_cast(ctx, 1, f, xp, padded_offs, q, scales));
    /* the fused form reads x and offs where the two ops read xp */
    const qgmm_arg outs[] = {{"q", q}, {"scales", scales}, {"padded_offs", padded_offs}};
    const qgmm_arg ins[] = {{"x", x}, {"offs", offs}};
    return qgmm_check_aliasing(ctx, op_name, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins));
}

/* The backend's one pass: the padded cast's problem with x, unpadded, as its source. */
static qgmm_status fused(qgmm_context *ctx, const qgmm_quant_format *f, const qgmm_tensor *x,
                         const qgmm_tensor *offs, const qgmm_tensor *xp, const qgmm_tensor *padded_offs,
                         const qgmm_tensor *q, const qgmm_tensor *scales)
{
    const int bw = is_blockwise(f);
    const qgmm_tensor xpt = qgmm_tensor_swap_dims(xp, 0, 1), qt = qgmm_tensor_swap_dims(q, 0, 1);
    const qgmm_tensor xs = bw ? qgmm_tensor_swap_dims(x, 0, 1) : *x;
    qgmm_cast_problem p;
    qgmm_cast_problem_make(f, 0, bw ? &xpt : xp, bw ? &qt : q, scales, bw ? NULL : padded_offs, &p);
    p.x.at = qgmm_ref_of(&xs);
    p.x.s_e = 0;
    p.x.s_o = xs.strides[p.odim];
    p.x.s_r = xs.strides[p.rdim];
    const qgmm_pad_gather g = {qgmm_ref_of(offs), offs->shape[0], x->shape[0], token_block(f),
                               qgmm_ref_of(padded_offs)};
    return ctx->vt->pad_cast(ctx, &p, &g);
}

qgmm_status qgmm_quantize_tokens_padded(qgmm_context *ctx, const qgmm_quant_format *f, const qgmm_tensor *x,
                                     const qgmm_tensor *offs, const qgmm_tensor *xp, const qgmm_tensor *padded_offs,
                                     const qgmm_tensor *q, const qgmm_tensor *scales)
{
    QGMM_TRY(qgmm_validate_quantize_tokens_padded(ctx, f, x, offs, xp, padded_offs, q, scales));
    if (ctx->vt->pad_cast) {
        const qgmm_status s = fused(ctx, f, x, offs, xp, padded_offs, q, scales);
        if (s != QGMM_ERR_UNSUPPORTED) return qgmm_offsets_enqueued(ctx, s, op_name, "offs", NULL);
        qgmm_clear_error(ctx); /* declined before enqueuing anything: the two ops instead */
    }
    QGMM_TRY(qgmm_pad_token_groups(ctx, token_block(f), x, offs, xp, NULL, padded_offs));
    return padded_cast(ctx, 0, f, xp, padded_offs, q, scales);
}
