/*
 * gemm_build.cpp — turns the validated API tensors of a grouped GEMM into the
 * qgmm_hg_problem the MFMA kernel reads (raw pointers and element strides, scale strides
 * per recipe and kind), and refuses what the kernel does not handle. No HIP runtime call:
 * the plugin (gemm_entry.cpp) and the host emulation test (emu/) share it.
 */
#include "hip_gemm.h"

#include <string.h>

static int hg_is_fp8(qgmm_dtype d)
{
    return d == QGMM_F8E4M3FN || d == QGMM_F8E4M3FNUZ || d == QGMM_F8E5M2;
}

extern "C" qgmm_status qgmm_hip_gemm_build(const qgmm_context *ctx, const qgmm_grouped_gemm_params *prm,
                                           const qgmm_tensor *a, const qgmm_tensor *b,
                                           const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                           const qgmm_tensor *offs, const qgmm_tensor *out, uint32_t *status,
                                           qgmm_hg_problem *out_p)
{
    const int bf16 = prm->recipe == QGMM_RECIPE_BF16;
    if (bf16 ? (a->dtype != QGMM_BF16 || b->dtype != QGMM_BF16) : (!hg_is_fp8(a->dtype) || !hg_is_fp8(b->dtype)))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on hip: operand dtypes %s x %s for recipe %d",
                              qgmm_dtype_name(a->dtype), qgmm_dtype_name(b->dtype), (int)prm->recipe);
    if (out->dtype != QGMM_BF16 && out->dtype != QGMM_F32)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on hip: out dtype %s (bf16 or f32)",
                              qgmm_dtype_name(out->dtype));
    const int64_t G = offs->shape[0];
    if (G > QGMM_HG_MAX_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on hip: offs has %lld groups; at most %d",
                              (long long)G, (int)QGMM_HG_MAX_GROUPS);

    qgmm_hg_problem &p = *out_p;
    memset(&p, 0, sizeof p);
    const int mg = prm->kind == QGMM_GEMM_M_GROUPED;
    p.kind = mg ? QGMM_HG_M_GROUPED : QGMM_HG_K_GROUPED;
    p.scale_mode = prm->recipe == QGMM_RECIPE_BF16 ? QGMM_HG_SC_NONE
                   : prm->recipe == QGMM_RECIPE_FP8_ROWWISE ? QGMM_HG_SC_ROW
                   : prm->recipe == QGMM_RECIPE_FP8_BLOCKWISE ? QGMM_HG_SC_BLOCK128 : QGMM_HG_SC_MX32;
    p.out_f32 = out->dtype == QGMM_F32;
    p.groups = G;
    p.offs = (const int32_t *)qgmm_tensor_data(offs);
    p.offs_stride = offs->strides[0];
    p.out = qgmm_tensor_data(out);
    p.status = status;
    p.offs_multiple = 1;
    p.a.ptr = (const uint8_t *)qgmm_tensor_data(a);
    p.b.ptr = (const uint8_t *)qgmm_tensor_data(b);
    p.a.dtype = (int)a->dtype;
    p.b.dtype = (int)b->dtype;
    if (p.scale_mode != QGMM_HG_SC_NONE) {
        p.sa.ptr = qgmm_tensor_data(a_scales);
        p.sb.ptr = qgmm_tensor_data(b_scales);
    }
    p.sa.i_div = p.sb.i_div = 1;
    /* r/c/contraction strides per kind; scales per recipe (shapes: api/qgmm.h) */
    const int ar = mg ? 0 : 1, ak = mg ? 1 : 0;     /* a: (M,K) or (M,N) */
    p.rows = a->shape[ar];
    p.kdim = a->shape[ak];
    p.a.s_row = a->strides[ar];
    p.a.s_k = a->strides[ak];
    if (mg) {
        p.cols = b->shape[1];
        p.b.s_grp = b->strides[0]; p.b.s_row = b->strides[1]; p.b.s_k = b->strides[2];
        p.so_r = out->strides[0]; p.so_c = out->strides[1];
    } else {
        p.cols = b->shape[1];
        p.b.s_row = b->strides[1]; p.b.s_k = b->strides[0];
        p.so_g = out->strides[0]; p.so_r = out->strides[1]; p.so_c = out->strides[2];
    }
    if (p.scale_mode == QGMM_HG_SC_ROW) {
        /* M: a (M), b (E, N); K: a (G, N), b (G, K) */
        if (a_scales->rank == 2) { p.sa.s_grp = a_scales->strides[0]; p.sa.s_row = a_scales->strides[1]; }
        else p.sa.s_row = a_scales->strides[0];
        p.sb.s_grp = b_scales->strides[0]; p.sb.s_row = b_scales->strides[1];
    } else if (p.scale_mode == QGMM_HG_SC_BLOCK128) {
        /* M: a (M, K/128), b (E, N/128, K/128); K: a (N, M/128), b (K, M/128) */
        p.sa.s_row = a_scales->strides[0]; p.sa.s_k = a_scales->strides[1];
        if (mg) {
            p.sb.s_grp = b_scales->strides[0]; p.sb.s_row = b_scales->strides[1]; p.sb.s_k = b_scales->strides[2];
            p.sb.i_div = 128;
        } else {
            p.sb.s_row = b_scales->strides[0]; p.sb.s_k = b_scales->strides[1];
            p.offs_multiple = 128;
        }
    } else if (p.scale_mode == QGMM_HG_SC_MX32 && !mg) {
        p.offs_multiple = 32;
    }

    return QGMM_OK;
}
