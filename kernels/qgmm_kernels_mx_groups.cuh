/*
 * qgmm_kernels_mx_groups.cuh — single-source (CUDA/HIP) helpers of the MXFP8 cast that
 * writes its scales straight into a grouped blocked layout (docs/layouts.md §3 M-groups,
 * §4 K-groups; qgmm_quantize_mxfp8_grouped). The cast itself is the ordinary MX kernel
 * (qgmm_kq_rowblock, qgmm_kq_transpose or qgmm_kq_generic) with kquant.glayout set: its
 * scale stores go through qgmm_kq_mx_group_index. Around it, on the same stream:
 *   qgmm_kq_mx_groups_plan  one block: checks the device offsets (raising the status bit
 *                           when bad) and writes the plan — word 0 = offsets good, then
 *                           the padded start of every group and the total — so the cast
 *                           and the padding kernel need no scan of their own;
 *   qgmm_kq_mx_groups_pad   writes 0 to every byte of the scale buffer that holds no
 *                           scale (the group padding and the unused tail of the bound).
 * With bad offsets both kernels and the cast return at once: nothing is written.
 */
#ifndef QGMM_KERNELS_MX_GROUPS_CUH
#define QGMM_KERNELS_MX_GROUPS_CUH

#include "qgmm_kernels_layout.cuh"
#include "qgmm_kernels_quant.cuh"

/* One block of any size (QGMM_MAX_THREADS at most). plan: int32 [G + 2]. */
QGMM_KERNEL void qgmm_kq_mx_groups_plan(qgmm_kquant a, int32_t *plan, int64_t tokens)
{
    QGMM_SHARED int64_t tmp[QGMM_MAX_THREADS];
    const int mg = a.glayout == QGMM_KQ_MG;
    /* the fused pad: its token offsets were bad, so the padded ones (goffs) were not written */
    const int ok = (!a.gmap || a.gmap[0] != 0) &&
                   qgmm_block_offsets_ok(a.goffs, a.goffs_stride, a.gG, tokens, mg ? 1 : 32, a.status, 1);
    if (QGMM_TID == 0) plan[0] = ok;
    if (!ok) return; /* block-uniform */
    qgmm_kl_padded_starts(a.goffs, a.goffs_stride, a.gG, mg ? 1 : 32, mg ? 128 : 4, plan + 1, tmp);
}

/* Which of the 16 bytes [off, off + 16) of the scale buffer (off a multiple of 16) hold a
 * scale, as a bit mask. Such a chunk is one 32-row slot of one 128x4 tile: rows r, r+32,
 * r+64, r+96 (bytes 4q..4q+3 for row r+32q) x 4 scale columns. M-groups: a row holds
 * scales when it is below its group's size, a column when below the scale columns;
 * K-groups: the chunk lies in one group's column slab, whose rows are the data columns
 * and whose columns the group's token blocks. */
QGMM_DEV unsigned qgmm_kq_mx_groups_home(const qgmm_kquant &a, int64_t off, int64_t other, int64_t blocks)
{
    const int32_t *start = a.gplan + 1;
    int64_t width = a.cols_pad, ncols = blocks, loc = off;
    if (a.glayout == QGMM_KQ_KG) {
        const int64_t colp = off / a.grows_pad;
        const int64_t g = qgmm_kl_owner(start, a.gG, colp);
        if (g < 0) return 0u;
        const int64_t t0 = g == 0 ? 0 : a.goffs[(g - 1) * a.goffs_stride];
        ncols = (a.goffs[g * a.goffs_stride] - t0) / 32;
        width = qgmm_round_up_i64(ncols, 4);
        if (colp >= start[g] + width) return 0u;
        loc = off - (int64_t)start[g] * a.grows_pad;
    }
    const int64_t tile = loc / 512, tpr = width / 4;
    const int64_t r0 = (tile / tpr) * 128 + (loc % 512) / 16, c0 = (tile % tpr) * 4;
    unsigned mask = 0u;
    for (int q = 0; q < 4; ++q) {
        const int64_t r = r0 + 32 * q;
        int row_ok;
        if (a.glayout == QGMM_KQ_KG) {
            row_ok = r < other;
        } else {
            const int64_t g = qgmm_kl_owner(start, a.gG, r);
            const int64_t t0 = g <= 0 ? 0 : a.goffs[(g - 1) * a.goffs_stride];
            row_ok = g >= 0 && r - start[g] < a.goffs[g * a.goffs_stride] - t0;
        }
        if (row_ok)
            for (int k = 0; k < 4; ++k)
                if (c0 + k < ncols) mask |= 1u << (4 * q + k);
    }
    return mask;
}

/* Grid-stride over 16-byte chunks of the len-byte scale buffer (stride s.s0): padding
 * bytes are zeroed, the bytes the cast writes are left alone. */
QGMM_KERNEL void qgmm_kq_mx_groups_pad(qgmm_kquant a, int64_t len, int64_t other, int64_t blocks)
{
    if (a.gplan[0] == 0) return;
    uint8_t *s = (uint8_t *)a.s.ptr;
    const int vec = a.s.s0 == 1 && ((uintptr_t)s % 16) == 0;
    const int64_t chunks = (len + 15) / 16;
    for (int64_t t = QGMM_BID_X * QGMM_NTHREADS + QGMM_TID; t < chunks; t += QGMM_NBLOCKS_X * QGMM_NTHREADS) {
        const unsigned home = qgmm_kq_mx_groups_home(a, t * 16, other, blocks);
        if (home == 0u && vec && t * 16 + 16 <= len) {
            *(uint4 *)(s + t * 16) = make_uint4(0u, 0u, 0u, 0u);
            continue;
        }
        for (int k = 0; k < 16 && t * 16 + k < len; ++k)
            if (!(home >> k & 1u)) s[(t * 16 + k) * a.s.s0] = 0;
    }
}

#endif /* QGMM_KERNELS_MX_GROUPS_CUH */
