/*
 * qgmm_hd.h — lets one `static inline` function compile unchanged as host C (cc),
 * CUDA (nvcc), HIP (hipcc) and device-only HIP (clang -x hip -nogpulib, no HIP headers).
 * Every numerics rule in kernels/ is written once against these macros.
 */
#ifndef QGMM_HD_H
#define QGMM_HD_H

#include <stdint.h>

#if defined(__CUDACC__)
#define QGMM_HD static inline __host__ __device__
#define QGMM_DEVICE_CODE 1
#elif defined(__HIP__)
#define QGMM_HD static inline __attribute__((host, device))
#define QGMM_DEVICE_CODE 1
#else
#define QGMM_HD static inline
#endif

/* Bit casts without aliasing UB on every compiler we target. */
QGMM_HD uint32_t qgmm_f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof u);
    return u;
#endif
}

QGMM_HD float qgmm_bits_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, sizeof f);
    return f;
#endif
}

QGMM_HD uint64_t qgmm_f64_bits(double d)
{
#if defined(__CUDA_ARCH__)
    return (uint64_t)__double_as_longlong(d);
#else
    uint64_t u;
    __builtin_memcpy(&u, &d, sizeof u);
    return u;
#endif
}

QGMM_HD int qgmm_isnan_f32(float f) { return (qgmm_f32_bits(f) & 0x7FFFFFFFu) > 0x7F800000u; }
QGMM_HD int qgmm_isinf_f32(float f) { return (qgmm_f32_bits(f) & 0x7FFFFFFFu) == 0x7F800000u; }
QGMM_HD int qgmm_isnan_f64(double d)
{
    return (qgmm_f64_bits(d) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
}
QGMM_HD float qgmm_fabs_f32(float f) { return qgmm_bits_f32(qgmm_f32_bits(f) & 0x7FFFFFFFu); }

QGMM_HD int64_t qgmm_ceil_div_i64(int64_t a, int64_t b) { return (a + b - 1) / b; }
QGMM_HD int64_t qgmm_round_up_i64(int64_t a, int64_t b) { return qgmm_ceil_div_i64(a, b) * b; }

#endif /* QGMM_HD_H */
