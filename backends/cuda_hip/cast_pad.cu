/*
 * cast_pad.cu — the pad_cast slot on CUDA and HIP (qgmm_backend.h): the composite's wgrad
 * operands of FP8 blockwise and MXFP8 padded and quantized along the tokens in one pass.
 * A plan comes first (qgmm_kp_gather_plan, one block: the offsets checked, the padded
 * offsets written, and a map giving each 32-row block of the padded rows its x rows); then
 * the cast of the padded rows runs as the plain cast would, with qgmm_kq_transpose reading
 * every padded row through the map straight from x instead of from a padded copy. Layouts
 * the casts would not give to qgmm_kq_transpose are declined before anything is enqueued,
 * and the API runs the two ops.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_quant.cuh"

extern "C" qgmm_status qgmm_cuda_pad_cast(qgmm_context *ctx, const qgmm_cast_problem *p, const qgmm_pad_gather *g)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_kquant a = qgmm_cuda_kquant_of(ctx, p);
    /* the transposed view of row-major x (blockwise), tokens along R (MXFP8): the cases the
     * casts give to qgmm_kq_transpose */
    const int to_transpose = p->kind == QGMM_QUANT_FP8_BLOCKWISE ? a.along_c && a.x.s2 != 1 && a.x.s1 == 1
                                                                 : p->kind == QGMM_QUANT_MXFP8 && !a.along_c;
    if (!to_transpose) return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda pad_cast: x's layout is not fused");
    /* one scratch area (the context has one): MXFP8's grouped-layout plan, then the map */
    const size_t plan_bytes = ((size_t)(a.gG + 2) * sizeof(int32_t) + 255) / 256 * 256;
    const int64_t nblk = p->r / 32;
    char *scratch = (char *)qgmm_cuda_scratch(ctx, plan_bytes + (size_t)(2 + 2 * nblk) * sizeof(int32_t));
    if (!scratch) return QGMM_ERR_OUT_OF_MEMORY;
    int32_t *map = (int32_t *)(scratch + plan_bytes);
    if ((st = qgmm_cuda_pad_gather_plan(ctx, g, map, nblk)) != QGMM_OK) return st; /* declines many groups */
    if (p->kind == QGMM_QUANT_MXFP8) a.gplan = (const int32_t *)scratch;
    a.gmap = map;
    return p->kind == QGMM_QUANT_MXFP8 ? qgmm_cuda_cast_mx(ctx, p, a) : qgmm_cuda_cast_blockwise(ctx, a);
}
