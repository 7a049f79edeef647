#version 460
// dequant.comp — the inverse of every quantize, one lane per element, the scale found by
// the same (E, O, R) slice/segment map cast.comp uses:
//   mode 0: f32(q) / s (rowwise, multiplier stored)   mode 1: f32(q) * s (reciprocal)
//   mode 2: f32(q) * 2^(b-127) (MX, e8m0 byte)
// Integer-exact (codec.glsl), written as f32 or bf16 (round to nearest even).
#include "params.h"
#include "common.glsl"
#include "dequant_params.h"
#include "codec.glsl"
#include "layout.glsl"
layout(local_size_x = 256) in;
void main()
{
    const int64_t n = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    if (n >= DQP.n) return;
    const int64_t O = DQP.o, R = DQP.r;
    int64_t o, r, e;
    // element order: r fastest (the usual contiguous dim); see vk_ops_cast.c
    r = n % R; o = (n / R) % O; e = n / (R * O);
    int64_t g = 0;
    const uint64_t table = uint64_t(DQP.table);
    if (table != 0ul) {
        if (tab_bad(table)) return;
        g = tab_group_of(table, DQP.nseg, 1, r);
        if (g < 0) return; // past offs[G-1]: not written, as the quantize did not write it
    } else if (DQP.l > 0) {
        g = r / DQP.l;
    }
    const int fmt = int(DQP.fmt);
    const uint qv = fp8_to_f32(ld_u8(uint64_t(DQP.q), e * DQP.qe + o * DQP.qo + r * DQP.qr), fmt);
    const int64_t so = o / DQP.odiv;
    const uint64_t S = uint64_t(DQP.s);
    uint v;
    const int mode = int(DQP.mode);
    if (mode == 2) {
        int64_t si;
        if (int(DQP.skind) == 2) si = e * DQP.expbytes + blocked_offset(so, g, DQP.colspad);
        else si = e * DQP.se + so * DQP.so + g * DQP.sg;
        v = f32_mul_rn(qv, e8m0_to_f32(ld_u8(S, si)));
    } else {
        const uint s = ld_u32(S, e * DQP.se + so * DQP.so + g * DQP.sg);
        // q first, as the reference's source reads (q * s): when both are NaN, x86 returns
        // the first operand's NaN — if the compiler keeps that order (see docs)
        v = mode == 0 ? f32_div_rn(qv, s) : f32_mul_rn(qv, s);
    }
    const int64_t oi = e * DQP.xe + o * DQP.xo + r * DQP.xr;
    if (int(DQP.xdt) == DT_BF16) st_u16(uint64_t(DQP.x), oi, f32_to_bf16(v));
    else st_u32(uint64_t(DQP.x), oi, v);
}
