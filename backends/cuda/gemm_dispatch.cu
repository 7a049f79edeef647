/*
 * gemm_dispatch.cu — qgmm_cuda_gemm_run: chooses between the Hopper and the portable
 * grouped GEMM for one problem (see gemm_problem.cuh). Shared by the plugin entry and the
 * standalone benchmark in bench/cuda_gemm, so both run exactly the same choice.
 */
#include "gemm_problem.cuh"

int qgmm_cuda_gemm_run(const qg_problem *p, int path, cudaStream_t stream, const char **why,
                       const char **path_used)
{
    *why = "";
    if (path != QG_PATH_PORTABLE) {
        const int rc = qgmm_cuda_gemm_hopper(p, stream, why);
        if (rc == 0) { *path_used = "hopper"; return 0; }
        if (rc != 1 || path == QG_PATH_HOPPER) { *path_used = "hopper"; return rc; }
    }
    *path_used = "portable";
    return qgmm_cuda_gemm_portable(p, stream, why);
}
