/*
 * cuda_runtime.h — HIP stand-in, first on the HIP plugin's include path. The CUDA
 * plugin's cast/layout/padding launchers (backends/cuda_hip/cast_*.cu, layout_*.cu) use only
 * the kernels/ .cuh files, <<<>>> launches, dim3, cudaStream_t and cudaMemsetAsync; with this header
 * they compile UNCHANGED as HIP, so the HIP plugin runs the same launch logic over the
 * same single-source kernels (no twin copies). Their services (qgmm_cuda_ctx_of,
 * qgmm_cuda_grid, qgmm_cuda_scratch, ...; backends/cuda_hip/cuda_internal.h) are implemented
 * for HIP in backends/hip/hip_backend.cpp.
 *
 * If a launcher starts using another CUDA runtime name, the HIP build fails here first:
 * add the mapping below (or, for a CUDA-only feature, guard it in the launcher).
 *
 * Bare mode (-DQGMM_HIP_BARE, clang -nogpuinc, device-only): no HIP header exists, so the
 * few host declarations the launchers need for Sema are declared here; nothing is linked.
 */
#ifndef QGMM_HIP_CUDA_RUNTIME_SHIM_H
#define QGMM_HIP_CUDA_RUNTIME_SHIM_H

#include "qgmm_dialect_hip.h"

#if defined(QGMM_HIP_BARE)
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef int hipError_t;
#define hipSuccess 0
struct dim3 {
    unsigned x, y, z;
    __host__ __device__ constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
extern "C" hipError_t hipMemsetAsync(void *p, int v, size_t n, hipStream_t s);
extern "C" hipError_t hipGetLastError(void);
extern "C" hipError_t __hipPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, hipStream_t s);
extern "C" hipError_t __hipPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, hipStream_t *s);
extern "C" hipError_t hipLaunchKernel(const void *f, dim3 grid, dim3 block, void **args, size_t shmem,
                                      hipStream_t s);
#endif

typedef hipStream_t cudaStream_t;
typedef hipEvent_t cudaEvent_t;
typedef hipError_t cudaError_t;
#define cudaSuccess hipSuccess
#define cudaMemsetAsync hipMemsetAsync
#define cudaGetLastError hipGetLastError

#endif /* QGMM_HIP_CUDA_RUNTIME_SHIM_H */
