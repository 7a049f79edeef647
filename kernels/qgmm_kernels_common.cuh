/*
 * qgmm_kernels_common.cuh — device helpers shared by the single-source cast and layout
 * kernels (CUDA and HIP): tensor views, element loads, the fast 8-wide fp8 conversion,
 * block-wide NaN-propagating amax, and the in-kernel check of group offsets.
 */
#ifndef QGMM_KERNELS_COMMON_CUH
#define QGMM_KERNELS_COMMON_CUH

#include "qgmm_dialect.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#elif defined(__HIP__) && __has_include(<hip/hip_fp16.h>)
#include <hip/hip_fp16.h>
#endif

/* Status bit (mirrors QGMM_DEVICE_STATUS_BAD_OFFSETS of api/qgmm_backend.h). */
#define QGMM_K_STATUS_BAD_OFFSETS 0x1u

/* Input float dtypes (values of qgmm_dtype). */
#define QGMM_K_F32 1
#define QGMM_K_BF16 2
#define QGMM_K_F16 3

/* A tensor of rank <= 3 normalised to (E, R, C): rank 2 has E = 1 and s0 = 0. */
typedef struct qgmm_kview {
    void *ptr;
    int64_t s0, s1, s2;  /* strides in elements */
} qgmm_kview;

QGMM_DEV int64_t qgmm_kidx(const qgmm_kview &v, int64_t e, int64_t r, int64_t c)
{
    return e * v.s0 + r * v.s1 + c * v.s2;
}

/* Element i of a float tensor as f32 (exact for bf16/f16). */
QGMM_DEV float qgmm_kload(const void *p, int dtype, int64_t i)
{
    if (dtype == QGMM_K_BF16) return qgmm_bf16_to_f32(QGMM_LDG((const uint16_t *)p + i));
#if defined(__CUDACC__) || defined(__HIP__)
    if (dtype == QGMM_K_F16) return __half2float(((const __half *)p)[i]);
#endif
    return QGMM_LDG((const float *)p + i);
}

/* Writes f32 as the output dtype (f32, or bf16 round-to-nearest-even). */
QGMM_DEV void qgmm_kstore(void *p, int dtype, int64_t i, float v)
{
    if (dtype == QGMM_K_BF16) ((uint16_t *)p)[i] = qgmm_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

/* ---- fast f32 -> fp8 of 8 values.
 * Bit-identical to qgmm_f32_to_fp8 (the header function) by construction where it is
 * used, and proved over all 2^32 f32 inputs by bench/cuda/fp8_cvt_exhaustive.cu: the
 * hardware conversion (cvt.rn.satfinite.{e4m3,e5m2}x2.f32, sm_89+) rounds to nearest
 * even and saturates finite overflow exactly as the spec does; it differs only on NaN
 * (sign), +-inf (e5m2 keeps inf) and f32 subnormal inputs, so any of those in the 8
 * values sends all 8 through qgmm_f32_to_fp8. e4m3fnuz (no hardware format) and non-
 * NVIDIA targets always take the header function. */
QGMM_DEV int qgmm_k_hw_ok(float v)
{
    const uint32_t u = qgmm_f32_bits(v) & 0x7FFFFFFFu;
    return u == 0 || ((u >> 23) != 0 && (u >> 23) != 0xFFu);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
/* The hardware pair conversion (FMT e4m3fn or e5m2): fp8 of p0 in bits 0-7, of p1 in bits
 * 8-15. Callers take it only where it equals qgmm_f32_to_fp8 (above). */
template <int FMT>
QGMM_DEV unsigned short qgmm_k_cvt_pair(float p0, float p1)
{
    unsigned short b;
    if (FMT == QGMM_FMT_E4M3FN) asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(b) : "f"(p1), "f"(p0));
    else asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(b) : "f"(p1), "f"(p0));
    return b;
}
#endif

template <int FMT>
QGMM_DEV void qgmm_k_to_fp8x8(const float p[8], uint8_t out[8])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (FMT == QGMM_FMT_E4M3FN || FMT == QGMM_FMT_E5M2) {
        int ok = 1;
#pragma unroll
        for (int k = 0; k < 8; ++k) ok &= qgmm_k_hw_ok(p[k]);
        if (ok) {
#pragma unroll
            for (int k = 0; k < 8; k += 2) {
                const unsigned short h = qgmm_k_cvt_pair<FMT>(p[k], p[k + 1]);
                out[k] = (uint8_t)(h & 0xFFu);
                out[k + 1] = (uint8_t)(h >> 8);
            }
            return;
        }
    }
#endif
#pragma unroll
    for (int k = 0; k < 8; ++k) out[k] = qgmm_f32_to_fp8(p[k], FMT);
}

/* q[k] = qgmm_quantize_value(x[k], scale[k]) for 8 values: the plain f32 products, and
 * when none is NaN (then qgmm_mul_f32 is that product) the fast conversion; otherwise
 * all 8 through the header function with its NaN rule. */
template <int FMT>
QGMM_DEV void qgmm_k_quantize8v(const float x[8], const float scale[8], uint8_t out[8])
{
    float p[8];
    int nan = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        p[k] = x[k] * scale[k];
        nan |= qgmm_isnan_f32(p[k]);
    }
    if (nan) {
#pragma unroll
        for (int k = 0; k < 8; ++k) out[k] = qgmm_quantize_value(x[k], scale[k], FMT);
        return;
    }
    qgmm_k_to_fp8x8<FMT>(p, out);
}

template <int FMT>
QGMM_DEV void qgmm_k_quantize8(const float x[8], float scale, uint8_t out[8])
{
    float s[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) s[k] = scale;
    qgmm_k_quantize8v<FMT>(x, s, out);
}

/* Runs `body` with FMT bound to the compile-time format of the runtime id `fmt`. */
#define QGMM_FMT_DISPATCH(fmt, ...)                                        \
    do {                                                                   \
        if ((fmt) == QGMM_FMT_E5M2) { constexpr int FMT = QGMM_FMT_E5M2; __VA_ARGS__; }              \
        else if ((fmt) == QGMM_FMT_E4M3FNUZ) { constexpr int FMT = QGMM_FMT_E4M3FNUZ; __VA_ARGS__; } \
        else { constexpr int FMT = QGMM_FMT_E4M3FN; __VA_ARGS__; }        \
    } while (0)

/* ---- block-wide amax: every thread passes its partial, every thread gets the result.
 * Warp partials through shuffles (xor masks < QGMM_WARP), then one per warp in shared
 * memory: correct for 32- and 64-wide warps. All threads of the block must call it. */
QGMM_DEV float qgmm_warp_amax(float v)
{
#pragma unroll
    for (int m = QGMM_WARP / 2; m >= 1; m >>= 1) v = qgmm_amax_combine(v, QGMM_SHFL_XOR_F32(v, m));
    return v;
}
QGMM_DEV float qgmm_block_amax(float v, float *smem_warps /* >= QGMM_MAX_WARPS */)
{
    v = qgmm_warp_amax(v);
    const int lane = QGMM_TID % QGMM_WARP, warp = QGMM_TID / QGMM_WARP;
    const int nwarps = (QGMM_NTHREADS + QGMM_WARP - 1) / QGMM_WARP;
    QGMM_SYNC();
    if (lane == 0) smem_warps[warp] = v;
    QGMM_SYNC();
    float r = smem_warps[0];
    for (int w = 1; w < nwarps; ++w) r = qgmm_amax_combine(r, smem_warps[w]);
    return r;
}

/* ---- group offsets, checked by EVERY block that uses them (so a bad list makes every
 * block write nothing, with no inter-block communication). Valid: 0 <= offs[0] <= ... <=
 * offs[G-1] <= extent, and each group size a multiple of `multiple` (> 1 only). Block-
 * uniform result; raises the status bit (block 0 only, once) when bad. */
QGMM_DEV int qgmm_block_offsets_ok(const int32_t *offs, int64_t offs_stride, int64_t groups,
                                   int64_t extent, int64_t multiple, uint32_t *status,
                                   int raise)
{
    int bad = 0;
    for (int64_t g = QGMM_TID; g < groups; g += QGMM_NTHREADS) {
        const int64_t o = offs[g * offs_stride];
        const int64_t p = g == 0 ? 0 : (int64_t)offs[(g - 1) * offs_stride];
        if (o < p || o > extent || p < 0) bad = 1;
        if (multiple > 1 && ((o - p) % multiple) != 0) bad = 1;
    }
    bad = QGMM_SYNC_OR(bad);
    if (bad && raise && QGMM_TID == 0) QGMM_RAISE_STATUS(status, QGMM_K_STATUS_BAD_OFFSETS);
    return !bad;
}

/* Group owning index i given cumulative ends (qgmm_group_of on any pointer). */
QGMM_DEV int64_t qgmm_k_group_of(const int32_t *ends, int64_t stride, int64_t groups, int64_t i)
{
    int64_t lo = 0, hi = groups;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if ((int64_t)ends[mid * stride] <= i) lo = mid + 1; else hi = mid;
    }
    return lo < groups ? lo : -1;
}

#endif /* QGMM_KERNELS_COMMON_CUH */

/* Host side: a qgmm_tensor as an (E, R, C) view (only where api/qgmm.h is included; once,
 * whichever kernel headers a file includes). */
#if defined(QGMM_H) && !defined(QGMM_KERNELS_COMMON_HOST)
#define QGMM_KERNELS_COMMON_HOST
static inline qgmm_kview qgmm_kview_of(const qgmm_tensor *t, void *data)
{
    qgmm_kview v;
    v.ptr = data;
    v.s0 = v.s1 = 0;
    if (t->rank == 3) { v.s0 = t->strides[0]; v.s1 = t->strides[1]; v.s2 = t->strides[2]; }
    else if (t->rank == 2) { v.s1 = t->strides[0]; v.s2 = t->strides[1]; }
    else { v.s2 = t->rank >= 1 ? t->strides[0] : 1; }
    return v;
}
static inline int qgmm_kdtype_of(qgmm_dtype d)
{
    return d == QGMM_BF16 ? QGMM_K_BF16 : d == QGMM_F16 ? QGMM_K_F16 : QGMM_K_F32;
}
#endif
