/*
 * qgmm_dialect.h — the few GPU-language words the single-source kernels (the .cuh files in kernels/)
 * use, spelled once for CUDA (nvcc) and HIP (hipcc / clang -x hip). A kernel file never
 * writes threadIdx, __shfl_*, atomic* or __shared__ directly: it uses these macros, so
 * the HIP backend compiles the same kernels with 64-wide wavefronts.
 *
 * Reductions: QGMM_WARP is the hardware width (32 on NVIDIA, 32 or 64 on AMD). Kernels
 * either reduce over a FIXED small lane group with QGMM_SHFL_XOR (masks < 32, valid on
 * both widths because groups never straddle a wavefront) or over the whole block through
 * shared memory with one partial per warp (qgmm_block_amax in qgmm_kernels_common.cuh),
 * which is correct for any QGMM_WARP.
 */
#ifndef QGMM_DIALECT_H
#define QGMM_DIALECT_H

#include "qgmm_hd.h"

#if defined(__CUDACC__)
#define QGMM_GLOBAL extern "C" __global__
#define QGMM_KERNEL static __global__
#define QGMM_DEV static __device__ __forceinline__
#define QGMM_SHARED __shared__
#define QGMM_TID (int)(threadIdx.x + threadIdx.y * blockDim.x)
#define QGMM_NTHREADS (int)(blockDim.x * blockDim.y)
#define QGMM_NTHREADS_X (int)blockDim.x
#define QGMM_BID_X (int64_t)blockIdx.x
#define QGMM_BID_Y (int64_t)blockIdx.y
#define QGMM_BID_Z (int64_t)blockIdx.z
#define QGMM_NBLOCKS_X (int64_t)gridDim.x
#define QGMM_NBLOCKS_Y (int64_t)gridDim.y
#define QGMM_SYNC() __syncthreads()
#define QGMM_SYNC_OR(pred) __syncthreads_or(pred)
#define QGMM_WARP 32
/* every lane of the warp must be converged at each call (kernels keep loops uniform) */
#define QGMM_SHFL_XOR_F32(v, m) __shfl_xor_sync(0xffffffffu, (v), (m))
#define QGMM_ATOMIC_OR_U32(p, v) atomicOr((p), (v))
#define QGMM_ATOMIC_MAX_U32(p, v) atomicMax((p), (v))
#define QGMM_LDG(p) __ldg(p)
#define QGMM_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads, min_blocks)
#elif defined(__HIP__)
#define QGMM_GLOBAL extern "C" __global__
#define QGMM_KERNEL static __global__
#define QGMM_DEV static __device__ inline __attribute__((always_inline))
#define QGMM_SHARED __shared__
#define QGMM_TID (int)(__builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workitem_id_y() * __builtin_amdgcn_workgroup_size_x())
#define QGMM_NTHREADS (int)(__builtin_amdgcn_workgroup_size_x() * __builtin_amdgcn_workgroup_size_y())
#define QGMM_NTHREADS_X (int)__builtin_amdgcn_workgroup_size_x()
#define QGMM_BID_X (int64_t)__builtin_amdgcn_workgroup_id_x()
#define QGMM_BID_Y (int64_t)__builtin_amdgcn_workgroup_id_y()
#define QGMM_BID_Z (int64_t)__builtin_amdgcn_workgroup_id_z()
#define QGMM_NBLOCKS_X (int64_t)(__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x())
#define QGMM_NBLOCKS_Y (int64_t)(__builtin_amdgcn_grid_size_y() / __builtin_amdgcn_workgroup_size_y())
#define QGMM_SYNC() __syncthreads()
#define QGMM_SYNC_OR(pred) __syncthreads_or(pred)
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define QGMM_WARP __AMDGCN_WAVEFRONT_SIZE
#else
#define QGMM_WARP 64
#endif
#define QGMM_SHFL_XOR_F32(v, m) __shfl_xor((v), (m))
#define QGMM_ATOMIC_OR_U32(p, v) atomicOr((p), (v))
#define QGMM_ATOMIC_MAX_U32(p, v) atomicMax((p), (v))
#define QGMM_LDG(p) (*(p))
#define QGMM_LAUNCH_BOUNDS(threads, min_blocks) __launch_bounds__(threads, min_blocks)
#endif

/* Largest block any qgmm kernel launches with; sizes the per-warp partial arrays. */
#define QGMM_MAX_THREADS 1024
#define QGMM_MAX_WARPS (QGMM_MAX_THREADS / 32)

/* Raises bits of the context's device status word (QGMM_DEVICE_STATUS_*). */
#define QGMM_RAISE_STATUS(status_ptr, bits) QGMM_ATOMIC_OR_U32((status_ptr), (bits))

#endif /* QGMM_DIALECT_H */
