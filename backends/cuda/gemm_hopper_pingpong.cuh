/*
 * gemm_hopper_pingpong.cuh — the fast Hopper kernel's ping-pong form (BF16; FP8 rowwise with
 * bf16 output), M- and K-grouped: each consumer warpgroup owns a whole 128x128 tile (two
 * m64n128 rows of wgmma, the same 128 accumulators per thread as a 64x256 half), the two
 * take the CTA's tiles in turn, and named barriers order their main loops, so one
 * warpgroup's wgmma drain and epilogue run while the other's main loop keeps the tensor
 * cores busy (CUTLASS's ping-pong schedule). The cooperative kernel (gemm_hopper_fast.cuh)
 * has both warpgroups on halves of one tile, so both drain and store at the same time and
 * the tensor cores idle for it: most of the time of tiles only a few slices deep (K-grouped
 * with short groups). Operand layouts, K-grouped slicing and tail zeroing as there.
 * Included by gemm_hopper.cu only (one translation unit, anonymous namespace).
 */
#pragma once

#include "gemm_hopper_common.cuh"

namespace {

constexpr int PPM = 128, PPN = 128; /* a warpgroup's tile */
constexpr int PP_A_BYTES = PPM * HBKB, PP_B_BYTES = PPN * HBKB;
/* FP8 rowwise scales of a warpgroup's tile: per 64-row half, 64 row + 128 column floats */
constexpr int PP_SCALE_FLOATS = 2 * (64 + PPN);

/* STAGES ring slots of (A, B) = (128, 128) rows of 128 bytes, SB staging bytes per consumer
 * warpgroup (32 KiB: one 16 KiB area per 64-row half, so the second half's store need not
 * wait for the first's; 16 KiB: one area; 0: stores from registers; the configuration built
 * and why: gemm_hopper.cu). MN as in
 * qg_hopper_kernel (A and B slices two 64-element boxes each). Ring slots are consumed in
 * the CTA's tile order: tile i (the i-th of this CTA) by warpgroup i % 2. */
template <int E, int SC, int STAGES, int SB, int MN = 0>
__global__ void __launch_bounds__(HTHR, 1)
qg_hopper_pp_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                    const __grid_constant__ CUtensorMap tmO, const qg_problem p, int pair_ok, int tma_out)
{
#ifdef QG_HAS_WGMMA
    extern __shared__ uint8_t smem_raw[];
    uint8_t *sA, *sB, *sO;
    float *sS;
    uint64_t *full, *empty;
    qg_sched s;
    /* one consumer warpgroup (128 threads) releases each slot */
    if (!qg_pipe_init<STAGES, PP_A_BYTES, PP_B_BYTES, SB, PPM, PPN, 1, 2 * PP_SCALE_FLOATS>(
            smem_raw, p, sA, sB, sO, sS, full, empty, s, 1, 128))
        return;

    constexpr int ESZ = E == QG_ELEM_BF16 ? 2 : 1;
    constexpr int BKE = HBKB / ESZ; /* elements per slice */
    constexpr int KALIGN = 16 / ESZ;
    constexpr bool A_MN = (MN & 1) != 0, B_MN = (MN & 2) != 0;
    static_assert(MN == 0 || E == QG_ELEM_BF16, "wgmma transposes 16-bit operands only");
    constexpr int KSTART = A_MN && B_MN ? 1 : KALIGN;
    constexpr int MNBOX = 64 * 128;
    const int nk = (int)((p.kdim + BKE - 1) / BKE);
    const int wg = threadIdx.x / 128;
    const bool kgrp = p.kind == QG_K_GROUPED;

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < s.total; t += gridDim.x) {
                int g; int64_t r0, c0;
                qg_sched_tile<PPM, PPN>(p, s, t, g, r0, c0);
                int kbase = 0, nkt = nk;
                if (kgrp) {
                    const int kb0 = s.bounds[g], klen = s.bounds[g + 1] - kb0;
                    kbase = kb0 & ~(KSTART - 1);
                    nkt = klen > 0 ? (klen + (kb0 - kbase) + BKE - 1) / BKE : 0;
                }
                for (int kt = 0; kt < nkt; ++kt, ++it) {
                    const int st = it % STAGES;
                    mbar_wait(&empty[st], ((it / STAGES) & 1) ^ 1);
                    mbar_expect_tx(&full[st], PP_A_BYTES + PP_B_BYTES);
                    const int kc = kbase + kt * BKE;
                    if constexpr (A_MN) { /* a box past the last row loads the first one again */
#pragma unroll
                        for (int i = 0; i < PPM / 64; ++i)
                            tma_2d(h_smem(sA + st * PP_A_BYTES + i * MNBOX), &tmA,
                                   r0 + 64 * i < p.rows ? (int)r0 + 64 * i : (int)r0, kc, &full[st]);
                    } else {
                        tma_2d(h_smem(sA + st * PP_A_BYTES), &tmA, kc, (int)r0, &full[st]);
                    }
                    if constexpr (B_MN) {
#pragma unroll
                        for (int j = 0; j < PPN / 64; ++j) {
                            const int cb = (int)c0 + (c0 + 64 * j < p.cols ? 64 * j : 0);
                            const uint32_t dst = h_smem(sB + st * PP_B_BYTES + j * MNBOX);
                            if (kgrp) tma_2d(dst, &tmB, cb, kc, &full[st]);
                            else tma_3d(dst, &tmB, cb, kc, g, &full[st]);
                        }
                    } else {
                        if (kgrp) tma_2d(h_smem(sB + st * PP_B_BYTES), &tmB, kc, (int)c0, &full[st]);
                        else tma_3d(h_smem(sB + st * PP_B_BYTES), &tmB, kt * BKE, (int)c0, g, &full[st]);
                    }
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1;
        const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
        /* named barriers: 2 + cw this warpgroup's own (zeroing, epilogue, scales), 4 + cw
         * "the other warpgroup has issued its main loop, the tensor cores are this one's" */
        const int own_bar = 2 + cw, turn_bar = 4 + cw, next_bar = 4 + (cw ^ 1);
        int it = 0; /* ring position of the CTA's tile i */
        int i = 0;
        for (int t = blockIdx.x; t < s.total; t += gridDim.x, ++i) {
            int g; int64_t r0, c0;
            qg_sched_tile<PPM, PPN>(p, s, t, g, r0, c0);
            int64_t r_end = s.bounds[g + 1];
            int nkt = nk, klen = 0, head = 0;
            if (kgrp) {
                r_end = p.rows;
                klen = s.bounds[g + 1] - s.bounds[g];
                head = s.bounds[g] & (KSTART - 1);
                nkt = klen > 0 ? (klen + head + BKE - 1) / BKE : 0;
            }
            if ((i & 1) != cw) { /* the other warpgroup's tile: skip its slots */
                it += nkt;
                continue;
            }
            qg_epi e[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) e[h] = {g, r0 + 64 * h, r_end, c0, kgrp && klen == 0};
            float *ss = sS + cw * PP_SCALE_FLOATS; /* half h: ss + 192 h, rows then columns */
            if constexpr (SC == QG_SC_ROW) {
                qg_stage_row_scales<PPN>(p, e[0], ss, lt, own_bar);
                qg_stage_row_scales<PPN>(p, e[1], ss + 64 + PPN, lt, own_bar);
            }
            float acc0[64], acc1[64];
#pragma unroll
            for (int q = 0; q < 64; ++q) { acc0[q] = 0.f; acc1[q] = 0.f; }
            if (i > 0) asm volatile("barrier.sync %0, 256;\n" ::"r"(turn_bar) : "memory");
            for (int kt = 0; kt < nkt; ++kt, ++it) {
                const int st = it % STAGES;
                mbar_wait(&full[st], (it / STAGES) & 1);
                const int lo = kt == 0 ? head : 0;
                const int hi = min(BKE, klen + head - kt * BKE);
                const int lo_b = lo * ESZ, hi_b = hi * ESZ;
                if (kgrp && (lo > 0 || hi < BKE)) {
                    /* K-grouped: zero the neighbouring groups' tokens in this slice, as in
                     * qg_hopper_kernel; here the warpgroup alone clears all 128 A rows and
                     * 128 B rows (K-major: 128-byte swizzled rows; MN-major: two 64-token
                     * boxes per operand, a row is one token) */
                    qg_zero_outside_group<A_MN, B_MN, PPM, PPN>(sA + st * PP_A_BYTES, sB + st * PP_B_BYTES, lo, hi,
                                                                lo_b, hi_b, lt);
                    __syncwarp();
                    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                    qg_wg_bar(own_bar);
                    __syncwarp();
                }
                const uint32_t a_at = h_smem(sA + st * PP_A_BYTES), b_at = h_smem(sB + st * PP_B_BYTES);
                /* the two m64 rows of A are 64 rows (K-major) or one box (MN-major) apart: 8 KiB */
                const uint64_t da0 = A_MN ? wg_desc_mn(a_at, MNBOX) : wg_desc(a_at);
                const uint64_t da1 = A_MN ? wg_desc_mn(a_at + 64 * 128, MNBOX) : wg_desc(a_at + 64 * 128);
                const uint64_t db = B_MN ? wg_desc_mn(b_at, MNBOX) : wg_desc(b_at);
                constexpr int STEP_A = A_MN ? 128 : 2, STEP_B = B_MN ? 128 : 2;
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int ks = 0; ks < 4; ++ks) {
                    if constexpr (E == QG_ELEM_BF16) {
                        qg_wgmma128_bf16<A_MN, B_MN>(acc0, da0 + STEP_A * ks, db + STEP_B * ks);
                        qg_wgmma128_bf16<A_MN, B_MN>(acc1, da1 + STEP_A * ks, db + STEP_B * ks);
                    } else if constexpr (E == QG_ELEM_E4M3) {
                        qg_wgmma128_e4m3(acc0, da0 + 2 * ks, db + 2 * ks, 1);
                        qg_wgmma128_e4m3(acc1, da1 + 2 * ks, db + 2 * ks, 1);
                    } else {
                        qg_wgmma128_e5m2(acc0, da0 + 2 * ks, db + 2 * ks, 1);
                        qg_wgmma128_e5m2(acc1, da1 + 2 * ks, db + 2 * ks, 1);
                    }
                }
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (kt > 0) mbar_arrive(&empty[(it + STAGES - 1) % STAGES]);
            }
            /* every MMA of this tile is issued: the other warpgroup's main loop may start
             * (its tile i + 1, if the CTA has one) while this one drains and stores */
            if (t + (int)gridDim.x < s.total) asm volatile("barrier.arrive %0, 256;\n" ::"r"(next_bar) : "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            qg_fence_acc(acc0);
            qg_fence_acc(acc1);
            if (nkt > 0) mbar_arrive(&empty[(it + STAGES - 1) % STAGES]);
            if constexpr (SC == QG_SC_ROW) qg_wait_row_scales(own_bar);
            auto store_half = [&](int h, float(&acc)[64]) {
                const float *ssh = ss + h * (64 + PPN);
                bool staged = false;
                if constexpr (SB > 0) {
                    constexpr bool TWO = SB >= 2 * 64 * PPN * 2; /* an area per half (bf16) */
                    uint8_t *area = sO + cw * SB + (TWO ? h * (SB / 2) : 0);
                    staged = tma_out && (e[h].r0 + 64 <= r_end || r_end >= p.rows);
                    if (staged) qg_epi_tma<SC, 16, TWO ? SB / 2 : SB, TWO>(p, e[h], acc, ssh, &tmO, area, own_bar, lt,
                                                                         warp, lane);
                    /* keep the areas' bulk groups alternating (qg_epi_tma's PEND) */
                    else if (TWO && lt == 0) asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
                }
                if (!staged) qg_epi_regs<SC, 16>(p, e[h], acc, ssh, pair_ok, warp, lane);
            };
            store_half(0, acc0);
            store_half(1, acc1);
        }
        if (SB > 0 && lt == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
#else
    __trap();
#endif
}

} // namespace
