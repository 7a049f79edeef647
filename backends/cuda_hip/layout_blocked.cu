/*
 * layout_blocked.cu — scales to / from the blocked (swizzled) layout on CUDA (ops-spec
 * §4): 2D, 3D per expert, 2D M-groups and 2D K-groups, in ONE launch each. Grouped
 * variants compute their padded group starts on the device (kernels/
 * qgmm_kernels_layout.cuh); group_starts is written by the same launch.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_layout.cuh"

static qgmm_status blocked_setup(qgmm_context *ctx, qgmm_blocked_variant v, const qgmm_tensor *plain,
                                 const qgmm_tensor *blk, const qgmm_tensor *offs, qgmm_kblocked *k)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    __builtin_memset(k, 0, sizeof *k);
    k->variant = (int)v;
    k->plain = qgmm_kview_of(plain, qgmm_tensor_data(plain));
    k->status = c->status_dev;
    if (v == QGMM_BLOCKED_3D) {
        if (plain->rank != 3)
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda blocked 3D: scales rank %d", plain->rank);
        k->E = plain->shape[0]; k->rows = plain->shape[1]; k->cols = plain->shape[2];
    } else {
        if (plain->rank != 2)
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda blocked variant %d: scales rank %d", (int)v,
                                  plain->rank);
        k->E = 1; k->rows = plain->shape[0]; k->cols = plain->shape[1];
    }
    k->rows_pad = qgmm_blocked_rows(k->rows);
    k->cols_pad = qgmm_blocked_cols(k->cols);
    k->blk_len = blk->shape[0];
    k->blk_stride = blk->strides[0];
    if (v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS) {
        k->offs = (const int32_t *)qgmm_tensor_data(offs);
        k->offs_stride = offs->strides[0];
        k->G = offs->shape[0];
        if (k->G > QGMM_KL_MAX_GROUPS)
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                                  "blocked scale layout with groups on cuda: offs has %lld groups; at most %d (the "
                                  "kernel keeps the group starts in shared memory)", (long long)k->G, QGMM_KL_MAX_GROUPS);
    }
    return QGMM_OK;
}

extern "C" qgmm_status qgmm_cuda_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                                   const qgmm_tensor *in, const qgmm_tensor *offs,
                                                   const qgmm_tensor *out, const qgmm_tensor *group_starts)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_kblocked k;
    if ((st = blocked_setup(ctx, v, in, out, offs, &k)) != QGMM_OK) return st;
    k.plain_in = (const uint8_t *)qgmm_tensor_data(in);
    k.blk_out = (uint8_t *)qgmm_tensor_data(out);
    if (group_starts && group_starts->buffer && (v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS)) {
        k.group_starts = (int32_t *)qgmm_tensor_data(group_starts);
        k.gs_stride = group_starts->strides[0];
    }
    const int64_t chunks = (k.blk_len + 15) / 16;
    if (chunks == 0 && !k.group_starts && !k.offs) return QGMM_OK;
    const unsigned grid = qgmm_cuda_grid(ctx, (chunks + 255) / 256, 256, 8);
    /* 32-bit loads of 4 plain scales: contiguous columns and 4-byte aligned rows */
    const int word_ok = k.plain.s2 == 1 && ((uintptr_t)k.plain_in % 4) == 0 && k.plain.s1 % 4 == 0 &&
                        k.plain.s0 % 4 == 0;
    qgmm_kl_to_blocked<<<grid, 256, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(k, word_ok);
    return qgmm_cuda_launch_check(ctx, "qgmm_kl_to_blocked");
}

extern "C" qgmm_status qgmm_cuda_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                                     const qgmm_tensor *in, const qgmm_tensor *offs,
                                                     const qgmm_tensor *out)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_kblocked k;
    if ((st = blocked_setup(ctx, v, out, in, offs, &k)) != QGMM_OK) return st;
    k.blk_in = (const uint8_t *)qgmm_tensor_data(in);
    k.plain_out = (uint8_t *)qgmm_tensor_data(out);
    const int64_t total = k.E * k.rows * k.cols;
    if (total == 0 && !k.offs) return QGMM_OK;
    const unsigned grid = qgmm_cuda_grid(ctx, (total + 255) / 256, 256, 8);
    qgmm_kl_from_blocked<<<grid, 256, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(k);
    return qgmm_cuda_launch_check(ctx, "qgmm_kl_from_blocked");
}
