/* Entry points of the layout and data-movement family. */
#include "validate.h"
#include "qgmm_layout_maps.h"

/* Plain-side checks shared by to/from blocked; returns the expected blocked byte count. */
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
    int64_t bytes;
    switch (v) {
    case QGMM_BLOCKED_2D: bytes = (int64_t)qgmm_blocked_scales_bytes(R, C); break;
    case QGMM_BLOCKED_3D: bytes = plain->shape[0] * (int64_t)qgmm_blocked_scales_bytes(R, C); break;
    case QGMM_BLOCKED_M_GROUPS: bytes = (int64_t)qgmm_blocked_m_groups_bytes(R, C, offs->shape[0]); break;
    case QGMM_BLOCKED_K_GROUPS: bytes = (int64_t)qgmm_blocked_k_groups_bytes(R, C, offs->shape[0]); break;
    default:
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "variant is %d; not a qgmm_blocked_variant",
                              (int)v);
    }
    QGMM_TRY(qgmm_check_shape(ctx, blocked_name, blocked, 1, bytes, 0, 0));
    return qgmm_check_no_overlap(ctx, plain_name, plain, blocked_name, blocked);
}

qgmm_status qgmm_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant variant,
                                   const qgmm_tensor *in, const qgmm_tensor *offs,
                                   const qgmm_tensor *out, const qgmm_tensor *group_starts)
{
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
        QGMM_TRY(qgmm_check_no_overlap(ctx, "group_starts", group_starts, "out", out));
        QGMM_TRY(qgmm_check_no_overlap(ctx, "group_starts", group_starts, "in", in));
        QGMM_TRY(qgmm_check_no_overlap(ctx, "group_starts", group_starts, "offs", offs));
    }
    QGMM_TRY(qgmm_check_no_overlap(ctx, "out", out, "offs", offs));
    if (!ctx->vt->scales_to_blocked) return qgmm_unsupported_op(ctx, "qgmm_scales_to_blocked");
    return ctx->vt->scales_to_blocked(ctx, variant, in, offs, out, group_starts);
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
    QGMM_TRY(qgmm_check_no_overlap(ctx, "out", out, "offs", offs));
    if (!ctx->vt->scales_from_blocked) return qgmm_unsupported_op(ctx, "qgmm_scales_from_blocked");
    return ctx->vt->scales_from_blocked(ctx, variant, in, offs, out);
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
    if (t->shape[1] > 1 && t->strides[1] != 1)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s.strides[1] is %lld; rows must be contiguous (stride 1)", name,
                              (long long)t->strides[1]);
    return QGMM_OK;
}

qgmm_status qgmm_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                  const qgmm_tensor *offs, const qgmm_tensor *out,
                                  const qgmm_tensor *padded_start, const qgmm_tensor *padded_offs)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    QGMM_TRY(check_alignment(ctx, alignment));
    QGMM_TRY(check_rows_tensor(ctx, "x", x));
    QGMM_TRY(qgmm_check_offsets(ctx, "offs", offs));
    QGMM_TRY(check_rows_tensor(ctx, "out", out));
    if (out->dtype != x->dtype)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "out has dtype %s; must equal x's %s",
                              qgmm_dtype_name(out->dtype), qgmm_dtype_name(x->dtype));
    const int64_t G = offs->shape[0];
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
        QGMM_TRY(qgmm_check_no_overlap(ctx, names[i], ts[i], "out", out));
        QGMM_TRY(qgmm_check_no_overlap(ctx, names[i], ts[i], "x", x));
        QGMM_TRY(qgmm_check_no_overlap(ctx, names[i], ts[i], "offs", offs));
    }
    QGMM_TRY(qgmm_check_no_overlap(ctx, "padded_start", padded_start, "padded_offs", padded_offs));
    QGMM_TRY(qgmm_check_no_overlap(ctx, "out", out, "x", x));
    QGMM_TRY(qgmm_check_no_overlap(ctx, "out", out, "offs", offs));
    if (!ctx->vt->pad_token_groups) return qgmm_unsupported_op(ctx, "qgmm_pad_token_groups");
    return ctx->vt->pad_token_groups(ctx, alignment, x, offs, out, padded_start, padded_offs);
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
    QGMM_TRY(qgmm_check_shape(ctx, "x_padded", x_padded, 2,
                              qgmm_padded_rows_bound(out->shape[0], offs->shape[0], alignment),
                              out->shape[1], 0));
    QGMM_TRY(qgmm_check_no_overlap(ctx, "out", out, "x_padded", x_padded));
    QGMM_TRY(qgmm_check_no_overlap(ctx, "out", out, "offs", offs));
    if (!ctx->vt->unpad_token_groups) return qgmm_unsupported_op(ctx, "qgmm_unpad_token_groups");
    return ctx->vt->unpad_token_groups(ctx, alignment, x_padded, offs, out);
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
    QGMM_TRY(qgmm_check_no_overlap(ctx, "row_ids", row_ids, "offs", offs));
    QGMM_TRY(qgmm_check_no_overlap(ctx, "row_ids", row_ids, "padded_offs", padded_offs));
    if (!ctx->vt->group_row_ids) return qgmm_unsupported_op(ctx, "qgmm_group_row_ids");
    return ctx->vt->group_row_ids(ctx, offs, padded_offs, row_ids);
}
