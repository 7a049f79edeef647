/*
 * qgmm_dialect_hip.h — the HIP side of kernels/qgmm_dialect.h for builds WITHOUT the HIP
 * headers (clang -x hip -nogpuinc -nogpulib --cuda-device-only, the gfx942 check of
 * scripts/hip-gfx942-check.sh). qgmm_dialect.h's __HIP__ branch spells its words with the
 * HIP runtime's names (__syncthreads, __shfl_xor, atomicOr, uint4 ...); with the HIP headers
 * (hipcc) those come from <hip/hip_runtime.h>. Without them, this header defines exactly
 * those names over clang's AMDGPU builtins, so no device library (ocml/ockl) is needed and
 * the same kernel sources compile for an architecture the installed ROCm does not know.
 *
 * Select the bare mode with -DQGMM_HIP_BARE; otherwise this header only includes
 * <hip/hip_runtime.h> and qgmm_dialect.h.
 *
 * Wavefront width: gfx9 (MI250X gfx90a, MI300X gfx942) runs 64-wide waves; shuffles
 * below address 64 lanes with ds_bpermute, so xor masks up to 32 stay inside the wave.
 */
#ifndef QGMM_DIALECT_HIP_H
#define QGMM_DIALECT_HIP_H

#if !defined(__HIP__)
#error "qgmm_dialect_hip.h is for HIP compilations (hipcc or clang -x hip)"
#endif

#include <stddef.h>
#include <stdint.h>

#if !defined(QGMM_HIP_BARE)
#include <hip/hip_runtime.h>
#else

#ifndef __host__
#define __host__ __attribute__((host))
#endif
#ifndef __device__
#define __device__ __attribute__((device))
#endif
#ifndef __global__
#define __global__ __attribute__((global))
#endif
#ifndef __shared__
#define __shared__ __attribute__((shared))
#endif
#ifndef __constant__
#define __constant__ __attribute__((constant))
#endif
#ifndef __align__
#define __align__(n) __attribute__((aligned(n)))
#endif
#ifndef __launch_bounds__
/* the work-group bound only; HIP's optional second argument (an occupancy hint) is
 * dropped in the bare check build */
#define __launch_bounds__(n, ...) __attribute__((amdgpu_flat_work_group_size(1, n)))
#endif

#define QGMM_BARE_HD static inline __attribute__((host, device, always_inline))
#define QGMM_BARE_D static inline __attribute__((device, always_inline))

/* The HIP vector types the kernels use, with HIP's sizes and alignments. */
typedef struct __attribute__((aligned(8))) uint2 { unsigned int x, y; } uint2;
typedef struct __attribute__((aligned(16))) uint4 { unsigned int x, y, z, w; } uint4;
typedef struct __attribute__((aligned(8))) float2 { float x, y; } float2;
typedef struct __attribute__((aligned(16))) float4 { float x, y, z, w; } float4;
QGMM_BARE_HD uint2 make_uint2(unsigned x, unsigned y) { uint2 r = {x, y}; return r; }
QGMM_BARE_HD uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
    uint4 r = {x, y, z, w};
    return r;
}
QGMM_BARE_HD float2 make_float2(float x, float y) { float2 r = {x, y}; return r; }
QGMM_BARE_HD float4 make_float4(float x, float y, float z, float w)
{
    float4 r = {x, y, z, w};
    return r;
}

/* f16 as the compiler's native half: the conversion to f32 is exact either way. */
typedef _Float16 __half;
QGMM_BARE_HD float __half2float(__half h) { return (float)h; }

/* Workgroup barrier with the memory ordering HIP's __syncthreads gives. */
QGMM_BARE_D void __syncthreads(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

QGMM_BARE_D int qgmm_bare_flat_tid(void)
{
    return (int)(__builtin_amdgcn_workitem_id_x() +
                 __builtin_amdgcn_workgroup_size_x() *
                     (__builtin_amdgcn_workitem_id_y() +
                      __builtin_amdgcn_workgroup_size_y() * __builtin_amdgcn_workitem_id_z()));
}

/* Block-wide OR of a predicate through one LDS word (HIP's own version calls the ockl
 * device library). Every thread of the block must call it. */
QGMM_BARE_D int __syncthreads_or(int pred)
{
    __shared__ int flag;
    __syncthreads();
    if (qgmm_bare_flat_tid() == 0) flag = 0;
    __syncthreads();
    if (pred) __hip_atomic_fetch_or(&flag, 1, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
    __syncthreads();
    const int r = flag;
    __syncthreads();
    return r;
}

/* Lane id within the 64-wide wave, and a xor shuffle over the whole wave. */
QGMM_BARE_D int qgmm_bare_lane(void)
{
    return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}
QGMM_BARE_D float __shfl_xor(float v, int mask)
{
    const int src = qgmm_bare_lane() ^ mask;
    return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute(src << 2, __builtin_bit_cast(int, v)));
}
QGMM_BARE_D int __shfl_xor(int v, int mask)
{
    const int src = qgmm_bare_lane() ^ mask;
    return __builtin_amdgcn_ds_bpermute(src << 2, v);
}

/* Device-scope relaxed atomics (what HIP's atomicOr/atomicMax are). */
QGMM_BARE_D unsigned atomicOr(unsigned *p, unsigned v)
{
    return __hip_atomic_fetch_or(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
QGMM_BARE_D unsigned atomicMax(unsigned *p, unsigned v)
{
    return __hip_atomic_fetch_max(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
QGMM_BARE_D int atomicAdd(int *p, int v)
{
    return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}

#endif /* QGMM_HIP_BARE */

#include "qgmm_dialect.h"

/* Every launcher of the shared kernels uses 256-thread blocks. Without a bound, the AMDGPU
 * backend assumes up to 1024 work-items (16 waves over 4 SIMDs) and caps each kernel at
 * 128 VGPRs, which made the row-block and 128x128 cast kernels spill to scratch on gfx942;
 * with the bound they may use up to 512. A launch with more than 256 threads would fail
 * with a launch error (reported by qgmm_cuda_launch_check), never compute wrongly. */
#define QGMM_HIP_KERNEL_THREADS 256
#undef QGMM_KERNEL
#define QGMM_KERNEL static __global__ __launch_bounds__(QGMM_HIP_KERNEL_THREADS)

#endif /* QGMM_DIALECT_HIP_H */
