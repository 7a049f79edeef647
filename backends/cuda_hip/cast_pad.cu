/*
 * cast_pad.cu — the pad_cast slot on CUDA and HIP (qgmm_backend.h): the composite's wgrad
 * operands of FP8 blockwise and MXFP8 padded and quantized along the tokens in one pass.
 * The padded offsets come first (qgmm_kp_pad with no rows to copy: one block checks the
 * offsets and writes them); then the cast of the padded rows runs as the plain cast would,
 * with qgmm_kq_transpose reading every padded row straight from x (qgmm_kq_gather_block)
 * instead of from a padded copy. Layouts that cast would not give to qgmm_kq_transpose are
 * declined before anything is enqueued, and the API runs the two ops.
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
    if ((st = qgmm_cuda_padded_offsets(ctx, g)) != QGMM_OK) return st; /* declines too many groups */
    a.gsrc = (const int32_t *)qgmm_ref_data(&g->offs);
    a.gpad = (const int32_t *)qgmm_ref_data(&g->padded_offs);
    a.gG_src = g->groups;
    a.gT = g->tokens;
    return p->kind == QGMM_QUANT_MXFP8 ? qgmm_cuda_cast_mx(ctx, p, a) : qgmm_cuda_cast_blockwise(ctx, a);
}
