/*
 * gemm_stub.cu — placeholder for the grouped GEMM until backends/cuda/gemm_*.cu lands
 * (owned by the GEMM engineer, who deletes this file). Reports UNSUPPORTED, never a
 * wrong result.
 */
#include "cuda_internal.h"

extern "C" qgmm_status qgmm_cuda_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *p,
                                              const qgmm_tensor *a, const qgmm_tensor *b,
                                              const qgmm_tensor *a_scales,
                                              const qgmm_tensor *b_scales,
                                              const qgmm_tensor *offs, const qgmm_tensor *out)
{
    (void)a; (void)b; (void)a_scales; (void)b_scales; (void)offs; (void)out;
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                          "grouped_gemm (kind %d, recipe %d): not implemented in the CUDA backend yet",
                          (int)p->kind, (int)p->recipe);
}
