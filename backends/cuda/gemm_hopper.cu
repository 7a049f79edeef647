/*
 * gemm_hopper.cu — the Hopper (sm_90a) grouped GEMM: BF16, FP8 rowwise, FP8 blockwise and
 * MXFP8 (e4m3 / e5m2), M- and K-grouped, contraction-contiguous operands with 16-byte
 * aligned rows (bf16 output for the FP8 recipes; f32 output takes the portable kernel).
 *
 * Persistent grid of 384-thread CTAs: warpgroup 0 is the producer (one thread issues TMA
 * `cp.async.bulk.tensor` loads of 128-byte-wide A (128 rows) and B (256 rows) slices into a
 * shared-memory ring, completing on "full" mbarriers), warpgroups 1 and 2 are the
 * consumers (each a 64x256 half of the 128x256 tile with wgmma m64n256, releasing stages
 * on "empty" mbarriers). setmaxnreg moves registers from the producer to the consumers.
 * Tiles come from the same device scheduler as the portable kernel (gemm_sched.cuh), so
 * uneven and empty groups and bad offsets behave identically. A tile's A rows past its
 * group's end belong to the next group (or are zero past M, TMA OOB fill): they only
 * feed output rows that the epilogue masks, so they never reach memory. K tails are zero
 * (OOB fill) in both operands. The epilogue applies the rowwise scales and either writes
 * the tile through a 128B-swizzled shared-memory staging area that a TMA bulk store copies
 * out while the warpgroup already runs its next tile's main loop, or (outputs TMA cannot
 * store, half tiles that cross a group's end) stores straight from the accumulators.
 */
#include "gemm_scales.cuh"
#include "gemm_wgmma.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

namespace {

constexpr int HBM = 128, HBN = 256, HBKB = 128, HTHR = 384;
constexpr int HA_BYTES = HBM * HBKB, HB_BYTES = HBN * HBKB;
/* FP8 rowwise scales of a consumer warpgroup's tile half: 64 row + 256 column floats. */
constexpr int QG_SCALE_FLOATS = 64 + 256;
/* Shared memory of a kernel with STAGES ring slots of (A, B) bytes, SB staging bytes per
 * consumer warpgroup and SF scale floats, before the schedule: alignment slack, ring,
 * staging, scales, barriers. */
constexpr size_t qg_smem_fixed(int stages, int a_bytes, int b_bytes, int sb, int sf)
{
    return 1024 + (size_t)stages * (a_bytes + b_bytes) + (size_t)2 * sb + (size_t)sf * 4 + (size_t)2 * stages * 8;
}

#ifdef QG_HAS_WGMMA
__device__ __forceinline__ uint32_t h_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(h_smem(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(h_smem(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(h_smem(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    uint32_t done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(h_smem(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}
__device__ __forceinline__ void tma_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(h_smem(bar))
                 : "memory");
}
__device__ __forceinline__ void tma_3d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2,
                                       uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(h_smem(bar))
                 : "memory");
}
/* The same 2D load delivered to the same shared-memory offset (and completing on the same
 * barrier offset) in every CTA of the cluster named in `mask`. */
__device__ __forceinline__ void tma_2d_mc(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar,
                                          uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(h_smem(bar)), "h"(mask)
                 : "memory");
}
__device__ __forceinline__ void tma_3d_mc(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2,
                                          uint64_t *bar, uint16_t mask)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(h_smem(bar)), "h"(mask)
                 : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
/* Arrives on the barrier at the same offset in CTA `rank` of the cluster. */
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t *bar, uint32_t rank)
{
    uint32_t remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(h_smem(bar)), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
/* K-major operand in 128-byte-swizzled smem: rows of 128 bytes, 8-row atoms 1024 apart. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr)
{
    uint64_t d = (uint64_t)((addr & 0x3FFFFu) >> 4);
    d |= (uint64_t)1 << 16;            /* leading byte offset (unused for this layout) */
    d |= (uint64_t)(1024 >> 4) << 32;  /* stride byte offset: next 8-row atom */
    d |= (uint64_t)1 << 62;            /* 128B swizzle */
    return d;
}
#endif

#ifdef QG_HAS_WGMMA
/* The dynamic shared memory of every kernel here: STAGES A and B slots (1024-aligned for
 * the 128-byte swizzle), two epilogue staging areas of SB bytes (one per consumer
 * warpgroup), SF scale floats, the full/empty barriers, then the tile schedule. Builds the
 * schedule and initialises the barriers (full_arrivals arrive on each full barrier: the
 * TMA thread's, plus the scale loaders' of the promoted kernel); false when offs is bad
 * (nothing may be written then). */
template <int STAGES, int A_BYTES, int B_BYTES, int SB, int BM, int BN, int CL = 1, int SF = 2 * QG_SCALE_FLOATS>
__device__ __forceinline__ bool qg_pipe_init(uint8_t *smem_raw, const qg_problem &p, uint8_t *&sA, uint8_t *&sB,
                                             uint8_t *&sO, float *&sS, uint64_t *&full, uint64_t *&empty,
                                             qg_sched &s, int full_arrivals = 1)
{
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    sA = smem;
    sB = smem + STAGES * A_BYTES;
    sO = sB + STAGES * B_BYTES;
    sS = (float *)(sO + 2 * SB);
    full = (uint64_t *)(sS + SF);
    empty = full + STAGES;
    int *sched_mem = (int *)(empty + STAGES);
    if (!qg_sched_build<BM, BN>(p, sched_mem, s)) return false;
    if (threadIdx.x == 0) {
        for (int i = 0; i < STAGES; ++i) {
            mbar_init(&full[i], full_arrivals);
            /* CL == 1: every consumer thread arrives; clusters: one arrival per consumer
             * warp of every CTA of the cluster (its multicast loads fill all of them) */
            mbar_init(&empty[i], CL == 1 ? 256 : CL * 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if constexpr (CL > 1) cluster_sync(); /* the peers' barriers exist before any multicast */
    return true;
}

/* Pins the accumulators at this point of the program: reads of them (epilogue, promotion)
 * must not be moved above the wgmma wait that completes them, or ptxas serialises every
 * wgmma of the kernel. */
template <int N>
__device__ __forceinline__ void qg_fence_acc(float (&a)[N])
{
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(a[i])::"memory");
}

/* A consumer is done with a ring stage: one arrival per thread on its own CTA's empty
 * barrier, or with clusters one per warp on the barrier of every CTA whose producer
 * filled part of it. */
template <int CL>
__device__ __forceinline__ void qg_release(uint64_t *bar, int lane)
{
    if constexpr (CL == 1) {
        mbar_arrive(bar);
    } else {
        __syncwarp();
        if (lane == 0)
            for (uint32_t q = 0; q < (uint32_t)CL; ++q) mbar_arrive_cluster(bar, q);
    }
}

__device__ __forceinline__ void qg_wg_bar(int id)
{
    asm volatile("barrier.sync %0, 128;\n" ::"r"(id) : "memory");
}

/* TMA store of one 128-byte-wide box of the output (3D map: column, row, group). */
__device__ __forceinline__ void tma_store_3d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
                     (uint64_t)map),
                 "r"(src), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

/* What the epilogue of one consumer warpgroup needs besides its accumulators. */
struct qg_epi {
    int g;
    int64_t r0;     /* first row of this warpgroup's 64-row half */
    int64_t r_end;  /* rows at or past this are not written (group end, or rows) */
    int64_t c0;
    bool zero;      /* an empty K-grouped group: the output is exact zeros */
};

/* FP8 rowwise: the scales of a tile half (ss[0..63] its rows, ss[64..319] its columns,
 * zero past the extents) are copied into shared memory by cp.async when the tile starts,
 * so the epilogue does not wait on global loads. The barrier first keeps the previous
 * tile's epilogue readers from seeing them change. */
__device__ __forceinline__ void qg_stage_row_scales(const qg_problem &p, const qg_epi &e, float *ss, int lt,
                                                    int bar_id)
{
    qg_wg_bar(bar_id);
    for (int i = lt; i < QG_SCALE_FLOATS; i += 128) {
        const float *src;
        bool ok;
        if (i < 64) {
            ok = !e.zero && e.r0 + i < e.r_end;
            src = (const float *)p.sa.ptr + (ok ? (int64_t)e.g * p.sa.s_grp + (e.r0 + i) * p.sa.s_row : 0);
        } else {
            ok = !e.zero && e.c0 + (i - 64) < p.cols;
            src = (const float *)p.sb.ptr + (ok ? (int64_t)e.g * p.sb.s_grp + (e.c0 + i - 64) * p.sb.s_row : 0);
        }
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(h_smem(ss + i)), "l"(src),
                     "r"(ok ? 4 : 0)
                     : "memory");
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Before the epilogue reads them: this thread's copies landed, then everyone's. */
__device__ __forceinline__ void qg_wait_row_scales(int bar_id)
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    qg_wg_bar(bar_id);
}

/* Rowwise-scaled value of accumulator pair (v0, v1) at row scale va, tile columns cl, cl+1
 * (ssb: the staged column scales). */
template <int SC>
__device__ __forceinline__ void qg_epi_scale(const qg_problem &p, const qg_epi &e, float va, const float *ssb,
                                             int cl, float &v0, float &v1)
{
    if (e.zero) {
        v0 = 0.f; v1 = 0.f;
    } else if constexpr (SC == QG_SC_ROW) {
        if (e.c0 + cl < p.cols) v0 = v0 * va * ssb[cl];
        if (e.c0 + cl + 1 < p.cols) v1 = v1 * va * ssb[cl + 1];
    }
}

/* acc[j*4 + h*2 + x] of a 64 x (NJ*8) warpgroup tile (wgmma m64nN layout) is row
 * warp*16 + lane/4 + 8h, column j*8 + (lane%4)*2 + x. Stored straight from registers,
 * masked to r_end and the columns. */
template <int SC, int NJ>
__device__ __forceinline__ void qg_epi_regs(const qg_problem &p, const qg_epi &e, const float (&acc)[NJ * 4],
                                            const float *ss, int pair_ok, int warp, int lane)
{
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int rh = warp * 16 + lane / 4 + h * 8;
        const int64_t r = e.r0 + rh;
        if (r >= e.r_end) continue;
        float va = 1.f;
        if constexpr (SC == QG_SC_ROW) va = ss[rh];
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            const int cl = j * 8 + (lane % 4) * 2;
            const int64_t c = e.c0 + cl;
            if (c >= p.cols) continue;
            float v0 = acc[j * 4 + h * 2], v1 = acc[j * 4 + h * 2 + 1];
            qg_epi_scale<SC>(p, e, va, ss + 64, cl, v0, v1);
            qg_store2(p, pair_ok, e.g, r, c, v0, v1);
        }
    }
}

/* The same tile through shared memory: in passes of SB bytes (64 rows x 128-byte boxes,
 * 128B-swizzled so the fragment writes are bank-conflict free), each copied out by one
 * thread's TMA bulk store that runs on while the warpgroup goes on. The store clips at
 * the output's extents; the caller takes this path only when no row of the half lies
 * between r_end and the output's last row. Thread lt == 0 of the warpgroup owns the bulk
 * group: it waits for the previous pass's reads before the staging area is rewritten. */
template <int SC, int NJ, int SB>
__device__ __forceinline__ void qg_epi_tma(const qg_problem &p, const qg_epi &e, float (&acc)[NJ * 4],
                                           const float *ss, const CUtensorMap *tmO, uint8_t *stage, int bar_id,
                                           int lt, int warp, int lane)
{
    const int osz = SC != QG_SC_ROW && p.out_f32 ? 4 : 2; /* FP8 rowwise here: bf16 out only */
    const int cpp = SB / (64 * osz); /* columns per pass */
    const int npass = (NJ * 8 + cpp - 1) / cpp;
    if constexpr (SC == QG_SC_ROW) {
        /* scaled in place, the same products as qg_epi_scale (scales past the extents are 0:
         * those values are clipped by the store) */
        if (!e.zero) {
            float va[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) va[h] = ss[warp * 16 + lane / 4 + h * 8];
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const int cl = j * 8 + (lane % 4) * 2;
                const float s0 = ss[64 + cl], s1 = ss[64 + cl + 1];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    acc[j * 4 + h * 2] = acc[j * 4 + h * 2] * va[h] * s0;
                    acc[j * 4 + h * 2 + 1] = acc[j * 4 + h * 2 + 1] * va[h] * s1;
                }
            }
        }
    }
    for (int ps = 0; ps < npass; ++ps) {
        const int pc0 = ps * cpp;
        if (lt == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        qg_wg_bar(bar_id);
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            if (j * 8 < pc0 || j * 8 >= pc0 + cpp) continue;
            const int cl = j * 8 + (lane % 4) * 2;
            const int byte = (cl - pc0) * osz, box = byte >> 7, inb = byte & 127;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = warp * 16 + lane / 4 + h * 8;
                const float v0 = e.zero ? 0.f : acc[j * 4 + h * 2], v1 = e.zero ? 0.f : acc[j * 4 + h * 2 + 1];
                uint8_t *dst = stage + box * 8192 + row * 128 + ((((inb >> 4) ^ (row & 7)) << 4) | (inb & 15));
                if (osz == 4) *(float2 *)dst = make_float2(v0, v1);
                else *(uint32_t *)dst = (uint32_t)qgmm_f32_to_bf16(v0) | ((uint32_t)qgmm_f32_to_bf16(v1) << 16);
            }
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        qg_wg_bar(bar_id);
        if (lt == 0) {
            const int bw = 128 / osz; /* columns per box */
            for (int b = 0; b * bw < cpp; ++b) {
                const int64_t cb = e.c0 + pc0 + b * bw;
                if (cb < p.cols && e.r0 < e.r_end)
                    tma_store_3d(tmO, h_smem(stage + b * 8192), (int)cb, (int)e.r0,
                                 p.kind == QG_K_GROUPED ? e.g : 0);
            }
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
    }
}
#endif

/* The fast kernel: STAGES ring slots, SB staging bytes per consumer warpgroup (0: every
 * tile stored from registers), CL CTAs per cluster. With CL == 2 the two CTAs of a
 * cluster take the two 128-row halves of a 256 x 256 tile pair of the same group: each
 * loads its own A rows and half of the shared B tile, multicast into both CTAs, so every
 * CTA reads a third less from L2. A half past the group's end (odd row-tile count)
 * computes rows that the epilogue masks. */
template <int E, int SC, int STAGES, int SB, int CL>
__global__ void __launch_bounds__(HTHR, 1)
qg_hopper_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const __grid_constant__ CUtensorMap tmO, const qg_problem p, int pair_ok, int tma_out)
{
#ifdef QG_HAS_WGMMA
    extern __shared__ uint8_t smem_raw[];
    uint8_t *sA, *sB, *sO;
    float *sS;
    uint64_t *full, *empty;
    qg_sched s;
    if (!qg_pipe_init<STAGES, HA_BYTES, HB_BYTES, SB, HBM * CL, HBN, CL>(smem_raw, p, sA, sB, sO, sS, full, empty, s))
        return;
    const uint32_t rank = CL > 1 ? cluster_rank() : 0;
    const int t_first = blockIdx.x / CL, t_step = gridDim.x / CL;

    constexpr int ESZ = E == QG_ELEM_BF16 ? 2 : 1;
    constexpr int BKE = HBKB / ESZ; /* elements per slice */
    constexpr int KALIGN = 16 / ESZ; /* TMA box starts stay 16-byte aligned */
    const int nk = (int)((p.kdim + BKE - 1) / BKE);
    const int wg = threadIdx.x / 128;
    const bool kgrp = p.kind == QG_K_GROUPED;

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = t_first; t < s.total; t += t_step) {
                int g; int64_t r0, c0;
                qg_sched_tile<HBM * CL, HBN>(p, s, t, g, r0, c0);
                r0 += rank * HBM;
                int kbase = 0, nkt = nk;
                if (kgrp) { /* slices start at the group's first token rounded down to 16 bytes */
                    const int kb0 = s.bounds[g], klen = s.bounds[g + 1] - kb0;
                    kbase = kb0 & ~(KALIGN - 1);
                    nkt = klen > 0 ? (klen + (kb0 - kbase) + BKE - 1) / BKE : 0;
                }
                for (int kt = 0; kt < nkt; ++kt, ++it) {
                    const int st = it % STAGES;
                    mbar_wait(&empty[st], ((it / STAGES) & 1) ^ 1);
                    mbar_expect_tx(&full[st], HA_BYTES + HB_BYTES);
                    /* a cluster's half past the last row loads its partner's rows instead
                     * (its output is masked; no box lies wholly outside the tensor) */
                    const int ra = CL > 1 && r0 >= p.rows ? (int)r0 - HBM : (int)r0;
                    tma_2d(h_smem(sA + st * HA_BYTES), &tmA, kbase + kt * BKE, ra, &full[st]);
                    if constexpr (CL == 1) {
                        if (kgrp) tma_2d(h_smem(sB + st * HB_BYTES), &tmB, kbase + kt * BKE, (int)c0, &full[st]);
                        else tma_3d(h_smem(sB + st * HB_BYTES), &tmB, kt * BKE, (int)c0, g, &full[st]);
                    } else { /* this CTA's share of the B rows, into every CTA of the cluster */
                        constexpr int BR = HBN / CL;
                        const uint32_t dst = h_smem(sB + st * HB_BYTES + rank * BR * HBKB);
                        const int cb = (int)c0 + (c0 + (int)rank * BR < p.cols ? (int)rank * BR : 0);
                        const uint16_t mask = (uint16_t)((1u << CL) - 1);
                        if (kgrp) tma_2d_mc(dst, &tmB, kbase + kt * BKE, cb, &full[st], mask);
                        else tma_3d_mc(dst, &tmB, kt * BKE, cb, g, &full[st], mask);
                    }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1;                  /* consumer half: rows cw*64 .. +63 */
        const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
        int it = 0;
        for (int t = t_first; t < s.total; t += t_step) {
            int g; int64_t r0, c0;
            qg_sched_tile<HBM * CL, HBN>(p, s, t, g, r0, c0);
            r0 += rank * HBM;
            int64_t r_end = s.bounds[g + 1];
            int nkt = nk, klen = 0, head = 0;
            if (kgrp) {
                r_end = p.rows;
                klen = s.bounds[g + 1] - s.bounds[g];
                head = s.bounds[g] & (KALIGN - 1); /* tokens of the previous group in slice 0 */
                nkt = klen > 0 ? (klen + head + BKE - 1) / BKE : 0;
            }
            const qg_epi e = {g, r0 + cw * 64, r_end, c0, kgrp && klen == 0};
            float *ss = sS + cw * QG_SCALE_FLOATS;
            if constexpr (SC == QG_SC_ROW) qg_stage_row_scales(p, e, ss, lt, 2 + cw);
            float acc[128];
#pragma unroll
            for (int i = 0; i < 128; ++i) acc[i] = 0.f;
            for (int kt = 0; kt < nkt; ++kt, ++it) {
                const int st = it % STAGES;
                mbar_wait(&full[st], (it / STAGES) & 1);
                const int lo_b = kt == 0 ? head * ESZ : 0;              /* valid bytes of each */
                const int hi_b = min(BKE, klen + head - kt * BKE) * ESZ; /* 128-byte row: [lo_b, hi_b) */
                if (kgrp && (lo_b > 0 || hi_b < HBKB)) {
                    /* K-grouped: the slice holds tokens of the neighbouring groups (before the
                     * group's first token in the first slice, after its last in the last);
                     * zero them in both tiles (128B-swizzled: 16-byte chunk c of row r sits at
                     * chunk c ^ (r % 8)). This warpgroup clears its 64 A rows and half of the
                     * 256 B rows, then both consumers meet before any wgmma. Chunks wholly
                     * inside [lo_b, hi_b) stay as they are, chunks wholly outside are
                     * zeroed, the one or two straddling chunks per row are masked per byte;
                     * the warps reconverge before the barrier and wgmma that follow. */
                    uint8_t *a_st = sA + st * HA_BYTES + cw * 64 * 128;
                    uint8_t *b_st = sB + st * HB_BYTES + cw * 128 * 128;
                    for (int i = lt; i < (64 + 128) * 8; i += 128) {
                        const int row = i >> 3, ch = i & 7, lo = ch * 16;
                        if (lo >= lo_b && lo + 16 <= hi_b) continue;
                        const int rr = row < 64 ? row : row - 64;
                        uint4 *chunk = (uint4 *)((row < 64 ? a_st : b_st) + rr * 128 + ((ch ^ (rr & 7)) << 4));
                        uint4 v = make_uint4(0u, 0u, 0u, 0u);
                        if (lo + 16 > lo_b && lo < hi_b) {
                            v = *chunk;
                            uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                            for (int q = 0; q < 4; ++q) { /* keep bytes [kl, kh) of word q */
                                const int kl = min(max(lo_b - lo - 4 * q, 0), 4);
                                const int kh = min(max(hi_b - lo - 4 * q, 0), 4);
                                const uint32_t mh = kh >= 4 ? 0xFFFFFFFFu : (1u << (8 * kh)) - 1u;
                                const uint32_t ml = kl >= 4 ? 0xFFFFFFFFu : (1u << (8 * kl)) - 1u;
                                w[q] &= mh & ~ml;
                            }
                            v = make_uint4(w[0], w[1], w[2], w[3]);
                        }
                        *chunk = v;
                    }
                    __syncwarp();
                    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                    asm volatile("barrier.sync 1, 256;\n" ::: "memory");
                    __syncwarp();
                }
                const uint64_t da = wg_desc(h_smem(sA + st * HA_BYTES + cw * 64 * 128));
                const uint64_t db = wg_desc(h_smem(sB + st * HB_BYTES));
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int ks = 0; ks < 4; ++ks) {
                    /* +32 bytes along K inside the swizzle atom = +2 in the address field */
                    if constexpr (E == QG_ELEM_BF16) qg_wgmma_bf16(acc, da + 2 * ks, db + 2 * ks);
                    else if constexpr (E == QG_ELEM_E4M3) qg_wgmma_e4m3(acc, da + 2 * ks, db + 2 * ks);
                    else qg_wgmma_e5m2(acc, da + 2 * ks, db + 2 * ks);
                }
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                /* keep this slice's MMAs in flight; the previous slice's are done now,
                 * so its stage goes back to the producer */
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (kt > 0) qg_release<CL>(&empty[(it + STAGES - 1) % STAGES], lane);
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            qg_fence_acc(acc);
            if (nkt > 0) qg_release<CL>(&empty[(it + STAGES - 1) % STAGES], lane);
            if constexpr (SC == QG_SC_ROW) qg_wait_row_scales(2 + cw);
            bool staged = false;
            if constexpr (SB > 0) { /* the whole half lies inside the rows it may write */
                staged = tma_out && (e.r0 + 64 <= r_end || r_end >= p.rows);
                if (staged) qg_epi_tma<SC, 32, SB>(p, e, acc, ss, &tmO, sO + cw * SB, 2 + cw, lt, warp, lane);
            }
            if (!staged) qg_epi_regs<SC, 32>(p, e, acc, ss, pair_ok, warp, lane);
        }
        if (SB > 0 && lt == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
    /* no CTA leaves while a peer may still multicast into it or arrive on its barriers */
    if constexpr (CL > 1) {
        __syncwarp();
        cluster_sync();
    }
#else
    __trap();
#endif
}

/* The promoted-accumulation kernel for FP8 blockwise and MXFP8, M- and K-grouped: 128x128
 * tiles, m64n128 per consumer warpgroup. The scales change along the contraction every
 * P = 128 (blockwise) or 32 (MX) elements, so each P-deep step is accumulated by the
 * tensor cores into a partial that its first wgmma overwrites (scale-d 0), then added on
 * the CUDA cores into the f32 accumulator times sa[row, kb] * sb[col, kb] (DeepGEMM's
 * promotion; for MX the product is a power of two, so it adds no rounding). Where the
 * scales vary per column (MX, K-grouped blockwise), warps 1-3 of the producer warpgroup
 * stage each ring slot's scales in shared memory as f32 (KB blocks x (128 rows + 128
 * columns), zero past the extents) and arrive on the slot's full barrier beside the TMA
 * thread; M-grouped blockwise has one weight scale per tile and slice, which the consumers
 * load a slice ahead into registers.
 * K-grouped: a group's tokens start at a multiple of P (offs_multiple), so its slices start
 * at the group's first token; MX steps past the group's end (the last slice may hold up to
 * 96 tokens of the next group) are not issued. The SC_ROW form (promotion by 1, scales in
 * the epilogue) was measured at 1.3e-4 rel. error, short of the f32-output bound, so this
 * kernel serves bf16 output only: see qgmm_cuda_gemm_hopper. */
constexpr int PBM = 128, PBN = 128;
constexpr int PA_BYTES = PBM * HBKB, PB_BYTES = PBN * HBKB;
constexpr int QG_SCALE_LOADERS = 96; /* threads 32..127 */
/* Scale blocks per 128-deep slice. */
__host__ __device__ constexpr int qg_promo_kb(int sc) { return sc == QG_SC_MX32 ? 4 : 1; }
/* Floats of the scale ring of a promoted kernel with `stages` slots. */
__host__ __device__ constexpr int qg_promo_sf(int sc, int stages) { return stages * qg_promo_kb(sc) * (PBM + PBN); }

#ifdef QG_HAS_WGMMA
/* Token range of tile t's group along the contraction: slices start at kbase, nkt of them,
 * klen valid elements (K-grouped) or the whole K (M-grouped). */
__device__ __forceinline__ void qg_promo_krange(const qg_problem &p, const qg_sched &s, int g, int &kbase, int &nkt,
                                                int &klen)
{
    if (p.kind == QG_K_GROUPED) {
        kbase = s.bounds[g];
        klen = s.bounds[g + 1] - kbase;
        nkt = (klen + HBKB - 1) / HBKB;
    } else {
        kbase = 0;
        klen = (int)p.kdim;
        nkt = (int)((p.kdim + HBKB - 1) / HBKB);
    }
}

/* FP8 blockwise: the f32 scale of tile row (x < 128) or column (x >= 128) in slice kt (one
 * 128-deep block), zero past the extents. */
__device__ __forceinline__ float qg_block_promo_scale(const qg_problem &p, const qg_sched &s, int g, int64_t r0,
                                                      int64_t c0, int kbase, int kt, int x)
{
    const bool col = x >= PBM;
    const int64_t i = col ? c0 + (x - PBM) : r0 + x;
    const int64_t r_end = p.kind == QG_M_GROUPED ? s.bounds[g + 1] : p.rows;
    if (i >= (col ? p.cols : r_end)) return 0.f;
    const int64_t kb = ((int64_t)kbase + (int64_t)kt * HBKB) / 128;
    return qg_block_scale(col ? p.sb : p.sa, col && p.kind == QG_M_GROUPED ? g : 0, i, kb);
}

/* One ring slot's scales, staged by the 96 loader threads (every load of the slot issued
 * before the first store, so their latencies overlap). MX: the slot's 128 rows x 4 blocks
 * of each operand are one 512-byte tile of the blocked layout (tile rows start at a
 * multiple of 128 of the group's padded rows, blocks at a multiple of 4), read as bytes
 * and placed by the layout's inverse map. */
template <int SC>
__device__ __forceinline__ void qg_promo_stage_scales(const qg_problem &p, const qg_sched &s, float *ss, int g,
                                                      int64_t r0, int64_t c0, int kbase, int klen, int kt)
{
    constexpr int SSTAGE = qg_promo_kb(SC) * (PBM + PBN);
    constexpr int PER = (SSTAGE + QG_SCALE_LOADERS - 1) / QG_SCALE_LOADERS;
    const int lt = (int)threadIdx.x - 32;
    if constexpr (SC == QG_SC_MX32) {
        const int64_t r_end = p.kind == QG_M_GROUPED ? s.bounds[g + 1] : p.rows;
        /* a cluster's second half may lie past the rows: its tile is not read */
        const bool a_in = r0 < r_end;
        const uint8_t *ta = (const uint8_t *)p.sa.ptr + (a_in ? qg_mx_offset(p, s, 0, g, r0, (int64_t)kt * 4) : 0);
        const uint8_t *tb = (const uint8_t *)p.sb.ptr + qg_mx_offset(p, s, 1, g, c0, (int64_t)kt * 4);
        uint32_t raw[PER];
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int i = lt + q * QG_SCALE_LOADERS;
            raw[q] = i < 1024 && (i >= 512 || a_in) ? __ldg((i < 512 ? ta : tb) + (i & 511)) : 0u;
        }
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int i = lt + q * QG_SCALE_LOADERS;
            if (i >= 1024) continue;
            const int col = i >= 512, inner = i & 511;
            const int rl = ((inner % 16) / 4) * 32 + inner / 16, bl = inner % 4;
            const bool ok = (col ? c0 + rl < p.cols : r0 + rl < r_end) && ((int64_t)kt * 4 + bl) * 32 < klen;
            ss[bl * (PBM + PBN) + col * PBM + rl] = ok ? qgmm_e8m0_to_f32((uint8_t)raw[q]) : 0.f;
        }
    } else {
        float v[PER];
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int i = lt + q * QG_SCALE_LOADERS;
            v[q] = i < SSTAGE ? qg_block_promo_scale(p, s, g, r0, c0, kbase, kt, i) : 0.f;
        }
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int i = lt + q * QG_SCALE_LOADERS;
            if (i < SSTAGE) ss[i] = v[q];
        }
    }
}

/* part = A . B of one step (m64n128, k32 per instruction, scale-d 0 starts a new sum). */
template <int E>
__device__ __forceinline__ void qg_wgmma128(float (&part)[64], uint64_t da, uint64_t db, int scale_d)
{
    if constexpr (E == QG_ELEM_E4M3) qg_wgmma128_e4m3(part, da, db, scale_d);
    else qg_wgmma128_e5m2(part, da, db, scale_d);
}

template <int E>
__device__ __forceinline__ void qg_wgmma64(float (&part)[32], uint64_t da, uint64_t db, int scale_d)
{
    if constexpr (E == QG_ELEM_E4M3) qg_wgmma64_e4m3(part, da, db, scale_d);
    else qg_wgmma64_e5m2(part, da, db, scale_d);
}

/* acc += part * sa[row] * sb[col] for this thread's fragment of NJ 8-column groups starting
 * at column group J0 (rows row0 and row0 + 8, columns j*8 + (lane%4)*2 + {0,1}); ss: the
 * block's 128 row then 128 column scales. */
template <int NJ, int J0>
__device__ __forceinline__ void qg_promote(float (&acc)[64], const float (&part)[NJ * 4], const float *ss, int row0,
                                           int lane)
{
    const float a0 = ss[row0], a1 = ss[row0 + 8];
    const float *sc = ss + PBM;
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
        const float2 b = *(const float2 *)(sc + (J0 + j) * 8 + (lane % 4) * 2);
        acc[(J0 + j) * 4 + 0] += (a0 * b.x) * part[j * 4 + 0];
        acc[(J0 + j) * 4 + 1] += (a0 * b.y) * part[j * 4 + 1];
        acc[(J0 + j) * 4 + 2] += (a1 * b.x) * part[j * 4 + 2];
        acc[(J0 + j) * 4 + 3] += (a1 * b.y) * part[j * 4 + 3];
    }
}

/* The same with one column scale for the whole tile (M-grouped blockwise: the weights'
 * 128x128 blocks), m0 / m1 = sa[row] * sb: one FMA per element. */
__device__ __forceinline__ void qg_promote_rows(float (&acc)[64], const float (&part)[64], float m0, float m1)
{
#pragma unroll
    for (int j = 0; j < 16; ++j) {
        acc[j * 4 + 0] += m0 * part[j * 4 + 0];
        acc[j * 4 + 1] += m0 * part[j * 4 + 1];
        acc[j * 4 + 2] += m1 * part[j * 4 + 2];
        acc[j * 4 + 3] += m1 * part[j * 4 + 3];
    }
}
#endif

template <int E, int SC, int STAGES, int SB, int CL>
__global__ void __launch_bounds__(HTHR, 1)
qg_hopper_promo_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                       const __grid_constant__ CUtensorMap tmO, const qg_problem p, int pair_ok, int tma_out)
{
    static_assert(SC == QG_SC_BLOCK128 || SC == QG_SC_MX32, "the promoted kernel serves block-scaled recipes");
#ifdef QG_HAS_WGMMA
    constexpr int KB = qg_promo_kb(SC), SSTAGE = KB * (PBM + PBN);
    extern __shared__ uint8_t smem_raw[];
    uint8_t *sA, *sB, *sO;
    float *sS;
    uint64_t *full, *empty;
    qg_sched s;
    const bool kgrp = p.kind == QG_K_GROUPED;
    /* the loader warps stage per-column scales (MX, K-grouped blockwise); M-grouped
     * blockwise needs one weight scale per tile, which its consumers load themselves */
    const bool loaders = SC == QG_SC_MX32 || kgrp;
    if (!qg_pipe_init<STAGES, PA_BYTES, PB_BYTES, SB, PBM * CL, PBN, CL, qg_promo_sf(SC, STAGES)>(
            smem_raw, p, sA, sB, sO, sS, full, empty, s, loaders ? 1 + QG_SCALE_LOADERS : 1))
        return;
    const uint32_t rank = CL > 1 ? cluster_rank() : 0;
    const int t_first = blockIdx.x / CL, t_step = gridDim.x / CL;
    const int wg = threadIdx.x / 128;

    if (wg == 0) {
        /* the scale loaders hold a slot's loads (measured: with 40, K-grouped blockwise
         * lost a third; the consumers' 224 cost M-grouped blockwise under a tenth) */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
        if (threadIdx.x == 0 || (loaders && threadIdx.x >= 32)) {
            const bool tma = threadIdx.x == 0;
            int it = 0;
            for (int t = t_first; t < s.total; t += t_step) {
                int g; int64_t r0, c0;
                qg_sched_tile<PBM * CL, PBN>(p, s, t, g, r0, c0);
                r0 += rank * PBM;
                int kbase, nkt, klen;
                qg_promo_krange(p, s, g, kbase, nkt, klen);
                const int ra = CL > 1 && r0 >= p.rows ? (int)r0 - PBM : (int)r0; /* see the fast kernel */
                for (int kt = 0; kt < nkt; ++kt, ++it) {
                    const int st = it % STAGES;
                    mbar_wait(&empty[st], ((it / STAGES) & 1) ^ 1);
                    if (!tma) {
                        qg_promo_stage_scales<SC>(p, s, sS + st * SSTAGE, g, r0, c0, kbase, klen, kt);
                        mbar_arrive(&full[st]);
                        continue;
                    }
                    const int k0 = kbase + kt * HBKB;
                    mbar_expect_tx(&full[st], PA_BYTES + PB_BYTES);
                    tma_2d(h_smem(sA + st * PA_BYTES), &tmA, k0, ra, &full[st]);
                    if constexpr (CL == 1) {
                        if (kgrp) tma_2d(h_smem(sB + st * PB_BYTES), &tmB, k0, (int)c0, &full[st]);
                        else tma_3d(h_smem(sB + st * PB_BYTES), &tmB, k0, (int)c0, g, &full[st]);
                    } else {
                        constexpr int BR = PBN / CL;
                        const int cb = (int)c0 + (c0 + (int)rank * BR < p.cols ? (int)rank * BR : 0);
                        const uint32_t dst = h_smem(sB + st * PB_BYTES + rank * BR * HBKB);
                        const uint16_t mask = (uint16_t)((1u << CL) - 1);
                        if (kgrp) tma_2d_mc(dst, &tmB, k0, cb, &full[st], mask);
                        else tma_3d_mc(dst, &tmB, k0, cb, g, &full[st], mask);
                    }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
        const int cw = wg - 1;
        const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
        const int row0 = cw * 64 + warp * 16 + lane / 4; /* this thread's rows: row0, row0 + 8 */
        float part[64], lo[32], hi[32]; /* part: blockwise; lo, hi: the MX halves */
#pragma unroll
        for (int i = 0; i < 64; ++i) part[i] = 0.f;
#pragma unroll
        for (int i = 0; i < 32; ++i) lo[i] = hi[i] = 0.f;
        int it = 0;
        for (int t = t_first; t < s.total; t += t_step) {
            int g; int64_t r0, c0;
            qg_sched_tile<PBM * CL, PBN>(p, s, t, g, r0, c0);
            r0 += rank * PBM;
            int kbase, nkt, klen;
            qg_promo_krange(p, s, g, kbase, nkt, klen);
            const int64_t r_end = kgrp ? p.rows : s.bounds[g + 1];
            float acc[64];
#pragma unroll
            for (int i = 0; i < 64; ++i) acc[i] = 0.f;
            /* M-grouped blockwise: one weight scale per slice for the whole tile and one
             * activation scale per row, loaded a slice ahead into registers */
            const bool mblk = SC == QG_SC_BLOCK128 && !kgrp;
            const int64_t rr0 = r0 + row0, rr1 = rr0 + 8;
            float nb = 0.f, na0 = 0.f, na1 = 0.f;
            if (mblk && nkt > 0) {
                nb = qg_block_scale(p.sb, g, c0, 0);
                na0 = rr0 < r_end ? qg_block_scale(p.sa, 0, rr0, 0) : 0.f;
                na1 = rr1 < r_end ? qg_block_scale(p.sa, 0, rr1, 0) : 0.f;
            }
            for (int kt = 0; kt < nkt; ++kt, ++it) {
                const int st = it % STAGES;
                const float m0 = na0 * nb, m1 = na1 * nb;
                if (mblk && kt + 1 < nkt) {
                    nb = qg_block_scale(p.sb, g, c0, kt + 1);
                    na0 = rr0 < r_end ? qg_block_scale(p.sa, 0, rr0, kt + 1) : 0.f;
                    na1 = rr1 < r_end ? qg_block_scale(p.sa, 0, rr1, kt + 1) : 0.f;
                }
                mbar_wait(&full[st], (it / STAGES) & 1);
                const float *ss = sS + st * SSTAGE;
                const uint64_t da = wg_desc(h_smem(sA + st * PA_BYTES + cw * 64 * 128));
                const uint64_t db = wg_desc(h_smem(sB + st * PB_BYTES));
                /* +32 bytes along K = +2 in the address field */
                if constexpr (SC == QG_SC_BLOCK128) {
                    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                    for (int ks = 0; ks < 4; ++ks) qg_wgmma128<E>(part, da + 2 * ks, db + 2 * ks, ks > 0);
                    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
                    qg_fence_acc(part);
                    if (mblk) qg_promote_rows(acc, part, m0, m1);
                    else qg_promote<16, 0>(acc, part, ss, row0, lane);
                } else {
                    /* one 32-deep MX block per step, each step in two m64n64 halves: the
                     * tensor cores run one half while the other is promoted. Only the
                     * blocks inside the contraction (group) are issued. */
                    const int nh = 2 * min(4, (klen - kt * HBKB + 31) / 32);
                    const uint64_t db_hi = db + ((64 * 128) >> 4); /* B rows 64..127 */
#define QG_MX_HALF(I, CUR, NEXT)                                                                      \
    if (I < nh) {                                                                                     \
        if (I + 1 < nh) {                                                                             \
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");                                 \
            qg_wgmma64<E>(NEXT, da + 2 * ((I + 1) / 2), ((I + 1) & 1 ? db_hi : db) + 2 * ((I + 1) / 2), 0); \
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");                          \
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");                          \
        } else {                                                                                      \
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");                          \
        }                                                                                             \
        qg_fence_acc(CUR);                                                                            \
        qg_promote<8, (I & 1) * 8>(acc, CUR, ss + (I / 2) * (PBM + PBN), row0, lane);                 \
    }
                    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
                    qg_wgmma64<E>(lo, da, db, 0);
                    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                    QG_MX_HALF(0, lo, hi)
                    QG_MX_HALF(1, hi, lo)
                    QG_MX_HALF(2, lo, hi)
                    QG_MX_HALF(3, hi, lo)
                    QG_MX_HALF(4, lo, hi)
                    QG_MX_HALF(5, hi, lo)
                    QG_MX_HALF(6, lo, hi)
                    QG_MX_HALF(7, hi, lo)
#undef QG_MX_HALF
                }
                qg_release<CL>(&empty[st], lane);
            }
            const qg_epi e = {g, r0 + cw * 64, r_end, c0, kgrp && klen == 0};
            bool staged = false;
            if constexpr (SB > 0) { /* the whole half lies inside the rows it may write */
                staged = tma_out && (e.r0 + 64 <= r_end || r_end >= p.rows);
                if (staged)
                    qg_epi_tma<QG_SC_NONE, 16, SB>(p, e, acc, nullptr, &tmO, sO + cw * SB, 2 + cw, lt, warp, lane);
            }
            if (!staged) qg_epi_regs<QG_SC_NONE, 16>(p, e, acc, nullptr, pair_ok, warp, lane);
        }
        if (SB > 0 && lt == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
    if constexpr (CL > 1) {
        __syncwarp();
        cluster_sync();
    }
#else
    __trap();
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 qg_encode_fn()
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    static bool tried = false;
    if (!tried) {
        tried = true;
        void *f = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)f;
    }
    return fn;
}

/* Tensor maps of a (M, K) and b (E, N, K) with 128-byte-wide boxes of `brows_a` / `brows_b`
 * rows (128B swizzle, zero fill out of bounds). */
int qg_make_maps(const qg_problem *p, int brows_a, int brows_b, CUtensorMap *ta, CUtensorMap *tb, const char **why)
{
    const int esz = p->elem == QG_ELEM_BF16 ? 2 : 1;
    PFN_cuTensorMapEncodeTiled_v12000 enc = qg_encode_fn();
    if (!enc) { *why = "Hopper grouped GEMM: cuTensorMapEncodeTiled not available"; return 1; }
    const CUtensorMapDataType dt = p->elem == QG_ELEM_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    const int bke = HBKB / esz;
    memset(ta, 0, sizeof *ta);
    memset(tb, 0, sizeof *tb);
    {
        const cuuint64_t dims[2] = {(cuuint64_t)p->kdim, (cuuint64_t)(p->rows > 0 ? p->rows : 1)};
        const cuuint64_t strides[1] = {(cuuint64_t)(p->a.s_row * esz)};
        const cuuint32_t box[2] = {(cuuint32_t)bke, (cuuint32_t)brows_a};
        const cuuint32_t es[2] = {1, 1};
        if (enc(ta, dt, 2, (void *)p->a.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for a rejected";
            return 1;
        }
    }
    if (p->kind == QG_K_GROUPED) { /* b (M, K) stored K x M (token-contiguous) */
        const cuuint64_t dims[2] = {(cuuint64_t)p->kdim, (cuuint64_t)p->cols};
        const cuuint64_t strides[1] = {(cuuint64_t)(p->b.s_row * esz)};
        const cuuint32_t box[2] = {(cuuint32_t)bke, (cuuint32_t)brows_b};
        const cuuint32_t es[2] = {1, 1};
        if (enc(tb, dt, 2, (void *)p->b.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for b rejected";
            return 1;
        }
    } else {
        const cuuint64_t dims[3] = {(cuuint64_t)p->kdim, (cuuint64_t)p->cols, (cuuint64_t)p->groups};
        const cuuint64_t strides[2] = {(cuuint64_t)(p->b.s_row * esz),
                                       (cuuint64_t)((p->groups > 1 ? p->b.s_grp : p->b.s_row * p->cols) * esz)};
        const cuuint32_t box[3] = {(cuuint32_t)bke, (cuuint32_t)brows_b, 1};
        const cuuint32_t es[3] = {1, 1, 1};
        if (enc(tb, dt, 3, (void *)p->b.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for b rejected";
            return 1;
        }
    }
    return 0;
}

/* Tensor map of the output for the epilogue's TMA stores: (column, row, group) with
 * 128-byte x 64-row boxes, 128B swizzle. Returns 0 when the output cannot take TMA
 * stores (not row-contiguous, rows or groups not 16-byte aligned): the kernel then
 * stores from registers. */
int qg_make_out_map(const qg_problem *p, CUtensorMap *to)
{
    const int osz = p->out_f32 ? 4 : 2;
    const bool kg = p->kind == QG_K_GROUPED;
    if (p->so_c != 1 || ((uintptr_t)p->out % 16) != 0 || (p->so_r * osz) % 16 != 0 || p->so_r < p->cols ||
        (kg && ((p->so_g * osz) % 16 != 0 || p->so_g < p->so_r * p->rows)) || p->rows <= 0 || p->cols <= 0)
        return 0;
    PFN_cuTensorMapEncodeTiled_v12000 enc = qg_encode_fn();
    if (!enc) return 0;
    memset(to, 0, sizeof *to);
    const cuuint64_t dims[3] = {(cuuint64_t)p->cols, (cuuint64_t)p->rows, (cuuint64_t)(kg ? p->groups : 1)};
    const cuuint64_t strides[2] = {(cuuint64_t)(p->so_r * osz),
                                   (cuuint64_t)((kg ? p->so_g : p->so_r * p->rows) * osz)};
    const cuuint32_t box[3] = {(cuuint32_t)(128 / osz), 64, 1};
    const cuuint32_t es[3] = {1, 1, 1};
    return enc(to, p->out_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, p->out, dims,
               strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <typename K>
int qg_launch_tma_kernel(K kern, const qg_problem *p, cudaStream_t stream, int bm, int bn, int cl, size_t smem,
                         int sms, const char **why)
{
    CUtensorMap ta, tb, to;
    const int rc = qg_make_maps(p, bm, bn / cl, &ta, &tb, why);
    if (rc) return rc;
    const int tma_out = qg_make_out_map(p, &to);
    if (!tma_out) memset(&to, 0, sizeof to);
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) {
        *why = "Hopper grouped GEMM: cudaFuncSetAttribute failed";
        return 2;
    }
    /* one CTA (cluster) per SM (cluster slot), no more than there are tiles (tile pairs) */
    const int64_t tr = (p->rows + bm * cl - 1) / (bm * cl), tcn = (p->cols + bn - 1) / bn;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)cl;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(HTHR, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = cl > 1 ? 1 : 0; /* a plain launch without clusters */
    int64_t units = sms > 0 ? sms : 1;
    if (cl > 1) {
        int clusters = 0;
        cfg.gridDim = dim3((unsigned)(units - units % cl), 1, 1);
        if (cudaOccupancyMaxActiveClusters(&clusters, kern, &cfg) != cudaSuccess || clusters < 1) {
            *why = "Hopper grouped GEMM: no cluster of this size fits";
            return 1;
        }
        units = clusters;
    }
    const int64_t bound = p->kind == QG_M_GROUPED ? (tr + p->groups) * tcn : (int64_t)p->groups * tr * tcn;
    if (bound < units) units = bound;
    if (units < 1) units = 1;
    cfg.gridDim = dim3((unsigned)(units * cl), 1, 1);
    const int osz = p->out_f32 ? 4 : 2;
    const int pair_ok = p->so_c == 1 && (p->so_r % 2) == 0 && ((uintptr_t)p->out % (2 * osz)) == 0;
    if (cudaLaunchKernelEx(&cfg, kern, ta, tb, to, *p, pair_ok, tma_out) != cudaSuccess ||
        cudaGetLastError() != cudaSuccess) {
        *why = "Hopper grouped GEMM: kernel launch failed";
        return 2;
    }
    return 0;
}

/* One Hopper kernel configuration: which kernel, ring depth, staging bytes per consumer,
 * CTAs per cluster. */
struct qg_hconf {
    bool promo;  /* the 128x128 promoted kernel (FP8 blockwise), else the 128x256 fast one */
    int stages;
    int sb;      /* 0: epilogue from registers */
    int cl;      /* 2: B tiles multicast to a pair of CTAs */
};

/* The configurations each kernel is built in; the benchmark names one through
 * qg_problem.variant (index + 1), the ops take the one qg_default_conf picks. */
enum { QG_CONF_STAGED = 0, /* TMA-store epilogue, one CTA */
       QG_CONF_REGS = 1,   /* register epilogue, deepest ring, one CTA: where a staged one does
                            * not fit beside the schedule of many groups */
       QG_CONF_CLUSTER = 2 /* TMA-store epilogue, B tiles multicast to a pair of CTAs */ };
constexpr qg_hconf QG_FAST_CONFS[] = {{false, 3, 32768, 1}, {false, 4, 0, 1}, {false, 3, 32768, 2}};
constexpr qg_hconf QG_PROMO_CONFS[] = {{true, 5, 16384, 1}, {true, 6, 0, 1}, {true, 5, 16384, 2}};
constexpr int QG_NCONFS = 3;

size_t qg_conf_smem(const qg_hconf &c, int sc, int groups)
{
    const size_t fixed = c.promo ? qg_smem_fixed(c.stages, PA_BYTES, PB_BYTES, c.sb, qg_promo_sf(sc, c.stages))
                                 : qg_smem_fixed(c.stages, HA_BYTES, HB_BYTES, c.sb, 2 * QG_SCALE_FLOATS);
    return fixed + (size_t)qg_sched_smem_ints(groups) * 4;
}

/* The default configuration of a problem. K-grouped FP8 rowwise (wgrad) takes the 2-CTA
 * cluster: its tiles are short (a group's tokens deep) and both CTAs of a pair share every
 * B slice, so the multicast halves that operand's L2 reads. Everything else stays on one
 * CTA: M-grouped pairs of 128-row tiles waste more rows at group ends and leave half as
 * many scheduling units, and on the H100 the cluster was slower there and no faster for
 * K-grouped BF16 (figures: docs/backends-cuda-gemm.md). */
int qg_default_conf(const qg_problem *p, bool promo)
{
    return !promo && p->kind == QG_K_GROUPED && p->scale_mode == QG_SC_ROW ? QG_CONF_CLUSTER : QG_CONF_STAGED;
}

template <int E, int SC>
int qg_launch_conf(const qg_hconf &c, const qg_problem *p, cudaStream_t stream, size_t smem, int sms,
                   const char **why)
{
#define QG_LC(PROMO, ST, SB, CL)                                                                      \
    if (c.promo == PROMO && c.stages == ST && c.sb == SB && c.cl == CL) {                            \
        if constexpr (PROMO) {                                                                       \
            if constexpr (SC == QG_SC_BLOCK128 || SC == QG_SC_MX32)                                  \
                return qg_launch_tma_kernel(qg_hopper_promo_kernel<E, SC, ST, SB, CL>, p, stream, PBM, PBN, CL, \
                                            smem, sms, why);                                         \
        } else if constexpr (SC == QG_SC_NONE || SC == QG_SC_ROW) {                                  \
            return qg_launch_tma_kernel(qg_hopper_kernel<E, SC, ST, SB, CL>, p, stream, HBM, HBN, CL, smem, \
                                        sms, why);                                                   \
        }                                                                                            \
    }
    QG_LC(false, 3, 32768, 1)
    QG_LC(false, 4, 0, 1)
    QG_LC(false, 3, 32768, 2)
    QG_LC(true, 5, 16384, 1)
    QG_LC(true, 6, 0, 1)
    QG_LC(true, 5, 16384, 2)
#undef QG_LC
    *why = "Hopper grouped GEMM: configuration not built";
    return 1;
}

int qg_launch_recipe(const qg_hconf &c, const qg_problem *p, cudaStream_t stream, size_t smem, int sms,
                     const char **why)
{
    if (p->elem == QG_ELEM_BF16 && p->scale_mode == QG_SC_NONE)
        return qg_launch_conf<QG_ELEM_BF16, QG_SC_NONE>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E4M3 && p->scale_mode == QG_SC_ROW)
        return qg_launch_conf<QG_ELEM_E4M3, QG_SC_ROW>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E5M2 && p->scale_mode == QG_SC_ROW)
        return qg_launch_conf<QG_ELEM_E5M2, QG_SC_ROW>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E4M3 && p->scale_mode == QG_SC_BLOCK128)
        return qg_launch_conf<QG_ELEM_E4M3, QG_SC_BLOCK128>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E5M2 && p->scale_mode == QG_SC_BLOCK128)
        return qg_launch_conf<QG_ELEM_E5M2, QG_SC_BLOCK128>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E4M3 && p->scale_mode == QG_SC_MX32)
        return qg_launch_conf<QG_ELEM_E4M3, QG_SC_MX32>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E5M2 && p->scale_mode == QG_SC_MX32)
        return qg_launch_conf<QG_ELEM_E5M2, QG_SC_MX32>(c, p, stream, smem, sms, why);
    *why = "Hopper grouped GEMM: element type / recipe not implemented";
    return 1;
}

} // namespace

/* The one place that decides whether and how the Hopper kernels take a problem. */
int qgmm_cuda_gemm_hopper(const qg_problem *p, cudaStream_t stream, const char **why)
{
    int dev = 0, maj = 0, min = 0, sms = 0, maxsm = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&maj, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&min, cudaDevAttrComputeCapabilityMinor, dev);
    if (maj != 9 || min != 0) { *why = "Hopper grouped GEMM: needs an sm_90 GPU"; return 1; }
    /* QGMMA accumulates fp8 products with reduced precision: measured on the H100, rel.
     * error vs float64 2e-4..5e-4 accumulating a whole K of 128..1024 (bit-identical to
     * torch._scaled_grouped_mm(use_fast_accum=True)) and still 1.3e-4 when promoted into
     * f32 every 128-deep slice. Both pass the bf16-output bound (1e-2), neither the f32 one
     * (1e-5): FP8 with f32 output runs on the portable kernel (exact products, f32 sums).
     * BF16 and FP8 rowwise -> the fast 128x256 kernel; FP8 blockwise and MXFP8 -> the
     * promoted 128x128 kernel (per-block scales need the promotion anyway). */
    const bool fast = p->scale_mode == QG_SC_NONE || (p->scale_mode == QG_SC_ROW && !p->out_f32);
    const bool promo = p->elem != QG_ELEM_BF16 && !p->out_f32 &&
                       (p->scale_mode == QG_SC_BLOCK128 || p->scale_mode == QG_SC_MX32);
    if (!fast && !promo) {
        *why = "Hopper grouped GEMM: FP8 with f32 output is not implemented (the portable kernel's exact sums)";
        return 1;
    }
    const int esz = p->elem == QG_ELEM_BF16 ? 2 : 1;
    const bool tma_ok = p->a.s_k == 1 && p->b.s_k == 1 && ((uintptr_t)p->a.ptr % 16) == 0 &&
                        ((uintptr_t)p->b.ptr % 16) == 0 && ((p->a.s_row * esz) % 16) == 0 &&
                        ((p->b.s_row * esz) % 16) == 0 && ((p->b.s_grp * esz) % 16) == 0 &&
                        p->kdim > 0 && p->rows < (1ll << 31) && p->cols < (1ll << 31) &&
                        (p->kind == QG_K_GROUPED || p->groups == 1 || p->b.s_grp > 0);
    if (!tma_ok) { *why = "Hopper grouped GEMM: operands not K-contiguous with 16-byte aligned rows"; return 1; }
    if (p->variant < 0 || p->variant > QG_NCONFS) { *why = "Hopper grouped GEMM: no such variant"; return 1; }
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&maxsm, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    /* the default configuration, or the register-epilogue one where its staging does not
     * fit beside the schedule of many groups, or one CTA where no cluster can be placed */
    const qg_hconf *confs = promo ? QG_PROMO_CONFS : QG_FAST_CONFS;
    qg_hconf c = confs[p->variant > 0 ? p->variant - 1 : qg_default_conf(p, promo)];
    if (p->variant == 0 && qg_conf_smem(c, p->scale_mode, p->groups) > (size_t)maxsm) c = confs[QG_CONF_REGS];
    const size_t smem = qg_conf_smem(c, p->scale_mode, p->groups);
    if (smem > (size_t)maxsm) { *why = "Hopper grouped GEMM: too many groups for shared memory"; return 1; }
    const int rc = qg_launch_recipe(c, p, stream, smem, sms, why);
    if (rc == 1 && p->variant == 0 && c.cl > 1) /* the cluster could not be placed */
        return qg_launch_recipe(confs[QG_CONF_STAGED], p, stream, smem, sms, why);
    return rc;
}
