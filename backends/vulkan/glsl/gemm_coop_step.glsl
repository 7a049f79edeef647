// gemm_coop_step.glsl — the body of gemm_coopmat.comp's main loop: one depth step s from
// shared stage `cur` (both set by the includer, with SET_A / SET_B naming the register set
// that holds step s). Included once per loop iteration, or (QG_SETS 2) twice,
// so that two register sets alternate by name: a step's chunks then have two steps of MMAs
// to arrive (a copy between sets would wait for the loads and undo that).
{
        const int kc = c0 + s * BK;
        // stage step s (fetched QG_SETS steps before) and its scales; then start the loads of
        // step s + QG_SETS
        if (s < nsteps) {
            if (promote_blocks) {
                if (tid < BM) {  // (the promote build has NT = BM + BN lanes)
                    const int64_t gi = min(i0 + tid, i1 - 1);
                    psa = recipe == R_BLOCKWISE
                        ? uintBitsToFloat(ld_u32(SA, gi * sSAi + (kc / 128) * sSAc))
                        : e8m0f(SA, mxa_base + blocked_offset(gi - mxa_row0, (kc - mxa_c0) / 32, mxa_cp), sastride);
                    scA[cur * BM + tid] = psa;
                } else {
                    const int64_t gj = min(j0 + tid - BM, j1 - 1);
                    psb = recipe == R_BLOCKWISE
                        ? uintBitsToFloat(ld_u32(SB, g * sSBg + (gj / sbjdiv) * sSBj + (kc / 128) * sSBc))
                        : e8m0f(SB, mxb_base + blocked_offset(gj, (kc - mxb_c0) / 32, mxb_cp), sbstride);
                    scB[cur * BN + tid - BM] = psb;
                }
            }
            FOR_CHUNKS(CHUNK_STORE)
        }
        barrier();
        if (s == nsteps) break;
        if (s + QG_SETS < nsteps) {
            const int kf = kc + QG_SETS * BK;
            FOR_CHUNKS(CHUNK_FETCH)
            a_addr += aadv;
            b_addr += badv;
        }
        // ---- MMAs of step s from stage cur
        const uint ta = uint((2 * cur) * TILE_U4), tb = uint((2 * cur + 1) * TILE_U4);
#if QG_WGSCOPE
        {
            WA a0, a1;
            WB b;
            if (A.kc) {  // tile [row][depth]: row-major, rows 0-63 and 64-127
                coopMatLoadNV(a0, tiles, ta, PITCH_KC, false);
                coopMatLoadNV(a1, tiles, ta + 64 * PITCH_KC, PITCH_KC, false);
            } else {     // tile [depth][row]: column-major
                coopMatLoadNV(a0, tiles, ta, PITCH_OC, true);
                coopMatLoadNV(a1, tiles, ta + 8, PITCH_OC, true);
            }
            if (B.kc) coopMatLoadNV(b, tiles, tb, PITCH_KC, true);
            else coopMatLoadNV(b, tiles, tb, PITCH_OC, false);
            wacc0 = coopMatMulAddNV(a0, b, wacc0);
            wacc1 = coopMatMulAddNV(a1, b, wacc1);
        }
#else
        [[unroll]] for (int ks = 0; ks < BK; ks += 16) {
            FRAG a0, a1, a2, a3, b0, b1;
#if NB == 4
            FRAG b2, b3;
#endif
            if (A.kc) {  // tile [row][depth]: row-major
                const uint e = ta + uint(wm * 64) * PITCH_KC + uint(ks / 8);
                coopMatLoadNV(a0, tiles, e, PITCH_KC, false);
                coopMatLoadNV(a1, tiles, e + 16 * PITCH_KC, PITCH_KC, false);
                coopMatLoadNV(a2, tiles, e + 32 * PITCH_KC, PITCH_KC, false);
                coopMatLoadNV(a3, tiles, e + 48 * PITCH_KC, PITCH_KC, false);
            } else {     // tile [depth][row]: column-major
                const uint e = ta + uint(ks) * PITCH_OC + uint(wm * 64 / 8);
                coopMatLoadNV(a0, tiles, e, PITCH_OC, true);
                coopMatLoadNV(a1, tiles, e + 2, PITCH_OC, true);
                coopMatLoadNV(a2, tiles, e + 4, PITCH_OC, true);
                coopMatLoadNV(a3, tiles, e + 6, PITCH_OC, true);
            }
            if (B.kc) {  // tile [col][depth]: B (depth x col) is column-major
                const uint e = tb + uint(wn * 16 * NB) * PITCH_KC + uint(ks / 8);
                coopMatLoadNV(b0, tiles, e, PITCH_KC, true);
                coopMatLoadNV(b1, tiles, e + 16 * PITCH_KC, PITCH_KC, true);
#if NB == 4
                coopMatLoadNV(b2, tiles, e + 32 * PITCH_KC, PITCH_KC, true);
                coopMatLoadNV(b3, tiles, e + 48 * PITCH_KC, PITCH_KC, true);
#endif
            } else {     // tile [depth][col]: row-major
                const uint e = tb + uint(ks) * PITCH_OC + uint(wn * 16 * NB / 8);
                coopMatLoadNV(b0, tiles, e, PITCH_OC, false);
                coopMatLoadNV(b1, tiles, e + 2, PITCH_OC, false);
#if NB == 4
                coopMatLoadNV(b2, tiles, e + 4, PITCH_OC, false);
                coopMatLoadNV(b3, tiles, e + 6, PITCH_OC, false);
#endif
            }
#if NB == 4
#define MMA_ROW(fm, a) \
            acc[fm * 4] = coopMatMulAddNV(a, b0, acc[fm * 4]);         \
            acc[fm * 4 + 1] = coopMatMulAddNV(a, b1, acc[fm * 4 + 1]); \
            acc[fm * 4 + 2] = coopMatMulAddNV(a, b2, acc[fm * 4 + 2]); \
            acc[fm * 4 + 3] = coopMatMulAddNV(a, b3, acc[fm * 4 + 3]);
#else
#define MMA_ROW(fm, a) \
            acc[fm * 2] = coopMatMulAddNV(a, b0, acc[fm * 2]);         \
            acc[fm * 2 + 1] = coopMatMulAddNV(a, b1, acc[fm * 2 + 1]);
#endif
            MMA_ROW(0, a0)
            MMA_ROW(1, a1)
            MMA_ROW(2, a2)
            MMA_ROW(3, a3)
        }
#endif
#if QG_PROMOTE
        // ---- promote at the end of a scale block (or of the depth)
        if ((kc + BK - c0) % bd == 0 || s + 1 == nsteps) {
            [[unroll]] for (int f = 0; f < NF; ++f) {
                const int rb = wm * 64 + (f / NB) * 16, cb = wn * 16 * NB + (f % NB) * 16;
                [[unroll]] for (int i = 0; i < flen; ++i)
                    tot[f * 8 + i] += (scA[cur * BM + rb + rc[i] / 16] * scB[cur * BN + cb + rc[i] % 16]) * acc[f][i];
                acc[f] = ACC(0.0);
            }
        }
#endif
}
