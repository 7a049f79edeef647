#version 460
// cast_2d.comp — the two casts whose scale block spans several rows, rebuilt as
// cast_rows.comp was: few registers per lane, amax combined by subgroup operations with at
// most one barrier, every unit loop unrolled by glslc so that x stays in registers.
//  SC_MODE 0, MX dim1: bf16 x with the 32-row block dim strided and the other dim (columns)
//    contiguous, q contiguous along the block (column-major). A lane holds 8 columns x SC_RPL
//    rows (one 16-byte load per row); 32 / RPL consecutive lanes make one 32-row block and
//    combine their 8 column amaxes by shuffles (a reduce-scatter: each lane then computes
//    and stores 8 / LPB of the scales, an all-gather hands out the multipliers); each lane
//    writes RPL bytes per column, with the signs of 4 rows applied at once. A warp load
//    covers 32 / RPL rows of RPL column groups (128 contiguous bytes per row); a workgroup takes SC_BPW consecutive
//    blocks, so each column's q bytes of them leave it as one whole line.
//  SC_MODE 1, 128x128 tiles: bf16 x, reduce dim contiguous; one tile per workgroup, a lane
//    holds 8 rows of 8 elements (16 lanes cover a tile row's 256 bytes); one subgroup
//    reduction, one shared slot per subgroup, one barrier.
// cast.comp's paths 2 and 3 held the same data in 64-112 registers plus local memory, and
// 128x128 reduced through an 8-level shared-memory tree. Scales and bytes are cast.comp's
// (cast_quant.glsl / codec.glsl); the conformance suite checks them against the CPU.
// The QG_XF32 build takes f32 x: 8 columns (MX dim1) or 8 elements (128x128) are two 16-byte
// loads (w and w2, c and c2), MX dim1 at 8 rows per lane.
// The host (vk_ops_cast.c) uses it only where cast_rows.comp may run (subgroup basic,
// arithmetic and shuffle operations in compute shaders).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
#include "common.glsl"
#include "cast_params.h"
#include "codec.glsl"
#include "layout.glsl"

#define FMT QG_FMT // compiled per fp8 format, as cast.comp

layout(constant_id = 0) const int SC_MODE = 0; // 0 MX dim1, 1 128x128 tiles
layout(constant_id = 1) const int SC_RPL = 8;  // MX dim1: rows per lane, 8 or 16
layout(constant_id = 2) const int SC_RULE = 0;
layout(constant_id = 3) const int SC_ENC = 1;
layout(constant_id = 4) const int SC_BPW = 1;  // MX dim1: 32-row blocks per workgroup (1, 2, 4)
#define K_RULE SC_RULE
#define K_ENC SC_ENC

layout(local_size_x = 256) in;
shared uint sh_sg[64]; // per-subgroup amax (256 / the smallest subgroup size of 4)

#include "cast_quant.glsl"

// Element i of the lane's 16 words held as uvec4 units (i not a constant: a select chain over
// constant indices, so that the units stay in registers).
uvec4 word_at(uvec4 w[16], int i)
{
    uvec4 v = w[0];
    [[unroll]] for (int j = 1; j < 16; ++j)
        if (j == i) v = w[j];
    return v;
}

// A column's RPL q bytes (16-byte aligned: the host checks q).
void store_column(uint64_t at, uvec4 o)
{
    if (SC_RPL == 16) QV16(at).v = o;
    else QV8(at).v = o.xy;
}

// The sign bits of one column in 4 consecutive rows (words a0..a3 of those rows, the
// column in the low half unless `hi`) at bits 7, 15, 23, 31: the 4 fp8 bytes' signs.
uint row_signs(uint a0, uint a1, uint a2, uint a3, bool hi)
{
    if (hi) return ((a0 >> 24) & 0x80u) | ((a1 >> 16) & 0x8000u) | ((a2 >> 8) & 0x800000u) | (a3 & 0x80000000u);
    return ((a0 >> 8) & 0x80u) | (a1 & 0x8000u) | ((a2 << 8) & 0x800000u) | ((a3 << 16) & 0x80000000u);
}

// One reduce-scatter round over lane partners `bit` apart: of the n column maxima held, the
// lane keeps the upper half when `hi`, else the lower, maxed with the partner's of the same.
void scatter_round(inout uint m[8], int bit, int n, bool hi)
{
    [[unroll]] for (int i = 0; i < 4; ++i) {
        if (i < n / 2) {
            const uint keep = hi ? m[i + n / 2] : m[i], give = hi ? m[i] : m[i + n / 2];
            m[i] = max(keep, subgroupShuffleXor(give, uint(bit)));
        }
    }
}

// One all-gather round: the n values held and the partner's n, the lower lane's first.
void gather_round(inout uint v[8], int bit, int n, bool hi)
{
    uint got[4];
    [[unroll]] for (int i = 0; i < 4; ++i) got[i] = i < n ? subgroupShuffleXor(v[i], uint(bit)) : 0u;
    [[unroll]] for (int i = 0; i < 4; ++i) {
        if (i < n) {
            const uint mine_v = v[i];
            v[i] = hi ? got[i] : mine_v;
            v[i + n] = hi ? mine_v : got[i];
        }
    }
}

void mx_dim1()
{
    const int sgs = int(gl_SubgroupSize);
    const int li = int(gl_SubgroupID) * sgs + int(gl_SubgroupInvocationID);
    const int LPB = 32 / SC_RPL; // lanes per 32-row block
    const int rq = li & (LPB - 1), cg = li / LPB;
    // the workgroup: SC_BPW consecutive 32-row blocks x (256 / LPB / BPW) column groups, so
    // that each column's q bytes of those blocks (BPW x 32 contiguous bytes) come from one
    // workgroup and reach memory as whole lines rather than as 32-byte pieces
    const int CGW = 256 / LPB / SC_BPW; // column groups per workgroup
    const int64_t lin = wg_linear(), ct_n = CPR.otiles, nseg = CPR.nseg, gt_n = (nseg + SC_BPW - 1) / SC_BPW;
    const int64_t ct = lin % ct_n, gt = (lin / ct_n) % gt_n, e = lin / (ct_n * gt_n);
    const int64_t g = gt * SC_BPW + cg / CGW;
    const int64_t c0 = ct * CGW * 8 + 8 * (cg % CGW), rs = g * 32 + rq * SC_RPL;
    const bool valid = c0 < CPR.o && g < nseg;
    const uint64_t xb = uint64_t(CPR.x) + uint64_t((e * CPR.xe + rs * CPR.xr + c0) * XES);
    const uint rowb = uint(CPR.xr) * uint(XES);
    uvec4 w[16], w2[16];
    uvec4 ml = uvec4(0u), mh = uvec4(0u);
    [[unroll]] for (int i = 0; i < 16; ++i) {
        w[i] = i < SC_RPL && valid ? QV16(xb + uint64_t(uint(i) * rowb)).v : uvec4(0u);
        w2[i] = load_hi(xb + uint64_t(uint(i) * rowb), i < SC_RPL && valid);
        unit_amax_add(ml, mh, w[i], w2[i]);
    }
    // The 8 column amaxes over the block's LPB lanes by reduce-scatter: each round halves the
    // columns a lane keeps and takes the partner's maxima of them, so that lane rq ends with
    // the whole-block amax of columns CPL*rq .. CPL*rq + CPL - 1 (CPL = 8 / LPB). Each lane
    // then computes and stores only those CPL scales, and an all-gather hands every lane the
    // 8 multipliers: the per-column scale work is spread over the block's lanes instead of
    // repeated by each (it cost as many integer operations as 2-3 per element).
    uint m[8];
    unit_amax_columns(ml, mh, m);
    if (LPB == 4) {
        scatter_round(m, 2, 8, (rq & 2) != 0);
        scatter_round(m, 1, 4, (rq & 1) != 0);
    } else if (LPB == 2) {
        scatter_round(m, 1, 8, (rq & 1) != 0);
    }
    const int CPL = 8 / LPB, j0 = CPL * rq;
    // the 8 columns' scales: plain at a stride of SO, blocked 16 bytes apart (8 rows of one
    // 32-row group of a tile, c0 % 8 == 0)
    uint64_t sa = uint64_t(CPR.s);
    int64_t sst = 16;
    if (int(CPR.skind) == 2) {
        sa += uint64_t(e * CPR.expbytes + int64_t(blocked_offset32(int(c0), int(g), int(CPR.colspad))));
    } else {
        sa += uint64_t(e * CPR.se + c0 * CPR.so + g * CPR.sg);
        sst = CPR.so;
    }
    uint mine[4];
    uint fastmask = 0u;
    [[unroll]] for (int i = 0; i < 4; ++i) {
        if (i < CPL) {
            const uint amax = amax_as_f32(m[i]);
            const uint b = mx_byte(amax);
            mine[i] = e8m0_reciprocal(b);
            if (valid) QU8(sa + uint64_t((j0 + i) * sst)).v = uint8_t(b);
            if (quantize_fast_ok(amax, mine[i])) fastmask |= 1u << (j0 + i);
        }
    }
    // all-gather: after the round of bit, a lane holds the multipliers of the 2 * held
    // columns starting at CPL * (rq & ~(2 * bit - 1)), in column order
    uint mult[8];
    [[unroll]] for (int i = 0; i < 8; ++i) mult[i] = i < CPL ? mine[i & 3] : 0u;
    if (LPB >= 2) {
        gather_round(mult, 1, CPL, (rq & 1) != 0);
        fastmask |= subgroupShuffleXor(fastmask, 1u);
    }
    if (LPB == 4) {
        gather_round(mult, 2, 2 * CPL, (rq & 2) != 0);
        fastmask |= subgroupShuffleXor(fastmask, 2u);
    }
    if (!valid) return;
    const uint64_t qb = uint64_t(CPR.q) + uint64_t(e * CPR.qe + c0 * CPR.qo + rs);
    const uint64_t qo = uint64_t(CPR.qo);
    if (fastmask == 0xFFu && FMT != FMT_E4M3FNUZ && SC_ENC == 2 && QG_XF32 == 0) {
        // magnitude codes, then the signs of 4 rows at once (cast_quant.glsl q4_fast's
        // word-wise signs, here across rows): 2 integer operations per element fewer than
        // a sign per element
        [[unroll]] for (int j = 0; j < 8; ++j) {
            const float sj = uintBitsToFloat(mult[j]);
            uvec4 o = uvec4(0u);
            [[unroll]] for (int i = 0; i < 16; ++i) {
                if (i < SC_RPL) {
                    precise float p = abs(uintBitsToFloat(col_bits(w[i], j))) * sj;
                    o[i >> 2] |= fp8_mag_binade(p, FMT) << (8 * (i & 3));
                }
            }
            [[unroll]] for (int k = 0; k < 4; ++k)
                if (4 * k < SC_RPL) o[k] |= row_signs(w[4 * k][j >> 1], w[4 * k + 1][j >> 1], w[4 * k + 2][j >> 1],
                                                      w[4 * k + 3][j >> 1], (j & 1) != 0);
            store_column(qb + uint64_t(j) * qo, o);
        }
    } else if (fastmask == 0xFFu) {
        [[unroll]] for (int j = 0; j < 8; ++j) {
            uvec4 o = uvec4(0u);
            [[unroll]] for (int i = 0; i < 16; ++i)
                if (i < SC_RPL) o[i >> 2] |= q1_fast(unit_elem(w[i], w2[i], j), mult[j], SC_ENC) << (8 * (i & 3));
            store_column(qb + uint64_t(j) * qo, o);
        }
    } else {
        // a column holds inf or NaN, or its scale is outside the fast encoder's range (rare):
        // one loop, so that the exact encoder appears once in the code
        for (int j = 0; j < 8; ++j) {
            uint mj = mult[0];
            [[unroll]] for (int k = 1; k < 8; ++k)
                if (k == j) mj = mult[k];
            const bool fast = ((fastmask >> j) & 1u) != 0u;
            uvec4 o = uvec4(0u);
            for (int i = 0; i < SC_RPL; ++i) {
                const uint x = unit_elem(word_at(w, i), word_at(w2, i), j);
                const uint v = fast ? q1_fast(x, mj, SC_ENC) : q1(x, mj, false);
                o[i >> 2] |= v << (8 * (i & 3));
            }
            store_column(qb + uint64_t(j) * qo, o);
        }
    }
}

void tile128()
{
    const int sgs = int(gl_SubgroupSize);
    const int li = int(gl_SubgroupID) * sgs + int(gl_SubgroupInvocationID);
    const int64_t lin = wg_linear(), notiles = CPR.notiles, nseg = CPR.nseg;
    const int64_t ot = lin % notiles, g = (lin / notiles) % nseg, e = lin / (notiles * nseg);
    const int lo = li >> 4, lr = li & 15;
    const int64_t o0 = ot * 128, O = CPR.o, rs = g * 128 + 8 * lr;
    const uint64_t xb = uint64_t(CPR.x) + uint64_t((e * CPR.xe + rs) * XES), qb = uint64_t(CPR.q) + uint64_t(e * CPR.qe + rs);
    const int64_t xo = CPR.xo, qo = CPR.qo;
    uvec4 c[8], c2[8];
    uvec4 ml = uvec4(0u), mh = uvec4(0u);
    [[unroll]] for (int k = 0; k < 8; ++k) {
        const int64_t o = o0 + lo + 16 * k;
        c[k] = o < O ? QV16(xb + uint64_t(o * xo * XES)).v : uvec4(0u);
        c2[k] = load_hi(xb + uint64_t(o * xo * XES), o < O);
        unit_amax_add(ml, mh, c[k], c2[k]);
    }
    uint am = subgroupMax(unit_amax_fold(ml, mh));
    if (subgroupElect()) sh_sg[gl_SubgroupID] = am;
    barrier();
    const int nsg = 256 / sgs;
    for (int k = 0; k < nsg; ++k) am = max(am, sh_sg[k]);
    const uint amax = amax_as_f32(am);
    const uint mult = scale_and_store(amax, e, ot, g, li == 0);
    if (quantize_fast_ok(amax, mult)) {
        [[unroll]] for (int k = 0; k < 8; ++k) {
            const int64_t o = o0 + lo + 16 * k;
            if (o < O) QV8(qb + uint64_t(o * qo)).v = encode8(c[k], c2[k], mult, true);
        }
    } else {
        for (int k = 0; k < 8; ++k) {
            const int64_t o = o0 + lo + 16 * k;
            if (o < O) QV8(qb + uint64_t(o * qo)).v = encode8(unit_at(c, k), unit_at(c2, k), mult, false);
        }
    }
}

void main()
{
    if (SC_MODE == 0) mx_dim1();
    else tile128();
}
