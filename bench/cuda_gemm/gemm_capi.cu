/*
 * gemm_capi.cu — a C ABI over the CUDA grouped-GEMM kernels for the Python benchmark
 * (bench_grouped.py): it hands PyTorch tensors' device pointers and strides straight to
 * qgmm_cuda_gemm_run, on PyTorch's stream, so qgmm and torch._grouped_mm /
 * torch._scaled_grouped_mm run on the same data in the same process. The kernels and the
 * path choice are the plugin's own (backends/cuda/gemm_*.cu); only the qgmm handles are
 * skipped, and the workspace the plugin takes from the context's scratch comes from the
 * caller (qg_bench_ws_bytes says how much). Built by bench/cuda_gemm/build_bench.sh.
 */
#include "gemm_problem.cuh"

#include <stdio.h>

extern "C" __attribute__((visibility("default"))) int qg_bench_problem_size(void)
{
    return (int)sizeof(qg_problem);
}

/* Returns 0 on success; else the launcher's code with the reason in why. used: the path
 * that ran ("hopper" / "portable"). */
extern "C" __attribute__((visibility("default"))) int qg_bench_run(const qg_problem *p, int path,
                                                                   void *stream, char *why, int why_cap,
                                                                   char *used, int used_cap)
{
    const char *w = "", *u = "";
    const int rc = qgmm_cuda_gemm_run(p, path, (cudaStream_t)stream, &w, &u);
    snprintf(why, (size_t)why_cap, "%s", w);
    snprintf(used, (size_t)used_cap, "%s", u);
    return rc;
}

/* The workspace qg_bench_run wants in p->ws (qgmm_cuda_gemm_ws_bytes; 0: none). */
extern "C" __attribute__((visibility("default"))) long long qg_bench_ws_bytes(const qg_problem *p)
{
    return (long long)qgmm_cuda_gemm_ws_bytes(p);
}
