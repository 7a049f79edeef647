/*
 * cast_entry.cu — the cast slot on CUDA and HIP: the cast description (qgmm_problem.h) turned
 * into the kernels' arguments (qgmm_kquant, kernels/qgmm_kernels_quant.cuh) in one place, then
 * handed to the launcher of its kind, which picks the kernel. The kernels see the tensors as
 * (E, R, C) with C the last dim: the scaled dim r is C when rdim > odim, else R.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_quant.cuh"

qgmm_kview qgmm_cuda_kview_of(const qgmm_cast_operand &o, int along_c)
{
    qgmm_kview v;
    v.ptr = qgmm_ref_data(&o.at);
    v.s0 = o.s_e;
    v.s1 = along_c ? o.s_o : o.s_r;
    v.s2 = along_c ? o.s_r : o.s_o;
    return v;
}

qgmm_kquant qgmm_cuda_kquant_of(const qgmm_context *ctx, const qgmm_cast_problem *p)
{
    qgmm_kquant a;
    __builtin_memset(&a, 0, sizeof a);
    a.along_c = p->rdim > p->odim;
    a.x = qgmm_cuda_kview_of(p->x, a.along_c);
    a.q = qgmm_cuda_kview_of(p->q, a.along_c);
    a.x_dtype = qgmm_kdtype_of(p->x.at.dtype);
    a.fmt = (int)p->q.at.dtype;
    a.E = p->e;
    a.R = a.along_c ? p->o : p->r;
    a.C = a.along_c ? p->r : p->o;
    a.G = 1;
    a.tile_rows = 1;
    a.status = qgmm_cuda_ctx_of(ctx)->status_dev;
    a.s.ptr = qgmm_ref_data(&p->scales);
    switch (p->kind) {
    case QGMM_QUANT_FP8_ROWWISE:
        /* scale (g or e, line o): outer * s0 + o * s1 */
        a.kind = QGMM_KQ_ROWWISE;
        a.pow2 = !p->dequantize && p->pow2;
        a.recip = p->recip;
        if (p->offs.buffer) { /* jagged */
            a.offs = (const int32_t *)qgmm_ref_data(&p->offs);
            a.offs_stride = 1;
            a.G = p->groups;
        }
        a.s.s0 = p->ss_e;
        a.s.s1 = p->ss_o;
        break;
    case QGMM_QUANT_MXFP8:
        a.kind = QGMM_KQ_MX;
        a.rceil = !p->dequantize && p->rceil;
        a.cols_pad = p->cols_pad;
        if (p->layout == QGMM_SCALES_BLOCKED_M_GROUPS || p->layout == QGMM_SCALES_BLOCKED_K_GROUPS) {
            a.glayout = p->layout == QGMM_SCALES_BLOCKED_M_GROUPS ? QGMM_KQ_MG : QGMM_KQ_KG;
            a.goffs = (const int32_t *)qgmm_ref_data(&p->offs);
            a.goffs_stride = 1;
            a.gG = p->groups;
            a.grows_pad = p->rows_pad;
            a.s.s0 = p->s_byte;
        } else if (p->layout == QGMM_SCALES_BLOCKED) {
            a.blocked = 1;
            a.per_expert = p->expert_bytes;
            a.s.s0 = p->s_byte;
        } else {
            a.per_expert = p->expert_bytes;
            a.s.s0 = p->ss_e;
            a.s.s1 = p->ss_o;
            a.s.s2 = p->ss_g;
        }
        break;
    case QGMM_QUANT_FP8_BLOCKWISE:
        /* scale (e, row tile, column block): e * s0 + (o / o_div) * s1 + g * s2 */
        a.kind = QGMM_KQ_BLOCKWISE;
        a.tile_rows = (int)p->o_div;
        a.s.s0 = p->ss_e;
        a.s.s1 = p->ss_o;
        a.s.s2 = p->ss_g;
        break;
    }
    return a;
}

extern "C" qgmm_status qgmm_cuda_cast(qgmm_context *ctx, const qgmm_cast_problem *p)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    const qgmm_kquant a = qgmm_cuda_kquant_of(ctx, p);
    if (p->dequantize) return qgmm_cuda_cast_dequant(ctx, a);
    switch (p->kind) {
    case QGMM_QUANT_FP8_ROWWISE: return qgmm_cuda_cast_rowwise(ctx, a);
    case QGMM_QUANT_MXFP8: return qgmm_cuda_cast_mx(ctx, p, a);
    case QGMM_QUANT_FP8_BLOCKWISE: return qgmm_cuda_cast_blockwise(ctx, a);
    }
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda cast: format kind %d", (int)p->kind);
}
