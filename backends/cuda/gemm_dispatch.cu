/*
 * gemm_dispatch.cu — qgmm_cuda_gemm_run: chooses between the Hopper and the portable
 * grouped GEMM for one problem (see gemm_problem.cuh). Shared by the plugin entry and the
 * standalone benchmark in bench/cuda_gemm, so both run exactly the same choice.
 */
#include "gemm_problem.cuh"

/* 1 once the Hopper kernel has passed bench/cuda_gemm/gemm_check --path hopper and
 * compute-sanitizer on an H100; until then AUTO takes the portable kernel and the Hopper
 * one runs only when asked for by name. */
#define QG_HOPPER_IN_AUTO 1

int qgmm_cuda_gemm_run(const qg_problem *p, int path, cudaStream_t stream, const char **why,
                       const char **path_used)
{
    *why = "";
    if (path == QG_PATH_HOPPER || (path == QG_PATH_AUTO && QG_HOPPER_IN_AUTO)) {
        const int rc = qgmm_cuda_gemm_hopper(p, stream, why);
        if (rc == 0) { *path_used = "hopper"; return 0; }
        if (rc != 1 || path == QG_PATH_HOPPER) { *path_used = "hopper"; return rc; }
    }
    *path_used = "portable";
    return qgmm_cuda_gemm_portable(p, stream, why);
}
