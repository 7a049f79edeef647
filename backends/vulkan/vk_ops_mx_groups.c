/*
 * vk_ops_mx_groups.c — qgmm_quantize_mxfp8_grouped on Vulkan: the MXFP8 cast with its
 * scales written straight into the M-groups or K-groups blocked layout. Three dispatches
 * on the queue, no host readback:
 *   offs_prep.comp  checks the token offsets and writes the group table (bad offsets set
 *                   its flag and the context status word: the next two write nothing);
 *   blocked.comp    direction 2: zeroes the bytes of the scale buffer that hold no scale;
 *   cast.comp       its generic path, each block's scale stored at its grouped position
 *                   (CP_SKIND 3 / 4, mx_group_store) — the same scale and fp8 rules as
 *                   qgmm_quantize_mxfp8, so the bytes equal the CPU reference's.
 */
#include "vk_internal.h"
#include "../../kernels/glsl/params.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#include <string.h>

qgmm_status vk_quantize_mxfp8_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *prm, const qgmm_tensor *x,
                                      const qgmm_tensor *offs, const qgmm_tensor *q, const qgmm_tensor *scales)
{
    vk_ctx *c = vk_of(ctx);
    const int mg = prm->scale_layout == QGMM_SCALES_BLOCKED_M_GROUPS;
    if (x->rank != 2 || prm->block_dim != (mg ? 1 : 0))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "vulkan mxfp8 grouped: rank %d, block_dim %d", x->rank,
                              prm->block_dim);
    if (scales->shape[0] > 1 && scales->strides[0] != 1)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "scales: grouped blocked scales must be contiguous on vulkan");
    const int64_t T = x->shape[0], D = x->shape[1], G = offs->shape[0];
    const int rdim = mg ? 1 : 0, odim = 1 - rdim;
    const int64_t other = x->shape[odim], blocks = x->shape[rdim] / 32, len = scales->shape[0];
    const int64_t cols_pad = qgmm_blocked_cols(blocks), rows_pad = qgmm_blocked_rows(other);

    /* the group table: token start/end and padded start/end (rows of 128, or scale
     * columns of 4 with sizes in whole 32-token blocks) */
    qgmm_status st = mg ? vk_offs_prep(c, offs, T, 1, 128, 0, 1, 0, 0, 0, -1)
                        : vk_offs_prep(c, offs, T, 32, 4, 0, 32, 0, 0, 0, -1);
    if (st != QGMM_OK) return st;

    int64_t p[QP_MAX];
    if (len > 0) {
        memset(p, 0, sizeof p);
        p[BL_DIR] = 2;
        p[BL_VAR] = mg ? QGMM_BLOCKED_M_GROUPS : QGMM_BLOCKED_K_GROUPS;
        p[BL_BLK] = (int64_t)vk_tensor_addr(scales);
        p[BL_BSTRIDE] = 1;
        p[BL_BLEN] = len;
        p[BL_E] = 1;
        p[BL_R] = other;
        p[BL_C] = blocks;
        p[BL_COLSPAD] = cols_pad;
        p[BL_ROWSPAD] = rows_pad;
        p[BL_PEREXP] = cols_pad * rows_pad;
        p[BL_G] = G;
        p[BL_TABLE] = (int64_t)c->scratch.addr;
        p[BL_N] = (len + 3) / 4;
        st = vk_dispatch(c, VKP_BLOCKED, p, QP_MAX, (p[BL_N] + 255) / 256);
        if (st != QGMM_OK) return st;
    }
    if (T * D == 0) return QGMM_OK;

    /* cast.comp's generic path: one workgroup per (8 other indices, 32-element block), 32
     * lanes along the block, element by element through the strides */
    memset(p, 0, sizeof p);
    p[CP_X] = (int64_t)vk_tensor_addr(x);
    p[CP_XDT] = x->dtype;
    p[CP_Q] = (int64_t)vk_tensor_addr(q);
    p[CP_FMT] = q->dtype;
    p[CP_S] = (int64_t)vk_tensor_addr(scales);
    p[CP_SKIND] = mg ? 3 : 4;
    p[CP_RULE] = prm->mode == QGMM_MX_RCEIL ? 2 : 1;
    p[CP_E] = 1;
    p[CP_O] = other;
    p[CP_R] = x->shape[rdim];
    p[CP_XO] = x->strides[odim];
    p[CP_XR] = x->strides[rdim];
    p[CP_QO] = q->strides[odim];
    p[CP_QR] = q->strides[rdim];
    p[CP_L] = 32;
    p[CP_NSEG] = blocks;
    p[CP_TO] = 8;
    p[CP_TR] = 32;
    p[CP_OT] = 8;
    p[CP_NOTILES] = (other + 7) / 8;
    p[CP_VEC] = 1;
    p[CP_COLSPAD] = cols_pad;
    p[CP_EXPBYTES] = rows_pad;
    p[CP_GTAB] = (int64_t)c->scratch.addr;
    p[CP_GG] = G;
    /* the MX rules read the format's largest value and its f32 reciprocal (RCEIL) */
    const float maxv = qgmm_fp8_max((int)q->dtype);
    p[CP_C_MAX] = qgmm_f32_bits(maxv);
    p[CP_C_INV] = qgmm_f32_bits(1.0f / maxv);
    return vk_dispatch(c, VKP_CAST_E4M3FN + (int)(q->dtype - QGMM_F8E4M3FN), p, QP_MAX, blocks * p[CP_NOTILES]);
}
