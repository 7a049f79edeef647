/*
 * gemm_hopper_common.cuh — what both Hopper kernels share: shared-memory plan, mbarrier and TMA
 * wrappers, the consumer release, the epilogue (rowwise scales, staged TMA store or
 * register store).
 * Included by gemm_hopper.cu only (one translation unit, anonymous namespace).
 */
#pragma once

#include "gemm_scales.cuh"
#include "gemm_wgmma.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

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
/* MN-major 16-bit operand in 128-byte-swizzled smem, as TMA writes a box of 64 elements
 * along M/N by contraction rows: each contraction index one 128-byte row, 8-row atoms
 * 1024 apart (stride byte offset), 64-element M/N blocks `mn_block` bytes apart (leading
 * byte offset). */
__device__ __forceinline__ uint64_t wg_desc_mn(uint32_t addr, uint32_t mn_block)
{
    uint64_t d = (uint64_t)((addr & 0x3FFFFu) >> 4);
    d |= (uint64_t)(mn_block >> 4) << 16; /* leading byte offset: next 64 M/N elements */
    d |= (uint64_t)(1024 >> 4) << 32;     /* stride byte offset: next 8 contraction rows */
    d |= (uint64_t)1 << 62;               /* 128B swizzle */
    return d;
}
#endif

#ifdef QG_HAS_WGMMA
/* The dynamic shared memory of every kernel here: STAGES A and B slots (1024-aligned for
 * the 128-byte swizzle), two epilogue staging areas of SB bytes (one per consumer
 * warpgroup), SF scale floats, the full/empty barriers, then the tile schedule. Builds the
 * schedule and initialises the barriers (full_arrivals arrive on each full barrier: the
 * TMA thread's, plus the scale loaders' of the promoted kernel; empty_arrivals on each
 * empty one, 0: every consumer thread of both warpgroups, or with clusters one per consumer
 * warp of every CTA); false when offs is bad (nothing may be written then). */
template <int STAGES, int A_BYTES, int B_BYTES, int SB, int BM, int BN, int CL = 1, int SF = 2 * QG_SCALE_FLOATS>
__device__ __forceinline__ bool qg_pipe_init(uint8_t *smem_raw, const qg_problem &p, uint8_t *&sA, uint8_t *&sB,
                                             uint8_t *&sO, float *&sS, uint64_t *&full, uint64_t *&empty,
                                             qg_sched &s, int full_arrivals = 1,
                                             int empty_arrivals = 0)
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
            mbar_init(&empty[i], empty_arrivals > 0 ? empty_arrivals : CL == 1 ? 256 : CL * 8);
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

/* Shared-memory accesses by 32-bit shared addresses (h_smem): the generic pointers the
 * compiler cannot prove shared become generic loads and stores. Volatile with a memory
 * clobber, so they stay on their side of the barriers around them. */
__device__ __forceinline__ void st_shared_u32(uint32_t at, uint32_t v)
{
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(at), "r"(v) : "memory");
}
__device__ __forceinline__ void st_shared_v2f32(uint32_t at, float x, float y)
{
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(at), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ void st_shared_v4u32(uint32_t at, uint4 v)
{
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(at), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
__device__ __forceinline__ uint4 ld_shared_v4u32(uint32_t at)
{
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(at)
                 : "memory");
    return v;
}
__device__ __forceinline__ float ld_shared_f32(uint32_t at)
{
    float v;
    asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(at) : "memory");
    return v;
}
__device__ __forceinline__ float2 ld_shared_v2f32(uint32_t at)
{
    float2 v;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(at) : "memory");
    return v;
}

/* K-grouped: in one ring slot, zero what belongs to the neighbouring groups, so that only the
 * group's tokens [lo, hi) of the slice (bytes [lo_b, hi_b) of a K-major row) feed the wgmma.
 * AR rows of A at a_st and BR rows of B at b_st, one warpgroup (lt: its thread). MN-major: a
 * row is one token (64 per box) and is cleared whole. K-major: each 128-byte row is
 * 128B-swizzled (16-byte chunk c of row r sits at chunk c ^ (r % 8)); chunks wholly inside
 * the group stay, chunks wholly outside are zeroed, the one or two straddling chunks per row
 * are masked per byte. A thread takes one chunk column (lt % 8) of every 16th row from
 * lt / 8: whether that chunk is inside, outside or straddling, and where the swizzle puts
 * it, is the same in all its rows. The caller fences the async proxy and meets the other
 * warps after. */
template <bool A_MN, bool B_MN, int AR, int BR>
__device__ __forceinline__ void qg_zero_outside_group(uint8_t *a_st, uint8_t *b_st, int lo, int hi, int lo_b, int hi_b,
                                                      int lt)
{
    static_assert(AR % 16 == 0 && BR % 16 == 0, "rows in steps of 16 (128 threads, 8 chunks a row)");
    const int ch = lt & 7, r0 = lt >> 3, c_lo = ch * 16;
    const uint32_t sw = (uint32_t)((ch ^ (r0 & 7)) << 4); /* r0 + 16 k: the same row % 8 */
    const bool inside = c_lo >= lo_b && c_lo + 16 <= hi_b;
    const bool outside = c_lo + 16 <= lo_b || c_lo >= hi_b;
    /* straddling: keep bytes [lo_b, hi_b) of the chunk, word q's bytes [kl, kh); found per
     * row rather than held through the loop (registers are short in the promoting kernels) */
    const auto masked = [&](uint4 v) {
        uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int kl = min(max(lo_b - c_lo - 4 * q, 0), 4);
            const int kh = min(max(hi_b - c_lo - 4 * q, 0), 4);
            const uint32_t mh = kh >= 4 ? 0xFFFFFFFFu : (1u << (8 * kh)) - 1u;
            const uint32_t ml = kl >= 4 ? 0xFFFFFFFFu : (1u << (8 * kl)) - 1u;
            w[q] &= mh & ~ml;
        }
        return make_uint4(w[0], w[1], w[2], w[3]);
    };
    const auto clear = [&](uint32_t base, int rows, bool mn) {
        if (!mn && inside) return;
#pragma unroll 1
        for (int r = r0; r < rows; r += 16) {
            const uint32_t at = base + (uint32_t)r * 128u + sw;
            if (mn) {
                const int tok = r & 63;
                if (tok < lo || tok >= hi) st_shared_v4u32(at, make_uint4(0u, 0u, 0u, 0u));
            } else {
                st_shared_v4u32(at, outside ? make_uint4(0u, 0u, 0u, 0u) : masked(ld_shared_v4u32(at)));
            }
        }
    };
    clear(h_smem(a_st), AR, A_MN);
    clear(h_smem(b_st), BR, B_MN);
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

/* FP8 rowwise: the scales of a tile half (ss[0..63] its rows, ss[64..64+COLS) its columns,
 * zero past the extents) are copied into shared memory by cp.async when the tile starts,
 * so the epilogue does not wait on global loads. The barrier first keeps the previous
 * tile's epilogue readers from seeing them change. */
template <int COLS = 256>
__device__ __forceinline__ void qg_stage_row_scales(const qg_problem &p, const qg_epi &e, float *ss, int lt,
                                                    int bar_id)
{
    qg_wg_bar(bar_id);
    for (int i = lt; i < 64 + COLS; i += 128) {
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

/* The passes of qg_epi_tma for OSZ-byte output elements: every pass's width, the fragments
 * it holds and its boxes are compile-time, so the loops unroll with no per-fragment test. */
template <int NJ, int SB, bool PEND, int OSZ>
__device__ __forceinline__ void qg_epi_tma_passes(const qg_problem &p, const qg_epi &e, const float (&acc)[NJ * 4],
                                                  const CUtensorMap *tmO, uint8_t *stage, int bar_id, int lt,
                                                  int warp, int lane)
{
    constexpr int cpp = SB / (64 * OSZ); /* columns per pass */
    constexpr int npass = (NJ * 8 + cpp - 1) / cpp;
    constexpr int bw = 128 / OSZ; /* columns per box */
    const uint32_t stage_at = h_smem(stage);
#pragma unroll
    for (int ps = 0; ps < npass; ++ps) {
        const int pc0 = ps * cpp;
        if (lt == 0) {
            if (PEND && npass == 1) asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
            else asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        }
        qg_wg_bar(bar_id);
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
            if (j * 8 < pc0 || j * 8 >= pc0 + cpp) continue;
            const int cl = j * 8 + (lane % 4) * 2;
            const int byte = (cl - pc0) * OSZ, box = byte >> 7, inb = byte & 127;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = warp * 16 + lane / 4 + h * 8;
                const float v0 = acc[j * 4 + h * 2], v1 = acc[j * 4 + h * 2 + 1];
                const uint32_t dst = stage_at + box * 8192 + row * 128 + ((((inb >> 4) ^ (row & 7)) << 4) | (inb & 15));
                if constexpr (OSZ == 4) st_shared_v2f32(dst, v0, v1);
                else st_shared_u32(dst, qg_bf16x2(v0, v1));
            }
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        qg_wg_bar(bar_id);
        if (lt == 0) {
#pragma unroll
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

/* The same tile through shared memory: in passes of SB bytes (64 rows x 128-byte boxes,
 * 128B-swizzled so the fragment writes are bank-conflict free), each copied out by one
 * thread's TMA bulk store that runs on while the warpgroup goes on. The store clips at
 * the output's extents; the caller takes this path only when no row of the half lies
 * between r_end and the output's last row. Thread lt == 0 of the warpgroup owns the bulk
 * group: it waits for the previous pass's reads before the staging area is rewritten, or
 * with PEND (a caller alternating between two staging areas, one pass each) for all but
 * the latest group's, the one that read the other area. An empty K-grouped group (e.zero)
 * ran no slice, so its accumulators are the zeros they started as and are stored as they
 * are (a select per element there cost the kernels a 128-bit predicate mask rebuilt every
 * tile). The output's element size picks one of two compiled pass sequences (FP8 rowwise
 * here has bf16 output only). */
template <int SC, int NJ, int SB, bool PEND = false>
__device__ __forceinline__ void qg_epi_tma(const qg_problem &p, const qg_epi &e, float (&acc)[NJ * 4],
                                           const float *ss, const CUtensorMap *tmO, uint8_t *stage, int bar_id,
                                           int lt, int warp, int lane)
{
    if constexpr (SC == QG_SC_ROW) {
        /* scaled in place, the same products as qg_epi_scale (scales past the extents are 0:
         * those values are clipped by the store) */
        if (!e.zero) {
            const uint32_t ss_at = h_smem(ss);
            float va[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) va[h] = ld_shared_f32(ss_at + 4u * (warp * 16 + lane / 4 + h * 8));
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const int cl = j * 8 + (lane % 4) * 2;
                const float2 sc = ld_shared_v2f32(ss_at + 4u * (64 + cl));
                const float s0 = sc.x, s1 = sc.y;
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    acc[j * 4 + h * 2] = acc[j * 4 + h * 2] * va[h] * s0;
                    acc[j * 4 + h * 2 + 1] = acc[j * 4 + h * 2 + 1] * va[h] * s1;
                }
            }
        }
        qg_epi_tma_passes<NJ, SB, PEND, 2>(p, e, acc, tmO, stage, bar_id, lt, warp, lane);
    } else {
        if (p.out_f32) qg_epi_tma_passes<NJ, SB, PEND, 4>(p, e, acc, tmO, stage, bar_id, lt, warp, lane);
        else qg_epi_tma_passes<NJ, SB, PEND, 2>(p, e, acc, tmO, stage, bar_id, lt, warp, lane);
    }
}
#endif

} // namespace
