#version 460
// dequant.comp — the inverse of every quantize, one lane per element, the scale found by
// the same (E, O, R) slice/segment map cast.comp uses:
//   mode 0: f32(q) / s (rowwise, multiplier stored)   mode 1: f32(q) * s (reciprocal)
//   mode 2: f32(q) * 2^(b-127) (MX, e8m0 byte)
// Integer-exact (codec.glsl), written as f32 or bf16 (round to nearest even).
#include "params.h"
#include "common.glsl"
#include "codec.glsl"
#include "layout.glsl"
layout(local_size_x = 256) in;
void main()
{
    const int64_t n = wg_linear() * 256 + int64_t(gl_LocalInvocationID.x);
    if (n >= P(DQ_N)) return;
    const int64_t O = P(DQ_O), R = P(DQ_R);
    int64_t o, r, e;
    // element order: r fastest (the usual contiguous dim); see vk_ops_cast.c
    r = n % R; o = (n / R) % O; e = n / (R * O);
    int64_t g = 0;
    const uint64_t table = PA(DQ_TABLE);
    if (table != 0ul) {
        if (tab_bad(table)) return;
        g = tab_group_of(table, P(DQ_NSEG), 1, r);
        if (g < 0) return; // past offs[G-1]: not written, as the quantize did not write it
    } else if (P(DQ_L) > 0) {
        g = r / P(DQ_L);
    }
    const int fmt = PI(DQ_FMT);
    const uint qv = fp8_to_f32(ld_u8(PA(DQ_Q), e * P(DQ_QE) + o * P(DQ_QO) + r * P(DQ_QR)), fmt);
    const int64_t so = o / P(DQ_ODIV);
    const uint64_t S = PA(DQ_S);
    uint v;
    const int mode = PI(DQ_MODE);
    if (mode == 2) {
        int64_t si;
        if (PI(DQ_SKIND) == 2) si = e * P(DQ_EXPBYTES) + blocked_offset(so, g, P(DQ_COLSPAD));
        else si = e * P(DQ_SE) + so * P(DQ_SO) + g * P(DQ_SG);
        v = f32_mul_rn(qv, e8m0_to_f32(ld_u8(S, si)));
    } else {
        const uint s = ld_u32(S, e * P(DQ_SE) + so * P(DQ_SO) + g * P(DQ_SG));
        // q first, as the reference's source reads (q * s): when both are NaN, x86 returns
        // the first operand's NaN — if the compiler keeps that order (see docs)
        v = mode == 0 ? f32_div_rn(qv, s) : f32_mul_rn(qv, s);
    }
    const int64_t oi = e * P(DQ_OE) + o * P(DQ_OO) + r * P(DQ_OR);
    if (PI(DQ_OUTDT) == DT_BF16) st_u16(PA(DQ_OUT), oi, f32_to_bf16(v));
    else st_u32(PA(DQ_OUT), oi, v);
}
