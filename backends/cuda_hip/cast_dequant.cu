/*
 * cast_dequant.cu — qgmm_dequantize on CUDA: every format, one kernel
 * (kernels/qgmm_kernels_dequant.cuh), the scale of each element found as its quantize
 * found it; vectorised when q and out are row-contiguous.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_dequant.cuh"
#include "qgmm_layout_maps.h"

extern "C" qgmm_status qgmm_cuda_dequantize(qgmm_context *ctx, const qgmm_quant_format *f,
                                            const qgmm_tensor *q, const qgmm_tensor *scales,
                                            const qgmm_tensor *offs, const qgmm_tensor *out)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int rank = q->rank;
    qgmm_kdequant d;
    /* x <- out (written), q <- q: the quant view reused with roles named in the struct */
    d.a = qgmm_kquant_base(out, q, c->status_dev);
    d.out_dtype = out->dtype == QGMM_BF16 ? QGMM_K_BF16 : QGMM_K_F32;
    qgmm_kquant &a = d.a;
    a.s.ptr = qgmm_tensor_data(scales);
    switch (f->kind) {
    case QGMM_QUANT_FP8_ROWWISE: {
        const int rd = f->rowwise.reduce_dim;
        if (!((rank == 2 && (rd == 0 || rd == 1)) || (rank == 3 && (rd == 1 || rd == 2))))
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda dequantize rowwise: rank %d with reduce_dim %d",
                                  rank, rd);
        const int jagged = offs && offs->buffer;
        if (jagged && rank != 2)
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda dequantize rowwise: offs needs rank 2");
        a.kind = QGMM_KQ_ROWWISE;
        a.along_c = rd == rank - 1;
        a.recip = f->rowwise.scale_kind == QGMM_SCALE_RECIPROCAL;
        if (jagged) {
            a.offs = (const int32_t *)qgmm_tensor_data(offs);
            a.offs_stride = offs->strides[0];
            a.G = offs->shape[0];
        }
        const int64_t other_n = a.along_c ? a.R : a.C;
        if (scales->rank == 1) { a.s.s0 = other_n * scales->strides[0]; a.s.s1 = scales->strides[0]; }
        else { a.s.s0 = scales->strides[0]; a.s.s1 = scales->strides[1]; }
        break;
    }
    case QGMM_QUANT_MXFP8: {
        const int last = rank - 1;
        if ((rank != 2 && rank != 3) || (f->mx.block_dim != last && f->mx.block_dim != last - 1))
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda dequantize mxfp8: rank %d block_dim %d", rank,
                                  f->mx.block_dim);
        a.kind = QGMM_KQ_MX;
        a.along_c = f->mx.block_dim == last;
        a.blocked = f->mx.scale_layout == QGMM_SCALES_BLOCKED;
        const int64_t L = a.along_c ? a.C : a.R, O = a.along_c ? a.R : a.C;
        if (L % 32 != 0)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "cuda dequantize mxfp8: blocked extent %lld not a multiple of 32", (long long)L);
        const int64_t NB = L / 32;
        a.cols_pad = qgmm_blocked_cols(NB);
        a.per_expert = qgmm_blocked_rows(O) * a.cols_pad;
        if (a.blocked) a.s.s0 = scales->strides[0];
        else if (scales->rank == 1) {
            a.s.s0 = O * NB * scales->strides[0]; a.s.s1 = NB * scales->strides[0]; a.s.s2 = scales->strides[0];
        } else if (scales->rank == 2) { a.s.s0 = 0; a.s.s1 = scales->strides[0]; a.s.s2 = scales->strides[1]; }
        else { a.s.s0 = scales->strides[0]; a.s.s1 = scales->strides[1]; a.s.s2 = scales->strides[2]; }
        break;
    }
    case QGMM_QUANT_FP8_BLOCKWISE: {
        if ((rank != 2 && rank != 3) ||
            (f->blockwise.block != QGMM_BLOCK_1X128 && f->blockwise.block != QGMM_BLOCK_128X128))
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda dequantize blockwise: rank %d block %d", rank,
                                  (int)f->blockwise.block);
        a.kind = QGMM_KQ_BLOCKWISE;
        a.along_c = 1;
        a.tile_rows = f->blockwise.block == QGMM_BLOCK_1X128 ? 1 : 128;
        a.s = qgmm_kview_of(scales, a.s.ptr);
        if (scales->rank == 2) a.s.s0 = 0;
        break;
    }
    default:
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda dequantize: format kind %d", (int)f->kind);
    }
    a.fmt = (int)q->dtype;
    if (a.E * a.R * a.C == 0) return QGMM_OK;
    const int64_t osz = (int64_t)qgmm_dtype_size(out->dtype);
    d.vec = a.q.s2 == 1 && a.x.s2 == 1 && a.C % 8 == 0 && ((uintptr_t)a.q.ptr % 8) == 0 && a.q.s1 % 8 == 0 &&
            a.q.s0 % 8 == 0 && ((uintptr_t)a.x.ptr % 16) == 0 && (a.x.s1 * osz) % 16 == 0 &&
            (a.x.s0 * osz) % 16 == 0;
    const int64_t threads = a.E * a.R * ((a.C + 7) / 8);
    const unsigned grid = qgmm_cuda_grid(ctx, (threads + 255) / 256, 256, 16);
    qgmm_kdq<<<grid, 256, 0, c->stream>>>(d);
    return qgmm_cuda_launch_check(ctx, "qgmm_kdq");
}
