/*
 * gemm_entry.cpp — qgmm_hip_grouped_gemm, the vtable slot: translates the problem into
 * the qgmm_hg_problem (gemm_build.cpp), picks FP8 MFMA or BF16 MFMA for the device's
 * architecture, sizes the persistent grid and launches.
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

extern "C" qgmm_status qgmm_hip_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *d)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_hg_problem p;
    qgmm_status st = qgmm_hip_gemm_build(ctx, d, c->status_dev, &p);
    if (st != QGMM_OK) return st;
    const int64_t G = p.groups;
    const int mg = p.kind == QGMM_HG_M_GROUPED;
    st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    const int arch = (c->cc_major << 8) | c->cc_minor;
    const int fp8_mfma = hg_arch_has_fp8_mfma(arch) && d->a.at.dtype == QGMM_F8E4M3FNUZ && d->b.at.dtype == QGMM_F8E4M3FNUZ;
    /* persistent grid: enough for every tile when known (K_GROUPED), else an upper bound
     * (M_GROUPED: each group adds at most one partial row tile) capped at 4 per CU */
    const int64_t tc = (p.cols + 63) / 64, tr = (p.rows + 63) / 64;
    const int64_t bound = mg ? (tr + G) * tc : G * tr * tc;
    const unsigned grid = qgmm_cuda_grid(ctx, bound, 256, 4);
    if (qgmm_hip_gemm_launch(&p, fp8_mfma, grid, (void *)c->stream) != 0)
        return qgmm_cuda_launch_check(ctx, fp8_mfma ? "qgmm_hg_kernel<fp8>" : "qgmm_hg_kernel<bf16>");
    return QGMM_OK;
}
