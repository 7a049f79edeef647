// codec.glsl — the GLSL mirror of kernels/qgmm_fp8_codec.h and kernels/qgmm_scale_rules.h,
// written line by line after them (same names without the qgmm_ prefix, same branches in
// the same order). Any change there must be made here too; the conformance suite proves
// the bytes agree.
//
// Everything is integer arithmetic on f32 bit patterns — including the products x*scale,
// the rowwise scale division and the reciprocal — because Vulkan lets a driver flush
// denormals, contract, and implement division to 2.5 ulp. With integers the driver's float
// behaviour cannot change a byte. The arithmetic helpers f32_mul_rn / f32_div_rn mirror
// qgmm_mul_f32 / qgmm_div_f32 of qgmm_scale_rules.h: the IEEE-754 round-to-nearest-even
// result, and for a NaN result the rule of qgmm_nan_result (a's NaN quieted, else b's,
// else the default NaN 0xFFC00000), so NaN signs and payloads match too.

#define FMT_E4M3FN 4
#define FMT_E4M3FNUZ 5
#define FMT_E5M2 6

bool isnan_bits(uint u) { return (u & 0x7FFFFFFFu) > 0x7F800000u; }

// ---- qgmm_fp8_format_of
void fp8_format_of(int fmt, out int mbits, out int bias, out uint maxcode, out bool has_inf, out bool fnuz)
{
    if (fmt == FMT_E5M2) {
        mbits = 2; bias = 15; maxcode = 0x7Bu; has_inf = true; fnuz = false;
    } else if (fmt == FMT_E4M3FNUZ) {
        mbits = 3; bias = 8; maxcode = 0x7Fu; has_inf = false; fnuz = true;
    } else {
        mbits = 3; bias = 7; maxcode = 0x7Eu; has_inf = false; fnuz = false;
    }
}

// ---- qgmm_rshift_rne (32-bit) and a 64-bit twin used by the arithmetic helpers
uint rshift_rne(uint m, int shift)
{
    if (shift >= 32) return 0u;
    uint q = m >> uint(shift);
    uint rem = m & ((1u << uint(shift)) - 1u);
    uint half_ = 1u << uint(shift - 1);
    if (rem > half_ || (rem == half_ && (q & 1u) != 0u)) q++;
    return q;
}
uint64_t rshift_rne64(uint64_t m, int shift)
{
    if (shift <= 0) return m << uint(-shift);
    if (shift >= 64) return 0ul;
    uint64_t q = m >> uint(shift);
    uint64_t rem = m & ((1ul << uint(shift)) - 1ul);
    uint64_t half_ = 1ul << uint(shift - 1);
    if (rem > half_ || (rem == half_ && (q & 1ul) != 0ul)) q++;
    return q;
}

// ---- qgmm_f32_to_fp8 (input: f32 bits)
uint f32_to_fp8(uint bits, int fmt)
{
    int mbits, bias; uint maxcode; bool has_inf, fnuz;
    fp8_format_of(fmt, mbits, bias, maxcode, has_inf, fnuz);
    const uint sign = (bits >> 31) & 1u;
    const uint exp32 = (bits >> 23) & 0xFFu;
    const uint man32 = bits & 0x7FFFFFu;

    if (exp32 == 0xFFu && man32 != 0u) { // NaN
        if (fnuz) return 0x80u;
        return (sign << 7) | 0x7Fu;
    }
    uint code;
    if (exp32 == 0xFFu) { // inf
        code = has_inf ? 0x7Cu : maxcode;
    } else if (exp32 == 0u) {
        code = 0u; // f32 zero or subnormal: far below half the smallest fp8 subnormal
    } else {
        const int e = int(exp32) - 127;
        const int emin = 1 - bias; // exponent of the smallest fp8 normal
        if (e > 15 + 1) {
            code = 0xFFu; // certainly beyond max: saturate below
        } else if (e >= emin) {
            // rounding may carry into the exponent field: the integer add does it
            code = rshift_rne((uint(e + bias) << 23) | man32, 23 - mbits);
        } else {
            // subnormal result: count units of 2^(emin - mbits)
            const int shift = (emin - mbits) - e + 23;
            code = rshift_rne((1u << 23) | man32, shift);
        }
        if (code > maxcode) code = maxcode;
    }
    if (code == 0u && fnuz) return 0x00u; // fnuz has no -0
    return (sign << 7) | code;
}

// ---- qgmm_fp8_to_f32 (output: f32 bits)
uint fp8_to_f32(uint v, int fmt)
{
    int mbits, bias; uint maxcode; bool has_inf, fnuz;
    fp8_format_of(fmt, mbits, bias, maxcode, has_inf, fnuz);
    const uint sign = (v >> 7) & 1u;
    const uint mag = v & 0x7Fu;
    if (fnuz) {
        if (v == 0x80u) return 0x7FC00000u;
    } else if (has_inf) {
        if (mag >= 0x7Du) return (sign << 31) | 0x7FC00000u;
        if (mag == 0x7Cu) return (sign << 31) | 0x7F800000u;
    } else if (mag == 0x7Fu) {
        return (sign << 31) | 0x7FC00000u;
    }
    const uint e = mag >> uint(mbits);
    const uint m = mag & ((1u << uint(mbits)) - 1u);
    uint outb;
    if (e != 0u) {
        outb = ((e - uint(bias) + 127u) << 23) | (m << uint(23 - mbits));
    } else if (m == 0u) {
        outb = 0u;
    } else {
        // subnormal: normalise m * 2^(1 - bias - mbits)
        int ex = 1 - bias - mbits;
        uint mm = m;
        int top = 0;
        while ((mm >> uint(top + 1)) != 0u) top++;
        ex += top;
        mm = (mm << uint(23 - top)) & 0x7FFFFFu;
        outb = (uint(ex + 127) << 23) | mm;
    }
    return (sign << 31) | outb;
}

// ---- qgmm_f32_to_bf16 / qgmm_bf16_to_f32
uint f32_to_bf16(uint u)
{
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return ((u >> 16) | 0x0040u) & 0xFFFFu;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return u >> 16;
}
uint bf16_to_f32(uint h) { return h << 16; }

// IEEE half -> f32 bits, exact (subnormals normalised with integers).
uint f16_to_f32(uint h)
{
    const uint sign = (h >> 15) & 1u, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1Fu) return (sign << 31) | 0x7F800000u | (m << 13);
    if (e != 0u) return (sign << 31) | ((e + 112u) << 23) | (m << 13);
    if (m == 0u) return sign << 31;
    int top = findMSB(m);              // m * 2^-24, leading bit at 2^(top - 24)
    return (sign << 31) | (uint(top - 24 + 127) << 23) | ((m << uint(23 - top)) & 0x7FFFFFu);
}

// ---- qgmm_pow2_f32 / qgmm_e8m0_to_f32 / qgmm_e8m0_reciprocal
uint pow2_f32(int k)
{
    if (k >= -126) return uint(k + 127) << 23;
    return 1u << uint(k + 149);
}
uint e8m0_to_f32(uint b)
{
    if (b == 255u) return 0x7FC00000u;
    return pow2_f32(int(b) - 127);
}
uint e8m0_reciprocal(uint b)
{
    if (b == 255u) return 0x7FC00000u;
    return pow2_f32(127 - int(b));
}

// ---- IEEE f32 arithmetic on bits (not in the C headers: the C compilers give these by
// the hardware; here they replace the driver's float unit).

// sign | (P * 2^E) rounded to nearest even into f32 (normal, subnormal, or inf).
uint round_pack(uint sign, uint64_t P, int E)
{
    if (P == 0ul) return sign << 31;
    const uint hi = uint(P >> 32);
    const int L = hi != 0u ? 32 + findMSB(hi) : findMSB(uint(P));
    int ex = L + E; // unbiased exponent of the leading bit
    if (ex >= -126) {
        uint64_t m = rshift_rne64(P, L - 23);
        if (m >= (1ul << 24)) { m >>= 1; ex++; } // a carry makes an exact power of two
        if (ex > 127) return (sign << 31) | 0x7F800000u;
        return (sign << 31) | (uint(ex + 127) << 23) | (uint(m) & 0x7FFFFFu);
    }
    // subnormal: units of 2^-149; a carry into 2^23 yields the smallest normal by itself
    const uint64_t m = rshift_rne64(P, -149 - E);
    return (sign << 31) | uint(m);
}

// Mantissa (with the hidden bit) and exponent such that |value| = m * 2^e.
void unpack_finite(uint u, out uint m, out int e)
{
    const uint ex = (u >> 23) & 0xFFu;
    if (ex == 0u) { m = u & 0x7FFFFFu; e = -149; }
    else { m = (u & 0x7FFFFFu) | 0x800000u; e = int(ex) - 150; }
}

// a * b, one rounding.
uint f32_mul_rn(uint a, uint b)
{
    if (isnan_bits(a)) return a | 0x400000u;
    if (isnan_bits(b)) return b | 0x400000u;
    const uint sign = (a ^ b) >> 31;
    const uint aa = a & 0x7FFFFFFFu, bb = b & 0x7FFFFFFFu;
    if (aa == 0x7F800000u || bb == 0x7F800000u) {
        if (aa == 0u || bb == 0u) return 0xFFC00000u; // inf * 0
        return (sign << 31) | 0x7F800000u;
    }
    if (aa == 0u || bb == 0u) return sign << 31;
    uint ma, mb; int ea, eb;
    unpack_finite(aa, ma, ea);
    unpack_finite(bb, mb, eb);
    return round_pack(sign, uint64_t(ma) * uint64_t(mb), ea + eb);
}

// a * b through the float unit where Vulkan guarantees the IEEE result: OpFMul is
// correctly rounded for 32-bit floats, and `precise` forbids contraction; denormal
// flushing only touches subnormal operands or results, so the hardware product is used
// only when both operands are normal and finite and the result's exponent field is in
// [2, 254] (normal, away from the underflow and overflow edges). Everything else takes
// the integer path, so the bits always equal f32_mul_rn.
uint f32_mul_fast(uint a, uint b)
{
    const uint ea = (a >> 23) & 0xFFu, eb = (b >> 23) & 0xFFu;
    if (ea - 1u < 254u && eb - 1u < 254u) {
        precise float r = uintBitsToFloat(a) * uintBitsToFloat(b);
        const uint u = floatBitsToUint(r);
        if (((u >> 23) & 0xFFu) - 2u < 253u) return u;
    }
    return f32_mul_rn(a, b);
}

// a / b, one rounding.
uint f32_div_rn(uint a, uint b)
{
    if (isnan_bits(a)) return a | 0x400000u;
    if (isnan_bits(b)) return b | 0x400000u;
    const uint sign = (a ^ b) >> 31;
    const uint aa = a & 0x7FFFFFFFu, bb = b & 0x7FFFFFFFu;
    if (aa == 0x7F800000u) return bb == 0x7F800000u ? 0xFFC00000u : ((sign << 31) | 0x7F800000u);
    if (bb == 0x7F800000u) return sign << 31;
    if (bb == 0u) return aa == 0u ? 0xFFC00000u : ((sign << 31) | 0x7F800000u);
    if (aa == 0u) return sign << 31;
    uint ma, mb; int ea, eb;
    unpack_finite(aa, ma, ea);
    unpack_finite(bb, mb, eb);
    // normalise both to 24 significant bits so the quotient below has 25..26 bits
    const int sa = 23 - findMSB(ma), sb = 23 - findMSB(mb);
    ma <<= uint(sa); ea -= sa;
    mb <<= uint(sb); eb -= sb;
    // q = floor(ma * 2^25 / mb), in (2^24, 2^26): a float estimate (Vulkan's division is
    // within 2.5 ulp, so |q - estimate| <= 21), then fixed by the remainder, whose low word
    // is exact while |r| < 2^31 (here < 64 mb < 2^30). One 64-bit product checks the result;
    // a driver outside the bound takes the 64-bit division, which GPUs emulate slowly.
    const uint64_t num = uint64_t(ma) << 25;
    uint q = uint(clamp(float(ma) * 33554432.0 / float(mb), 16777216.0, 67108864.0));
    int r = int((ma << 25) - q * mb);
    for (int i = 0; i < 64 && r < 0; ++i) { q--; r += int(mb); }
    for (int i = 0; i < 64 && r >= int(mb); ++i) { q++; r -= int(mb); }
    const uint64_t qm = uint64_t(q) * uint64_t(mb);
    if (r < 0 || r >= int(mb) || qm > num || num - qm != uint64_t(r)) {
        q = uint(num / uint64_t(mb));
        r = int(num - uint64_t(q) * uint64_t(mb));
    }
    // q has >= 25 bits: the sticky bit sits below at least one exact guard bit, which keeps
    // round_pack's rounding exact (no rounding boundary lies strictly between 2q and 2q + 2)
    return round_pack(sign, (uint64_t(q) << 1) | uint64_t(r != 0 ? 1u : 0u), ea - eb - 26);
}

// ---- qgmm_scale_rules.h

// qgmm_amax_combine on magnitude bits: for non-NaN magnitudes the integer order is the
// float order, and every NaN magnitude is above +inf, so max() propagates NaN and is
// independent of the reduction order (the payload of a NaN scale is the largest one in
// the slice; the CPU keeps the first — they differ only when one slice holds NaNs with
// different payloads).
uint amax_combine(uint a, uint b) { return max(a, b); }

// Per-format constants computed on the host by the same C code as the reference
// (passed in the parameter block): fp8max bits, f32(fp8max / 1e-12) in float64,
// the smallest f32 >= 1e-12, f32(1/fp8max).
struct FmtConsts { uint maxv; uint clamp_scale; uint eps_min; uint inv_max; };

// qgmm_rowwise_scale: f32(fp8max / max(amax, 1e-12)) with the division in float64.
// For amax >= 1e-12 both operands are f32 and the quotient of two f32 whose numerator has
// at most 4 significant bits cannot fall within 2^-53 relative of an f32 rounding boundary
// without being on it (docs/backends-vulkan.md gives the proof), so the float64 division
// then f32 rounding equals the correctly rounded f32 division done here with integers.
uint rowwise_scale(uint amax, FmtConsts c)
{
    if (isnan_bits(amax)) return amax;
    if (amax < c.eps_min) return c.clamp_scale; // a < 1e-12: a = 1e-12 (not an f32)
    return f32_div_rn(c.maxv, amax);
}

// qgmm_scale_pow2_floor
uint scale_pow2_floor(uint u)
{
    if (isnan_bits(u)) return u;
    if (((u >> 23) & 0xFFu) == 0u) return u & 0x80000000u;
    return u & 0xFF800000u;
}

// qgmm_scale_reciprocal: 1/s correctly rounded
uint scale_reciprocal(uint s) { return f32_div_rn(0x3F800000u, s); }

// qgmm_quantize_value
uint quantize_value(uint x, uint scale, int fmt) { return f32_to_fp8(f32_mul_fast(x, scale), fmt); }

// qgmm_mx_emax
int mx_emax(int fmt)
{
    if (fmt == FMT_E5M2) return 15;
    if (fmt == FMT_E4M3FNUZ) return 7;
    return 8;
}

// qgmm_mx_scale_floor
uint mx_scale_floor(uint u, int fmt)
{
    if (((u >> 23) & 0xFFu) == 0xFFu) return 255u;
    int e = int((u >> 23) & 0xFFu) - 127;
    int v = e - mx_emax(fmt);
    if (v < -127) v = -127;
    if (v > 128) v = 128;
    return uint(v + 127);
}

// qgmm_mx_scale_rceil, the part after d = amax * f32(1/fp8max): the biased exponent of d
// rounded up to a power of two
uint mx_rceil_of(uint d)
{
    const uint u = d & 0x7FFFFFFFu;
    const uint ex = u >> 23;
    const uint man = u & 0x7FFFFFu;
    if (ex == 0xFFu) return 255u;
    if (u == 0u) return 0u;
    uint b = ex;
    if ((ex != 0u && man != 0u) || (ex == 0u && man > 0x400000u)) b++;
    if (b > 255u) b = 255u;
    return b;
}

// qgmm_mx_scale_rceil (inv_max = f32(1/fp8max) from the host)
uint mx_scale_rceil(uint amax, FmtConsts c) { return mx_rceil_of(f32_mul_rn(amax, c.inv_max)); }

// qgmm_mx_quantize_value
uint mx_quantize_value(uint x, uint b, int fmt) { return f32_to_fp8(f32_mul_fast(x, e8m0_reciprocal(b)), fmt); }

// ---- Fast exact quantize (no C twin: it is proved equal to
// f32_to_fp8(f32_mul_rn(x, s), fmt), and the conformance suite checks it on every driver).
// Preconditions, checked once per segment by quantize_fast_ok: the segment has no inf/NaN
// (its amax is finite) and s is a positive normal below 2^100. Then:
// - |x| * s through the float unit (`precise`: no contraction): Vulkan makes OpFMul correctly
//   rounded. A subnormal x or product may be flushed to zero, and an implementation need not
//   produce NaN, but neither matters here: x is finite, s is normal, and every product whose
//   exact value is below 2^-124 — all that flushing can touch, with s < 2^100 also the product
//   of a flushed subnormal x — encodes to code 0 in every fp8 format (their smallest half
//   subnormal is 2^-17), which is what the float path below gives for 0, a subnormal or the
//   smallest normal binade. A product that overflows is +inf on both sides.
// - the sign of x*s is the sign of x (s > 0), so it is taken from x's bits.
// - fp8 normal range: the rebias-and-round-half-even shift of f32_to_fp8 in 5 integer ops
//   (adding half-1 plus the kept lsb, then shifting, is round-half-even), clamped to maxcode.
// - fp8 subnormal range (|y| < 2^emin): |y| + 2^(emin-mbits+23) in the float unit rounds |y|
//   to a multiple of 2^(emin-mbits), the fp8 subnormal unit, half to even (correctly rounded
//   OpFAdd, both operands normal or the tiny case above); the integer difference of the bit
//   patterns is the code, 2^mbits when it rounds up into the smallest normal, as on the CPU.
bool quantize_fast_ok(uint amax, uint s) { return amax < 0x7F800000u && s - 0x00800000u < 0x71000000u; }

uint fp8_encode_fast(uint a, uint sgn, int fmt) // a = |y| bits (>= 0, may be +inf), sgn 0 or 0x80
{
    int mbits, bias; uint maxcode; bool has_inf, fnuz;
    fp8_format_of(fmt, mbits, bias, maxcode, has_inf, fnuz);
    const uint sh = uint(23 - mbits);
    const uint norm = min((a - (uint(127 - bias) << 23) + ((1u << (sh - 1u)) - 1u) + ((a >> sh) & 1u)) >> sh, maxcode);
    const uint magic = uint(128 - bias - mbits + 23) << 23; // 2^(emin - mbits + 23)
    precise float t = uintBitsToFloat(a) + uintBitsToFloat(magic);
    uint code = a < (uint(128 - bias) << 23) ? floatBitsToUint(t) - magic : norm;
    if (has_inf && a == 0x7F800000u) code = 0x7Cu;
    if (fnuz && code == 0u) return 0u;
    return sgn | code;
}

// x: f32 bits of a finite value; s: the multiplier (quantize_fast_ok held for the segment).
uint quantize_fast(uint x, uint s, int fmt)
{
    precise float p = abs(uintBitsToFloat(x)) * uintBitsToFloat(s);
    return fp8_encode_fast(floatBitsToUint(p), (x >> 24) & 0x80u, fmt);
}

// The magnitude code of quantize_fast, for callers that apply the signs of four bytes at
// once: a = |x| * s as a float (quantize_fast's preconditions). The clamp to fp8max is done
// on the float (the integer rounding below then never exceeds maxcode: every value up to
// fp8max rounds to at most maxcode) and the range test is a float compare, so two of the
// integer operations move to the float pipe; +inf (e5m2's 0x7C) is still told apart.
// Not for fnuz formats, where a zero code must not take a sign.
uint fp8_max_bits(int fmt) { return fmt == FMT_E5M2 ? 0x47600000u : fmt == FMT_E4M3FNUZ ? 0x43700000u : 0x43E00000u; }

uint fp8_mag_fast(float a, int fmt)
{
    int mbits, bias; uint maxcode; bool has_inf, fnuz;
    fp8_format_of(fmt, mbits, bias, maxcode, has_inf, fnuz);
    const uint sh = uint(23 - mbits);
    const uint magic = uint(128 - bias - mbits + 23) << 23;
    const uint c = floatBitsToUint(min(a, uintBitsToFloat(fp8_max_bits(fmt))));
    precise float t = a + uintBitsToFloat(magic);
    uint code = a < uintBitsToFloat(uint(128 - bias) << 23) ? floatBitsToUint(t) - magic
                                                           : (c - (uint(127 - bias) << 23) + ((1u << (sh - 1u)) - 1u) + ((c >> sh) & 1u)) >> sh;
    if (has_inf && floatBitsToUint(a) == 0x7F800000u) code = 0x7Cu;
    return code;
}

// The magnitude code of quantize_fast with fewer integer operations (the casts are bound by
// the integer pipe on the H100): a = |x| * s as a float (quantize_fast's preconditions). The
// value is clamped to fp8max, and the adder rounds it at its binade's fp8 unit: M is 2 to the
// power (binade exponent + 23 - mbits), the binade being that of max(a, smallest normal), so
// a + M keeps exactly the fp8 mantissa bits of a rounded half to even, in the normal and the
// subnormal range alike; bits(a + M) - bits(M) is that rounded value in units, and the binade's
// exponent gives the code's upper bits. Every product here is exact (powers of two) and the
// one addition is correctly rounded (OpFAdd); tests/test_fp8_binade.c checks this
// function, written again in C, against the reference on every f32 from +0 to +inf.
uint fp8_mag_binade(float a, int fmt)
{
    int mbits, bias; uint maxcode; bool has_inf, fnuz;
    fp8_format_of(fmt, mbits, bias, maxcode, has_inf, fnuz);
    precise float pm = min(a, uintBitsToFloat(fp8_max_bits(fmt)));
    precise float pe = max(pm, uintBitsToFloat(uint(128 - bias) << 23));
    const uint eb = floatBitsToUint(pe) & 0x7F800000u;
    precise float M = uintBitsToFloat(eb) * uintBitsToFloat(uint(127 + 23 - mbits) << 23);
    precise float t = pm + M;
    uint code = (floatBitsToUint(t) - floatBitsToUint(M)) +
                ((floatBitsToUint(M) >> uint(23 - mbits)) - (uint(128 - bias + 23 - mbits) << uint(mbits)));
    if (has_inf && floatBitsToUint(a) == 0x7F800000u) code = 0x7Cu;
    return code;
}

// qgmm_mx_scale_rceil with the product through f32_mul_fast, which equals f32_mul_rn
// bit for bit (see there): the same scale byte, without the 64-bit integer multiply.
uint mx_scale_rceil_fast(uint amax, FmtConsts c) { return mx_rceil_of(f32_mul_fast(amax, c.inv_max)); }
