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

/* The cast kernel of `a` (scales set up by the caller). */
static qgmm_status mx_launch(qgmm_context *ctx, const qgmm_kquant &a, const qgmm_tensor *x)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int64_t O = a.along_c ? a.R : a.C, NB = (a.along_c ? a.C : a.R) / 32;
    if (a.along_c) {
        if (qgmm_kquant_x_vec(&a, x) && qgmm_kquant_q_vec8(&a) && a.E * a.R < ((int64_t)1 << 31) &&
            a.x_dtype != QGMM_K_F16) {
            return qgmm_cuda_launch_kq_rowblock(ctx, a);
        }
        const int64_t warps = a.E * O * NB;
        const unsigned grid = qgmm_cuda_grid(ctx, (warps + 7) / 8, 256, 16);
        qgmm_kq_generic<<<grid, 256, 0, c->stream>>>(a);
        return qgmm_cuda_launch_check(ctx, "qgmm_kq_generic");
    }
    return qgmm_cuda_launch_kq_transpose(ctx, a, x);
}

extern "C" qgmm_status qgmm_cuda_quantize_mxfp8(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                                const qgmm_tensor *x, const qgmm_tensor *q,
                                                const qgmm_tensor *scales)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int rank = x->rank;
    if (rank != 2 && rank != 3)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda mxfp8: x rank %d (want 2 or 3)", rank);
    const int last = rank - 1;
    if (p->block_dim != last && p->block_dim != last - 1)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda mxfp8: block_dim %d (want %d or %d for rank %d)",
                              p->block_dim, last, last - 1, rank);
    qgmm_kquant a = qgmm_kquant_base(x, q, c->status_dev);
    a.kind = QGMM_KQ_MX;
    a.along_c = p->block_dim == last;
    a.rceil = p->mode == QGMM_MX_RCEIL;
    a.blocked = p->scale_layout == QGMM_SCALES_BLOCKED;
    const int64_t L = a.along_c ? a.C : a.R, O = a.along_c ? a.R : a.C;
    if (L % 32 != 0)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "cuda mxfp8: blocked extent %lld is not a multiple of 32", (long long)L);
    const int64_t NB = L / 32;
    a.cols_pad = qgmm_blocked_cols(NB);
    a.per_expert = qgmm_blocked_rows(O) * a.cols_pad;
    a.s.ptr = qgmm_tensor_data(scales);
    if (a.blocked) {
        a.s.s0 = scales->strides[0];
    } else if (scales->rank == 1) {
        a.s.s0 = O * NB * scales->strides[0]; a.s.s1 = NB * scales->strides[0]; a.s.s2 = scales->strides[0];
    } else if (scales->rank == 2) {
        a.s.s0 = 0; a.s.s1 = scales->strides[0]; a.s.s2 = scales->strides[1];
    } else {
        a.s.s0 = scales->strides[0]; a.s.s1 = scales->strides[1]; a.s.s2 = scales->strides[2];
    }
    if (a.blocked && (O % 128 != 0 || NB % 4 != 0)) {
        const size_t bytes = (size_t)(a.E * a.per_expert);
        if (scales->strides[0] == 1 && bytes > 0)
            st = qgmm_cuda_check(ctx, cudaMemsetAsync(a.s.ptr, 0, bytes, c->stream), "memset blocked scales");
        else if (bytes > 0)
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda mxfp8: blocked scales with stride %lld",
                                  (long long)scales->strides[0]);
        if (st != QGMM_OK) return st;
    }
    if (a.E * a.R * a.C == 0) return QGMM_OK;
    return mx_launch(ctx, a, x);
}

/* x (T, D) rank 2; M-groups: block_dim 1, scales (T, D/32) placed by token row; K-groups:
 * block_dim 0, scales (D, T/32) placed by token block. */
extern "C" qgmm_status qgmm_cuda_quantize_mxfp8_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                                        const qgmm_tensor *x, const qgmm_tensor *offs,
                                                        const qgmm_tensor *q, const qgmm_tensor *scales)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int mg = p->scale_layout == QGMM_SCALES_BLOCKED_M_GROUPS;
    if (x->rank != 2 || p->block_dim != (mg ? 1 : 0))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda mxfp8 grouped: rank %d, block_dim %d", x->rank,
                              p->block_dim);
    qgmm_kquant a = qgmm_kquant_base(x, q, c->status_dev);
    a.kind = QGMM_KQ_MX;
    a.along_c = mg;
    a.rceil = p->mode == QGMM_MX_RCEIL;
    a.glayout = mg ? QGMM_KQ_MG : QGMM_KQ_KG;
    a.goffs = (const int32_t *)qgmm_tensor_data(offs);
    a.goffs_stride = offs->strides[0];
    a.gG = offs->shape[0];
    const int64_t T = a.R, D = a.C, other = mg ? T : D, blocks = (mg ? D : T) / 32;
    a.cols_pad = qgmm_blocked_cols(blocks);
    a.grows_pad = qgmm_blocked_rows(other);
    a.s.ptr = qgmm_tensor_data(scales);
    a.s.s0 = scales->strides[0];
    int32_t *plan = (int32_t *)qgmm_cuda_scratch(ctx, (size_t)(a.gG + 2) * sizeof(int32_t));
    if (!plan) return QGMM_ERR_OUT_OF_MEMORY;
    a.gplan = plan;
    qgmm_kq_mx_groups_plan<<<1, 256, 0, c->stream>>>(a, plan, T);
    if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_mx_groups_plan")) != QGMM_OK) return st;
    const int64_t len = scales->shape[0];
    if (len > 0) {
        const unsigned grid = qgmm_cuda_grid(ctx, ((len + 15) / 16 + 255) / 256, 256, 8);
        qgmm_kq_mx_groups_pad<<<grid, 256, 0, c->stream>>>(a, len, other, blocks);
        if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_mx_groups_pad")) != QGMM_OK) return st;
    }
    if (T * D == 0) return QGMM_OK;
    return mx_launch(ctx, a, x);
}
