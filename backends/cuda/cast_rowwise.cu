/*
 * cast_rowwise.cu — FP8 rowwise quantize on CUDA (ops-spec §1), every variant:
 *   scale along C (rowwise, 3D per (e,n), jagged per-group rowwise): qgmm_kq_rowseg, one
 *     warp per (row, group) segment, 16-byte loads, one pass over HBM (the re-read of
 *     the segment hits L1/L2). (A block-per-row variant holding the row in registers,
 *     measured on the H100, was slower at dim 2048/5120 and only 2 % faster at 7168.)
 *   scale along R (colwise, jagged colwise, 3D transpose rhs): qgmm_kq_colamax (partial
 *     column amax, atomicMax) -> qgmm_kq_colscale (scales + multiplier table) ->
 *     qgmm_kq_transpose (cast with the transpose through shared memory). Offsets stay on
 *     the device: each kernel checks them and finds row groups itself.
 * Other layouts take qgmm_kq_generic (any strides). Kernels: kernels/qgmm_kernels_quant.cuh.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_quant.cuh"

static qgmm_status rowwise_launch(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                  const qgmm_tensor *x, const qgmm_tensor *offs,
                                  const qgmm_tensor *q, const qgmm_tensor *scales)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int rank = x->rank, rd = p->reduce_dim;
    if (!((rank == 2 && (rd == 0 || rd == 1)) || (rank == 3 && (rd == 1 || rd == 2))))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "cuda fp8 rowwise: rank %d with reduce_dim %d is not a variant", rank, rd);
    const int jagged = offs && offs->buffer;
    if (jagged && rank != 2)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "cuda fp8 rowwise: offs (jagged groups) needs a rank-2 x, got rank %d", rank);
    qgmm_kquant a = qgmm_kquant_base(x, q, c->status_dev);
    a.kind = QGMM_KQ_ROWWISE;
    a.along_c = rd == rank - 1;
    a.pow2 = p->power_of_2 != 0;
    a.recip = p->scale_kind == QGMM_SCALE_RECIPROCAL;
    if (jagged) {
        a.offs = (const int32_t *)qgmm_tensor_data(offs);
        a.offs_stride = offs->strides[0];
        a.G = offs->shape[0];
    }
    const int64_t other_n = a.along_c ? a.R : a.C;
    a.s.ptr = qgmm_tensor_data(scales);
    if (scales->rank == 1) { a.s.s0 = other_n * scales->strides[0]; a.s.s1 = scales->strides[0]; }
    else { a.s.s0 = scales->strides[0]; a.s.s1 = scales->strides[1]; }
    if (a.E * a.R * a.C == 0 && !jagged) return QGMM_OK;
    if (a.G == 0) return QGMM_OK;

    if (a.along_c) {
        const int64_t warps = a.E * a.G * a.R;
        const int fast = qgmm_kquant_x_vec(&a, x) && qgmm_kquant_q_vec8(&a) && a.E * a.R < ((int64_t)1 << 31);
        if (fast) {
            const unsigned grid = qgmm_cuda_grid(ctx, (warps + 7) / 8, 256, 16);
            QGMM_FMT_DISPATCH(a.fmt, qgmm_kq_rowseg<FMT><<<grid, 256, 0, c->stream>>>(a));
            return qgmm_cuda_launch_check(ctx, "qgmm_kq_rowseg");
        }
        const unsigned grid = qgmm_cuda_grid(ctx, (warps + 7) / 8, 256, 16);
        qgmm_kq_generic<<<grid, 256, 0, c->stream>>>(a);
        return qgmm_cuda_launch_check(ctx, "qgmm_kq_generic");
    }

    /* along R: amax pass, scale pass, cast+transpose pass; scratch = bits + table */
    const int64_t slots = jagged ? a.G : a.E;
    const size_t n = (size_t)(slots * a.C);
    char *ws = (char *)qgmm_cuda_scratch(ctx, n * 8);
    if (!ws) return QGMM_ERR_OUT_OF_MEMORY;
    a.amax_bits = (uint32_t *)ws;
    a.table = (float *)(ws + n * 4);
    qgmm_status st = qgmm_cuda_check(ctx, cudaMemsetAsync(a.amax_bits, 0, n * 4, c->stream), "memset amax");
    if (st != QGMM_OK) return st;
    if (a.R > 0 && a.C > 0) {
        dim3 g1((unsigned)((a.C + 255) / 256), (unsigned)((a.R + QGMM_KQ_COL_ROWS - 1) / QGMM_KQ_COL_ROWS),
                (unsigned)a.E);
        qgmm_kq_colamax<<<g1, 256, 0, c->stream>>>(a, qgmm_kquant_x_vec(&a, x));
        if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_colamax")) != QGMM_OK) return st;
    }
    {
        const unsigned grid = qgmm_cuda_grid(ctx, ((int64_t)n + 255) / 256, 256, 8);
        qgmm_kq_colscale<<<grid, 256, 0, c->stream>>>(a);
        if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_colscale")) != QGMM_OK) return st;
    }
    if (a.R > 0 && a.C > 0) {
        if ((st = qgmm_cuda_launch_kq_transpose(ctx, a, x)) != QGMM_OK) return st;
    }
    return QGMM_OK;
}

qgmm_status qgmm_cuda_launch_kq_transpose(qgmm_context *ctx, const qgmm_kquant &a, const qgmm_tensor *x)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int vec_out = a.q.s1 == 1 && ((uintptr_t)a.q.ptr % 16) == 0 && a.q.s2 % 16 == 0 && a.q.s0 % 16 == 0;
    dim3 g2((unsigned)((a.C + QGMM_KQ_TC - 1) / QGMM_KQ_TC), (unsigned)((a.R + QGMM_KQ_TR - 1) / QGMM_KQ_TR),
            (unsigned)a.E);
    const int vec_in = qgmm_kquant_x_vec(&a, x);
    if (a.x_dtype == QGMM_K_BF16)
        QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_transpose<FMT, QGMM_K_BF16><<<g2, 256, 0, c->stream>>>(a, vec_in, vec_out)));
    else if (a.x_dtype == QGMM_K_F16)
        QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_transpose<FMT, QGMM_K_F16><<<g2, 256, 0, c->stream>>>(a, vec_in, vec_out)));
    else
        QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_transpose<FMT, QGMM_K_F32><<<g2, 256, 0, c->stream>>>(a, vec_in, vec_out)));
    return qgmm_cuda_launch_check(ctx, "qgmm_kq_transpose");
}

extern "C" qgmm_status qgmm_cuda_quantize_fp8_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                                      const qgmm_tensor *x, const qgmm_tensor *offs,
                                                      const qgmm_tensor *q, const qgmm_tensor *scales)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    return rowwise_launch(ctx, p, x, offs, q, scales);
}

extern "C" qgmm_status qgmm_cuda_quantize_fp8_rowwise_dual(qgmm_context *ctx,
                                                           const qgmm_fp8_rowwise_params *p0,
                                                           const qgmm_tensor *x0, const qgmm_tensor *q0,
                                                           const qgmm_tensor *s0,
                                                           const qgmm_fp8_rowwise_params *p1,
                                                           const qgmm_tensor *x1, const qgmm_tensor *q1,
                                                           const qgmm_tensor *s1, const qgmm_tensor *offs)
{
    qgmm_status st = qgmm_cuda_quantize_fp8_rowwise(ctx, p0, x0, offs, q0, s0);
    if (st != QGMM_OK) return st;
    return qgmm_cuda_quantize_fp8_rowwise(ctx, p1, x1, offs, q1, s1);
}
