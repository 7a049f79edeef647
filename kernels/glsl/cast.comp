#version 460
// cast.comp — every quantize of ops-spec §1-§3 as one segmented-reduction kernel.
// The tensor is viewed as (E, O, R): E batches (experts), O independent slices, R the
// dim the amax is taken over. R is cut into segments (the whole dim, fixed blocks of
// 32/128, or jagged groups from the device group table). A workgroup owns one
// (e, segment, tile of OT slices) and runs: amax -> scale (codec.glsl, integer-exact)
// -> quantize. Lanes are laid out TO (slices) x TR (reduce positions) with the lane
// order chosen by the host so that consecutive lanes touch consecutive addresses.
// COMBINE folds the whole tile into one amax (128x128 blockwise).
// VEC = 8 (host-checked: reduce dim contiguous in x and q, 16/8-byte aligned rows,
// segments multiples of 8): each lane moves 8 elements per step with one or two 16-byte
// loads and one 8-byte store, which is what makes the cast memory-bound on a GPU.
#include "params.h"
#include "common.glsl"
#include "codec.glsl"
#include "layout.glsl"

layout(local_size_x = 256) in;
shared uint sh[256];
shared uint sh_mult[256];

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

void main()
{
    const int64_t nseg = P(CP_NSEG), E = P(CP_E), O = P(CP_O);
    const int64_t notiles = P(CP_NOTILES);
    const int64_t lin = wg_linear();
    if (lin >= E * nseg * notiles) return;
    const int64_t ot = lin % notiles;
    const int64_t g = (lin / notiles) % nseg;
    const int64_t e = lin / (notiles * nseg);
    const int TO = PI(CP_TO), TR = PI(CP_TR);
    const int tid = int(gl_LocalInvocationID.x);
    int lo, lr;
    if (PI(CP_OCONTIG) != 0) { lo = tid % TO; lr = tid / TO; }
    else { lr = tid % TR; lo = tid / TR; }

    int64_t rs, re;
    const uint64_t table = PA(CP_TABLE);
    if (table != 0ul) {
        if (ld_u32(table, 0) != 0u) return; // bad offsets: write nothing (uniform)
        rs = ld_i32(table, TAB_HEADER + g * TAB_STRIDE);
        re = ld_i32(table, TAB_HEADER + g * TAB_STRIDE + 1);
    } else if (P(CP_L) > 0) {
        rs = g * P(CP_L); re = rs + P(CP_L);
    } else {
        rs = 0; re = P(CP_R);
    }
    const int64_t OT = P(CP_OT);
    const int64_t o0 = ot * OT;
    const int64_t o1 = min(o0 + OT, O);
    const uint64_t X = PA(CP_X);
    const int xdt = PI(CP_XDT);
    const int64_t xe = P(CP_XE), xo = P(CP_XO), xr = P(CP_XR);
    const bool vec = PI(CP_VEC) == 8;
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
    const bool combine = PI(CP_COMBINE) != 0;
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

#ifdef QG_FMT
    const int fmt = QG_FMT; // compiled per fp8 format: the codec's format branches fold away
#else
    const int fmt = PI(CP_FMT);
#endif
    const int64_t so_idx = combine ? ot : o0 + lo;
    if (lr == 0 && (!combine || lo == 0) && (combine || o0 + lo < o1)) {
        const FmtConsts c = FmtConsts(PU(CP_C_MAX), PU(CP_C_CLAMP), PU(CP_C_EPS), PU(CP_C_INV));
        const uint amax = sh[lo];
        const int rule = PI(CP_RULE);
        const uint64_t S = PA(CP_S);
        const int64_t sidx = e * P(CP_SE) + so_idx * P(CP_SO) + g * P(CP_SG);
        uint mult;
        if (rule == 0) {
            uint s = rowwise_scale(amax, c);
            if (PI(CP_POW2) != 0) s = scale_pow2_floor(s);
            mult = s;
            st_u32(S, sidx, PI(CP_RECIP) != 0 ? scale_reciprocal(s) : s);
        } else {
            const uint b = rule == 1 ? mx_scale_floor(amax, fmt) : mx_scale_rceil(amax, c);
            mult = e8m0_reciprocal(b);
            if (PI(CP_SKIND) == 2)
                st_u8(S, e * P(CP_EXPBYTES) + blocked_offset(so_idx, g, P(CP_COLSPAD)), b);
            else
                st_u8(S, sidx, b);
        }
        sh_mult[lo] = mult;
    }
    barrier();
    const uint mult = sh_mult[combine ? 0 : lo];
    const uint64_t Q = PA(CP_Q);
    const int64_t qe = P(CP_QE), qo = P(CP_QO), qr = P(CP_QR);
    for (int64_t o = o0 + lo; o < o1; o += TO) {
        const int64_t b = e * xe + o * xo, bq = e * qe + o * qo;
        if (vec) {
            for (int64_t r = rfirst; r < re; r += rstep) {
                uint v[8];
                load8(X, b + r, xdt, v);
                uvec2 w = uvec2(0u);
                for (int k = 0; k < 4; ++k) {
                    w.x |= f32_to_fp8(f32_mul_fast(v[k], mult), fmt) << (8 * k);
                    w.y |= f32_to_fp8(f32_mul_fast(v[k + 4], mult), fmt) << (8 * k);
                }
                QV8(Q + uint64_t(bq + r)).v = w;
            }
        } else {
            for (int64_t r = rfirst; r < re; r += rstep)
                st_u8(Q, bq + r * qr, f32_to_fp8(f32_mul_fast(load_x_bits(X, b + r * xr, xdt), mult), fmt));
        }
    }
}
