/*
 * cast_dequant.cu — qgmm_dequantize on CUDA: every format, one kernel
 * (kernels/qgmm_kernels_dequant.cuh), the scale of each element found as its quantize
 * found it; vectorised when q and out are row-contiguous.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_dequant.cuh"

/* Arguments from qgmm_cuda_kquant_of (cast_entry.cu), x naming the output. */
qgmm_status qgmm_cuda_cast_dequant(qgmm_context *ctx, const qgmm_kquant &a)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_kdequant d;
    d.a = a;
    d.out_dtype = a.x_dtype == QGMM_K_BF16 ? QGMM_K_BF16 : QGMM_K_F32;
    if (a.E * a.R * a.C == 0) return QGMM_OK;
    const int64_t osz = a.x_dtype == QGMM_K_F32 ? 4 : 2;
    d.vec = a.q.s2 == 1 && a.x.s2 == 1 && a.C % 8 == 0 && ((uintptr_t)a.q.ptr % 8) == 0 && a.q.s1 % 8 == 0 &&
            a.q.s0 % 8 == 0 && ((uintptr_t)a.x.ptr % 16) == 0 && (a.x.s1 * osz) % 16 == 0 &&
            (a.x.s0 * osz) % 16 == 0;
    const int64_t threads = a.E * a.R * ((a.C + 7) / 8);
    const unsigned grid = qgmm_cuda_grid(ctx, (threads + 255) / 256, 256, 16);
    qgmm_kdq<<<grid, 256, 0, c->stream>>>(d);
    return qgmm_cuda_launch_check(ctx, "qgmm_kdq");
}
