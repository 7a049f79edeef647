/*
 * hip_emu.h — runs the HIP grouped-GEMM kernel (backends/hip/gemm_mfma.hip) on the host,
 * unchanged, so its logic is tested where no AMD GPU exists: one workgroup at a time,
 * each of its 256 work-items a pthread; LDS (`__shared__`) is process-static (one
 * workgroup runs at a time); barriers are pthread barriers (the workgroup's, and one per
 * 64-lane wave for the matrix instructions).
 *
 * The two MFMA instructions are modelled lane by lane from the operand/result layouts the
 * kernel assumes (AMD CDNA ISA, 32x32 single-block forms): every lane deposits its A/B
 * registers, the wave meets at a barrier, each lane computes its 16 results from everyone's
 * registers, the wave meets again. So this test proves the kernel right UNDER THAT LAYOUT
 * MODEL (scheduler, staging, masking, scales, epilogue, offsets checks); whether the
 * hardware lays lanes out that way is only proven on a real MI250X/MI300X.
 *
 * Include this before gemm_mfma.hip, compiled as host C++ with -DQGMM_HIP_EMU.
 */
#ifndef QGMM_HIP_EMU_H
#define QGMM_HIP_EMU_H

#define QGMM_DIALECT_HIP_H 1 /* replaces kernels/qgmm_dialect_hip.h */

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))

typedef struct __attribute__((aligned(8))) uint2 { unsigned int x, y; } uint2;
typedef struct __attribute__((aligned(16))) uint4 { unsigned int x, y, z, w; } uint4;
typedef struct __attribute__((aligned(16))) float4 { float x, y, z, w; } float4;
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { uint4 r = {x, y, z, w}; return r; }
static inline float4 make_float4(float x, float y, float z, float w) { float4 r = {x, y, z, w}; return r; }

/* The emulated launch: grid size, the running workgroup, its barriers. */
struct hg_emu_launch {
    int nblocks, bid;               /* x: grid size and the running workgroup */
    int nby, nbz, bid_y, bid_z;     /* y, z of the grid (1 and 0 for 1-D launches) */
    int ntx, nthreads;              /* block x extent and work-items per block (<= 1024) */
    pthread_barrier_t block;
    pthread_barrier_t wave[16];
    int or_flag;
};
extern hg_emu_launch g_hg_emu;
extern thread_local int g_hg_emu_tid;

static inline void hg_emu_sync(void) { pthread_barrier_wait(&g_hg_emu.block); }
static inline int hg_emu_sync_or(int pred)
{
    hg_emu_sync();
    if (g_hg_emu_tid == 0) g_hg_emu.or_flag = 0;
    hg_emu_sync();
    if (pred) __atomic_fetch_or(&g_hg_emu.or_flag, 1, __ATOMIC_RELAXED);
    hg_emu_sync();
    const int r = __atomic_load_n(&g_hg_emu.or_flag, __ATOMIC_RELAXED);
    hg_emu_sync();
    return r;
}
static inline unsigned hg_emu_atomic_max(unsigned *p, unsigned v)
{
    unsigned cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return cur;
}
/* xor shuffle over the 64-lane wave through an exchange area */
float hg_emu_shfl_xor(float v, int mask);

/* The words of kernels/qgmm_dialect.h for the emulation (its CUDA/HIP branches are not taken). */
#define QGMM_GLOBAL extern "C"
#define QGMM_KERNEL static
#define QGMM_DEV static inline
#define QGMM_SHARED static
#define QGMM_TID g_hg_emu_tid
#define QGMM_NTHREADS g_hg_emu.nthreads
#define QGMM_NTHREADS_X g_hg_emu.ntx
#define QGMM_BID_X ((int64_t)g_hg_emu.bid)
#define QGMM_BID_Y ((int64_t)g_hg_emu.bid_y)
#define QGMM_BID_Z ((int64_t)g_hg_emu.bid_z)
#define QGMM_NBLOCKS_X ((int64_t)g_hg_emu.nblocks)
#define QGMM_NBLOCKS_Y ((int64_t)g_hg_emu.nby)
#define QGMM_SYNC() hg_emu_sync()
#define QGMM_SYNC_OR(pred) hg_emu_sync_or(pred)
#define QGMM_WARP 64
#define QGMM_SHFL_XOR_F32(v, m) hg_emu_shfl_xor((v), (m))
#define QGMM_ATOMIC_OR_U32(p, v) __atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define QGMM_ATOMIC_MAX_U32(p, v) hg_emu_atomic_max((p), (v))
#define QGMM_LDG(p) (*(p))
#define QGMM_LAUNCH_BOUNDS(threads, min_blocks)
#include "qgmm_dialect.h"

/* MFMA models (definitions in gemm_emu_test.cpp, after the vector types exist). */
#define QGMM_HG_HAS_FP8_MFMA 1
#define HG_MFMA_BF16(a, b, acc) hg_emu_mfma_bf16((a), (b), (acc))
#define HG_MFMA_FP8(a, b, acc) hg_emu_mfma_fp8((a), (b), (acc))
typedef float hg_emu_f32x16 __attribute__((vector_size(64)));
typedef short hg_emu_i16x4 __attribute__((vector_size(8)));
hg_emu_f32x16 hg_emu_mfma_bf16(hg_emu_i16x4 a, hg_emu_i16x4 b, hg_emu_f32x16 acc);
hg_emu_f32x16 hg_emu_mfma_fp8(long a, long b, hg_emu_f32x16 acc);

/* Runs body(ctx) as `nblocks` workgroups of 256 work-items, one workgroup at a time. */
void hg_emu_run(int nblocks, void (*body)(void *), void *ctx);
/* General form: grid (gx, gy, gz) of blocks (bx, by) work-items, x fastest. */
void hg_emu_run3(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, void (*body)(void *), void *ctx);

#endif /* QGMM_HIP_EMU_H */
