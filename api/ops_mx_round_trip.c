/*
 * ops_mx_round_trip.c — the MXFP8 round trip of the composite's forward and dgrad operands,
 * out = bf16(dequantize(quantize_mxfp8(x))): exactly the values a backend's MXFP8 GEMM
 * multiplies where it dequantizes its operands to bf16 first, written in one pass. Internal
 * (api/moe.c), run only through the backend's mx_round_trip slot; a user calls the two
 * public ops. The validator holds x and out to the slot's contract (qgmm_backend.h), so
 * the slot takes every call that passes it.
 */
#include "validate.h"

#include <string.h>

static const char op_name[] = "qgmm_mx_round_trip";

qgmm_status qgmm_validate_mx_round_trip(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8,
                                       const qgmm_tensor *x, const qgmm_tensor *out)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!ctx->vt->mx_round_trip)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "%s: the %s backend has no mx_round_trip slot", op_name,
                              ctx->vt->name);
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p is NULL", op_name);
    if (fp8 != QGMM_F8E4M3FN && fp8 != QGMM_F8E5M2)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: fp8 is %s; MXFP8 uses f8e4m3fn or f8e5m2",
                              op_name, qgmm_dtype_name(fp8));
    if (p->mode != QGMM_MX_FLOOR && p->mode != QGMM_MX_RCEIL)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: p->mode is %d; not a qgmm_mx_mode", op_name,
                              (int)p->mode);
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
    /* the quantize's description with plain scales and q laid out as out, both absent (the
     * slot writes neither; q's dtype names the format); out is then q's operand */
    qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(0);
    f.mx = *p;
    f.mx.scale_layout = QGMM_SCALES_PLAIN;
    qgmm_tensor q = *out, scales;
    q.buffer = NULL;
    q.dtype = fp8;
    memset(&scales, 0, sizeof scales);
    scales.dtype = QGMM_E8M0;
    scales.rank = 1;
    scales.strides[0] = 1;
    qgmm_cast_problem cp;
    qgmm_cast_problem_make(&f, 0, x, &q, &scales, NULL, &cp);
    cp.q.at.dtype = fp8; /* an absent tensor's reference has no dtype */
    qgmm_cast_operand o = cp.q;
    o.at = qgmm_ref_of(out);
    return ctx->vt->mx_round_trip(ctx, &cp, &o);
}
