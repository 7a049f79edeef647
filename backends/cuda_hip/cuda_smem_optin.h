/*
 * cuda_smem_optin.h — lets a kernel take up to the device's opt-in shared memory per block
 * (CUDA only: the kernels that need more than 48 KiB of dynamic shared memory).
 *
 * cudaFuncAttributeMaxDynamicSharedMemorySize is process-wide per kernel. Setting it to each
 * launch's own size races between threads that launch the same kernel with different sizes
 * (contexts of one process on their own threads, e.g. expert-parallel ranks): one thread
 * lowers it between another's set and launch, and that launch fails with
 * cudaErrorLaunchOutOfResources. Every caller writes the same value instead, the opt-in
 * maximum less the kernel's static shared memory, which admits every launch that fits the
 * device at all; the occupancy of a launch still follows its own dynamic size.
 */
#pragma once
#include <cuda_runtime.h>

template <typename K>
static inline cudaError_t qgmm_cuda_allow_max_smem(K kern, size_t need)
{
    int dev = 0, optin = 0;
    cudaFuncAttributes fa;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e == cudaSuccess) e = cudaFuncGetAttributes(&fa, kern);
    if (e != cudaSuccess) return e;
    const int avail = optin - (int)fa.sharedSizeBytes;
    if (avail < 0 || (size_t)avail < need) return cudaErrorInvalidValue;
    return cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, avail);
}
