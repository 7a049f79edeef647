#version 460
// cast_jrows.comp — the jagged FP8 rowwise cast along the contiguous dim (rank 2, reduce_dim
// 1, offs partitioning the columns: torchao's per-group rowwise scales of dOut^T for the
// K-grouped wgrad GEMM). A segment is one row's columns of one group; group bounds are
// arbitrary, so segments start and end anywhere inside a 16-byte unit.
//  - SC_LS consecutive lanes (in subgroup order) take one segment: lane lr the units lr,
//    lr + LS, ... of the grid of 8-column units that covers the segment, at most SC_KPS of
//    them in registers (segments of up to 8 * LS * KPS columns are read once; longer ones
//    read their later units a second time, from L1/L2, to quantize them).
//  - Elements of a unit outside the segment are zeroed for the amax and not stored; only a
//    segment's first and last units can hold such elements.
//  - The lanes of a segment combine their amax by subgroup shuffles (LS <= the subgroup
//    size), compute the scale (cast_quant.glsl scale_and_store: the bytes of cast.comp and
//    the CPU) and the first stores it.
// Segments are (row, group) pairs in row-major order, 256 / LS per workgroup, so a warp's
// loads cover neighbouring segments of one row. cast.comp's generic path ran this cast at
// 100 GB/s on the H100 (a workgroup per segment, one element per lane and step).
// The QG_XF32 build takes f32 x: a unit of 8 columns is two 16-byte loads (w, w2). Without
// a group table (CP_TABLE 0) a segment is a whole row: the plain rowwise cast of rows longer
// than the register paths hold.
// The host (vk_ops_cast.c jrows_plan) uses it where the subgroups have shuffles.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
#include "common.glsl"
#include "codec.glsl"
#include "layout.glsl"

#define FMT QG_FMT // compiled per fp8 format, as cast.comp

layout(constant_id = 0) const int SC_LS = 8;  // lanes per segment: a power of two, at most the subgroup size
layout(constant_id = 1) const int SC_KPS = 8; // units per lane kept in registers: 1..8
layout(constant_id = 2) const int SC_ENC = 2;
#define K_RULE 0
#define K_ENC SC_ENC

layout(local_size_x = 256) in;

#include "cast_quant.glsl"

// Unit u (8 columns from 8u; f32 x: x and x2) with the elements outside [cb, ce) zeroed.
void clip_unit(inout uvec4 x, inout uvec4 x2, int64_t u, int64_t cb, int64_t ce)
{
    const int64_t c = u * 8;
    if (c >= cb && c + 8 <= ce) return;
    [[unroll]] for (int k = 0; k < 8; ++k) {
        if (c + k < cb || c + k >= ce) {
            if (QG_XF32 == 0) x[k >> 1] &= (k & 1) == 0 ? 0xFFFF0000u : 0x0000FFFFu;
            else if (k < 4) x[k & 3] = 0u;
            else x2[k & 3] = 0u;
        }
    }
}

// Unit u of the row at xr: its amax within [cb, ce) added; its bytes within [cb, ce) stored
// (fast: cast_quant.glsl's fast encoder may take it; the bytes of elements outside are
// computed and dropped).
uvec4 unit_lo(uint64_t xr, int64_t u) { return QV16(xr + uint64_t(u) * uint64_t(8 * XES)).v; }
uvec4 unit_hi(uint64_t xr, int64_t u) { return load_hi(xr + uint64_t(u) * uint64_t(8 * XES), true); }
void add_unit(inout uvec4 ml, inout uvec4 mh, uvec4 x, uvec4 x2, int64_t u, int64_t cb, int64_t ce)
{
    clip_unit(x, x2, u, cb, ce);
    unit_amax_add(ml, mh, x, x2);
}
void store_unit(uint64_t qrow, uvec4 x, uvec4 x2, int64_t u, int64_t cb, int64_t ce, uint mult, bool fast)
{
    const int64_t c = u * 8;
    store8_within(qrow + uint64_t(c), encode8(x, x2, mult, fast), cb - c, ce - c);
}

void main()
{
    // no table: whole rows, one segment each (rows too long for the register paths)
    const uint64_t table = PA(CP_TABLE);
    if (table != 0ul && ld_u32(table, 0) != 0u) return; // bad offsets: write nothing (uniform)
    const int sgs = int(gl_SubgroupSize);
    const int li = int(gl_SubgroupID) * sgs + int(gl_SubgroupInvocationID);
    const int lr = li % SC_LS;
    const int64_t G = P(CP_NSEG), O = P(CP_O);
    const int64_t s = wg_linear() * (256 / SC_LS) + li / SC_LS; // (row, group), row-major
    const bool live = s < O * G;
    const int64_t row = live ? s / G : 0, g = live ? s % G : 0;
    const int64_t cb = live && table != 0ul ? ld_i32(table, TAB_HEADER + g * TAB_STRIDE) : 0;
    const int64_t ce = !live ? 0 : table != 0ul ? ld_i32(table, TAB_HEADER + g * TAB_STRIDE + 1) : P(CP_R);
    const int64_t u0 = cb >> 3, un = (ce + 7) >> 3; // the unit grid over [cb, ce)
    const uint64_t xr = PA(CP_X) + uint64_t(row * P(CP_XO) * XES);
    const uint64_t qr = PA(CP_Q) + uint64_t(row * P(CP_QO));

    uvec4 w[8], w2[8];
    uvec4 ml = uvec4(0u), mh = uvec4(0u);
    [[unroll]] for (int j = 0; j < 8; ++j) {
        const int64_t u = u0 + lr + int64_t(j * SC_LS);
        const bool inr = j < SC_KPS && u < un;
        w[j] = inr ? unit_lo(xr, u) : uvec4(0u);
        w2[j] = inr ? unit_hi(xr, u) : uvec4(0u);
    }
    [[unroll]] for (int j = 0; j < 8; ++j) {
        const int64_t u = u0 + lr + int64_t(j * SC_LS);
        if (j < SC_KPS && u < un) add_unit(ml, mh, w[j], w2[j], u, cb, ce);
    }
    const int64_t reach = u0 + int64_t(SC_LS * SC_KPS); // units past this are read twice
    for (int64_t u = reach + lr; u < un; u += SC_LS) add_unit(ml, mh, unit_lo(xr, u), unit_hi(xr, u), u, cb, ce);
    uint am = unit_amax_fold(ml, mh);
    for (int bit = 1; bit < SC_LS; bit <<= 1) am = max(am, subgroupShuffleXor(am, uint(bit)));
    const uint amax = amax_as_f32(am);
    const uint mult = scale_and_store(amax, 0, row, g, live && lr == 0);
    if (!live) return;
    if (quantize_fast_ok(amax, mult)) {
        [[unroll]] for (int j = 0; j < 8; ++j) {
            const int64_t u = u0 + lr + int64_t(j * SC_LS);
            if (j < SC_KPS && u < un) store_unit(qr, w[j], w2[j], u, cb, ce, mult, true);
        }
        for (int64_t u = reach + lr; u < un; u += SC_LS) store_unit(qr, unit_lo(xr, u), unit_hi(xr, u), u, cb, ce, mult, true);
        return;
    }
    // inf/NaN in the segment or a scale outside the fast encoder's range (rare): every unit
    // from memory in one rolled loop, so that the exact encoder appears once in the code
    for (int64_t u = u0 + lr; u < un; u += SC_LS) store_unit(qr, unit_lo(xr, u), unit_hi(xr, u), u, cb, ce, mult, false);
}
