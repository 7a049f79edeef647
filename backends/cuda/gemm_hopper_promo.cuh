/*
 * gemm_hopper_promo.cuh — the promoted-accumulation Hopper kernel (FP8 blockwise), M- and
 * K-grouped, 128 x BN tiles (BN 128 or 192).
 * Included by gemm_hopper.cu only (one translation unit, anonymous namespace).
 */
#pragma once

#include "gemm_hopper_common.cuh"

namespace {

/* The promoted-accumulation kernel for FP8 blockwise, M- and K-grouped: 128 x BN tiles,
 * wgmma m64nBN per consumer warpgroup. The scales change along the contraction every 128
 * elements, so each 128-deep slice is accumulated by the tensor cores into a partial that
 * its first wgmma overwrites (scale-d 0), then added on the CUDA cores into the f32
 * accumulator times sa[row, kb] * sb[col, kb] (DeepGEMM's promotion). The consumers' work
 * between two wgmma batches lies on the kernel's critical path (the tensor cores idle
 * while both warpgroups promote), so that path holds no index arithmetic: scale addresses
 * are set up once per tile.
 * Where the scales vary per column (K-grouped), warps 1-3 of the producer warpgroup stage
 * each ring slot's scales in shared memory as f32 (128 rows + BN columns, zero past the
 * extents) by cp.async, whose completion arrives on the slot's full barrier beside the TMA
 * thread, so a loader never waits for its loads. M-grouped has one weight scale per
 * 128 x 128 block (one or two per tile and slice), which the consumers load a slice ahead
 * into registers.
 * K-grouped: a group's tokens start at a multiple of 128 (offs_multiple), so its slices
 * start at the group's first token and end at its last.
 * Measured at 1.3e-4 rel. error (FP8 rowwise operands promoted every slice) on short
 * contractions, short of the f32-output bound, so this kernel serves bf16 output only. */
constexpr int PBM = 128;
constexpr int PA_BYTES = PBM * HBKB;
constexpr int QG_SCALE_LOADERS = 96; /* threads 32..127 */
/* Floats of the scale ring of a promoted kernel with `stages` slots and BN-column tiles. */
__host__ __device__ constexpr int qg_promo_sf(int stages, int bn) { return stages * (PBM + bn); }

#ifdef QG_HAS_WGMMA
/* Token range of tile t's group along the contraction: slices start at kbase, nkt of them,
 * klen valid elements (K-grouped: groups start at a multiple of the scale block) or the
 * whole K (M-grouped). */
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

/* FP8 blockwise, K-grouped (both operands scaled per row / column and 128 tokens): this
 * loader thread's entries x = lt + q * 96 of a slot's SSTAGE floats (128 row then BN column
 * scales), as the address of the current slice's scale and a bit per entry inside the
 * extents (zero is staged for the others). Few registers: the producer warpgroup has 40. */
template <int PER, int BN>
struct qg_block_loader {
    const float *src[PER];
    unsigned ok = 0;
    __device__ __forceinline__ void tile(const qg_problem &p, int64_t r0, int64_t c0, int kbase, int lt)
    {
        const int64_t kb = kbase / 128;
        ok = 0;
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int x = lt + q * QG_SCALE_LOADERS;
            const bool col = x >= PBM;
            const qg_scales &sc = col ? p.sb : p.sa;
            const int64_t i = col ? c0 + (x - PBM) : r0 + x;
            const bool in = x < PBM + BN && i < (col ? p.cols : p.rows);
            src[q] = (const float *)sc.ptr + (in ? (i / sc.i_div) * sc.s_row + kb * sc.s_k : 0);
            ok |= (unsigned)in << q;
        }
    }
    /* cp.async of the current slice's scales into ss (zero fill outside), then on to the
     * next slice; the caller arrives */
    __device__ __forceinline__ void slot(const qg_problem &p, float *ss, int lt)
    {
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int x = lt + q * QG_SCALE_LOADERS;
            if (x >= PBM + BN) continue;
            const bool in = (ok >> q) & 1;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(h_smem(ss + x)), "l"(src[q]),
                         "r"(in ? 4 : 0)
                         : "memory");
            if (in) src[q] += x >= PBM ? p.sb.s_k : p.sa.s_k;
        }
    }
};

/* part = A . B of one k32 step, m64nBN; scale_d 0 starts a new sum. */
template <int E, int BN>
__device__ __forceinline__ void qg_wgmma_promo(float *part, uint64_t da, uint64_t db, int scale_d)
{
    static_assert(BN == 128 || BN == 192, "m64n128 or m64n192");
    if constexpr (BN == 192 && E == QG_ELEM_E4M3) qg_wgmma192_e4m3(part, da, db, scale_d);
    else if constexpr (BN == 192) qg_wgmma192_e5m2(part, da, db, scale_d);
    else if constexpr (E == QG_ELEM_E4M3) qg_wgmma128_e4m3(part, da, db, scale_d);
    else qg_wgmma128_e5m2(part, da, db, scale_d);
}

/* part = A . B of one 128-deep slice (four k32 steps, the first starting a new sum), waited
 * for and pinned: what one promotion step adds into the f32 accumulator. */
template <int E, int BN, int N>
__device__ __forceinline__ void qg_slice_partial(float (&part)[N], uint64_t da, uint64_t db)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) qg_wgmma_promo<E, BN>(part, da + 2 * ks, db + 2 * ks, ks > 0);
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    qg_fence_acc(part);
}

/* acc += part * sa[row] * sb[col] for this thread's fragment of NJ 8-column groups starting
 * at column group J0 (rows row0 and row0 + 8, columns j*8 + (lane%4)*2 + {0,1}); ss: the
 * slot's 128 row then BN column scales. */
template <int NJ, int J0, int NA>
__device__ __forceinline__ void qg_promote(float (&acc)[NA], const float (&part)[NJ * 4], const float *ss, int row0,
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

/* M-grouped blockwise: the weights' 128 x 128 blocks give one column scale for the tile's
 * 8-column groups j < JS and the next block's for the rest; m*a / m*b = sa[row] * that
 * scale: one FMA per element. */
template <int NJ, int JS>
__device__ __forceinline__ void qg_promote_rows(float (&acc)[NJ * 4], const float (&part)[NJ * 4], float m0a,
                                                float m1a, float m0b, float m1b)
{
#pragma unroll
    for (int j = 0; j < NJ; ++j) {
        const float m0 = j < JS ? m0a : m0b, m1 = j < JS ? m1a : m1b;
        acc[j * 4 + 0] += m0 * part[j * 4 + 0];
        acc[j * 4 + 1] += m0 * part[j * 4 + 1];
        acc[j * 4 + 2] += m1 * part[j * 4 + 2];
        acc[j * 4 + 3] += m1 * part[j * 4 + 3];
    }
}

#endif

template <int E, int SC, int STAGES, int SB, int CL, int BN>
__global__ void __launch_bounds__(HTHR, 1)
qg_hopper_promo_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                       const __grid_constant__ CUtensorMap tmO, const qg_problem p, int pair_ok, int tma_out)
{
    static_assert(SC == QG_SC_BLOCK128, "the promoted kernel serves FP8 blockwise");
    static_assert(BN == 128 || BN == 192, "128- or 192-wide tiles");
    static_assert(SB == 0 || BN % (SB > 0 ? SB / 128 : 1) == 0, "an epilogue pass must not reach past the tile");
#ifdef QG_HAS_WGMMA
    constexpr int SSTAGE = PBM + BN, NJ = BN / 8;
    constexpr int PB_BYTES = BN * HBKB;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *sA, *sB, *sO;
    float *sS;
    uint64_t *full, *empty;
    qg_sched s;
    const bool kgrp = p.kind == QG_K_GROUPED;
    /* the loader warps stage per-column scales (K-grouped); M-grouped needs one weight
     * scale per block, which its consumers load themselves */
    const bool loaders = kgrp;
    if (!qg_pipe_init<STAGES, PA_BYTES, PB_BYTES, SB, PBM * CL, BN, CL, qg_promo_sf(STAGES, BN)>(
            smem_raw, p, sA, sB, sO, sS, full, empty, s, loaders ? 1 + QG_SCALE_LOADERS : 1))
        return;
    const uint32_t rank = CL > 1 ? cluster_rank() : 0;
    const int t_first = blockIdx.x / CL, t_step = gridDim.x / CL;
    const int wg = threadIdx.x / 128;

    if (wg == 0) {
        /* the scale loaders hold a slot's loads (measured: with 40, K-grouped blockwise
         * lost a third), but 128x192 tiles take 232 per consumer thread (accumulator and
         * partial alone hold 192) */
        if constexpr (BN == 192) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        else asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
        if (threadIdx.x == 0) { /* the TMA thread */
            int it = 0;
            for (int t = t_first; t < s.total; t += t_step) {
                int g; int64_t r0, c0;
                qg_sched_tile<PBM * CL, BN>(p, s, t, g, r0, c0);
                r0 += rank * PBM;
                int kbase, nkt, klen;
                qg_promo_krange(p, s, g, kbase, nkt, klen);
                const int ra = CL > 1 && r0 >= p.rows ? (int)r0 - PBM : (int)r0; /* see the fast kernel */
                for (int kt = 0; kt < nkt; ++kt, ++it) {
                    const int st = it % STAGES;
                    mbar_wait(&empty[st], ((it / STAGES) & 1) ^ 1);
                    const int k0 = kbase + kt * HBKB;
                    mbar_expect_tx(&full[st], PA_BYTES + PB_BYTES);
                    tma_2d(h_smem(sA + st * PA_BYTES), &tmA, k0, ra, &full[st]);
                    if constexpr (CL == 1) {
                        if (kgrp) tma_2d(h_smem(sB + st * PB_BYTES), &tmB, k0, (int)c0, &full[st]);
                        else tma_3d(h_smem(sB + st * PB_BYTES), &tmB, k0, (int)c0, g, &full[st]);
                    } else {
                        constexpr int BR = BN / CL;
                        const int cb = (int)c0 + (c0 + (int)rank * BR < p.cols ? (int)rank * BR : 0);
                        const uint32_t dst = h_smem(sB + st * PB_BYTES + rank * BR * HBKB);
                        const uint16_t mask = (uint16_t)((1u << CL) - 1);
                        if (kgrp) tma_2d_mc(dst, &tmB, k0, cb, &full[st], mask);
                        else tma_3d_mc(dst, &tmB, k0, cb, g, &full[st], mask);
                    }
                }
            }
        } else if (loaders && threadIdx.x >= 32) { /* the scale loaders */
            const int lt = (int)threadIdx.x - 32;
            qg_block_loader<(SSTAGE + QG_SCALE_LOADERS - 1) / QG_SCALE_LOADERS, BN> bl;
            int it = 0;
            for (int t = t_first; t < s.total; t += t_step) {
                int g; int64_t r0, c0;
                qg_sched_tile<PBM * CL, BN>(p, s, t, g, r0, c0);
                r0 += rank * PBM;
                int kbase, nkt, klen;
                qg_promo_krange(p, s, g, kbase, nkt, klen);
                bl.tile(p, r0, c0, kbase, lt);
                for (int kt = 0; kt < nkt; ++kt, ++it) {
                    const int st = it % STAGES;
                    mbar_wait(&empty[st], ((it / STAGES) & 1) ^ 1);
                    /* the arrival comes when this thread's copies have landed */
                    bl.slot(p, sS + st * SSTAGE, lt);
                    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(h_smem(&full[st]))
                                 : "memory");
                }
            }
            asm volatile("cp.async.wait_all;\n" ::: "memory");
        }
    } else {
        if constexpr (BN == 192) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        else asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
        const int cw = wg - 1;
        const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
        const int row0 = cw * 64 + warp * 16 + lane / 4; /* this thread's rows: row0, row0 + 8 */
        int it = 0;
        for (int t = t_first; t < s.total; t += t_step) {
            int g; int64_t r0, c0;
            qg_sched_tile<PBM * CL, BN>(p, s, t, g, r0, c0);
            r0 += rank * PBM;
            int kbase, nkt, klen;
            qg_promo_krange(p, s, g, kbase, nkt, klen);
            float acc[NJ * 4];
#pragma unroll
            for (int i = 0; i < NJ * 4; ++i) acc[i] = 0.f;
            /* M-grouped blockwise: per slice one activation scale per row and the weight
             * scale of the block holding the tile's first `split` columns (and of the next
             * block for the rest), loaded a slice ahead into registers from addresses set
             * up here (null past the extents: zero) */
            const bool mblk = !kgrp;
            const float *pa = nullptr, *pb = nullptr; /* row + 8: pa + 8 s_row; next block: pb + s_row */
            int split = BN;
            bool a0 = false, a1 = false, b1 = false;
            float na0 = 0.f, na1 = 0.f, nb0 = 0.f, nb1 = 0.f;
            if (mblk) {
                const int64_t rr0 = r0 + row0, cb = c0 / p.sb.i_div, r_end = s.bounds[g + 1];
                a0 = rr0 < r_end;
                a1 = rr0 + 8 < r_end;
                pa = (const float *)p.sa.ptr + rr0 * p.sa.s_row; /* activations: i_div 1 */
                pb = (const float *)p.sb.ptr + (int64_t)g * p.sb.s_grp + cb * p.sb.s_row;
                split = (int)min((int64_t)BN, (cb + 1) * p.sb.i_div - c0);
                b1 = split < BN && c0 + split < p.cols;
                if (nkt > 0) {
                    nb0 = __ldg(pb);
                    if (b1) nb1 = __ldg(pb + p.sb.s_row);
                    if (a0) na0 = __ldg(pa);
                    if (a1) na1 = __ldg(pa + 8 * p.sa.s_row);
                }
            }
            for (int kt = 0; kt < nkt; ++kt, ++it) {
                const int st = it % STAGES;
                const float m0a = na0 * nb0, m1a = na1 * nb0, m0b = na0 * nb1, m1b = na1 * nb1;
                if (mblk && kt + 1 < nkt) {
                    pa += p.sa.s_k;
                    pb += p.sb.s_k;
                    nb0 = __ldg(pb);
                    if (b1) nb1 = __ldg(pb + p.sb.s_row);
                    if (a0) na0 = __ldg(pa);
                    if (a1) na1 = __ldg(pa + 8 * p.sa.s_row);
                }
                mbar_wait(&full[st], (it / STAGES) & 1);
                const float *ss = sS + st * SSTAGE;
                const uint64_t da = wg_desc(h_smem(sA + st * PA_BYTES + cw * 64 * 128));
                const uint64_t db = wg_desc(h_smem(sB + st * PB_BYTES));
                /* +32 bytes along K = +2 in the address field. The partial lives only within
                 * the slice (its first wgmma overwrites it), so it holds no registers across
                 * the epilogue. */
                float part[NJ * 4];
                qg_slice_partial<E, BN>(part, da, db);
                if (!mblk) qg_promote<NJ, 0>(acc, part, ss, row0, lane);
                else if (split >= BN) qg_promote_rows<NJ, NJ>(acc, part, m0a, m1a, m0b, m1b);
                else if (split == 128) qg_promote_rows<NJ, 16>(acc, part, m0a, m1a, m0b, m1b);
                else qg_promote_rows<NJ, 8>(acc, part, m0a, m1a, m0b, m1b); /* BN 192, split 64 */
                qg_release<CL>(&empty[st], lane);
            }
            /* the tile's place again: recomputed rather than held in registers through the
             * slices, which need every register the accumulators leave */
            qg_sched_tile<PBM * CL, BN>(p, s, t, g, r0, c0);
            r0 += rank * PBM;
            qg_promo_krange(p, s, g, kbase, nkt, klen);
            const qg_epi e = {g, r0 + cw * 64, kgrp ? p.rows : s.bounds[g + 1], c0, kgrp && klen == 0};
            /* the block scales were applied by the promotion */
            bool staged = false;
            if constexpr (SB > 0) { /* the whole half lies inside the rows it may write */
                staged = tma_out && (e.r0 + 64 <= e.r_end || e.r_end >= p.rows);
                if (staged) qg_epi_tma<QG_SC_NONE, NJ, SB>(p, e, acc, nullptr, &tmO, sO + cw * SB, 2 + cw, lt, warp, lane);
            }
            if (!staged) qg_epi_regs<QG_SC_NONE, NJ>(p, e, acc, nullptr, pair_ok, warp, lane);
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
