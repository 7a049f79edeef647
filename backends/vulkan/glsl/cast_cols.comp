#version 460
// cast_cols.comp — the FP8 rowwise casts whose reduce dim is strided while the other dim is
// contiguous: colwise (reduce_dim 0 of (R, C)), per (e, c) of (E, R, C) (the dgrad weights,
// q often transposed per expert) and jagged colwise (row groups of offs; q column-major for
// the K-grouped wgrad GEMM). A segment is one column's run of rows (whole R or a group's
// rows), thousands of rows long: more than a workgroup can hold, so the cast takes three
// dispatches of this shader (SC_PASS) after the host zeroes one scratch word per
// (expert, group, column):
//  1. amax: each workgroup takes one chunk of a segment's rows (SC_KPL rows per lane; jagged
//     groups 8 rows less per workgroup) for 8 * SC_LC columns, combines its lanes' column maxima (subgroup
//     shuffles, one shared slot per subgroup, one barrier) and atomicMax-es them into the
//     words (as f32 bits: magnitudes, NaN above inf, order like integers);
//  0. scales: one lane per word turns the amax into the stored scale (cast_quant.glsl
//     scale_and_store: the bytes of cast.comp and the CPU, empty groups included) and
//     leaves the multiplier in the word, bit 31 set where the fast encoder may not take it;
//  2. quantize: the same chunks again, each lane's 8 columns' multipliers from the words.
// The scale arithmetic (an emulated f64 division) thus runs once per column, not in every
// workgroup of pass 2; bad offsets stop every pass, so nothing the caller sees changes.
// x is read twice (passes 1 and 2), so the cast moves 5 bytes per element where the nominal
// count is 3: 60 % of the copy rate is its ceiling on inputs beyond L2. Rows of a lane come
// in blocks of 8 consecutive rows laid on the grid of multiples of 8 (rows outside the
// segment masked), so that transposed q (SC_QT 1, QR == 1) leaves as one 8-byte store per
// column and block; SC_QT 0 (rows of q contiguous) stores 8 bytes per row.
// The QG_XF32 build takes f32 x: a lane's 8 columns of a row are two 16-byte loads (w, w2),
// at most 8 rows per lane. The host (vk_ops_cast.c cols_plan / cols_run) says when this runs.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
#include "params.h"
#include "common.glsl"
#include "cast_params.h"
#include "codec.glsl"
#include "layout.glsl"

#define FMT QG_FMT // compiled per fp8 format, as cast.comp

layout(constant_id = 0) const int SC_LC = 8;   // lanes across the workgroup's columns: 1, 2, 4, 8 or 16
layout(constant_id = 1) const int SC_KPL = 16; // rows per lane: 8 or 16
layout(constant_id = 2) const int SC_QT = 0;   // q: 0 rows contiguous, 1 transposed (QR == 1)
layout(constant_id = 3) const int SC_ENC = 2;
layout(constant_id = 4) const int SC_PASS = 2; // 0 scales, 1 amax, 2 quantize
#define K_RULE 0
#define K_ENC SC_ENC

layout(local_size_x = 256) in;
shared uint sh_m[2048]; // 8 column maxima per lane slot: at most 256 slots (one per lane where LC >= the subgroup size)
shared int sh_grp[4];   // jagged: the chunk's group, its first and end rows, the chunk's index in it

#include "cast_quant.glsl"

// Row j of the lane (block j / 8, row j % 8 of it) in the chunk starting at `base`.
int64_t lane_row(int64_t base, int j, int rl, int lr) { return base + int64_t(((j >> 3) * rl + lr) * 8 + (j & 7)); }

// The lane's rows of the chunk, fast encoder (every column's scale in range, no inf/NaN).
void quantize_fast_rows(uvec4 w[16], uvec4 w2[16], int64_t base, int64_t rs, int64_t re, uint64_t qb, uint64_t qrow,
                        uint64_t qcol, uint mult[8], int rl, int lr)
{
    if (SC_QT == 0) {
        [[unroll]] for (int j = 0; j < 16; ++j) {
            const int64_t r = lane_row(base, j, rl, lr);
            if (j < SC_KPL && r >= rs && r < re) {
                uvec2 o = uvec2(0u);
                [[unroll]] for (int k = 0; k < 8; ++k) o[k >> 2] |= q1_fast(unit_elem(w[j], w2[j], k), mult[k], SC_ENC) << (8 * (k & 3));
                QV8(qb + uint64_t(r) * qrow).v = o;
            }
        }
        return;
    }
    [[unroll]] for (int b = 0; b < 2; ++b) {
        const int64_t r0 = lane_row(base, 8 * b, rl, lr);
        if (8 * b < SC_KPL && r0 + 8 > rs && r0 < re) {
            [[unroll]] for (int k = 0; k < 8; ++k) {
                uvec2 o = uvec2(0u);
                [[unroll]] for (int i = 0; i < 8; ++i)
                    o[i >> 2] |= q1_fast(unit_elem(w[8 * b + i], w2[8 * b + i], k), mult[k], SC_ENC) << (8 * (i & 3));
                store8_within(qb + uint64_t(k) * qcol + uint64_t(r0), o, rs - r0, re - r0);
            }
        }
    }
}

// The scratch word of (e, c, g).
uint64_t word(int64_t e, int64_t c, int64_t g)
{
    return uint64_t(CPR.amax) + uint64_t(((e * CPR.nseg + g) * CPR.o + c) * 4);
}

// Pass 0: one lane per word, amax -> stored scale; the multiplier (bit 31: not for the
// fast encoder) back into the word.
void scales_pass()
{
    const int64_t i = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    const int64_t O = CPR.o, nseg = CPR.nseg;
    if (i >= CPR.e * nseg * O) return;
    const int64_t c = i % O, g = (i / O) % nseg, e = i / (O * nseg);
    const uint64_t at = word(e, c, g);
    const uint amax = QU32(at).v;
    const uint mult = scale_and_store(amax, e, c, g, true);
    QU32(at).v = quantize_fast_ok(amax, mult) ? mult : mult | 0x80000000u;
}

void main()
{
    if (uint64_t(CPR.table) != 0ul && ld_u32(uint64_t(CPR.table), 0) != 0u) return; // bad offsets: write nothing (uniform)
    if (SC_PASS == 0) {
        scales_pass();
        return;
    }
    const int sgs = int(gl_SubgroupSize), sg = int(gl_SubgroupID);
    const int li = sg * sgs + int(gl_SubgroupInvocationID);
    const int lc = li % SC_LC, lr = li / SC_LC, RL = 256 / SC_LC;
    // at most the RL * KPL rows the lanes hold, 8 fewer for jagged groups, so that the lanes'
    // grid (from the chunk's first row rounded down to a multiple of 8) covers the chunk
    const uint64_t table = uint64_t(CPR.table);
    const int64_t CH = CPR.chunk;
    const int64_t lin = wg_linear(), ct_n = CPR.otiles, nch = CPR.nch;
    const int64_t ct = lin % ct_n, t = (lin / ct_n) % nch, e = lin / (ct_n * nch);
    // the chunk: whole-dim segments are cut into chunks of CH rows; jagged groups each into
    // their own (the table's tile prefix, tile = CH), surplus workgroups exit
    int64_t g = 0, rs = 0, re = CPR.r, k = t;
    if (table != 0ul) {
        // the group of chunk t: each lane tests groups li, li + 256, ... (one round of
        // loads, not a binary search's chain of dependent ones) and the one whose chunks hold
        // t leaves its row range in shared memory
        const int G = int(CPR.nseg);
        if (t >= ld_i32(table, TAB_HEADER + (G - 1) * TAB_STRIDE + 5)) return; // surplus (uniform)
        for (int b = 0; b < G; b += 256) {
            const int gi = b + int(gl_LocalInvocationID.x);
            if (gi < G) {
                const int64_t at = TAB_HEADER + int64_t(gi) * TAB_STRIDE;
                const int before = ld_i32(table, at + 4), through = ld_i32(table, at + 5);
                if (t >= before && t < through) {
                    sh_grp[0] = gi;
                    sh_grp[1] = ld_i32(table, at);
                    sh_grp[2] = ld_i32(table, at + 1);
                    sh_grp[3] = int(t) - before;
                }
            }
        }
        barrier();
        g = sh_grp[0];
        rs = sh_grp[1];
        re = sh_grp[2];
        k = sh_grp[3];
    }
    const int64_t cs = rs + k * CH, ce = min(re, cs + CH); // the chunk's rows
    const int64_t base = cs & ~7l;                         // the lanes' 8-row grid starts here
    const int64_t c0 = (ct * SC_LC + lc) * 8;
    const bool valid = c0 < CPR.o;
    const uint64_t xb = uint64_t(CPR.x) + uint64_t((e * CPR.xe + c0) * XES), xrow = uint64_t(CPR.xr * XES);
    const int64_t cv = valid ? ce : cs;

    // every load issued before the first is used (a load under a branch waited for each)
    uvec4 w[16], w2[16];
    [[unroll]] for (int j = 0; j < 16; ++j) {
        const int64_t r = lane_row(base, j, RL, lr);
        const bool inr = j < SC_KPL && r >= cs && r < cv;
        w[j] = inr ? QV16(xb + uint64_t(r) * xrow).v : uvec4(0u);
        w2[j] = load_hi(xb + uint64_t(r) * xrow, inr);
    }

    if (SC_PASS == 1) {
        uvec4 ml = uvec4(0u), mh = uvec4(0u);
        [[unroll]] for (int j = 0; j < 16; ++j) unit_amax_add(ml, mh, w[j], w2[j]);
        uint m[8];
        unit_amax_columns(ml, mh, m);
        // lanes of the same columns: equal li % LC within the subgroup, then across subgroups
        for (int bit = SC_LC; bit < sgs; bit <<= 1)
            [[unroll]] for (int j = 0; j < 8; ++j) m[j] = max(m[j], subgroupShuffleXor(m[j], uint(bit)));
        const int per = min(SC_LC, sgs); // column lanes a subgroup holds
        if (int(gl_SubgroupInvocationID) < per)
            [[unroll]] for (int j = 0; j < 8; ++j) sh_m[(sg * per + int(gl_SubgroupInvocationID)) * 8 + j] = m[j];
        barrier();
        if (lr != 0 || !valid) return;
        // subgroups holding lane lc's columns: every one when the subgroup spans all LC
        // column lanes, else those of the same li / sgs residue (sgs < LC: lavapipe)
        const int nsg = 256 / sgs, step = SC_LC > sgs ? SC_LC / sgs : 1;
        for (int s = SC_LC > sgs ? lc / sgs : 0; s < nsg; s += step)
            [[unroll]] for (int j = 0; j < 8; ++j) m[j] = max(m[j], sh_m[(s * per + lc % per) * 8 + j]);
        [[unroll]] for (int j = 0; j < 8; ++j) atomicMax(QU32(word(e, c0 + j, g)).v, amax_as_f32(m[j]));
        return;
    }

    if (!valid) return;
    uint mult[8];
    uint fastmask = 0u;
    [[unroll]] for (int j = 0; j < 8; ++j) {
        const uint m = QU32(word(e, c0 + j, g)).v;
        mult[j] = m & 0x7FFFFFFFu;
        if (m < 0x80000000u) fastmask |= 1u << j;
    }
    const uint64_t qb = uint64_t(CPR.q) + uint64_t(e * CPR.qe + c0 * CPR.qo);
    const uint64_t qrow = uint64_t(CPR.qr), qcol = uint64_t(CPR.qo);
    if (fastmask == 0xFFu) {
        quantize_fast_rows(w, w2, base, cs, ce, qb, qrow, qcol, mult, RL, lr);
        return;
    }
    // a column holds inf or NaN, or its scale is outside the fast encoder's range (rare):
    // element by element from memory, in rolled loops, so that the exact encoder appears once
    for (int j = 0; j < SC_KPL; ++j) {
        const int64_t r = lane_row(base, j, RL, lr);
        if (r < cs || r >= ce) continue;
        const uvec4 x = QV16(xb + uint64_t(r) * xrow).v, x2 = load_hi(xb + uint64_t(r) * xrow, true);
        for (int k = 0; k < 8; ++k) {
            uint mk = mult[0];
            [[unroll]] for (int u = 1; u < 8; ++u)
                if (u == k) mk = mult[u];
            const uint v = q1(unit_elem(x, x2, k), mk, ((fastmask >> k) & 1u) != 0u);
            QU8(qb + uint64_t(k) * qcol + uint64_t(r) * qrow).v = uint8_t(v);
        }
    }
}
