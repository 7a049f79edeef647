#version 460
// gemm_coopmat.comp — grouped GEMM (M- and K-grouped) for the FP8 recipes (rowwise,
// blockwise, MXFP8) on VK_NV_cooperative_matrix tensor-core MMAs: 16x16x16 f16 x f16 -> f32.
//
// Why f16 operands are exact: every e4m3fn / e4m3fnuz / e5m2 value (normals, subnormals,
// inf, NaN) is representable in f16, so the 256-entry decode table (built with the integer
// codec of codec.glsl, then converted f32 -> f16, an exact conversion for these values)
// feeds the MMA the same numbers the CPU reference multiplies, and each f16 x f16 product
// is exact in f32. Per scale block (rowwise: the whole depth; blockwise: 128; MX: 32) the
// products are summed in f32 accumulator fragments, then promoted as cpu_gemm.c does:
//   total += (sa * sb) * block_sum;  rowwise epilogue: total * ra * rb.
// The fragment layout of NV cooperative matrices is opaque, so promotion stores each
// fragment to a per-subgroup shared scratch and every lane scales the elements it owns
// (fixed lane -> element map) into f32 registers.
//
// Tile: 128x128 outputs per workgroup of 256 lanes = 8 subgroups of 32 (the host enables
// this path only for subgroup size 32), each subgroup 64 rows x 32 cols = 4x2 fragments;
// 32-deep K steps staged through shared memory. Group bounds come from the device table
// (offs_prep.comp, tile 128), exactly as in gemm.comp; rows / cols / depth past the ends
// stage as zeros and write nothing.
#include "params.h"
#include "common.glsl"
#include "codec.glsl"
#include "layout.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 256) in;

#define BM 128
#define BN 128
#define BK 32
#define LDA (BK + 8)  // f16 row pitch of the A tile (multiple of 8 elements = 16 bytes)
#define LDB (BN + 8)  // f16 row pitch of the B tile (K x N, row-major)
shared float16_t As[BM * LDA];
shared float16_t Bs[BK * LDB];
shared float scratch[8 * 256];  // one 16x16 f32 fragment per subgroup
shared float16_t lutA[256];
shared float16_t lutB[256];
shared float scA[BM];  // scale of the current block per row / per column
shared float scB[BN];

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
    const int kind = PI(GM_KIND), recipe = PI(GM_RECIPE);
    const uint64_t table = PA(GM_TABLE);
    if (tab_bad(table)) return;
    const int64_t G = P(GM_G), ntj = P(GM_NTJ);
    const int64_t wid = wg_linear();
    if (wid >= P(GM_NWG)) return;
    const int64_t tj = wid % ntj, ti_all = wid / ntj;

    // ---- which group and which rows (same as gemm.comp, tile BM)
    int64_t g, i0, i1, c0, c1;
    if (kind == 0) {
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
        if (r0 < gs || r0 >= ge) return;
        i0 = r0;
        i1 = min(r0 + BM, ge);
        c0 = 0;
        c1 = P(GM_DEPTH);
    } else {
        g = ti_all / P(GM_NTI);
        if (g >= G) return;
        i0 = (ti_all % P(GM_NTI)) * BM;
        i1 = min(i0 + BM, P(GM_ROWS));
        c0 = tab_get(table, g, 0);
        c1 = tab_get(table, g, 1);
    }
    const int64_t j0 = tj * BN, j1 = min(j0 + BN, P(GM_COLS));

    lutA[tid] = float16_t(uintBitsToFloat(fp8_to_f32(uint(tid), PI(GM_ADT))));
    lutB[tid] = float16_t(uintBitsToFloat(fp8_to_f32(uint(tid), PI(GM_BDT))));
    const uint64_t A = PA(GM_A), B = PA(GM_B);
    const int64_t bgoff = g * P(GM_BG);
    const int64_t sAi = P(GM_AI), sAc = P(GM_AC), sBj = P(GM_BJ), sBc = P(GM_BC);
    const bool a_ic = PI(GM_A_ICONTIG) != 0, b_jc = PI(GM_B_JCONTIG) != 0;

    // MX geometry of this group (see cpu_gemm.c a_block_scale / b_block_scale)
    int64_t mxa_base = 0, mxa_row0 = 0, mxa_c0 = 0, mxa_cp = 1, mxb_base = 0, mxb_c0 = 0, mxb_cp = 1;
    if (recipe == R_MX) {
        const int64_t ps = tab_get(table, g, 2), pe = tab_get(table, g, 3);
        if (kind == 0) {
            mxa_base = ps * P(GM_ACOLSPAD); mxa_row0 = tab_get(table, g, 0); mxa_cp = P(GM_ACOLSPAD);
            mxb_base = g * P(GM_BPEREXP); mxb_cp = P(GM_BCOLSPAD);
        } else {
            mxa_base = ps * P(GM_AROWSPAD); mxa_c0 = c0; mxa_cp = pe - ps;
            mxb_base = ps * P(GM_BROWSPAD); mxb_c0 = c0; mxb_cp = pe - ps;
        }
    }
    const uint64_t SA = PA(GM_SA), SB = PA(GM_SB);
    const int64_t sSAg = P(GM_SAG), sSAi = P(GM_SAI), sSAc = P(GM_SAC);
    const int64_t sSBg = P(GM_SBG), sSBj = P(GM_SBJ), sSBc = P(GM_SBC), sbjdiv = max(P(GM_SBJDIV), 1l);
    const int64_t sastride = P(GM_SASTRIDE), sbstride = P(GM_SBSTRIDE);
    const int odt = PI(GM_ODT);
    const int64_t sOi = P(GM_OI), sOj = P(GM_OJ);
    // depth of one scale block; rowwise promotes once, at the end, with unit scales
    const int64_t bd = recipe == R_BLOCKWISE ? 128 : recipe == R_MX ? 32 : (1l << 62);
    if (recipe == R_ROWWISE) {
        if (tid < BM) scA[tid] = 1.0; else scB[tid - BM] = 1.0;
    }

    const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const int wm = int(sg) / 4, wn = int(sg) % 4;  // subgroup tile: rows wm*64, cols wn*32
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[8];
    for (int f = 0; f < 8; ++f) acc[f] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    float tot[64];
    for (int e = 0; e < 64; ++e) tot[e] = 0.0;
    barrier();

    for (int64_t kc = c0; kc < c1; kc += BK) {
        if (recipe != R_ROWWISE && (kc - c0) % bd == 0) {  // a scale block starts here
            if (tid < BM) {
                const int64_t gi = min(i0 + tid, i1 - 1);
                scA[tid] = recipe == R_BLOCKWISE
                    ? uintBitsToFloat(ld_u32(SA, gi * sSAi + (kc / 128) * sSAc))
                    : e8m0f(SA, mxa_base + blocked_offset(gi - mxa_row0, (kc - mxa_c0) / 32, mxa_cp), sastride);
            } else {
                const int64_t gj = min(j0 + tid - BM, j1 - 1);
                scB[tid - BM] = recipe == R_BLOCKWISE
                    ? uintBitsToFloat(ld_u32(SB, g * sSBg + (gj / sbjdiv) * sSBj + (kc / 128) * sSBc))
                    : e8m0f(SB, mxb_base + blocked_offset(gj, (kc - mxb_c0) / 32, mxb_cp), sbstride);
            }
        }
        // ---- stage: 128x32 A bytes and 32x128 B bytes, 16 each per lane, decoded to f16
        for (int q = 0; q < 16; ++q) {
            const int el = tid + 256 * q;
            int ii, kk;
            if (a_ic) { ii = el % BM; kk = el / BM; } else { ii = el / BK; kk = el % BK; }
            float16_t va = float16_t(0.0);
            const int64_t gi = i0 + ii, gc = kc + kk;
            if (gi < i1 && gc < c1) va = lutA[ld_u8(A, gi * sAi + gc * sAc)];
            As[ii * LDA + kk] = va;
            int jj;
            if (b_jc) { jj = el % BN; kk = el / BN; } else { jj = el / BK; kk = el % BK; }
            float16_t vb = float16_t(0.0);
            const int64_t gj = j0 + jj, gd = kc + kk;
            if (gj < j1 && gd < c1) vb = lutB[ld_u8(B, bgoff + gj * sBj + gd * sBc)];
            Bs[kk * LDB + jj] = vb;
        }
        barrier();
        for (int ks = 0; ks < BK; ks += 16) {
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[4];
            fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb[2];
            for (int fm = 0; fm < 4; ++fm)
                coopMatLoadNV(fa[fm], As, uint((wm * 64 + fm * 16) * LDA + ks), uint(LDA), false);
            for (int fn = 0; fn < 2; ++fn)
                coopMatLoadNV(fb[fn], Bs, uint(ks * LDB + wn * 32 + fn * 16), uint(LDB), false);
            for (int fm = 0; fm < 4; ++fm)
                for (int fn = 0; fn < 2; ++fn)
                    acc[fm * 2 + fn] = coopMatMulAddNV(fa[fm], fb[fn], acc[fm * 2 + fn]);
        }
        // ---- promote at the end of a scale block (or of the depth)
        if ((kc + BK - c0) % bd == 0 || kc + BK >= c1) {
            for (int f = 0; f < 8; ++f) {
                coopMatStoreNV(acc[f], scratch, sg * 256u, 16u, false);
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                const int rb = wm * 64 + (f / 2) * 16, cb = wn * 32 + (f % 2) * 16;
                for (int q = 0; q < 8; ++q) {
                    const int e = int(lane) + 32 * q;
                    const float v = scratch[sg * 256u + uint(e)];
                    tot[f * 8 + q] += (scA[rb + e / 16] * scB[cb + e % 16]) * v;
                }
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                acc[f] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
            }
        }
        barrier();
    }

    // ---- epilogue: rowwise scales, stores through the out strides
    const uint64_t OUT = PA(GM_OUT) + uint64_t(g * P(GM_OG) * (odt == DT_BF16 ? 2 : 4));
    for (int f = 0; f < 8; ++f) {
        const int rb = wm * 64 + (f / 2) * 16, cb = wn * 32 + (f % 2) * 16;
        for (int q = 0; q < 8; ++q) {
            const int e = int(lane) + 32 * q;
            const int64_t gi = i0 + rb + e / 16, gj = j0 + cb + e % 16;
            if (gi >= i1 || gj >= j1) continue;
            float v = tot[f * 8 + q];
            if (recipe == R_ROWWISE)
                v = v * uintBitsToFloat(ld_u32(SA, g * sSAg + gi * sSAi)) *
                    uintBitsToFloat(ld_u32(SB, g * sSBg + gj * sSBj));
            const int64_t oi = gi * sOi + gj * sOj;
            if (odt == DT_BF16) st_u16(OUT, oi, f32_to_bf16(floatBitsToUint(v)));
            else st_u32(OUT, oi, floatBitsToUint(v));
        }
    }
}
