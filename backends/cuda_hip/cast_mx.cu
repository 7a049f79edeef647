/*
 * cast_mx.cu — MXFP8 quantize on CUDA (ops-spec §2), FLOOR and RCEIL, plain or blocked
 * scales, rank 2 or 3:
 *   blocks along C (dim0 / 1x32): qgmm_kq_rowblock — 2 lanes x 2 units of 8 elements per
 *     block, 16-byte loads, 8-byte stores, the E8M0 byte written straight to its plain
 *     or blocked (§4 swizzle) position: one pass, no second kernel;
 *   blocks along R (dim1 / 32x1, usually with the transposed (C, R) output):
 *     qgmm_kq_transpose — 128x64 tiles through shared memory, amax of each 32-row block
 *     from the tile, 16-byte stores of the transposed rows.
 * Blocked scales: the few padding bytes (rows past R, columns past C/32 rounded to 4) are
 * zeroed with one memset of the scale buffer only when padding exists.
 * Grouped layouts (qgmm_quantize_mxfp8_grouped): the same kernels store each scale at its
 * M-groups / K-groups position; a one-block plan kernel checks the offsets and computes
 * the groups' padded starts first, a padding kernel zeroes the bytes holding no scale
 * (kernels/qgmm_kernels_mx_groups.cuh). Three launches, no host readback.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_mx_groups.cuh"
#include "qgmm_layout_maps.h"

/* The cast kernel of `a`. */
static qgmm_status mx_launch(qgmm_context *ctx, const qgmm_kquant &a)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int64_t O = a.along_c ? a.R : a.C, NB = (a.along_c ? a.C : a.R) / 32;
    if (a.along_c) {
        if (qgmm_kquant_x_vec(&a) && qgmm_kquant_q_vec8(&a) && a.E * a.R < ((int64_t)1 << 31) &&
            a.x_dtype != QGMM_K_F16) {
            return qgmm_cuda_launch_kq_rowblock(ctx, a);
        }
        const int64_t warps = a.E * O * NB;
        const unsigned grid = qgmm_cuda_grid(ctx, (warps + 7) / 8, 256, 16);
        qgmm_kq_generic<<<grid, 256, 0, c->stream>>>(a);
        return qgmm_cuda_launch_check(ctx, "qgmm_kq_generic");
    }
    return qgmm_cuda_launch_kq_transpose(ctx, a);
}

/* Grouped layouts: x (T, D) rank 2; M-groups: blocks along D, scales placed by token row;
 * K-groups: blocks along T, placed by token block. */
static qgmm_status mx_grouped(qgmm_context *ctx, const qgmm_cast_problem *p, qgmm_kquant a)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_status st;
    const int64_t T = a.R, other = p->o, blocks = p->nseg;
    /* the plan's words: given (the fused pad keeps its map after them in the one scratch
     * area), or the scratch area */
    int32_t *plan = a.gplan ? (int32_t *)a.gplan : (int32_t *)qgmm_cuda_scratch(ctx, (size_t)(a.gG + 2) * sizeof(int32_t));
    if (!plan) return QGMM_ERR_OUT_OF_MEMORY;
    a.gplan = plan;
    qgmm_kq_mx_groups_plan<<<1, 256, 0, c->stream>>>(a, plan, T);
    if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_mx_groups_plan")) != QGMM_OK) return st;
    const int64_t len = p->scales_len;
    if (len > 0) {
        const unsigned grid = qgmm_cuda_grid(ctx, ((len + 15) / 16 + 255) / 256, 256, 8);
        qgmm_kq_mx_groups_pad<<<grid, 256, 0, c->stream>>>(a, len, other, blocks);
        if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_mx_groups_pad")) != QGMM_OK) return st;
    }
    if (a.R * a.C == 0) return QGMM_OK;
    return mx_launch(ctx, a);
}

/* Arguments from qgmm_cuda_kquant_of (cast_entry.cu). Blocked scales with padding (rows past
 * a multiple of 128, blocks past a multiple of 4) have it zeroed first. */
qgmm_status qgmm_cuda_cast_mx(qgmm_context *ctx, const qgmm_cast_problem *p, const qgmm_kquant &a)
{
    if (a.glayout) return mx_grouped(ctx, p, a);
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    if (a.blocked && (p->o % 128 != 0 || p->nseg % 4 != 0)) {
        const size_t bytes = (size_t)(a.E * a.per_expert);
        if (p->s_byte != 1 && bytes > 0)
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda mxfp8: blocked scales with stride %lld",
                                  (long long)p->s_byte);
        if (bytes > 0) {
            const qgmm_status st =
                qgmm_cuda_check(ctx, cudaMemsetAsync(a.s.ptr, 0, bytes, c->stream), "memset blocked scales");
            if (st != QGMM_OK) return st;
        }
    }
    if (a.E * a.R * a.C == 0) return QGMM_OK;
    return mx_launch(ctx, a);
}
