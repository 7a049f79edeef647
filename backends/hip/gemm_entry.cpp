/*
 * gemm_entry.cpp — qgmm_hip_grouped_gemm, the vtable slot: checks what the MFMA kernel
 * handles, turns the validated API tensors into a qgmm_hg_problem (pointers + element
 * strides) and picks FP8 MFMA or BF16 MFMA for the device's architecture.
 *
 *   gfx94x (MI300X): both operands f8e4m3fnuz -> v_mfma_f32_32x32x16_fp8_fp8;
 *                    bf16, f8e4m3fn, f8e5m2 -> bf16 MFMA (gfx94x's FP8 units read the
 *                    FNUZ encodings only; the OCP bytes are widened to bf16 exactly).
 *   gfx90a (MI250X): everything -> bf16 MFMA (no FP8 units).
 */
#include "cuda_internal.h"
#include "hip_gemm.h"

#include <stdlib.h>
#include <string.h>

static int hg_is_fp8(qgmm_dtype d)
{
    return d == QGMM_F8E4M3FN || d == QGMM_F8E4M3FNUZ || d == QGMM_F8E5M2;
}

static int hg_arch_has_fp8_mfma(int arch) { return arch >= 0x940 && arch <= 0x942; }

extern "C" int qgmm_hip_arch_built(int arch)
{
    const char *s = QGMM_HIP_ARCHS_STRING;
    while (*s) {
        while (*s == ';' || *s == ',' || *s == ' ') ++s;
        if (strncmp(s, "gfx", 3) == 0 && (int)strtol(s + 3, NULL, 16) == arch) return 1;
        while (*s && *s != ';' && *s != ',' && *s != ' ') ++s;
    }
    return 0;
}

extern "C" const char *qgmm_hip_gemm_path_name(int arch)
{
    return hg_arch_has_fp8_mfma(arch) ? "MFMA (fp8 e4m3fnuz native, others via bf16)" : "MFMA bf16 (fp8 widened in LDS)";
}

extern "C" qgmm_status qgmm_hip_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *prm,
                                             const qgmm_tensor *a, const qgmm_tensor *b,
                                             const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                             const qgmm_tensor *offs, const qgmm_tensor *out)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
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
                              (long long)G, QGMM_HG_MAX_GROUPS);

    qgmm_hg_problem p;
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
    p.status = c->status_dev;
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

    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    const int arch = (c->cc_major << 8) | c->cc_minor;
    const int fp8_mfma = hg_arch_has_fp8_mfma(arch) && a->dtype == QGMM_F8E4M3FNUZ && b->dtype == QGMM_F8E4M3FNUZ;
    /* persistent grid: enough for every tile when known (K_GROUPED), else an upper bound
     * (M_GROUPED: each group adds at most one partial row tile) capped at 4 per CU */
    const int64_t tc = (p.cols + 63) / 64, tr = (p.rows + 63) / 64;
    const int64_t bound = mg ? (tr + G) * tc : G * tr * tc;
    const unsigned grid = qgmm_cuda_grid(ctx, bound, 256, 4);
    if (qgmm_hip_gemm_launch(&p, fp8_mfma, grid, (void *)c->stream) != 0)
        return qgmm_cuda_launch_check(ctx, fp8_mfma ? "qgmm_hg_kernel<fp8>" : "qgmm_hg_kernel<bf16>");
    return QGMM_OK;
}
