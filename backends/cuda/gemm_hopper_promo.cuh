/*
 * gemm_hopper_promo.cuh — the promoted-accumulation Hopper kernel (FP8 blockwise, MXFP8), M- and
 * K-grouped, 128x128 tiles.
 * Included by gemm_hopper.cu only (one translation unit, anonymous namespace).
 */
#pragma once

#include "gemm_hopper_common.cuh"

namespace {

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

} // namespace
