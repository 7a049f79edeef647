/*
 * gemm_hopper_promo.cuh — the promoted-accumulation Hopper kernel (FP8 blockwise), M- and
 * K-grouped, 128 x 128 tiles.
 * Included by gemm_hopper.cu only (one translation unit, anonymous namespace).
 */
#pragma once

#include "gemm_hopper_common.cuh"

namespace {

/* The promoted-accumulation kernel for FP8 blockwise, M- and K-grouped: 128 x 128 tiles,
 * wgmma m64n128 per consumer warpgroup. The scales change along the contraction every 128
 * elements, so each 128-deep slice is accumulated by the tensor cores into a partial that
 * its first wgmma overwrites (scale-d 0), then added on the CUDA cores into the f32
 * accumulator times sa[row, kb] * sb[col, kb] (DeepGEMM's promotion). Each consumer keeps
 * two partials and issues a slice before it promotes the previous one, so the promotion
 * runs beside the tensor cores rather than between their batches (qg_promo_consume).
 * Where the scales vary per column (K-grouped), warps 1-3 of the producer warpgroup stage
 * each ring slot's scales in shared memory as f32 (128 rows + 128 columns, zero past the
 * extents) by cp.async, whose completion arrives on the slot's full barrier beside the TMA
 * thread, so a loader never waits for its loads. M-grouped has one weight scale per
 * 128 x 128 block, so one per tile and slice, which the consumers load with the row scales
 * when they issue the slice.
 * K-grouped: a group's tokens start at a multiple of 128 (offs_multiple), so its slices
 * start at the group's first token and end at its last.
 * Measured at 1.3e-4 rel. error (FP8 rowwise operands promoted every slice) on short
 * contractions, short of the f32-output bound, so this kernel serves bf16 output only. */
constexpr int PBM = 128, PBN = 128;
constexpr int PA_BYTES = PBM * HBKB, PB_BYTES = PBN * HBKB;
constexpr int PNA = PBN / 2; /* accumulator floats per thread of a 64 x 128 half */
constexpr int QG_SCALE_LOADERS = 96; /* threads 32..127 */
constexpr int PSS = PBM + PBN; /* floats of one slot's staged scales (K-grouped): rows, then columns */
/* Floats of the scale ring of a promoted kernel with `stages` slots. */
__host__ __device__ constexpr int qg_promo_sf(int stages) { return stages * PSS; }

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
 * loader thread's entries x = lt + q * 96 of a slot's 256 floats (128 row then 128 column
 * scales), as the address of the current slice's scale and a bit per entry inside the
 * extents (zero is staged for the others). Few registers: the producer warpgroup has 40. */
template <int PER>
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
            const bool in = x < PSS && i < (col ? p.cols : p.rows);
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
            if (x >= PSS) continue;
            const bool in = (ok >> q) & 1;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(h_smem(ss + x)), "l"(src[q]),
                         "r"(in ? 4 : 0)
                         : "memory");
            if (in) src[q] += x >= PBM ? p.sb.s_k : p.sa.s_k;
        }
    }
};

/* A ring position: the stage and the parity of its current round. */
template <int STAGES>
struct qg_ring {
    int st = 0;
    uint32_t ph = 0;
    __device__ __forceinline__ void next()
    {
        if (++st == STAGES) {
            st = 0;
            ph ^= 1;
        }
    }
};

/* Issues part = A . B of one 128-deep slice (four m64n128k32 steps, the first starting a
 * new sum) as one wgmma group, not waited for. */
template <int E>
__device__ __forceinline__ void qg_slice_issue(float (&part)[PNA], uint64_t da, uint64_t db)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
        if constexpr (E == QG_ELEM_E4M3) qg_wgmma128_e4m3(part, da + 2 * ks, db + 2 * ks, ks > 0);
        else qg_wgmma128_e5m2(part, da + 2 * ks, db + 2 * ks, ks > 0);
    }
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Waits until at most N of this warpgroup's wgmma groups are in flight. */
template <int N>
__device__ __forceinline__ void qg_wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* One consumer warpgroup's tiles: its 64 rows of each 128 x 128 tile. Two partials
 * alternate: the slice after the one being promoted is already on the tensor cores, so
 * the promotion (and the next stage's wait) overlaps tensor work instead of stopping it.
 * KG: K-grouped (scales per row and column from the slot's staged f32), else M-grouped
 * (one activation scale per row and one weight scale per 128 x 128 block, loaded from
 * global memory when the slice is issued and used when it is promoted). */
template <int E, int STAGES, int SB, int CL, bool KG>
__device__ __forceinline__ void qg_promo_consume(const qg_problem &p, const qg_sched &s, uint8_t *sA, uint8_t *sB,
                                                 uint8_t *sO, float *sS, uint64_t *full, uint64_t *empty,
                                                 const CUtensorMap *tmO, int pair_ok, int tma_out, uint32_t rank,
                                                 int t_first, int t_step, int cw)
{
    constexpr int NJ = PBN / 8;
    const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
    const int row0 = cw * 64 + warp * 16 + lane / 4; /* this thread's rows: row0, row0 + 8 */
    /* stage st's descriptors: stage 0's plus st slots (the address field counts 16 bytes) */
    const uint64_t da0 = wg_desc(h_smem(sA + cw * 64 * 128)), db0 = wg_desc(h_smem(sB));
    const uint32_t ss0 = h_smem(sS);
    qg_ring<STAGES> rin, rout; /* the next slice to issue, the next to promote */
    /* the current tile: its place, its slices and, M-grouped, this thread's two rows' scales
     * and the tile's weight block's, advanced by the scales' stride along K (rows past the
     * group's end: zero) */
    int g, kbase, nkt, klen;
    int64_t r0, c0;
    const float *pa = nullptr, *pb = nullptr;
    bool a0 = false, a1 = false;
    auto place = [&](int t) {
        qg_sched_tile<PBM * CL, PBN>(p, s, t, g, r0, c0);
        r0 += rank * PBM;
        qg_promo_krange(p, s, g, kbase, nkt, klen);
        if constexpr (!KG) {
            const int64_t rr0 = r0 + row0, r_end = s.bounds[g + 1];
            a0 = rr0 < r_end;
            a1 = rr0 + 8 < r_end;
            pa = (const float *)p.sa.ptr + rr0 * p.sa.s_row; /* activations: i_div 1 */
            pb = (const float *)p.sb.ptr + (int64_t)g * p.sb.s_grp + (c0 / p.sb.i_div) * p.sb.s_row;
        }
    };
    float acc[PNA], pA[PNA], pB[PNA];
    float scA[3], scB[3]; /* M-grouped: the issued slice's row and block scales */
    auto issue = [&](float (&part)[PNA], float (&sc)[3]) {
        if constexpr (!KG) {
            sc[0] = a0 ? __ldg(pa) : 0.f;
            sc[1] = a1 ? __ldg(pa + 8 * p.sa.s_row) : 0.f;
            sc[2] = __ldg(pb);
            pa += p.sa.s_k;
            pb += p.sb.s_k;
        }
        mbar_wait(&full[rin.st], rin.ph);
        qg_slice_issue<E>(part, da0 + (uint64_t)(rin.st * (PA_BYTES >> 4)), db0 + (uint64_t)(rin.st * (PB_BYTES >> 4)));
        rin.next();
    };
    /* acc += part * sa[row] * sb[col] (after the slice's wgmma group has completed) */
    auto promote = [&](float (&part)[PNA], const float (&sc)[3]) {
        qg_fence_acc(part);
        if constexpr (!KG) {
            qg_release<CL>(&empty[rout.st], lane); /* the tensor cores are done with the slot */
            const float m0 = sc[0] * sc[2], m1 = sc[1] * sc[2];
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                acc[j * 4 + 0] += m0 * part[j * 4 + 0];
                acc[j * 4 + 1] += m0 * part[j * 4 + 1];
                acc[j * 4 + 2] += m1 * part[j * 4 + 2];
                acc[j * 4 + 3] += m1 * part[j * 4 + 3];
            }
        } else {
            const uint32_t ss = ss0 + 4u * (uint32_t)(rout.st * PSS);
            const float sa0 = ld_shared_f32(ss + 4u * row0), sa1 = ld_shared_f32(ss + 4u * (row0 + 8));
#pragma unroll
            for (int j = 0; j < NJ; ++j) {
                const float2 b = ld_shared_v2f32(ss + 4u * (PBM + j * 8 + (lane % 4) * 2));
                acc[j * 4 + 0] += (sa0 * b.x) * part[j * 4 + 0];
                acc[j * 4 + 1] += (sa0 * b.y) * part[j * 4 + 1];
                acc[j * 4 + 2] += (sa1 * b.x) * part[j * 4 + 2];
                acc[j * 4 + 3] += (sa1 * b.y) * part[j * 4 + 3];
            }
            qg_release<CL>(&empty[rout.st], lane); /* its scales read too */
        }
        rout.next();
    };
    for (int t = t_first; t < s.total; t += t_step) {
        place(t);
#pragma unroll
        for (int i = 0; i < PNA; ++i) acc[i] = 0.f;
        if (nkt > 0) {
            issue(pA, scA);
            /* the two halves stay written out: the same step as one lambda taking the
             * partials by reference made ptxas serialise every wgmma (C7518) */
            for (int kt = 0;; kt += 2) { /* slice kt in pA, kt + 1 in pB */
                if (kt + 1 < nkt) {
                    issue(pB, scB);
                    qg_wgmma_wait<1>();
                    promote(pA, scA);
                } else {
                    qg_wgmma_wait<0>();
                    promote(pA, scA);
                    break;
                }
                if (kt + 2 < nkt) {
                    issue(pA, scA);
                    qg_wgmma_wait<1>();
                    promote(pB, scB);
                } else {
                    qg_wgmma_wait<0>();
                    promote(pB, scB);
                    break;
                }
            }
        }
        const qg_epi e = {g, r0 + cw * 64, KG ? p.rows : s.bounds[g + 1], c0, KG && klen == 0};
        /* the block scales were applied by the promotion */
        bool staged = false;
        if constexpr (SB > 0) { /* the whole half lies inside the rows it may write */
            staged = tma_out && (e.r0 + 64 <= e.r_end || e.r_end >= p.rows);
            if (staged) qg_epi_tma<QG_SC_NONE, NJ, SB>(p, e, acc, nullptr, tmO, sO + cw * SB, 2 + cw, lt, warp, lane);
        }
        if (!staged) qg_epi_regs<QG_SC_NONE, NJ>(p, e, acc, nullptr, pair_ok, warp, lane);
    }
    if (SB > 0 && lt == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
#endif

template <int E, int SC, int STAGES, int SB, int CL>
__global__ void __launch_bounds__(HTHR, 1)
qg_hopper_promo_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                       const __grid_constant__ CUtensorMap tmO, const qg_problem p, int pair_ok, int tma_out)
{
    static_assert(SC == QG_SC_BLOCK128, "the promoted kernel serves FP8 blockwise");
    static_assert(SB == 0 || PBN % (SB > 0 ? SB / 128 : 1) == 0, "an epilogue pass must not reach past the tile");
#ifdef QG_HAS_WGMMA
    extern __shared__ uint8_t smem_raw[];
    uint8_t *sA, *sB, *sO;
    float *sS;
    uint64_t *full, *empty;
    qg_sched s;
    const bool kgrp = p.kind == QG_K_GROUPED;
    /* the loader warps stage per-column scales (K-grouped); M-grouped needs one weight
     * scale per block, which its consumers load themselves */
    const bool loaders = kgrp;
    if (!qg_pipe_init<STAGES, PA_BYTES, PB_BYTES, SB, PBM * CL, PBN, CL, qg_promo_sf(STAGES)>(
            smem_raw, p, sA, sB, sO, sS, full, empty, s, loaders ? 1 + QG_SCALE_LOADERS : 1))
        return;
    const uint32_t rank = CL > 1 ? cluster_rank() : 0;
    const int t_first = blockIdx.x / CL, t_step = gridDim.x / CL;
    const int wg = threadIdx.x / 128;

    if (wg == 0) {
        /* 40 + 2 x 232 per thread of each warpgroup fill the 64K registers; the consumers
         * hold an accumulator and two partials (192) */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) { /* the TMA thread */
            qg_ring<STAGES> r;
            for (int t = t_first; t < s.total; t += t_step) {
                int g; int64_t r0, c0;
                qg_sched_tile<PBM * CL, PBN>(p, s, t, g, r0, c0);
                r0 += rank * PBM;
                int kbase, nkt, klen;
                qg_promo_krange(p, s, g, kbase, nkt, klen);
                const int ra = CL > 1 && r0 >= p.rows ? (int)r0 - PBM : (int)r0; /* see the fast kernel */
                for (int kt = 0; kt < nkt; ++kt, r.next()) {
                    const int st = r.st;
                    mbar_wait(&empty[st], r.ph ^ 1);
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
        } else if (loaders && threadIdx.x >= 32) { /* the scale loaders */
            const int lt = (int)threadIdx.x - 32;
            qg_block_loader<(PSS + QG_SCALE_LOADERS - 1) / QG_SCALE_LOADERS> bl;
            qg_ring<STAGES> r;
            for (int t = t_first; t < s.total; t += t_step) {
                int g; int64_t r0, c0;
                qg_sched_tile<PBM * CL, PBN>(p, s, t, g, r0, c0);
                r0 += rank * PBM;
                int kbase, nkt, klen;
                qg_promo_krange(p, s, g, kbase, nkt, klen);
                bl.tile(p, r0, c0, kbase, lt);
                for (int kt = 0; kt < nkt; ++kt, r.next()) {
                    const int st = r.st;
                    mbar_wait(&empty[st], r.ph ^ 1);
                    /* the arrival comes when this thread's copies have landed */
                    bl.slot(p, sS + st * PSS, lt);
                    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(h_smem(&full[st]))
                                 : "memory");
                }
            }
            asm volatile("cp.async.wait_all;\n" ::: "memory");
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        if (kgrp)
            qg_promo_consume<E, STAGES, SB, CL, true>(p, s, sA, sB, sO, sS, full, empty, &tmO, pair_ok, tma_out, rank,
                                                      t_first, t_step, wg - 1);
        else
            qg_promo_consume<E, STAGES, SB, CL, false>(p, s, sA, sB, sO, sS, full, empty, &tmO, pair_ok, tma_out,
                                                       rank, t_first, t_step, wg - 1);
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
