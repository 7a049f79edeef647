#version 460
// gemm.comp — grouped GEMM, M-grouped and K-grouped, every recipe, f32 accumulation.
// Tiles of 64x64 outputs per workgroup, 16-deep K steps staged through shared memory,
// 4x4 outputs per lane held in registers. Operands are converted to f32 (and, for the
// blockwise / MXFP8 recipes, multiplied by their per-block dequant scale) while they are
// staged, so the inner loop is plain f32 FMA for every recipe; FP8 rowwise scales are
// applied in the epilogue as acc * sa * sb (the CPU reference's order).
// Group bounds come from the device table (offs_prep.comp): no host readback. Lanes of
// a row tile past its group's end, and tiles past the last group, write nothing.
// Compiled twice: QG_FP8=0 (bf16 operands) and QG_FP8=1 (fp8 operands through a
// 256-entry decode table in shared memory, built with the integer codec).
#include "params.h"
#include "common.glsl"
#include "gemm_params.h"
#include "codec.glsl"
#include "layout.glsl"
layout(local_size_x = 256) in;

#define BM 64
#define BN 64
#define BK 16
shared float As[BK][BM + 4];
shared float Bs[BK][BN + 4];
#if QG_FP8
shared float lutA[256];
shared float lutB[256];
// per-row / per-column dequant scale of the current K step (a step never straddles a
// 32- or 128-deep scale block: steps are 16 deep and every group starts on a block)
shared float scA[BM];
shared float scB[BN];
#endif

#define R_BF16 0
#define R_ROWWISE 1
#define R_BLOCKWISE 2
#define R_MX 3

float e8m0f(uint64_t base, int64_t byteoff, int64_t stride)
{
    return uintBitsToFloat(e8m0_to_f32(ld_u8(base, byteoff * stride)));
}

void main()
{
    const int tid = int(gl_LocalInvocationID.x);
    const int kind = int(GP.kind), recipe = int(GP.recipe);
    const uint64_t table = uint64_t(GP.table);
    if (tab_bad(table)) return;
    const int64_t G = GP.groups, ntj = GP.ntj;
    const int64_t wid = wg_linear();
    if (wid >= GP.nwg) return;
    const int64_t tj = wid % ntj, ti_all = wid / ntj;

    // ---- which group and which rows
    int64_t g, i0, i1, c0, c1;
    if (kind == 0) {
        // first g whose tiles end after ti_all: one table field per probe (field 5, the
        // running tile count), 32-bit arithmetic
        const int t = int(ti_all);
        int lo = 0, hi = int(G);
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (tab_get(table, mid, 5) <= t) lo = mid + 1; else hi = mid;
        }
        if (lo >= int(G)) return;
        g = lo;
        const int gs = tab_get(table, g, 0), ge = tab_get(table, g, 1);
        const int r0 = gs + (t - tab_get(table, g, 4)) * BM;
        // defensive: a tile must start inside its group (the table was checked on the
        // device, so this only guards against a corrupt table)
        if (r0 < gs || r0 >= ge) return;
        i0 = r0;
        i1 = min(r0 + BM, ge);
        c0 = 0;
        c1 = GP.depth;
    } else {
        // the t-th non-empty group (field 5 counts them; gemm_zero.comp zeroes the empty ones)
        const int t = int(ti_all / GP.nti);
        int lo = 0, hi = int(G);
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (tab_get(table, mid, 5) <= t) lo = mid + 1; else hi = mid;
        }
        if (lo >= int(G)) return;
        g = lo;
        i0 = (ti_all % GP.nti) * BM;
        i1 = min(i0 + BM, GP.rows);
        c0 = tab_get(table, g, 0);
        c1 = tab_get(table, g, 1);
    }
    const int64_t j0 = tj * BN, j1 = min(j0 + BN, GP.cols);

#if QG_FP8
    lutA[tid] = uintBitsToFloat(fp8_to_f32(uint(tid), int(GP.a_dt)));
    lutB[tid] = uintBitsToFloat(fp8_to_f32(uint(tid), int(GP.b_dt)));
#endif
    const uint64_t A = uint64_t(GP.a_addr), B = uint64_t(GP.b_addr);
    const int64_t bgoff = g * GP.b_g;
    const int64_t sAi = GP.a_i, sAc = GP.a_c, sBj = GP.b_j, sBc = GP.b_c;
    const bool a_ic = int(GP.a_icontig) != 0, b_jc = int(GP.b_jcontig) != 0;

    // MX geometry of this group (see cpu_gemm.c a_block_scale / b_block_scale)
    int64_t mxa_base = 0, mxa_row0 = 0, mxa_c0 = 0, mxa_cp = 1, mxb_base = 0, mxb_c0 = 0, mxb_cp = 1;
    if (recipe == R_MX) {
        const int64_t ps = tab_get(table, g, 2), pe = tab_get(table, g, 3);
        if (kind == 0) {
            mxa_base = ps * GP.a_cols_pad; mxa_row0 = tab_get(table, g, 0); mxa_cp = GP.a_cols_pad;
            mxb_base = g * GP.b_per_exp; mxb_cp = GP.b_cols_pad;
        } else {
            mxa_base = ps * GP.a_rows_pad; mxa_c0 = c0; mxa_cp = pe - ps;
            mxb_base = ps * GP.b_rows_pad; mxb_c0 = c0; mxb_cp = pe - ps;
        }
    }

    // every parameter the loops need, read once (the block lives in host-visible memory)
    const uint64_t SA = uint64_t(GP.sa_addr), SB = uint64_t(GP.sb_addr);
    const int64_t sSAg = GP.sa_g, sSAi = GP.sa_i, sSAc = GP.sa_c;
    const int64_t sSBg = GP.sb_g, sSBj = GP.sb_j, sSBc = GP.sb_c, sbjdiv = max(GP.sb_jdiv, 1l);
    const int64_t sastride = GP.sa_stride, sbstride = GP.sb_stride;
    const int odt = int(GP.o_dt);
    const int64_t sOi = GP.o_i, sOj = GP.o_j;

    float acc[4][4];
    for (int a = 0; a < 4; ++a) for (int b = 0; b < 4; ++b) acc[a][b] = 0.0;
    const int ty = tid / 16, tx = tid % 16;
    barrier();

    for (int64_t kc = c0; kc < c1; kc += BK) {
#if QG_FP8
        if (recipe == R_BLOCKWISE || recipe == R_MX) {
            if (tid < BM) {
                const int64_t gi = min(i0 + tid, i1 - 1);
                scA[tid] = recipe == R_BLOCKWISE
                    ? uintBitsToFloat(ld_u32(SA, gi * sSAi + (kc / 128) * sSAc))
                    : e8m0f(SA, mxa_base + blocked_offset(gi - mxa_row0, (kc - mxa_c0) / 32, mxa_cp), sastride);
            } else if (tid < BM + BN) {
                const int64_t gj = min(j0 + tid - BM, j1 - 1);
                scB[tid - BM] = recipe == R_BLOCKWISE
                    ? uintBitsToFloat(ld_u32(SB, g * sSBg + (gj / sbjdiv) * sSBj + (kc / 128) * sSBc))
                    : e8m0f(SB, mxb_base + blocked_offset(gj, (kc - mxb_c0) / 32, mxb_cp), sbstride);
            }
            barrier();
        }
#endif
        for (int q = 0; q < 4; ++q) {
            const int el = tid + 256 * q;
            // ---- A element (row ii, depth kk)
            int ii, kk;
            if (a_ic) { ii = el % BM; kk = el / BM; } else { ii = el / BK; kk = el % BK; }
            float va = 0.0;
            const int64_t gi = i0 + ii, gc = kc + kk;
            if (gi < i1 && gc < c1) {
                const int64_t idx = gi * sAi + gc * sAc;
#if QG_FP8
                va = lutA[ld_u8(A, idx)];
                if (recipe == R_BLOCKWISE || recipe == R_MX) va *= scA[ii];
#else
                va = uintBitsToFloat(bf16_to_f32(ld_u16(A, idx)));
#endif
            }
            As[kk][ii] = va;
            // ---- B element (col jj, depth kk)
            int jj;
            if (b_jc) { jj = el % BN; kk = el / BN; } else { jj = el / BK; kk = el % BK; }
            float vb = 0.0;
            const int64_t gj = j0 + jj, gd = kc + kk;
            if (gj < j1 && gd < c1) {
                const int64_t idx = bgoff + gj * sBj + gd * sBc;
#if QG_FP8
                vb = lutB[ld_u8(B, idx)];
                if (recipe == R_BLOCKWISE || recipe == R_MX) vb *= scB[jj];
#else
                vb = uintBitsToFloat(bf16_to_f32(ld_u16(B, idx)));
#endif
            }
            Bs[kk][jj] = vb;
        }
        barrier();
        for (int k = 0; k < BK; ++k) {
            float av[4], bv[4];
            for (int a = 0; a < 4; ++a) av[a] = As[k][ty * 4 + a];
            for (int b = 0; b < 4; ++b) bv[b] = Bs[k][tx * 4 + b];
            for (int a = 0; a < 4; ++a)
                for (int b = 0; b < 4; ++b) acc[a][b] = fma(av[a], bv[b], acc[a][b]);
        }
        barrier();
    }

    // ---- epilogue
    const uint64_t OUT = uint64_t(GP.o_addr) + uint64_t(g * GP.o_g * (odt == DT_BF16 ? 2 : 4));
    for (int a = 0; a < 4; ++a) {
        const int64_t gi = i0 + ty * 4 + a;
        if (gi >= i1) continue;
        float ra = 1.0;
        if (recipe == R_ROWWISE) ra = uintBitsToFloat(ld_u32(SA, g * sSAg + gi * sSAi));
        for (int b = 0; b < 4; ++b) {
            const int64_t gj = j0 + tx * 4 + b;
            if (gj >= j1) continue;
            float v = acc[a][b];
            if (recipe == R_ROWWISE)
                v = v * ra * uintBitsToFloat(ld_u32(SB, g * sSBg + gj * sSBj));
            const int64_t oi = gi * sOi + gj * sOj;
            if (odt == DT_BF16) st_u16(OUT, oi, f32_to_bf16(floatBitsToUint(v)));
            else st_u32(OUT, oi, floatBitsToUint(v));
        }
    }
}
