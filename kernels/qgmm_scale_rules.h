/*
 * qgmm_scale_rules.h — how every scale of ops-spec §1-§3 is computed from an amax.
 * One function per rule; CPU, CUDA and HIP call these, GLSL mirrors them.
 */
#ifndef QGMM_SCALE_RULES_H
#define QGMM_SCALE_RULES_H

#include "qgmm_fp8_codec.h"

#define QGMM_AMAX_EPS 1e-12

/* The NaN that an f32 multiply or divide returns. IEEE 754 leaves its sign and payload
 * open and hardware differs (x86 SSE: the first NaN operand, quieted, else the negative
 * default NaN 0xFFC00000; NVIDIA GPUs: always 0x7FFFFFFF; Arm: positive default NaN), and
 * compilers may swap the operands of a commutative multiply. NaN bits reach the outputs
 * (an fp8 NaN keeps the sign, f32/bf16 outputs keep the payload), so every backend applies
 * this one rule explicitly — the x86 one, on which the reference was first run. */
QGMM_HD float qgmm_nan_result(float a, float b)
{
    if (qgmm_isnan_f32(a)) return qgmm_bits_f32(qgmm_f32_bits(a) | 0x00400000u);
    if (qgmm_isnan_f32(b)) return qgmm_bits_f32(qgmm_f32_bits(b) | 0x00400000u);
    return qgmm_bits_f32(0xFFC00000u); /* inf * 0, 0 / 0, inf / inf */
}

/* a * b and a / b, each one IEEE f32 operation, with the NaN rule above. */
QGMM_HD float qgmm_mul_f32(float a, float b)
{
    const float p = a * b;
    return qgmm_isnan_f32(p) ? qgmm_nan_result(a, b) : p;
}
QGMM_HD float qgmm_div_f32(float a, float b)
{
    const float p = a / b;
    return qgmm_isnan_f32(p) ? qgmm_nan_result(a, b) : p;
}

/* NaN-propagating max of two magnitudes. Exact, so any reduction order gives the same
 * bits on every backend (fmaxf would drop NaN). */
QGMM_HD float qgmm_amax_combine(float a, float b)
{
    return (a > b || qgmm_isnan_f32(a)) ? a : b;
}

/* §1: scale = f32(fp8max / max(amax, 1e-12)) with the division in float64. NaN amax
 * gives NaN (torch.clamp keeps NaN; C's fmax would not, hence the explicit test). */
QGMM_HD float qgmm_rowwise_scale(float amax, int fmt)
{
    if (qgmm_isnan_f32(amax)) return amax;
    double a = (double)amax;
    if (a < QGMM_AMAX_EPS) a = QGMM_AMAX_EPS;
    return (float)((double)qgmm_fp8_max(fmt) / a);
}

/* Option power-of-2: 2^floor(log2(scale)), i.e. the mantissa cleared. NaN stays NaN,
 * 0 stays 0 and inf stays inf (torch.exp2(torch.floor(torch.log2(s)))). */
QGMM_HD float qgmm_scale_pow2_floor(float s)
{
    if (qgmm_isnan_f32(s)) return s;
    uint32_t u = qgmm_f32_bits(s);
    if (((u >> 23) & 0xFFu) == 0) return qgmm_bits_f32(u & 0x80000000u);
    return qgmm_bits_f32(u & 0xFF800000u);
}

/* The stored reciprocal: 1/s in f32, correctly rounded (IEEE division, no fast-math). */
QGMM_HD float qgmm_scale_reciprocal(float s) { return qgmm_div_f32(1.0f, s); }

/* q = to_fp8(f32(x) * scale): the product in f32, then the saturating cast. */
QGMM_HD uint8_t qgmm_quantize_value(float x, float scale, int fmt)
{
    return qgmm_f32_to_fp8(qgmm_mul_f32(x, scale), fmt);
}

/* §2 MX: the largest power of two exponent <= fp8max. */
QGMM_HD int qgmm_mx_emax(int fmt)
{
    if (fmt == QGMM_FMT_E5M2) return 15;
    if (fmt == QGMM_FMT_E4M3FNUZ) return 7;
    return 8;
}

/* §2 FLOOR: b = clamp(unbiased_exp(amax) - emax, -127, 128) + 127; NaN/inf amax -> 255. */
QGMM_HD uint8_t qgmm_mx_scale_floor(float amax, int fmt)
{
    const uint32_t u = qgmm_f32_bits(amax);
    if (((u >> 23) & 0xFFu) == 0xFFu) return 255;
    int e = (int)((u >> 23) & 0xFFu) - 127;
    int v = e - qgmm_mx_emax(fmt);
    if (v < -127) v = -127;
    if (v > 128) v = 128;
    return (uint8_t)(v + 127);
}

/* §2 RCEIL: d = amax * f32(1/fp8max); b = biased exponent of d rounded up to a power of
 * two (cvt.rp.satfinite.ue8m0x2.f32). */
QGMM_HD uint8_t qgmm_mx_scale_rceil(float amax, int fmt)
{
    const float inv_max = (fmt == QGMM_FMT_E5M2) ? (1.0f / 57344.0f)
                        : (fmt == QGMM_FMT_E4M3FNUZ) ? (1.0f / 240.0f) : (1.0f / 448.0f);
    const float d = amax * inv_max;
    const uint32_t u = qgmm_f32_bits(d) & 0x7FFFFFFFu;
    const uint32_t ex = u >> 23;
    const uint32_t man = u & 0x7FFFFFu;
    if (ex == 0xFFu) return 255;
    if (u == 0) return 0;
    uint32_t b = ex;
    if ((ex != 0 && man != 0) || (ex == 0 && man > 0x400000u)) b++;
    if (b > 255) b = 255;
    return (uint8_t)b;
}

QGMM_HD uint8_t qgmm_mx_scale(float amax, int fmt, int rceil)
{
    return rceil ? qgmm_mx_scale_rceil(amax, fmt) : qgmm_mx_scale_floor(amax, fmt);
}

/* MX data: q = to_fp8(f32(x) * e8m0_reciprocal(b)). */
QGMM_HD uint8_t qgmm_mx_quantize_value(float x, uint8_t b, int fmt)
{
    return qgmm_f32_to_fp8(qgmm_mul_f32(x, qgmm_e8m0_reciprocal(b)), fmt);
}

/* §3 blockwise: the same scale as §1 (the clamp makes an all-zero block give q = 0 and a
 * tiny reciprocal, never NaN); the stored value is the f32 reciprocal. */
QGMM_HD float qgmm_blockwise_scale(float amax, int fmt) { return qgmm_rowwise_scale(amax, fmt); }

/* Dequantize one value: f32(q) * s (reciprocal / E8M0 scales) or f32(q) / s (multiplier
 * scales), with the NaN rule. */
QGMM_HD float qgmm_dequant_mul(float q, float s) { return qgmm_mul_f32(q, s); }
QGMM_HD float qgmm_dequant_div(float q, float s) { return qgmm_div_f32(q, s); }

#endif /* QGMM_SCALE_RULES_H */
