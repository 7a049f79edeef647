/*
 * ops_mx_round_trip.c — the MXFP8 round trip of the composite's operands,
 * out = bf16(dequantize(quantize_mxfp8(x))): exactly the values a backend's MXFP8 GEMM
 * multiplies where it dequantizes its operands to bf16 first, written in one pass. Internal
 * (api/moe.c), run only through the backend's mx_round_trip slot; a user calls the two
 * public ops. The validator holds x and out to the slot's contract (qgmm_backend.h), so
 * the slot takes every call that passes it. The padded form does the same for the wgrad
 * operands, with the token padding to 32 on the way.
 */
#include "validate.h"

static const char op_name[] = "qgmm_mx_round_trip";
static const char op_padded[] = "qgmm_mx_round_trip_padded";

/* The slot, the format and the rule. */
static qgmm_status check_format(qgmm_context *ctx, const char *op, const qgmm_mxfp8_params *p, qgmm_dtype fp8)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!ctx->vt->mx_round_trip)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "%s: the %s backend has no mx_round_trip slot", op,
                              ctx->vt->name);
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p is NULL", op);
    if (fp8 != QGMM_F8E4M3FN && fp8 != QGMM_F8E5M2)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: fp8 is %s; MXFP8 uses f8e4m3fn or f8e5m2", op,
                              qgmm_dtype_name(fp8));
    if (p->mode != QGMM_MX_FLOOR && p->mode != QGMM_MX_RCEIL)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p->mode is %d; not a qgmm_mx_mode", op,
                              (int)p->mode);
    return QGMM_OK;
}

qgmm_status qgmm_validate_mx_round_trip(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8,
                                       const qgmm_tensor *x, const qgmm_tensor *out)
{
    QGMM_TRY(check_format(ctx, op_name, p, fp8));
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK(QGMM_BF16), 2, 3));
    QGMM_TRY(qgmm_check_tensor(ctx, "out", out, QGMM_MASK(QGMM_BF16), 2, 3));
    QGMM_TRY(qgmm_check_same_shape(ctx, "out", out, "x", x));
    const int last = x->rank - 1, bd = p->block_dim;
    if (bd < last - 1 || bd > last)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p->block_dim is %d; one of x's last two dims",
                              op_name, bd);
    const int other = bd == last ? last - 1 : last;
    if (x->shape[bd] % 32)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: x's dim %d is %lld; a multiple of 32", op_name,
                              bd, (long long)x->shape[bd]);
    const int blocks = x->strides[bd] == 1 && out->strides[bd] == 1;
    const int lines = x->strides[other] == 1 && out->strides[other] == 1;
    if (!blocks && !lines)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: x and out need stride 1 along dim %d (the blocks) or dim %d (the lines)", op_name,
                              bd, other);
    const qgmm_arg outs[] = {{"out", out}};
    const qgmm_arg ins[] = {{"x", x}};
    return qgmm_check_aliasing(ctx, op_name, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins));
}

qgmm_status qgmm_mx_round_trip(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8, const qgmm_tensor *x,
                               const qgmm_tensor *out)
{
    QGMM_TRY(qgmm_validate_mx_round_trip(ctx, p, fp8, x, out));
    qgmm_cast_problem cp;
    qgmm_cast_operand o;
    qgmm_mx_round_trip_problem_make(p, fp8, x, out, &cp, &o);
    return ctx->vt->mx_round_trip(ctx, &cp, &o, NULL);
}

qgmm_status qgmm_validate_mx_round_trip_padded(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8,
                                              const qgmm_tensor *x, const qgmm_tensor *offs, const qgmm_tensor *out,
                                              const qgmm_tensor *padded_offs)
{
    QGMM_TRY(check_format(ctx, op_padded, p, fp8));
    if (p->block_dim != 0)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p->block_dim is %d; 0 (along the tokens)",
                              op_padded, p->block_dim);
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK(QGMM_BF16), 2, 2));
    /* shapes, the offsets, contiguous rows, aliasing: the pad's own rules */
    QGMM_TRY(qgmm_validate_pad_token_groups(ctx, 32, x, offs, out, NULL, padded_offs));
    if (!qgmm_present(padded_offs))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: padded_offs is absent", op_padded);
    return QGMM_OK;
}

/* The wgrad operands: x's token groups padded to 32 and round-tripped in 32-token blocks in
 * one pass through the slot's padded form (the padded bf16 rows are what the MXFP8 K-grouped
 * GEMM would dequantize); where the slot declines it, qgmm_pad_token_groups into out and the
 * round trip in place (which the slot takes: each element read before it is written). */
qgmm_status qgmm_mx_round_trip_padded(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8,
                                      const qgmm_tensor *x, const qgmm_tensor *offs, const qgmm_tensor *out,
                                      const qgmm_tensor *padded_offs)
{
    QGMM_TRY(qgmm_validate_mx_round_trip_padded(ctx, p, fp8, x, offs, out, padded_offs));
    qgmm_cast_problem cp;
    qgmm_cast_operand o;
    qgmm_mx_round_trip_problem_make(p, fp8, out, out, &cp, &o);
    qgmm_cast_problem fused = cp; /* the padded rows, read from x through the gather */
    fused.x.at = qgmm_ref_of(x);
    fused.x.s_o = x->strides[cp.odim];
    fused.x.s_r = x->strides[cp.rdim];
    const qgmm_pad_gather g = {qgmm_ref_of(offs), offs->shape[0], x->shape[0], 32, qgmm_ref_of(padded_offs)};
    const qgmm_status s = ctx->vt->mx_round_trip(ctx, &fused, &o, &g);
    if (s != QGMM_ERR_UNSUPPORTED) return qgmm_offsets_enqueued(ctx, s, op_padded, "offs", NULL);
    qgmm_clear_error(ctx); /* declined before enqueuing anything */
    QGMM_TRY(qgmm_pad_token_groups(ctx, 32, x, offs, out, NULL, padded_offs));
    return ctx->vt->mx_round_trip(ctx, &cp, &o, NULL);
}
