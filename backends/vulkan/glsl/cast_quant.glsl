// cast_quant.glsl — what the cast shaders (cast.comp, cast_rows.comp, cast_2d.comp) share between the amax
// and the stores: bf16 words as f32 bits, the segment scale and its store, and the fast and
// exact encoders of 8-element units. The includer defines FMT (fp8 format), K_RULE (0
// rowwise/blockwise, 1 MX FLOOR, 2 MX RCEIL) and K_ENC (fast encoder) first, and QG_XF32 1
// in its build for f32 x (the f32 helpers at the end).
#ifndef QG_XF32
#define QG_XF32 0
#endif
#define XES (QG_XF32 != 0 ? 4 : 2) // bytes per x element

// The two bf16 elements of a word as f32 bits (the fast paths take bf16 x only: a dtype
// branch here would be if-converted into both conversions per element).
uint bf_lo(uint w) { return w << 16; }
uint bf_hi(uint w) { return w & 0xFFFF0000u; }
// The amax of bf16 magnitudes, as f32 bits: magnitudes (NaNs above inf) order like
// integers and widen monotonically, so max-then-widen = widen-then-max.
uint amax_bf_to_f32(uint m) { return m << 16; }

// Running amax of bf16 magnitudes over 16-byte units, the words' low and high halves kept
// apart (a max over the packed words would let the high half decide), and its fold into one
// magnitude (bf16 bits; amax_bf_to_f32 widens it).
void amax_add(inout uvec4 ml, inout uvec4 mh, uvec4 c)
{
    ml = max(ml, c & 0x7FFFu);
    mh = max(mh, c & 0x7FFF0000u);
}
uint amax_fold(uvec4 ml, uvec4 mh)
{
    ml = max(ml, mh >> 16);
    return max(max(ml.x, ml.y), max(ml.z, ml.w));
}
// The same running maxima per column instead (units whose 8 elements are 8 columns):
// column j's amax (bf16 magnitude bits) in m[j].
void amax_columns(uvec4 ml, uvec4 mh, out uint m[8])
{
    mh >>= 16;
    [[unroll]] for (int j = 0; j < 8; ++j) m[j] = (j & 1) == 0 ? ml[j >> 1] : mh[j >> 1];
}

// Column j (0..7) of a 16-byte unit of 8 bf16 as f32 bits.
uint col_bits(uvec4 w, int j) { return (j & 1) == 0 ? bf_lo(w[j >> 1]) : bf_hi(w[j >> 1]); }

// Bytes lo .. hi - 1 of the 8 in o (byte i at at + i; bounds outside 0..8 clamp): one
// 8-byte store when all 8 go (at 8-byte aligned), else byte by byte — the edges of a
// segment that starts or ends inside a unit.
void store8_within(uint64_t at, uvec2 o, int64_t lo, int64_t hi)
{
    if (lo <= 0 && hi >= 8) {
        QV8(at).v = o;
        return;
    }
    for (int i = 0; i < 8; ++i)
        if (i >= lo && i < hi) QU8(at + uint64_t(i)).v = uint8_t(o[i >> 2] >> (8 * (i & 3)));
}

// What a segment's scale needs from the parameter block, read once (cast_rows.comp, before
// its loop): read at each segment instead, every read after a store to q is a dependent
// load again, as the compiler cannot tell the parameter block from the stored-to buffers.
struct ScaleArgs {
    FmtConsts c;
    uint64_t S;
    int64_t se, so, sg, expbytes, colspad;
    int skind, pow2, recip;
};
ScaleArgs scale_args()
{
    return ScaleArgs(FmtConsts(uint(CPR.c_max), uint(CPR.c_clamp), uint(CPR.c_eps), uint(CPR.c_inv)), uint64_t(CPR.s), CPR.se,
                     CPR.so, CPR.sg, CPR.expbytes, CPR.colspad, int(CPR.skind), int(CPR.pow2), int(CPR.recip));
}

// scale_and_store's arithmetic without the store: returns the multiplier, sets `stored` to
// what goes to memory (f32 bits for K_RULE 0, the e8m0 byte otherwise).
uint scale_of(uint amax, ScaleArgs a, out uint stored)
{
    if (K_RULE == 0) {
        uint s = rowwise_scale(amax, a.c);
        if (a.pow2 != 0) s = scale_pow2_floor(s);
        stored = a.recip != 0 ? scale_reciprocal(s) : s;
        return s;
    }
    const uint b = K_RULE == 1 ? mx_scale_floor(amax, FMT) : mx_scale_rceil_fast(amax, a.c);
    stored = b;
    return e8m0_reciprocal(b);
}

// Segment scale from its amax (ops-spec §1-§3 rule of the call); stores it when `store`
// (plain f32/byte scales at e*SE + so*SO + g*SG, blocked bytes at the §4 offset). Returns
// the multiplier x is quantized with. The arithmetic is scale_of's, but each parameter is
// read where it is needed: built on scale_of(scale_args()) instead, cast_2d.comp's 128x128
// tiles (one call per tile, after the barrier) ran 7 % slower on the H100.
uint scale_and_store(uint amax, int64_t e, int64_t so, int64_t g, bool store)
{
    const FmtConsts c = FmtConsts(uint(CPR.c_max), uint(CPR.c_clamp), uint(CPR.c_eps), uint(CPR.c_inv));
    const int rule = K_RULE;
    const uint64_t S = uint64_t(CPR.s);
    const int64_t sidx = e * CPR.se + so * CPR.so + g * CPR.sg;
    if (rule == 0) {
        uint s = rowwise_scale(amax, c);
        if (int(CPR.pow2) != 0) s = scale_pow2_floor(s);
        if (store) st_u32(S, sidx, int(CPR.recip) != 0 ? scale_reciprocal(s) : s);
        return s;
    }
    const uint b = rule == 1 ? mx_scale_floor(amax, FMT) : mx_scale_rceil_fast(amax, c);
    if (store) {
        if (int(CPR.skind) == 2) st_u8(S, e * CPR.expbytes + blocked_offset(so, g, CPR.colspad), b);
        else st_u8(S, sidx, b);
    }
    return e8m0_reciprocal(b);
}

// Byte offset from a.S of segment (e, so, g)'s scale, as scale_and_store addresses it.
int64_t scale_offset(ScaleArgs a, int64_t e, int64_t so, int64_t g)
{
    if (K_RULE == 0) return (e * a.se + so * a.so + g * a.sg) * 4;
    if (a.skind == 2) return e * a.expbytes + int64_t(blocked_offset32(int(so), int(g), int(a.colspad)));
    return e * a.se + so * a.so + g * a.sg;
}

// One element, fast or exact (see the header).
uint q1(uint x, uint mult, bool fast)
{
    return fast ? quantize_fast(x, mult, FMT) : f32_to_fp8(f32_mul_fast(x, mult), FMT);
}

// 4 fp8 bytes from two words of bf16 pairs, fast path. Encoder 1: quantize_fast per element.
// Encoder 0: magnitude codes (fp8_mag_fast), then the four signs moved from bits 15/31 of the
// two words to bits 7 of the four bytes at once. Encoder 2: the same with fp8_mag_binade's
// magnitude codes (4 integer operations per element instead of 6). vk_ops_cast.c says which is
// the default and why; fnuz formats, whose zero takes no sign, always use quantize_fast.
uint q4_fast(uint a, uint b, uint mult, int enc)
{
    if (FMT == FMT_E4M3FNUZ || enc == 1)
        return quantize_fast(bf_lo(a), mult, FMT) | (quantize_fast(bf_hi(a), mult, FMT) << 8) |
               (quantize_fast(bf_lo(b), mult, FMT) << 16) | (quantize_fast(bf_hi(b), mult, FMT) << 24);
    const float s = uintBitsToFloat(mult);
    precise float p0 = abs(uintBitsToFloat(bf_lo(a))) * s, p1 = abs(uintBitsToFloat(bf_hi(a))) * s;
    precise float p2 = abs(uintBitsToFloat(bf_lo(b))) * s, p3 = abs(uintBitsToFloat(bf_hi(b))) * s;
    const uint w = enc == 2 ? fp8_mag_binade(p0, FMT) | (fp8_mag_binade(p1, FMT) << 8) |
                                  (fp8_mag_binade(p2, FMT) << 16) | (fp8_mag_binade(p3, FMT) << 24)
                            : fp8_mag_fast(p0, FMT) | (fp8_mag_fast(p1, FMT) << 8) | (fp8_mag_fast(p2, FMT) << 16) |
                                  (fp8_mag_fast(p3, FMT) << 24);
    return w | ((a >> 8) & 0x80u) | ((a >> 16) & 0x8000u) | ((b << 8) & 0x800000u) | (b & 0x80000000u);
}
uint q4_exact(uint a, uint b, uint mult)
{
    return q1(bf_lo(a), mult, false) | (q1(bf_hi(a), mult, false) << 8) | (q1(bf_lo(b), mult, false) << 16) |
           (q1(bf_hi(b), mult, false) << 24);
}

// 8 bf16 elements (one 16-byte unit) -> 8 fp8 bytes.
uvec2 encode_unit(uvec4 a, uint mult, bool fast, int enc)
{
    if (fast) return uvec2(q4_fast(a.x, a.y, mult, enc), q4_fast(a.z, a.w, mult, enc));
    return uvec2(q4_exact(a.x, a.y, mult), q4_exact(a.z, a.w, mult));
}

// One fast element with its sign (x: f32 bits of a bf16 value).
uint q1_fast(uint x, uint mult, int enc)
{
    if (FMT == FMT_E4M3FNUZ || enc == 1) return quantize_fast(x, mult, FMT);
    precise float p = abs(uintBitsToFloat(x)) * uintBitsToFloat(mult);
    return (enc == 2 ? fp8_mag_binade(p, FMT) : fp8_mag_fast(p, FMT)) | ((x >> 24) & 0x80u);
}

// The e8m0 byte of an MX block (FLOOR or RCEIL).
uint mx_byte(uint amax)
{
    if (K_RULE == 1) return mx_scale_floor(amax, FMT);
    return mx_scale_rceil_fast(amax, FmtConsts(uint(CPR.c_max), uint(CPR.c_clamp), uint(CPR.c_eps), uint(CPR.c_inv)));
}

// Unit k of a lane's 8 units (k not a constant: a select chain over constant indices, so
// that the array stays in registers).
uvec4 unit_at(uvec4 c[8], int k)
{
    uvec4 v = c[0];
    [[unroll]] for (int j = 1; j < 8; ++j)
        if (j == k) v = c[j];
    return v;
}

// f32 x: a unit of 8 elements is two 16-byte loads, a (elements 0-3) and b (4-7).
// Running amax of f32 magnitudes (NaN above inf, like integers), kept per word as amax_add
// does, and its fold (f32 bits, no widening).
void amax_add_f32(inout uvec4 ml, inout uvec4 mh, uvec4 a, uvec4 b)
{
    ml = max(ml, a & 0x7FFFFFFFu);
    mh = max(mh, b & 0x7FFFFFFFu);
}
uint amax_fold_f32(uvec4 ml, uvec4 mh)
{
    ml = max(ml, mh);
    return max(max(ml.x, ml.y), max(ml.z, ml.w));
}
// The helpers below take a unit as (a, b) in either build (b is unused and zero for bf16 x),
// so that the shaders carry no dtype branches of their own.
// The second 16-byte load of the unit at `at` (f32 x; zero for bf16 x or out of range).
uvec4 load_hi(uint64_t at, bool in_range) { return QG_XF32 != 0 && in_range ? QV16(at + 16ul).v : uvec4(0u); }
// Running amax of a unit, its fold to one magnitude, its per-column split (units whose 8
// elements are 8 columns) and the magnitude as f32 bits: amax_add / amax_fold /
// amax_columns / amax_bf_to_f32 for bf16 x, their f32 forms for f32 x.
void unit_amax_add(inout uvec4 ml, inout uvec4 mh, uvec4 a, uvec4 b)
{
    if (QG_XF32 != 0) amax_add_f32(ml, mh, a, b);
    else amax_add(ml, mh, a);
}
uint unit_amax_fold(uvec4 ml, uvec4 mh) { return QG_XF32 != 0 ? amax_fold_f32(ml, mh) : amax_fold(ml, mh); }
void unit_amax_columns(uvec4 ml, uvec4 mh, out uint m[8])
{
    if (QG_XF32 == 0) {
        amax_columns(ml, mh, m);
        return;
    }
    [[unroll]] for (int j = 0; j < 8; ++j) m[j] = j < 4 ? ml[j & 3] : mh[j & 3];
}
uint amax_as_f32(uint m) { return QG_XF32 != 0 ? m : amax_bf_to_f32(m); }
// Element j (0..7) of a unit as f32 bits: bf16 (b unused) or f32.
uint unit_elem(uvec4 a, uvec4 b, int j)
{
    if (QG_XF32 == 0) return col_bits(a, j);
    return j < 4 ? a[j & 3] : b[j & 3];
}
// A unit's 8 bytes: bf16 x through encode_unit, f32 x element by element.
uvec2 encode8(uvec4 a, uvec4 b, uint m, bool fast)
{
    if (QG_XF32 == 0) return encode_unit(a, m, fast, K_ENC);
    uvec2 o = uvec2(0u);
    [[unroll]] for (int k = 0; k < 4; ++k) {
        o.x |= (fast ? q1_fast(a[k], m, K_ENC) : q1(a[k], m, false)) << (8 * k);
        o.y |= (fast ? q1_fast(b[k], m, K_ENC) : q1(b[k], m, false)) << (8 * k);
    }
    return o;
}
