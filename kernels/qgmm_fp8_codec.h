/*
 * qgmm_fp8_codec.h — the scalar codecs of ops-spec §0: f32 <-> fp8 (e4m3fn, e4m3fnuz,
 * e5m2), f32 <-> bf16, E8M0. Every backend calls these (GLSL mirrors them line by line
 * in backends/vulkan/glsl/codec.glsl); the conformance suite proves the bytes agree.
 *
 * Integer-only arithmetic on purpose: no FPU rounding mode, FTZ or fast-math setting
 * can change a result.
 */
#ifndef QGMM_FP8_CODEC_H
#define QGMM_FP8_CODEC_H

#include "qgmm_hd.h"

/* Format ids match the qgmm_dtype values of api/qgmm.h. */
#define QGMM_FMT_E4M3FN 4
#define QGMM_FMT_E4M3FNUZ 5
#define QGMM_FMT_E5M2 6

typedef struct qgmm_fp8_format {
    int mbits;        /* mantissa bits */
    int bias;         /* exponent bias */
    uint32_t maxcode; /* magnitude code of the largest finite value */
    float maxval;     /* that value */
    int has_inf;      /* e5m2 */
    int fnuz;         /* single NaN 0x80, no -0 */
} qgmm_fp8_format;

QGMM_HD qgmm_fp8_format qgmm_fp8_format_of(int fmt)
{
    qgmm_fp8_format f;
    if (fmt == QGMM_FMT_E5M2) {
        f.mbits = 2; f.bias = 15; f.maxcode = 0x7B; f.maxval = 57344.0f; f.has_inf = 1; f.fnuz = 0;
    } else if (fmt == QGMM_FMT_E4M3FNUZ) {
        f.mbits = 3; f.bias = 8; f.maxcode = 0x7F; f.maxval = 240.0f; f.has_inf = 0; f.fnuz = 1;
    } else {
        f.mbits = 3; f.bias = 7; f.maxcode = 0x7E; f.maxval = 448.0f; f.has_inf = 0; f.fnuz = 0;
    }
    return f;
}

QGMM_HD float qgmm_fp8_max(int fmt) { return qgmm_fp8_format_of(fmt).maxval; }

/* Right shift with round-to-nearest-even of the dropped bits (shift >= 1). The round-up
 * is arithmetic, not a branch: on random data a branch here mispredicts half the time. */
QGMM_HD uint32_t qgmm_rshift_rne(uint32_t m, int shift)
{
    if (shift >= 32) return 0;
    const uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    return q + (uint32_t)((rem > half) | ((rem == half) & (q & 1u)));
}

/* f32 -> fp8: round to nearest even, finite overflow saturates to +-max, NaN -> the
 * format's NaN, +-inf -> +-max (e4m3*) or +-inf (e5m2), -0 -> 0x80 (0x00 for fnuz),
 * gradual underflow into fp8 subnormals. */
QGMM_HD uint8_t qgmm_f32_to_fp8(float x, int fmt)
{
    const qgmm_fp8_format f = qgmm_fp8_format_of(fmt);
    const uint32_t bits = qgmm_f32_bits(x);
    const uint32_t sign = (bits >> 31) & 1u;
    const uint32_t exp32 = (bits >> 23) & 0xFFu;
    const uint32_t man32 = bits & 0x7FFFFFu;

    if (exp32 == 0xFFu && man32 != 0) { /* NaN */
        if (f.fnuz) return 0x80;
        return (uint8_t)((sign << 7) | 0x7Fu);
    }
    uint32_t code;
    if (exp32 == 0xFFu) { /* inf */
        code = f.has_inf ? 0x7Cu : f.maxcode;
    } else if (exp32 == 0) {
        code = 0; /* f32 zero or subnormal: far below half the smallest fp8 subnormal */
    } else {
        const int e = (int)exp32 - 127;
        const int emin = 1 - f.bias; /* exponent of the smallest fp8 normal */
        if (e > 15 + 1) {
            code = 0xFFu; /* certainly beyond max: saturate below */
        } else if (e >= emin) {
            /* rounding may carry into the exponent field: the integer add does it */
            code = qgmm_rshift_rne((((uint32_t)(e + f.bias)) << 23) | man32, 23 - f.mbits);
        } else {
            /* subnormal result: count units of 2^(emin - mbits) */
            const int shift = (emin - f.mbits) - e + 23;
            code = qgmm_rshift_rne((1u << 23) | man32, shift);
        }
        if (code > f.maxcode) code = f.maxcode;
    }
    if (code == 0 && f.fnuz) return 0x00; /* fnuz has no -0 */
    return (uint8_t)((sign << 7) | code);
}

/* fp8 -> f32, exact. */
QGMM_HD float qgmm_fp8_to_f32(uint8_t v, int fmt)
{
    const qgmm_fp8_format f = qgmm_fp8_format_of(fmt);
    const uint32_t sign = ((uint32_t)v >> 7) & 1u;
    const uint32_t mag = (uint32_t)v & 0x7Fu;
    if (f.fnuz) {
        if (v == 0x80) return qgmm_bits_f32(0x7FC00000u);
    } else if (f.has_inf) {
        if (mag >= 0x7Du) return qgmm_bits_f32((sign << 31) | 0x7FC00000u);
        if (mag == 0x7Cu) return qgmm_bits_f32((sign << 31) | 0x7F800000u);
    } else if (mag == 0x7Fu) {
        return qgmm_bits_f32((sign << 31) | 0x7FC00000u);
    }
    const uint32_t e = mag >> f.mbits;
    const uint32_t m = mag & ((1u << f.mbits) - 1u);
    uint32_t out;
    if (e != 0) {
        out = ((e - (uint32_t)f.bias + 127u) << 23) | (m << (23 - f.mbits));
    } else if (m == 0) {
        out = 0;
    } else {
        /* subnormal: normalise m * 2^(1 - bias - mbits) */
        int ex = 1 - f.bias - f.mbits;
        uint32_t mm = m;
        int top = 0;
        while ((mm >> (top + 1)) != 0) top++;
        ex += top;
        mm = (mm << (23 - top)) & 0x7FFFFFu;
        out = ((uint32_t)(ex + 127) << 23) | mm;
    }
    return qgmm_bits_f32((sign << 31) | out);
}

/* f32 -> bf16 round to nearest even; NaN stays NaN (quiet bit set, sign kept). */
QGMM_HD uint16_t qgmm_f32_to_bf16(float x)
{
    uint32_t u = qgmm_f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

QGMM_HD float qgmm_bf16_to_f32(uint16_t h) { return qgmm_bits_f32((uint32_t)h << 16); }

/* 2^k as f32 for k in [-149, 127] (subnormal below -126), built from bits. */
QGMM_HD float qgmm_pow2_f32(int k)
{
    if (k >= -126) return qgmm_bits_f32((uint32_t)(k + 127) << 23);
    return qgmm_bits_f32(1u << (k + 149));
}

/* E8M0: byte b means 2^(b-127); 255 is NaN. */
QGMM_HD float qgmm_e8m0_to_f32(uint8_t b)
{
    if (b == 255) return qgmm_bits_f32(0x7FC00000u);
    return qgmm_pow2_f32((int)b - 127);
}

/* The f32 2^(127-b) for b <= 254, NaN for 255 (torchao _e8m0_scale_to_reciprocal_fp32). */
QGMM_HD float qgmm_e8m0_reciprocal(uint8_t b)
{
    if (b == 255) return qgmm_bits_f32(0x7FC00000u);
    return qgmm_pow2_f32(127 - (int)b);
}

#endif /* QGMM_FP8_CODEC_H */
