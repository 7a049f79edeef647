/*
 * vk_ops_mx_groups.c — qgmm_quantize_mxfp8_grouped on Vulkan: the MXFP8 cast with its
 * scales written straight into the M-groups or K-groups blocked layout. Three dispatches
 * on the queue, no host readback:
 *   offs_prep.comp  checks the token offsets and writes the group table (bad offsets set
 *                   its flag and the context status word: the next two write nothing);
 *   blocked.comp    direction 2: zeroes the bytes of the scale buffer that hold no scale;
 *   cast.comp       its generic path, each block's scale stored at its grouped position
 *                   (skind 3 / 4, mx_group_store) — the same scale and fp8 rules as
 *                   qgmm_quantize_mxfp8, so the bytes equal the CPU reference's.
 */
#include "vk_internal.h"
#include "glsl/blocked_params.h"
#include "glsl/cast_params.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#include <string.h>

qgmm_status vk_quantize_mxfp8_grouped(vk_ctx *c, const qgmm_cast_problem *pr)
{
    const int mg = pr->layout == QGMM_SCALES_BLOCKED_M_GROUPS;
    if (pr->scales_len > 1 && pr->s_byte != 1)
        return qgmm_set_error(c->api, QGMM_ERR_UNSUPPORTED, "scales: grouped blocked scales must be contiguous on vulkan");
    /* x is (T, D): M-groups block along D (o = the T tokens), K-groups along the tokens */
    const int64_t T = mg ? pr->o : pr->r, G = pr->groups;
    const int64_t other = pr->o, blocks = pr->nseg, len = pr->scales_len;
    const int64_t cols_pad = pr->cols_pad, rows_pad = pr->rows_pad;
    const qgmm_tensor offs = qgmm_tensor_make(pr->offs.buffer, pr->offs.offset, QGMM_I32, 1, &G);

    /* the group table: token start/end and padded start/end (rows of 128, or scale
     * columns of 4 with sizes in whole 32-token blocks) */
    qgmm_status st = mg ? vk_offs_prep(c, &offs, T, 1, 128, 0, 1, 0, 0, 0, -1)
                        : vk_offs_prep(c, &offs, T, 32, 4, 0, 32, 0, 0, 0, -1);
    if (st != QGMM_OK) return st;

    if (len > 0) {
        qg_blocked_params bp;
        memset(&bp, 0, sizeof bp);
        bp.dir = 2;
        bp.var = mg ? QGMM_BLOCKED_M_GROUPS : QGMM_BLOCKED_K_GROUPS;
        bp.blk = (int64_t)vk_ref_addr(&pr->scales);
        bp.bstride = 1;
        bp.blen = len;
        bp.e = 1;
        bp.r = other;
        bp.c = blocks;
        bp.colspad = cols_pad;
        bp.rowspad = rows_pad;
        bp.perexp = cols_pad * rows_pad;
        bp.g = G;
        bp.table = (int64_t)c->scratch.addr;
        bp.n = (len + 3) / 4;
        st = vk_dispatch(c, VKP_BLOCKED, (const int64_t *)&bp, QG_BLOCKED_NP, (bp.n + 255) / 256);
        if (st != QGMM_OK) return st;
    }
    if (pr->o * pr->r == 0) return QGMM_OK;

    /* cast.comp's generic path: one workgroup per (8 other indices, 32-element block), 32
     * lanes along the block, element by element through the strides */
    qg_cast_params cp;
    vk_cast_params_operands(&cp, pr);
    cp.skind = mg ? 3 : 4;
    cp.rule = pr->rceil ? 2 : 1;
    cp.l = 32;
    cp.nseg = blocks;
    cp.to = 8;
    cp.tr = 32;
    cp.ot = 8;
    cp.notiles = (other + 7) / 8;
    cp.vec = 1;
    cp.colspad = cols_pad;
    cp.expbytes = rows_pad;
    cp.gtab = (int64_t)c->scratch.addr;
    cp.gg = G;
    /* the MX rules read the format's largest value and its f32 reciprocal (RCEIL) */
    const float maxv = qgmm_fp8_max((int)pr->q.at.dtype);
    cp.c_max = qgmm_f32_bits(maxv);
    cp.c_inv = qgmm_f32_bits(1.0f / maxv);
    return vk_dispatch(c, VKP_CAST_E4M3FN + (int)(pr->q.at.dtype - QGMM_F8E4M3FN), (const int64_t *)&cp, QG_CAST_NP,
                       blocks * cp.notiles);
}
