#version 460
// cast_rows.comp — cast.comp's segment paths (rowwise rows, 1x128 blocks, MX blocks along the
// contiguous dim) rebuilt for occupancy: a lane holds at most 8 units of 8 elements of x in
// registers (16 bytes of bf16 x each; the QG_XF32 build, for f32 x, 32 bytes), so the
// driver keeps the kernel small and many workgroups stay resident per multiprocessor; while
// some of them reduce and encode, the others' loads are in flight.
// cast.comp's segment path holds up to 16 units per lane and combines lanes through a
// shared-memory tree, which left two workgroups per multiprocessor and the memory idle while
// they encoded (docs/backends-vulkan.md, "Casts").
//
// Layout: SC_LS consecutive lanes (in subgroup order) form a lane group, which takes SC_SPL
// consecutive segments of one row; lane lr holds units lr, lr + LS, ... (at most SC_KPS) of
// each, so every warp load covers whole 32-byte sectors (LS >= 2) and the per-segment work
// (row, addresses, scale offset) is shared by SPL segments. Lanes of a segment combine their
// amax with subgroup shuffles when the lane group fits in a subgroup, else with one subgroup
// reduction, one shared-memory slot per subgroup and one barrier. A workgroup takes SC_NIT
// lane-group rounds in turn. The scale and the bytes are those of cast.comp (the same
// cast_quant.glsl / codec.glsl functions), which the conformance suite checks against the
// CPU reference.
//
// Every loop over units has a constant trip count and [[unroll]], so glslc's optimizer
// unrolls it and the unit array becomes registers (loops bounded by a specialization
// constant stayed loops, and the NVIDIA driver put the array in local memory).
//
// The host (vk_ops_cast.c, rows_plan) uses this shader only where the device's subgroups
// support basic, arithmetic and shuffle operations in compute shaders, with SPL * KPS <= 8,
// SPL in {1, 2, 4} dividing the segments per row.
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
// QG_XF32 (cast_quant.glsl): 1 in the build for f32 x, whose unit of 8 elements is two
// 16-byte loads (c and c2)

// Specialization constants (all set by the host): lanes per segment (power of two, <= 256),
// units per lane per segment, segments per lane group, scale rule (0 rowwise/blockwise, 1 MX
// FLOOR, 2 MX RCEIL), encoder (cast_quant.glsl q4_fast), lane-group rounds per workgroup.
layout(constant_id = 0) const int SC_LS = 256;
layout(constant_id = 1) const int SC_KPS = 4;
layout(constant_id = 2) const int SC_SPL = 1;
layout(constant_id = 3) const int SC_RULE = 0;
layout(constant_id = 4) const int SC_ENC = 1;
layout(constant_id = 5) const int SC_NIT = 1;
#define K_RULE SC_RULE
#define K_ENC SC_ENC
#define MAXU 8 // units per lane
#define MAXS 4 // segments per lane group

layout(local_size_x = 256) in;
// per-subgroup amax of segments wider than a subgroup, double-buffered across rounds so that
// one barrier per round suffices (256 / the smallest subgroup size of 4)
shared uvec4 sh_sg[2][64]; // amax of segments 0..3 of the group

#include "cast_quant.glsl"

// The amax (bf16 magnitude bits) of the lane's units of segment t of its group.
uint lane_amax(uvec4 c[MAXU], uvec4 c2[MAXU], int t)
{
    uvec4 ml = uvec4(0u), mh = uvec4(0u);
    [[unroll]] for (int k = 0; k < MAXU; ++k) {
        if (k < SC_SPL * SC_KPS && k / SC_KPS == t) unit_amax_add(ml, mh, c[k], c2[k]);
    }
    return unit_amax_fold(ml, mh);
}

// Combines the amax over the segment's lanes when they lie in one subgroup (LS <= size).
uint shuffle_amax(uint a)
{
    [[unroll]] for (int b = 0; b < 8; ++b)
        if ((1 << b) < SC_LS) a = max(a, subgroupShuffleXor(a, uint(1 << b)));
    return a;
}

// Encodes the lane's units with their segments' multipliers m[t]. Where every segment of the
// lane takes the fast encoder, the units are encoded unrolled; otherwise (a segment holds
// inf or NaN, or its scale is outside the fast encoder's range: rare) a loop encodes them one
// by one, so that the exact encoder appears once in the code, not once per unit.
void encode_units(uvec4 c[MAXU], uvec4 c2[MAXU], uvec4 m, bvec4 f, bool sv, int lr, int U, uint64_t qb)
{
    if (all(f)) {
        [[unroll]] for (int k = 0; k < MAXU; ++k) {
            const int t = k / SC_KPS, u = lr + SC_LS * (k - t * SC_KPS);
            if (k < SC_SPL * SC_KPS && sv && u < U)
                QV8(qb + uint64_t(t * U + u) * 8ul).v = encode8(c[k], c2[k], m[t], true);
        }
    } else {
        for (int k = 0; k < SC_SPL * SC_KPS; ++k) {
            const int t = k / SC_KPS, u = lr + SC_LS * (k - t * SC_KPS);
            const uint mt = t == 0 ? m.x : t == 1 ? m.y : t == 2 ? m.z : m.w;
            const bool ft = t == 0 ? f.x : t == 1 ? f.y : t == 2 ? f.z : f.w;
            if (sv && u < U) QV8(qb + uint64_t(t * U + u) * 8ul).v = encode8(unit_at(c, k), unit_at(c2, k), mt, ft);
        }
    }
}

void main()
{
    const int sgs = int(gl_SubgroupSize);
    const int li = int(gl_SubgroupID) * sgs + int(gl_SubgroupInvocationID);
    const int lr = li & (SC_LS - 1);
    const int groups = 256 / SC_LS;
    const int nsegt = int(CPR.nsegt), nseg = int(CPR.nseg), O = int(CPR.o);
    const int L = int(CPR.l) > 0 ? int(CPR.l) : int(CPR.r);
    const int U = L / 8;
    const int64_t xe = CPR.xe, xo = CPR.xo, qe = CPR.qe, qo = CPR.qo;
    const uint64_t X = uint64_t(CPR.x), Q = uint64_t(CPR.q);
    const ScaleArgs sa = scale_args();

    for (int it = 0; it < SC_NIT; ++it) {
        // the lane group's first segment; its SPL segments share the row (nseg % SPL == 0)
        const int s = ((int(wg_linear()) * SC_NIT + it) * groups + li / SC_LS) * SC_SPL;
        const bool sv = s < nsegt;
        const int row = nseg == 1 ? s : s / nseg;
        const int sg = s - row * nseg;
        const int se = int(CPR.e) == 1 ? 0 : row / O;
        const int so = row - se * O;
        const int64_t rs = int64_t(sg) * L;
        const uint64_t xb = X + uint64_t((se * xe + so * xo + rs) * XES);
        const uint64_t qb = Q + uint64_t(se * qe + so * qo + rs);
        uvec4 c[MAXU], c2[MAXU];
        [[unroll]] for (int k = 0; k < MAXU; ++k) {
            const int t = k / SC_KPS, u = lr + SC_LS * (k - t * SC_KPS);
            const bool inr = k < SC_SPL * SC_KPS && sv && u < U;
            const uint64_t at = xb + uint64_t(t * U + u) * uint64_t(8 * XES);
            c[k] = inr ? QV16(at).v : uvec4(0u);
            c2[k] = load_hi(at, inr);
        }
        // segments 1..3 are written out: loops over them stayed loops in glslc's unroller,
        // and their amax array went to memory
        uint a0 = lane_amax(c, c2, 0);
        uint a1 = SC_SPL > 1 ? lane_amax(c, c2, 1) : 0u;
        uint a2 = SC_SPL > 2 ? lane_amax(c, c2, 2) : 0u;
        uint a3 = SC_SPL > 3 ? lane_amax(c, c2, 3) : 0u;
        if (SC_LS > 1) {
            if (SC_LS <= sgs) {
                a0 = shuffle_amax(a0);
                if (SC_SPL > 1) a1 = shuffle_amax(a1);
                if (SC_SPL > 2) { a2 = shuffle_amax(a2); a3 = shuffle_amax(a3); }
            } else {
                // LS and the subgroup size are powers of two: a segment is whole subgroups
                a0 = subgroupMax(a0);
                if (SC_SPL > 1) a1 = subgroupMax(a1);
                if (SC_SPL > 2) { a2 = subgroupMax(a2); a3 = subgroupMax(a3); }
                if (subgroupElect()) sh_sg[it & 1][gl_SubgroupID] = uvec4(a0, a1, a2, a3);
                barrier();
                const int nsg = SC_LS / sgs, first = (li / SC_LS) * nsg;
                for (int k = 0; k < nsg; ++k) {
                    const uvec4 v = sh_sg[it & 1][first + k];
                    a0 = max(a0, v.x); a1 = max(a1, v.y); a2 = max(a2, v.z); a3 = max(a3, v.w);
                }
            }
        }
        // each segment's scale, stored by the group's lane 0; segments past SPL count as fast.
        // The SPL segments' scales are consecutive: f32 at a stride of SG, bytes at SG or, in
        // the blocked layout, adjacent (g % SPL == 0, SPL <= 4: one 4-byte group of a tile row).
        const uvec4 am = uvec4(amax_as_f32(a0), amax_as_f32(a1), amax_as_f32(a2), amax_as_f32(a3));
        uvec4 m = uvec4(0u), st = uvec4(0u);
        bvec4 f = bvec4(true);
        if (SC_SPL > 1 && SC_LS >= SC_SPL && SC_LS <= sgs) {
            // lane t of the group computes segment t's scale, the group reads them by
            // shuffles: one scale computation per lane instead of SPL (the rowwise scale's
            // integer divisions dominate it)
            const uint amy = lr == 0 ? am.x : lr == 1 ? am.y : lr == 2 ? am.z : am.w;
            uint sty;
            const uint my = scale_of(amy, sa, sty);
            const uint base = gl_SubgroupInvocationID & ~uint(SC_LS - 1);
            [[unroll]] for (int t = 0; t < MAXS; ++t) {
                if (t < SC_SPL) {
                    m[t] = subgroupShuffle(my, base + uint(t));
                    st[t] = subgroupShuffle(sty, base + uint(t));
                    f[t] = quantize_fast_ok(am[t], m[t]);
                }
            }
        } else {
            [[unroll]] for (int t = 0; t < MAXS; ++t) {
                if (t < SC_SPL) {
                    uint stt;
                    m[t] = scale_of(am[t], sa, stt);
                    st[t] = stt;
                    f[t] = quantize_fast_ok(am[t], m[t]);
                }
            }
        }
        if (sv && lr == 0) {
            const uint64_t s0 = sa.S + uint64_t(scale_offset(sa, se, so, sg));
            const int64_t step = K_RULE == 0 ? sa.sg * 4 : sa.skind == 2 ? 1 : sa.sg;
            if (K_RULE != 0 && SC_SPL == 4 && step == 1 && (s0 & 3ul) == 0ul) {
                QU32(s0).v = st.x | (st.y << 8) | (st.z << 16) | (st.w << 24);
            } else if (K_RULE != 0 && SC_SPL == 2 && step == 1 && (s0 & 1ul) == 0ul) {
                QU16(s0).v = uint16_t(st.x | (st.y << 8));
            } else {
                [[unroll]] for (int t = 0; t < MAXS; ++t) {
                    if (t < SC_SPL) {
                        const uint64_t at = s0 + uint64_t(t * step);
                        if (K_RULE == 0) QU32(at).v = st[t];
                        else QU8(at).v = uint8_t(st[t]);
                    }
                }
            }
        }
        encode_units(c, c2, m, f, sv, lr, U, qb);
    }
}
