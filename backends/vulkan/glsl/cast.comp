#version 460
// cast.comp — every quantize of ops-spec §1-§3 as one segmented-reduction kernel.
// The tensor is viewed as (E, O, R): E batches (experts), O independent slices, R the
// dim the amax is taken over. R is cut into segments (the whole dim, fixed blocks of
// 32/128, or jagged groups from the device group table); each segment gets
// amax -> scale (codec.glsl, integer-exact) -> quantize.
//
// Five paths, chosen by the host (vk_ops_cast.c) through CPR.fast and, per dispatch, the
// specialization constant SC_PATH (below):
//  1 segments (cast_seg.glsl): bf16 x, reduce dim contiguous in x and q, segments of at
//    most 2048 units of 8 elements: x is held in registers between amax and quantize
//    (one read), lanes of a segment combine amax through shared memory.
//  2 MX dim1: bf16 x with the blocked dim strided and the other dim contiguous, q
//    contiguous along the block: a lane holds 8 columns x 16 rows (one 16-byte load per
//    row), two lanes make a 32-row block, each lane writes 8 columns' 16 bytes.
//  3 128x128 tiles: bf16 x, reduce dim contiguous; a lane holds 8 rows of 8 elements.
//  4 MX dim0 chunks: bf16 x, blocks along the contiguous dim, 4k blocks per row; a lane
//    pair holds 4 consecutive blocks.
//  0 generic (cast_generic): any strides, f32/f16 x, jagged groups; two passes over x.
// Every path quantizes with codec.glsl's quantize_fast where its preconditions hold for the
// segment (finite amax, normal scale below 2^100), else with the exact integer path; both
// give the CPU reference's bytes.
#extension GL_EXT_control_flow_attributes : require // cast_quant.glsl unit_at
#include "params.h"
#include "common.glsl"
#include "cast_params.h"
#include "codec.glsl"
#include "layout.glsl"

#ifdef QG_FMT
#define FMT QG_FMT // compiled per fp8 format: the codec's format branches fold away
#else
#define FMT int(CPR.fmt)
#endif

// Specialization constants, set by vk_ops_cast.c (run_cast) from the parameters it also
// passes: a specialized pipeline holds only its own path, so the driver sizes registers for
// that path instead of for the largest of all of them. Which paths the host specializes is
// measured, not assumed (vk_ops_cast.c, spec_wanted: on the H100 some fast paths ran slower
// alone). -1, the default and the unspecialized pipeline's value, reads the parameter block.
// SC_PATH: 0 generic, 1 segments 2x4, 5 segments 8x1, 6 segments 16x1, 2 MX dim1,
// 3 128x128 tiles, 4 MX dim0 chunks. SC_KPS: units per lane of the 16x1 segment path (the
// slots above it are then dropped instead of held as zeros).
layout(constant_id = 0) const int SC_PATH = -1;
layout(constant_id = 1) const int SC_RULE = -1;
layout(constant_id = 2) const int SC_ENC = -1;
layout(constant_id = 3) const int SC_XDT = -1;
layout(constant_id = 4) const int SC_VEC = -1;
layout(constant_id = 5) const int SC_KPS = -1;
#define K_RULE (SC_RULE >= 0 ? SC_RULE : int(CPR.rule))
#define K_ENC (SC_ENC >= 0 ? SC_ENC : int(CPR.enc))
#define K_XDT (SC_XDT >= 0 ? SC_XDT : int(CPR.xdt))
#define K_VEC (SC_VEC >= 0 ? SC_VEC : int(CPR.vec))
#define K_KPS (SC_KPS >= 0 ? SC_KPS : int(CPR.kps))

layout(local_size_x = 256) in;
shared uint sh[256];
shared uint sh_mult[256];
shared uint sh_f[2048];

uint cvt_in(uint h, int dt) { return dt == DT_BF16 ? bf16_to_f32(h) : f16_to_f32(h); }

uint load_x_bits(uint64_t base, int64_t i, int dt)
{
    if (dt == DT_F32) return ld_u32(base, i);
    return cvt_in(ld_u16(base, i), dt);
}

// 8 consecutive elements starting at element i (16-byte aligned) as f32 bits.
void load8(uint64_t base, int64_t i, int dt, out uint v[8])
{
    if (dt == DT_F32) {
        const uvec4 a = QV16(base + uint64_t(i) * 4ul).v, b = QV16(base + uint64_t(i) * 4ul + 16ul).v;
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    } else {
        const uvec4 a = QV16(base + uint64_t(i) * 2ul).v;
        for (int k = 0; k < 4; ++k) {
            v[2 * k] = cvt_in(a[k] & 0xFFFFu, dt);
            v[2 * k + 1] = cvt_in(a[k] >> 16, dt);
        }
    }
}

#include "cast_quant.glsl"

// Path 1, three shapes: 2 units x 4 segments per lane (MX blocks of 32 in rows whose block
// count is not a multiple of 4, lane pairs), up to 8 units of one segment per lane (1x128
// blocks, short rows) and up to 16 (rows of up to 4096 units).
#define SEG_KPS 2
#define SEG_SPL 4
#define SEG_FN cast_seg_2x4
#include "cast_seg.glsl"
#undef SEG_KPS
#undef SEG_SPL
#undef SEG_FN
#define SEG_KPS 8
#define SEG_SPL 1
#define SEG_FN cast_seg_8x1
#include "cast_seg.glsl"
#undef SEG_KPS
#undef SEG_FN
#define SEG_KPS 16
#define SEG_FN cast_seg_16x1
#include "cast_seg.glsl"

// Path 4: MX blocks along the contiguous dim (dim0) in rows of a multiple of 4 blocks.
// Lanes 2p, 2p+1 own one 128-element chunk (4 blocks), lane lr its units lr, lr + 2, ...,
// lr + 14 as path 1 holds 1x128 blocks (128 bytes in flight per lane, whole sectors per
// warp load); block t is units 4t..4t+3, i.e. the lane's j = 2t, 2t + 1, and the pair
// combines the 4 block amaxes through shared memory. The chunk's row, addresses and scale
// offsets are computed once: its 4 scales are consecutive in the row (plain) and in the
// blocked layout (one 4-byte group of a tile row).
void cast_mx_chunk()
{
    const int tid = int(gl_LocalInvocationID.x), lr = tid & 1;
    const int ch = int(wg_linear()) * 128 + (tid >> 1);
    const bool valid = ch < int(CPR.nsegt);
    const int cpr = int(CPR.nseg) / 4, O = int(CPR.o);
    const int row = ch / cpr, g0 = (ch - row * cpr) * 4;
    const int e = int(CPR.e) == 1 ? 0 : row / O, o = row - e * O;
    const uint64_t xb = uint64_t(CPR.x) + uint64_t((e * CPR.xe + o * CPR.xo + int64_t(g0) * 32) * 2);
    const uint64_t qb = uint64_t(CPR.q) + uint64_t(e * CPR.qe + o * CPR.qo + int64_t(g0) * 32);
    const int enc = K_ENC;
    uvec4 c[8];
    for (int j = 0; j < 8; ++j) c[j] = valid ? QV16(xb + uint64_t(lr + 2 * j) * 16ul).v : uvec4(0u);
    uint am[4];
    for (int t = 0; t < 4; ++t) {
        uvec4 ml = max(c[2 * t] & 0x7FFFu, c[2 * t + 1] & 0x7FFFu);
        const uvec4 mh = max(c[2 * t] & 0x7FFF0000u, c[2 * t + 1] & 0x7FFF0000u) >> 16;
        ml = max(ml, mh);
        am[t] = max(max(ml.x, ml.y), max(ml.z, ml.w));
        sh_f[t * 256 + tid] = am[t];
    }
    barrier();
    uint64_t sa = uint64_t(CPR.s);
    int64_t sst = 1;
    if (int(CPR.skind) == 2) {
        sa += uint64_t(e * CPR.expbytes + blocked_offset(o, g0, CPR.colspad));
    } else {
        sa += uint64_t(e * CPR.se + o * CPR.so + g0 * CPR.sg);
        sst = CPR.sg;
    }
    for (int t = 0; t < 4; ++t) {
        const uint amax = amax_bf_to_f32(max(am[t], sh_f[t * 256 + (tid ^ 1)]));
        const uint b = mx_byte(amax), mult = e8m0_reciprocal(b);
        if (valid && lr == 0) QU8(sa + uint64_t(t * sst)).v = uint8_t(b);
        const bool fast = quantize_fast_ok(amax, mult);
        if (valid)
            for (int k = 0; k < 2; ++k)
                QV8(qb + uint64_t(lr + 4 * t + 2 * k) * 8ul).v = encode_unit(c[2 * t + k], mult, fast, enc);
    }
}

// Path 3: one 128x128 tile per workgroup; lane (lo, lr) holds rows lo + 16k (k < 8),
// elements [8 lr, 8 lr + 8) of the tile's 128.
void cast_tile128()
{
    const int64_t lin = wg_linear(), notiles = CPR.notiles, nseg = CPR.nseg;
    const int64_t ot = lin % notiles, g = (lin / notiles) % nseg, e = lin / (notiles * nseg);
    const int tid = int(gl_LocalInvocationID.x), lo = tid >> 4, lr = tid & 15;
    const int64_t o0 = ot * 128, O = CPR.o, rs = g * 128 + 8 * lr;
    const uint64_t xb = uint64_t(CPR.x) + uint64_t((e * CPR.xe + rs) * 2), qb = uint64_t(CPR.q) + uint64_t(e * CPR.qe + rs);
    const int64_t xo = CPR.xo, qo = CPR.qo;
    uvec4 c[8];
    uvec4 ml = uvec4(0u), mh = uvec4(0u);
    for (int k = 0; k < 8; ++k) {
        const int64_t o = o0 + lo + 16 * k;
        c[k] = o < O ? QV16(xb + uint64_t(o * xo * 2)).v : uvec4(0u);
        ml = max(ml, c[k] & 0x7FFFu);
        mh = max(mh, c[k] & 0x7FFF0000u);
    }
    ml = max(ml, mh >> 16);
    sh[tid] = max(max(ml.x, ml.y), max(ml.z, ml.w));
    barrier();
    for (int s = 128; s > 0; s >>= 1) {
        if (tid < s) sh[tid] = max(sh[tid], sh[tid + s]);
        barrier();
    }
    const uint amax = amax_bf_to_f32(sh[0]);
    const uint mult = scale_and_store(amax, e, ot, g, tid == 0);
    const int enc = K_ENC;
    const bool fast = quantize_fast_ok(amax, mult);
    for (int k = 0; k < 8; ++k) {
        const int64_t o = o0 + lo + 16 * k;
        if (o < O) QV8(qb + uint64_t(o * qo)).v = encode_unit(c[k], mult, fast, enc);
    }
}

// Path 2: MX blocks along a strided dim (dim1). Workgroup = one 32-row block x 1024
// columns; lanes 2p, 2p+1 hold columns [8p, 8p + 8) of rows [0, 16) and [16, 32), so a
// warp's load covers 16 columns groups x 2 rows (whole sectors) and the pair's two 16-byte
// stores fill one 32-byte sector of each column of q.
void cast_dim1()
{
    const int64_t lin = wg_linear(), otl = CPR.otiles, nseg = CPR.nseg;
    const int64_t ct = lin % otl, g = (lin / otl) % nseg, e = lin / (otl * nseg);
    const int tid = int(gl_LocalInvocationID.x), h = tid & 1;
    const int64_t c0 = ct * 1024 + 8 * (tid >> 1), rs = g * 32 + 16 * h;
    const bool valid = c0 < CPR.o;
    const uint64_t xb = uint64_t(CPR.x) + uint64_t((e * CPR.xe + rs * CPR.xr + c0) * 2);
    const uint rowb = uint(CPR.xr) * 2u;
    uvec4 w[16];
    uvec4 ml = uvec4(0u), mh = uvec4(0u);
    for (int i = 0; i < 16; ++i) {
        w[i] = valid ? QV16(xb + uint64_t(uint(i) * rowb)).v : uvec4(0u);
        ml = max(ml, w[i] & 0x7FFFu);
        mh = max(mh, w[i] & 0x7FFF0000u);
    }
    mh >>= 16;
    for (int k = 0; k < 4; ++k) {
        sh_f[(2 * k) * 256 + tid] = ml[k];
        sh_f[(2 * k + 1) * 256 + tid] = mh[k];
    }
    barrier();
    for (int k = 0; k < 4; ++k) {
        ml[k] = max(ml[k], sh_f[(2 * k) * 256 + (tid ^ 1)]);
        mh[k] = max(mh[k], sh_f[(2 * k + 1) * 256 + (tid ^ 1)]);
    }
    if (!valid) return;
    const uint64_t qb = uint64_t(CPR.q) + uint64_t(e * CPR.qe + c0 * CPR.qo + rs);
    const uint64_t qo = uint64_t(CPR.qo);
    // the 8 columns' scales: plain at a stride of SO, blocked 16 bytes apart (8 rows of one
    // 32-row group of a tile, c0 % 8 == 0)
    uint64_t sa = uint64_t(CPR.s);
    int64_t sst = 16;
    if (int(CPR.skind) == 2) {
        sa += uint64_t(e * CPR.expbytes + blocked_offset(c0, g, CPR.colspad));
    } else {
        sa += uint64_t(e * CPR.se + c0 * CPR.so + g * CPR.sg);
        sst = CPR.so;
    }
    const int enc = K_ENC;
    for (int j = 0; j < 8; ++j) {
        const uint amax = amax_bf_to_f32(j % 2 == 0 ? ml[j / 2] : mh[j / 2]);
        const uint b = mx_byte(amax), mult = e8m0_reciprocal(b);
        if (h == 0) QU8(sa + uint64_t(j * sst)).v = uint8_t(b);
        uvec4 out4 = uvec4(0u);
        if (quantize_fast_ok(amax, mult)) {
            for (int i = 0; i < 16; ++i) {
                const uint x = j % 2 == 0 ? bf_lo(w[i][j / 2]) : bf_hi(w[i][j / 2]);
                out4[i / 4] |= q1_fast(x, mult, enc) << (8 * (i % 4));
            }
        } else {
            for (int i = 0; i < 16; ++i) {
                const uint x = j % 2 == 0 ? bf_lo(w[i][j / 2]) : bf_hi(w[i][j / 2]);
                out4[i / 4] |= q1(x, mult, false) << (8 * (i % 4));
            }
        }
        QV16(qb + uint64_t(j) * qo).v = out4;
    }
}

// An MX scale of qgmm_quantize_mxfp8_grouped (CPR.skind 3: M-groups, so the token row;
// 4: K-groups, g the token block) stored at its place in the grouped layout, found in the
// group table (start/end in tokens, padded start/end in rows or scale columns); a scale
// whose tokens no group covers has no place. Returns the multiplier.
uint mx_group_store(uint amax, int64_t so, int64_t g)
{
    uint b;
    const uint mult = scale_of(amax, scale_args(), b);
    const uint64_t t = uint64_t(CPR.gtab);
    const int64_t G = CPR.gg;
    if (int(CPR.skind) == 3) {
        const int64_t grp = tab_group_of(t, G, 1, so);
        if (grp >= 0)
            st_u8(uint64_t(CPR.s), blocked_offset(tab_get(t, grp, 2) + so - tab_get(t, grp, 0), g, CPR.colspad), b);
    } else {
        const int64_t grp = tab_group_of(t, G, 1, g * 32);
        if (grp >= 0) {
            const int64_t ps = tab_get(t, grp, 2), pe = tab_get(t, grp, 3);
            st_u8(uint64_t(CPR.s), ps * CPR.expbytes + blocked_offset(so, g - tab_get(t, grp, 0) / 32, pe - ps), b);
        }
    }
    return mult;
}

void cast_generic()
{
    if (int(CPR.skind) >= 3 && tab_bad(uint64_t(CPR.gtab))) return; // bad offsets: write nothing (uniform)
    const int64_t nseg = CPR.nseg, E = CPR.e, O = CPR.o;
    const int64_t notiles = CPR.notiles;
    const int64_t lin = wg_linear();
    if (lin >= E * nseg * notiles) return;
    const int64_t ot = lin % notiles;
    const int64_t g = (lin / notiles) % nseg;
    const int64_t e = lin / (notiles * nseg);
    const int TO = int(CPR.to), TR = int(CPR.tr);
    const int tid = int(gl_LocalInvocationID.x);
    int lo, lr;
    if (int(CPR.ocontig) != 0) { lo = tid % TO; lr = tid / TO; }
    else { lr = tid % TR; lo = tid / TR; }

    int64_t rs, re;
    const uint64_t table = uint64_t(CPR.table);
    if (table != 0ul) {
        if (ld_u32(table, 0) != 0u) return; // bad offsets: write nothing (uniform)
        rs = ld_i32(table, TAB_HEADER + g * TAB_STRIDE);
        re = ld_i32(table, TAB_HEADER + g * TAB_STRIDE + 1);
    } else if (CPR.l > 0) {
        rs = g * CPR.l; re = rs + CPR.l;
    } else {
        rs = 0; re = CPR.r;
    }
    const int64_t OT = CPR.ot;
    const int64_t o0 = ot * OT;
    const int64_t o1 = min(o0 + OT, O);
    const uint64_t X = uint64_t(CPR.x);
    const int xdt = K_XDT;
    const int64_t xe = CPR.xe, xo = CPR.xo, xr = CPR.xr;
    const bool vec = K_VEC == 8;
    const int64_t rstep = vec ? int64_t(TR) * 8 : int64_t(TR);
    const int64_t rfirst = rs + (vec ? int64_t(lr) * 8 : int64_t(lr));

    uint m = 0u;
    for (int64_t o = o0 + lo; o < o1; o += TO) {
        const int64_t b = e * xe + o * xo;
        if (vec) {
            for (int64_t r = rfirst; r < re; r += rstep) {
                uint v[8];
                load8(X, b + r, xdt, v);
                for (int k = 0; k < 8; ++k) m = amax_combine(m, v[k] & 0x7FFFFFFFu);
            }
        } else {
            for (int64_t r = rfirst; r < re; r += rstep)
                m = amax_combine(m, load_x_bits(X, b + r * xr, xdt) & 0x7FFFFFFFu);
        }
    }
    const int slot = lo + TO * lr;
    sh[slot] = m;
    barrier();
    const bool combine = int(CPR.combine) != 0;
    if (combine) {
        for (int s = 128; s > 0; s >>= 1) {
            if (tid < s) sh[tid] = amax_combine(sh[tid], sh[tid + s]);
            barrier();
        }
    } else {
        for (int s = TR / 2; s > 0; s >>= 1) {
            if (lr < s) sh[slot] = amax_combine(sh[slot], sh[lo + TO * (lr + s)]);
            barrier();
        }
    }

    const int64_t so_idx = combine ? ot : o0 + lo;
    if (lr == 0 && (!combine || lo == 0) && (combine || o0 + lo < o1))
        sh_mult[lo] = int(CPR.skind) >= 3 ? mx_group_store(sh[lo], so_idx, g) : scale_and_store(sh[lo], e, so_idx, g, true);
    barrier();
    const uint mult = sh_mult[combine ? 0 : lo];
    // the slice's amax is still in sh (nothing writes it after the reduction)
    const bool fast = quantize_fast_ok(sh[combine ? 0 : lo], mult);
    const uint64_t Q = uint64_t(CPR.q);
    const int64_t qe = CPR.qe, qo = CPR.qo, qr = CPR.qr;
    for (int64_t o = o0 + lo; o < o1; o += TO) {
        const int64_t b = e * xe + o * xo, bq = e * qe + o * qo;
        if (vec) {
            for (int64_t r = rfirst; r < re; r += rstep) {
                uint v[8];
                load8(X, b + r, xdt, v);
                uvec2 w = uvec2(0u);
                for (int k = 0; k < 4; ++k) {
                    w.x |= q1(v[k], mult, fast) << (8 * k);
                    w.y |= q1(v[k + 4], mult, fast) << (8 * k);
                }
                QV8(Q + uint64_t(bq + r)).v = w;
            }
        } else {
            for (int64_t r = rfirst; r < re; r += rstep)
                st_u8(Q, bq + r * qr, q1(load_x_bits(X, b + r * xr, xdt), mult, fast));
        }
    }
}

// The path of the unspecialized pipeline, from the parameter block.
int runtime_path()
{
    const int fast = int(CPR.fast);
    if (fast == 1) return int(CPR.kps) == 2 && int(CPR.ls) == 2 ? 1 : int(CPR.kps) <= 8 ? 5 : 6;
    return fast >= 2 && fast <= 4 ? fast : 0;
}

void main()
{
    const int path = SC_PATH >= 0 ? SC_PATH : runtime_path();
    if (path == 1) cast_seg_2x4();
    else if (path == 5) cast_seg_8x1();
    else if (path == 6) cast_seg_16x1();
    else if (path == 4) cast_mx_chunk();
    else if (path == 2) cast_dim1();
    else if (path == 3) cast_tile128();
    else cast_generic();
}
