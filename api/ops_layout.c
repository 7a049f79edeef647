/* Entry points of the layout and data-movement family. */
#include "validate.h"
#include "qgmm_layout_maps.h"

/* The checks shared by to/from blocked: the plain scales, offs, and the blocked bytes. */
static qgmm_status check_blocked(qgmm_context *ctx, qgmm_blocked_variant v, const char *plain_name,
                                 const qgmm_tensor *plain, const qgmm_tensor *offs,
                                 const char *blocked_name, const qgmm_tensor *blocked)
{
    QGMM_TRY(qgmm_check_tensor(ctx, plain_name, plain, QGMM_MASK_E8M0, 2, 3));
    QGMM_TRY(qgmm_check_contiguous(ctx, plain_name, plain));
    QGMM_TRY(qgmm_check_tensor(ctx, blocked_name, blocked, QGMM_MASK_E8M0, 1, 1));
    QGMM_TRY(qgmm_check_contiguous(ctx, blocked_name, blocked));
    const int grouped = v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS;
    if (grouped) QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    else if (qgmm_present(offs))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "offs must be absent for the %s variant", v == QGMM_BLOCKED_2D ? "2D" : "3D");
    const int want_rank = v == QGMM_BLOCKED_3D ? 3 : 2;
    if (plain->rank != want_rank)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has rank %d; this variant needs %d",
                              plain_name, plain->rank, want_rank);
    const int64_t R = plain->shape[want_rank - 2], C = plain->shape[want_rank - 1];
    const int64_t n = v == QGMM_BLOCKED_3D ? plain->shape[0] : grouped ? offs->shape[0] : 1;
    return qgmm_check_blocked_shape(ctx, blocked_name, blocked, v, n, R, C);
}

/* The grouped variants read device offsets; K-groups offsets count elements along K, so
 * each must be a multiple of the 32-element MX block. */
static qgmm_status blocked_offsets_enqueued(qgmm_context *ctx, qgmm_status s, const char *op,
                                            qgmm_blocked_variant v)
{
    if (v == QGMM_BLOCKED_M_GROUPS) return qgmm_offsets_enqueued(ctx, s, op, "offs", NULL);
    if (v == QGMM_BLOCKED_K_GROUPS)
        return qgmm_offsets_enqueued(ctx, s, op, "offs", "offsets that are not multiples of 32");
    return s;
}

qgmm_status qgmm_validate_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant variant,
                                            const qgmm_tensor *in, const qgmm_tensor *offs,
                                            const qgmm_tensor *out, const qgmm_tensor *group_starts)
{
    static const char op[] = "qgmm_scales_to_blocked";
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (variant < QGMM_BLOCKED_2D || variant > QGMM_BLOCKED_K_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "variant is %d; not a qgmm_blocked_variant",
                              (int)variant);
    QGMM_TRY(check_blocked(ctx, variant, "in", in, offs, "out", out));
    int gs = 0;
    QGMM_TRY(qgmm_check_optional(ctx, "group_starts", group_starts, QGMM_MASK_I32, 1, 1, &gs));
    if (gs) {
        if (variant != QGMM_BLOCKED_M_GROUPS && variant != QGMM_BLOCKED_K_GROUPS)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "group_starts is only produced by the M-groups and K-groups variants");
        QGMM_TRY(qgmm_check_contiguous(ctx, "group_starts", group_starts));
        QGMM_TRY(qgmm_check_shape(ctx, "group_starts", group_starts, 1, offs->shape[0], 0, 0));
    }
    const qgmm_arg outs[] = {{"out", out}, {"group_starts", group_starts}};
    const qgmm_arg ins[] = {{"in", in}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, op, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    return ctx->vt->scales_to_blocked ? QGMM_OK : qgmm_unsupported_op(ctx, op);
}

qgmm_status qgmm_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant variant,
                                   const qgmm_tensor *in, const qgmm_tensor *offs,
                                   const qgmm_tensor *out, const qgmm_tensor *group_starts)
{
    QGMM_TRY(qgmm_validate_scales_to_blocked(ctx, variant, in, offs, out, group_starts));
    const qgmm_status s = ctx->vt->scales_to_blocked(ctx, variant, in, offs, out, group_starts);
    return blocked_offsets_enqueued(ctx, s, "qgmm_scales_to_blocked", variant);
}

qgmm_status qgmm_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant variant,
                                     const qgmm_tensor *in, const qgmm_tensor *offs,
                                     const qgmm_tensor *out)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (variant < QGMM_BLOCKED_2D || variant > QGMM_BLOCKED_K_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "variant is %d; not a qgmm_blocked_variant",
                              (int)variant);
    QGMM_TRY(check_blocked(ctx, variant, "out", out, offs, "in", in));
    const qgmm_arg outs[] = {{"out", out}}, ins[] = {{"in", in}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, "qgmm_scales_from_blocked", outs, QGMM_NARGS(outs), ins,
                                 QGMM_NARGS(ins)));
    if (!ctx->vt->scales_from_blocked) return qgmm_unsupported_op(ctx, "qgmm_scales_from_blocked");
    const qgmm_status s = ctx->vt->scales_from_blocked(ctx, variant, in, offs, out);
    return blocked_offsets_enqueued(ctx, s, "qgmm_scales_from_blocked", variant);
}

static qgmm_status check_alignment(qgmm_context *ctx, int alignment)
{
    if (alignment != 16 && alignment != 32 && alignment != 128)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "alignment is %d; must be 16, 32 or 128",
                              alignment);
    return QGMM_OK;
}

static qgmm_status check_rows_tensor(qgmm_context *ctx, const char *name, const qgmm_tensor *t)
{
    QGMM_TRY(qgmm_check_tensor(ctx, name, t, QGMM_MASK_ANY, 2, 2));
    return qgmm_check_rows_contiguous(ctx, name, t);
}

/* The padded row space is indexed by int32 offsets (padded_start, padded_offs, the GEMMs'
 * group offsets): its host-side bound must fit, whatever the device offsets turn out to be. */
static qgmm_status check_padded_rows(qgmm_context *ctx, const char *what, int64_t tokens, int64_t groups,
                                     int alignment)
{
    const int64_t bound = qgmm_padded_rows_bound(tokens, groups, alignment);
    if (bound > INT32_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: %lld tokens in %lld groups padded to %d may need %lld rows; the "
                              "padded offsets are int32 (at most 2147483647)",
                              what, (long long)tokens, (long long)groups, alignment, (long long)bound);
    return QGMM_OK;
}

qgmm_status qgmm_validate_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                           const qgmm_tensor *offs, const qgmm_tensor *out,
                                           const qgmm_tensor *padded_start,
                                           const qgmm_tensor *padded_offs)
{
    static const char op[] = "qgmm_pad_token_groups";
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(check_alignment(ctx, alignment));
    QGMM_TRY(check_rows_tensor(ctx, "x", x));
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    QGMM_TRY(check_rows_tensor(ctx, "out", out));
    if (out->dtype != x->dtype)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "out has dtype %s; must equal x's %s",
                              qgmm_dtype_name(out->dtype), qgmm_dtype_name(x->dtype));
    const int64_t G = offs->shape[0];
    QGMM_TRY(check_padded_rows(ctx, "x", x->shape[0], G, alignment));
    QGMM_TRY(qgmm_check_shape(ctx, "out", out, 2, qgmm_padded_rows_bound(x->shape[0], G, alignment),
                              x->shape[1], 0));
    const char *names[2] = {"padded_start", "padded_offs"};
    const qgmm_tensor *ts[2] = {padded_start, padded_offs};
    for (int i = 0; i < 2; ++i) {
        int present = 0;
        QGMM_TRY(qgmm_check_optional(ctx, names[i], ts[i], QGMM_MASK_I32, 1, 1, &present));
        if (!present) continue;
        QGMM_TRY(qgmm_check_shape(ctx, names[i], ts[i], 1, G, 0, 0));
        QGMM_TRY(qgmm_check_contiguous(ctx, names[i], ts[i]));
    }
    const qgmm_arg outs[] = {{"out", out}, {"padded_start", padded_start}, {"padded_offs", padded_offs}};
    const qgmm_arg ins[] = {{"x", x}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, op, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    return ctx->vt->pad_token_groups ? QGMM_OK : qgmm_unsupported_op(ctx, op);
}

qgmm_status qgmm_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                  const qgmm_tensor *offs, const qgmm_tensor *out,
                                  const qgmm_tensor *padded_start, const qgmm_tensor *padded_offs)
{
    QGMM_TRY(qgmm_validate_pad_token_groups(ctx, alignment, x, offs, out, padded_start, padded_offs));
    const qgmm_status s = ctx->vt->pad_token_groups(ctx, alignment, x, offs, out, padded_start, padded_offs);
    return qgmm_offsets_enqueued(ctx, s, "qgmm_pad_token_groups", "offs", NULL);
}

qgmm_status qgmm_unpad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x_padded,
                                    const qgmm_tensor *offs, const qgmm_tensor *out)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(check_alignment(ctx, alignment));
    QGMM_TRY(check_rows_tensor(ctx, "x_padded", x_padded));
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    QGMM_TRY(check_rows_tensor(ctx, "out", out));
    if (out->dtype != x_padded->dtype)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "out has dtype %s; must equal x_padded's %s",
                              qgmm_dtype_name(out->dtype), qgmm_dtype_name(x_padded->dtype));
    QGMM_TRY(check_padded_rows(ctx, "out", out->shape[0], offs->shape[0], alignment));
    QGMM_TRY(qgmm_check_shape(ctx, "x_padded", x_padded, 2,
                              qgmm_padded_rows_bound(out->shape[0], offs->shape[0], alignment),
                              out->shape[1], 0));
    const qgmm_arg outs[] = {{"out", out}}, ins[] = {{"x_padded", x_padded}, {"offs", offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, "qgmm_unpad_token_groups", outs, QGMM_NARGS(outs), ins,
                                 QGMM_NARGS(ins)));
    if (!ctx->vt->unpad_token_groups) return qgmm_unsupported_op(ctx, "qgmm_unpad_token_groups");
    const qgmm_status s = ctx->vt->unpad_token_groups(ctx, alignment, x_padded, offs, out);
    return qgmm_offsets_enqueued(ctx, s, "qgmm_unpad_token_groups", "offs", NULL);
}

qgmm_status qgmm_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs,
                               const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    int present = 0;
    QGMM_TRY(qgmm_check_optional(ctx, "padded_offs", padded_offs, QGMM_MASK_I32, 1, 1, &present));
    if (present) {
        QGMM_TRY(qgmm_check_shape(ctx, "padded_offs", padded_offs, 1, offs->shape[0], 0, 0));
        QGMM_TRY(qgmm_check_contiguous(ctx, "padded_offs", padded_offs));
    }
    QGMM_TRY(qgmm_check_tensor(ctx, "row_ids", row_ids, QGMM_MASK_I32, 1, 1));
    QGMM_TRY(qgmm_check_contiguous(ctx, "row_ids", row_ids));
    const qgmm_arg outs[] = {{"row_ids", row_ids}}, ins[] = {{"offs", offs}, {"padded_offs", padded_offs}};
    QGMM_TRY(qgmm_check_aliasing(ctx, "qgmm_group_row_ids", outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins)));
    if (!ctx->vt->group_row_ids) return qgmm_unsupported_op(ctx, "qgmm_group_row_ids");
    const qgmm_status s = ctx->vt->group_row_ids(ctx, offs, padded_offs, row_ids);
    if (!present) return qgmm_offsets_enqueued(ctx, s, "qgmm_group_row_ids", "offs", NULL);
    return qgmm_offsets_enqueued(ctx, s, "qgmm_group_row_ids", "offs or padded_offs",
                                 "padded groups smaller than their groups in offs");
}
