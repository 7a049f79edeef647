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
// Segments are (group, row) pairs in group-major order, 256 / LS at a time per workgroup, so
// a warp's segments have one width; the workgroups are persistent (each lane group takes
// every stride-th segment, the next one's bounds loaded ahead).
// The QG_XF32 build takes f32 x: a unit of 8 columns is two 16-byte loads (w, w2). Without
// a group table (CPR.table 0) a segment is a whole row: the plain rowwise cast of rows longer
// than the register paths hold.
// The host (vk_ops_cast.c jrows_plan) uses it where the subgroups have shuffles.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
#include "common.glsl"
#include "cast_params.h"
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

// Column and segment indices are 32-bit (the host takes this shader only for rows of fewer
// than 2^31 bytes and fewer than 2^31 - 2^24 segments): with 64-bit indices in the
// persistent loop and the unit loops, rows of 65536 bf16 ran 26 % slower on the H100 (the
// driver reported 64 registers either way).

// Unit u (8 columns from 8u; f32 x: x and x2) with the elements outside [cb, ce) zeroed.
void clip_unit(inout uvec4 x, inout uvec4 x2, int u, int cb, int ce)
{
    const int c = u * 8;
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
uvec4 unit_lo(uint64_t xr, int u) { return QV16(xr + uint64_t(uint(u) * uint(8 * XES))).v; }
uvec4 unit_hi(uint64_t xr, int u) { return load_hi(xr + uint64_t(uint(u) * uint(8 * XES)), true); }
void add_unit(inout uvec4 ml, inout uvec4 mh, uvec4 x, uvec4 x2, int u, int cb, int ce)
{
    clip_unit(x, x2, u, cb, ce);
    unit_amax_add(ml, mh, x, x2);
}
void store_unit(uint64_t qrow, uvec4 x, uvec4 x2, int u, int cb, int ce, uint mult, bool fast)
{
    const int c = u * 8;
    store8_within(qrow + uint64_t(c), encode8(x, x2, mult, fast), int64_t(cb - c), int64_t(ce - c));
}

// One segment: columns [cb, ce) of the row whose x starts at xr and q at qr, cast by the
// SC_LS lanes that share it (lr: this lane's index among them).
void cast_segment(uint64_t xr, uint64_t qr, int row, int g, int cb, int ce, int lr)
{
    const int u0 = cb >> 3, un = (ce + 7) >> 3; // the unit grid over [cb, ce)
    uvec4 w[8], w2[8];
    uvec4 ml = uvec4(0u), mh = uvec4(0u);
    [[unroll]] for (int j = 0; j < 8; ++j) {
        const int u = u0 + lr + j * SC_LS;
        const bool inr = j < SC_KPS && u < un;
        w[j] = inr ? unit_lo(xr, u) : uvec4(0u);
        w2[j] = inr ? unit_hi(xr, u) : uvec4(0u);
    }
    [[unroll]] for (int j = 0; j < 8; ++j) {
        const int u = u0 + lr + j * SC_LS;
        if (j < SC_KPS && u < un) add_unit(ml, mh, w[j], w2[j], u, cb, ce);
    }
    const int reach = u0 + SC_LS * SC_KPS; // units past this are read twice
    for (int u = reach + lr; u < un; u += SC_LS) add_unit(ml, mh, unit_lo(xr, u), unit_hi(xr, u), u, cb, ce);
    uint am = unit_amax_fold(ml, mh);
    for (int bit = 1; bit < SC_LS; bit <<= 1) am = max(am, subgroupShuffleXor(am, uint(bit)));
    const uint amax = amax_as_f32(am);
    const uint mult = scale_and_store(amax, 0, row, g, lr == 0);
    if (quantize_fast_ok(amax, mult)) {
        [[unroll]] for (int j = 0; j < 8; ++j) {
            const int u = u0 + lr + j * SC_LS;
            if (j < SC_KPS && u < un) store_unit(qr, w[j], w2[j], u, cb, ce, mult, true);
        }
        for (int u = reach + lr; u < un; u += SC_LS) store_unit(qr, unit_lo(xr, u), unit_hi(xr, u), u, cb, ce, mult, true);
        return;
    }
    // inf/NaN in the segment or a scale outside the fast encoder's range (rare): every unit
    // from memory in one rolled loop, so that the exact encoder appears once in the code
    for (int u = u0 + lr; u < un; u += SC_LS) store_unit(qr, unit_lo(xr, u), unit_hi(xr, u), u, cb, ce, mult, false);
}

// Columns [cb, ce) of group g's segments: the table's bounds, or the whole row without a
// table.
ivec2 seg_bounds(uint64_t table, int g, int R)
{
    return table != 0ul ? ivec2(tab_get(table, g, 0), tab_get(table, g, 1)) : ivec2(0, R);
}

void main()
{
    // no table: whole rows, one segment each (rows too long for the register paths)
    const uint64_t table = uint64_t(CPR.table);
    if (table != 0ul && ld_u32(table, 0) != 0u) return; // bad offsets: write nothing (uniform)
    const int sgs = int(gl_SubgroupSize);
    const int li = int(gl_SubgroupID) * sgs + int(gl_SubgroupInvocationID);
    const int lr = li % SC_LS;
    const int G = int(CPR.nseg), O = int(CPR.o), R = int(CPR.r), total = O * G;
    const uint64_t X = uint64_t(CPR.x), Q = uint64_t(CPR.q);
    const uint64_t xo = uint64_t(CPR.xo * XES), qo = uint64_t(CPR.qo);
    // Persistent lane groups: segment s = (g, row) in group-major order, then s + stride,
    // ... (the host dispatches at most one grid row, all in x). Group-major, the lane
    // groups of a warp take segments of one group in neighbouring rows: the same width, so
    // no lane waits for a wider segment of its warp (row-major, a warp's segments were of
    // random widths). The next segment's bounds are loaded while this one is cast.
    const int stride = int(gl_NumWorkGroups.x) * (256 / SC_LS);
    const int s0 = int(gl_WorkGroupID.x) * (256 / SC_LS) + li / SC_LS;
    const int srow = stride % O, sg = stride / O;
    int row = s0 % O, g = s0 / O;
    ivec2 b = s0 < total ? seg_bounds(table, g, R) : ivec2(0);
    for (int s = s0; s < total; s += stride) {
        int nrow = row + srow, ng = g + sg;
        if (nrow >= O) { nrow -= O; ng++; }
        const ivec2 nb = s < total - stride ? seg_bounds(table, ng, R) : ivec2(0);
        cast_segment(X + uint64_t(row) * xo, Q + uint64_t(row) * qo, row, g, b.x, b.y, lr);
        row = nrow; g = ng; b = nb;
    }
}
