/*
 * gemm_hopper_fast.cuh — the fast Hopper kernel (BF16; FP8 rowwise with bf16 output), M- and
 * K-grouped, 128x256 tiles. Operands K-major (contraction-contiguous) or, for BF16, MN-major
 * (contiguous along their rows / columns: the (E, K, N) view of the weights in dgrad,
 * row-major dy and x in wgrad), read by wgmma from shared memory with its transpose flags.
 * Included by gemm_hopper.cu only (one translation unit, anonymous namespace).
 */
#pragma once

#include "gemm_hopper_common.cuh"

namespace {

/* Coarse promotion (PK > 0): how many of a thread's 128 f32 sums stay in registers (with
 * 64, ptxas spilled 12-16 bytes), and the floats of those beyond the staging area's 64 per
 * thread (after the rowwise scales, for both warpgroups' 256 threads). */
constexpr int QG_PK_HREG = 56, QG_PK_XFLOATS = (128 - 64 - QG_PK_HREG) * 256;
/* Shared-memory floats of the fast kernel after the staging areas: FP8 rowwise scales of both
 * halves, and with the coarse promotion the f32 sums beyond the staging area; none for BF16. */
constexpr int qg_fast_scale_floats(int sc, int pk)
{
    return (sc == QG_SC_ROW ? 2 * QG_SCALE_FLOATS : 0) + (pk > 0 ? QG_PK_XFLOATS : 0);
}

/* The fast kernel: STAGES ring slots, SB staging bytes per consumer warpgroup (0: every
 * tile stored from registers), CL CTAs per cluster. With CL == 2 the two CTAs of a
 * cluster take the two 128-row halves of a 256 x 256 tile pair of the same group: each
 * loads its own A rows and half of the shared B tile, multicast into both CTAs, so every
 * CTA reads a third less from L2. A half past the group's end (odd row-tile count)
 * computes rows that the epilogue masks.
 * MN (BF16 only): bit 0 A (K-grouped only), bit 1 B MN-major. Such an operand's slice is
 * TMA boxes of 64 elements along its rows / columns (128 bytes) by 64 contraction rows (A:
 * two boxes, one per consumer; B: four), so every contraction index is one 128-byte smem
 * row; wgmma reads it with the transpose flag and wg_desc_mn (boxes 8 KiB apart, +2 KiB
 * per k16 step).
 * PK (FP8 only, > 0): coarse promotion for long K-grouped contractions. QGMMA adds fp8
 * products into its accumulator with reduced precision, so the error grows with the number
 * of slices summed in the tensor cores; every PK slices the accumulator is added into an
 * f32 sum on the CUDA cores and the next slice's first wgmma restarts it (scale-d 0), so
 * the tensor cores never sum more than PK * 128 tokens. The f32 sum of a 64 x 256 half
 * does not fit beside the accumulator in the registers (128 + 128 > 232): the sums of
 * acc[0..QG_PK_HREG) stay in registers, the others live in shared memory, each thread's
 * as float4 slots of its own (consecutive threads' slots adjacent: conflict-free): 16 in
 * the warpgroup's 32 KiB epilogue staging area (128 threads apart), the rest in
 * QG_PK_XFLOATS floats after the rowwise scales (256 threads apart); they are added into
 * the accumulator before the epilogue. */
template <int E, int SC, int STAGES, int SB, int CL, int MN = 0, int PK = 0>
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
    if (!qg_pipe_init<STAGES, HA_BYTES, HB_BYTES, SB, HBM * CL, HBN, CL,
                      qg_fast_scale_floats(SC, PK)>(smem_raw, p, sA, sB, sO, sS, full, empty, s))
        return;
    const uint32_t rank = CL > 1 ? cluster_rank() : 0;
    const int t_first = blockIdx.x / CL, t_step = gridDim.x / CL;

    constexpr int ESZ = E == QG_ELEM_BF16 ? 2 : 1;
    constexpr int BKE = HBKB / ESZ; /* elements per slice */
    constexpr int KALIGN = 16 / ESZ; /* K-major box starts stay 16-byte aligned */
    constexpr bool A_MN = (MN & 1) != 0, B_MN = (MN & 2) != 0;
    static_assert(MN == 0 || E == QG_ELEM_BF16, "wgmma transposes 16-bit operands only");
    static_assert(PK == 0 || (E != QG_ELEM_BF16 && SB >= 64 * 128 * 4 && (PK & (PK - 1)) == 0),
                  "coarse promotion: FP8, a staging area that holds 64 x 128 floats, PK a power of two");
    /* K-grouped slices start at the group's first token when no operand is K-major (the
     * contraction is the boxes' outer dim, any start); else rounded down to 16 bytes */
    constexpr int KSTART = A_MN && B_MN ? 1 : KALIGN;
    constexpr int MNBOX = 64 * 128; /* bytes of one MN-major box */
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
                if (kgrp) { /* slices start at the group's first token, rounded down to KSTART */
                    const int kb0 = s.bounds[g], klen = s.bounds[g + 1] - kb0;
                    kbase = kb0 & ~(KSTART - 1);
                    nkt = klen > 0 ? (klen + (kb0 - kbase) + BKE - 1) / BKE : 0;
                }
                for (int kt = 0; kt < nkt; ++kt, ++it) {
                    const int st = it % STAGES;
                    mbar_wait(&empty[st], ((it / STAGES) & 1) ^ 1);
                    mbar_expect_tx(&full[st], HA_BYTES + HB_BYTES);
                    /* a cluster's half past the last row loads its partner's rows instead
                     * (its output is masked; no box lies wholly outside the tensor) */
                    const int ra = CL > 1 && r0 >= p.rows ? (int)r0 - HBM : (int)r0;
                    const int kc = kbase + kt * BKE;
                    if constexpr (A_MN) { /* a box past the last row loads the first one again */
#pragma unroll
                        for (int i = 0; i < HBM / 64; ++i)
                            tma_2d(h_smem(sA + st * HA_BYTES + i * MNBOX), &tmA,
                                   ra + 64 * i < p.rows ? ra + 64 * i : ra, kc, &full[st]);
                    } else {
                        tma_2d(h_smem(sA + st * HA_BYTES), &tmA, kc, ra, &full[st]);
                    }
                    if constexpr (B_MN) { /* this CTA's boxes (all, or its half with clusters) */
                        constexpr int NB = HBN / 64 / CL;
                        const uint16_t mask = (uint16_t)((1u << CL) - 1);
#pragma unroll
                        for (int j = 0; j < NB; ++j) {
                            const int box = (int)rank * NB + j;
                            const int cb = (int)c0 + (c0 + 64 * box < p.cols ? 64 * box : 0);
                            const uint32_t dst = h_smem(sB + st * HB_BYTES + box * MNBOX);
                            if constexpr (CL == 1) {
                                if (kgrp) tma_2d(dst, &tmB, cb, kc, &full[st]);
                                else tma_3d(dst, &tmB, cb, kc, g, &full[st]);
                            } else {
                                if (kgrp) tma_2d_mc(dst, &tmB, cb, kc, &full[st], mask);
                                else tma_3d_mc(dst, &tmB, cb, kc, g, &full[st], mask);
                            }
                        }
                    } else if constexpr (CL == 1) {
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
                head = s.bounds[g] & (KSTART - 1); /* tokens of the previous group in slice 0 */
                nkt = klen > 0 ? (klen + head + BKE - 1) / BKE : 0;
            }
            qg_epi e = {g, r0 + cw * 64, r_end, c0, kgrp && klen == 0};
            float *ss = sS + cw * QG_SCALE_FLOATS;
            if constexpr (SC == QG_SC_ROW) qg_stage_row_scales(p, e, ss, lt, 2 + cw);
            float acc[128];
#pragma unroll
            for (int i = 0; i < 128; ++i) acc[i] = 0.f;
            /* PK > 0: the f32 sums of the promoted accumulators, acc[0..HR) in hold, the
             * others in the float4 slot(q) of acc[HR + 4q .. HR + 4q + 3] */
            constexpr int HR = PK > 0 ? QG_PK_HREG : 4, NQ = (128 - HR) / 4;
            [[maybe_unused]] float hold[HR];
            [[maybe_unused]] const auto slot = [&](int q) {
                return q < 16 ? (float4 *)(sO + cw * SB) + q * 128 + lt
                              : (float4 *)(sS + 2 * QG_SCALE_FLOATS) + (q - 16) * 256 + cw * 128 + lt;
            };
            [[maybe_unused]] bool held = false;
            if constexpr (PK > 0) {
#pragma unroll
                for (int i = 0; i < HR; ++i) hold[i] = 0.f;
            }
            for (int kt = 0; kt < nkt; ++kt, ++it) {
                const int st = it % STAGES;
                if constexpr (PK > 0) {
                    if (kt > 0 && (kt & (PK - 1)) == 0) { /* PK slices summed: promote them */
                        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
                        qg_fence_acc(acc);
                        if (!held) { /* the previous tile's TMA store has read the staging area */
                            if (lt == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
                            qg_wg_bar(2 + cw);
                        }
#pragma unroll
                        for (int i = 0; i < HR; ++i) hold[i] += acc[i];
#pragma unroll
                        for (int q = 0; q < NQ; ++q) {
                            float4 v = held ? *slot(q) : make_float4(0.f, 0.f, 0.f, 0.f);
                            v.x += acc[HR + 4 * q]; v.y += acc[HR + 4 * q + 1];
                            v.z += acc[HR + 4 * q + 2]; v.w += acc[HR + 4 * q + 3];
                            *slot(q) = v;
                        }
                        held = true;
                    }
                }
                mbar_wait(&full[st], (it / STAGES) & 1);
                const int lo = kt == 0 ? head : 0;                 /* the slice's tokens of */
                const int hi = min(BKE, klen + head - kt * BKE);    /* the group: [lo, hi) */
                const int lo_b = lo * ESZ, hi_b = hi * ESZ;
                if (kgrp && (lo > 0 || hi < BKE)) {
                    /* K-grouped: the slice holds tokens of the neighbouring groups (before the
                     * group's first token in the first slice, after its last in the last);
                     * zero them in both tiles. This warpgroup clears its 64 A rows and half of
                     * the 256 B rows (K-major) or its A box and two B boxes (MN-major, the same
                     * 192 rows of 128 bytes; qg_zero_outside_group), then both consumers meet
                     * before any wgmma. The warps reconverge before the barrier and wgmma that
                     * follow. */
                    qg_zero_outside_group<A_MN, B_MN, 64, 128>(sA + st * HA_BYTES + cw * 64 * 128,
                                                               sB + st * HB_BYTES + cw * 128 * 128, lo, hi, lo_b,
                                                               hi_b, lt);
                    __syncwarp();
                    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                    asm volatile("barrier.sync 1, 256;\n" ::: "memory");
                    __syncwarp();
                }
                const uint32_t a_at = h_smem(sA + st * HA_BYTES + cw * 64 * 128), b_at = h_smem(sB + st * HB_BYTES);
                const uint64_t da = A_MN ? wg_desc_mn(a_at, MNBOX) : wg_desc(a_at);
                const uint64_t db = B_MN ? wg_desc_mn(b_at, MNBOX) : wg_desc(b_at);
                /* one k16 / k32 step: K-major +32 bytes inside the swizzle atom, MN-major 16
                 * contraction rows (2 KiB), in the address field's 16-byte units */
                constexpr int STEP_A = A_MN ? 128 : 2, STEP_B = B_MN ? 128 : 2;
                /* PK > 0: the first wgmma after a promotion overwrites the accumulator */
                const int sd0 = PK > 0 && (kt & (PK - 1)) == 0 ? 0 : 1;
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int ks = 0; ks < 4; ++ks) {
                    if constexpr (E == QG_ELEM_BF16)
                        qg_wgmma_bf16<A_MN, B_MN>(acc, da + STEP_A * ks, db + STEP_B * ks);
                    else if constexpr (E == QG_ELEM_E4M3) qg_wgmma_e4m3(acc, da + 2 * ks, db + 2 * ks, ks ? 1 : sd0);
                    else qg_wgmma_e5m2(acc, da + 2 * ks, db + 2 * ks, ks ? 1 : sd0);
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
            if constexpr (PK > 0) {
                /* the tile's position found again rather than held in registers across the
                 * main loop, which the f32 sums fill */
                qg_sched_tile<HBM * CL, HBN>(p, s, t, g, r0, c0);
                e = {g, r0 + rank * HBM + cw * 64, kgrp ? p.rows : s.bounds[g + 1], c0, kgrp && klen == 0};
                if (held) { /* the last partial plus the promoted sum; the epilogue's barrier
                             * orders these reads before the staging area is rewritten */
#pragma unroll
                    for (int i = 0; i < HR; ++i) acc[i] += hold[i];
#pragma unroll
                    for (int q = 0; q < NQ; ++q) {
                        const float4 v = *slot(q);
                        acc[HR + 4 * q] += v.x; acc[HR + 4 * q + 1] += v.y;
                        acc[HR + 4 * q + 2] += v.z; acc[HR + 4 * q + 3] += v.w;
                    }
                }
            }
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

} // namespace
