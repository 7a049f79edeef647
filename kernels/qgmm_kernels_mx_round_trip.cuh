/*
 * qgmm_kernels_mx_round_trip.cuh — the MXFP8 round trip of bf16 x (the mx_round_trip slot,
 * qgmm_backend.h): out = bf16(dequantize(quantize_mxfp8(x))) in x's layout, each 32-element
 * block's scale found as the MX casts find it (qgmm_mx_scale of the block amax) and kept in
 * registers. Two kernels, by where the blocks run (x and out (E, R, C) views with C
 * contiguous):
 *   qgmm_krt_rows  along C: two lanes per block, 16-byte accesses where aligned
 *   qgmm_krt_cols  along R: one thread per 32-row block of W adjacent columns (one 4-byte
 *                  access per row for W = 2), a warp reading 128 contiguous bytes a row;
 *                  with a gather map it pads token groups on the way (the wgrad operands)
 * A column whose products x * 2^(127-b) are all zero or f32 normals (qgmm_kq_bf16_fast)
 * converts with the hardware both ways: fp8 of the product (cvt.rn.satfinite, which equals
 * qgmm_f32_to_fp8 there), the fp8 back to f32 (exact), times 2^(b-127) (exact: 4 significant
 * bits against f32's 24, subnormal results included) and rounded to bf16. Any other column
 * takes the header rules value by value (qgmm_mx_quantize_value, qgmm_fp8_to_f32,
 * qgmm_dequant_mul, qgmm_f32_to_bf16), which are the two ops' own, so the bytes equal
 * quantize_mxfp8 followed by dequantize on every input.
 */
#ifndef QGMM_KERNELS_MX_ROUND_TRIP_CUH
#define QGMM_KERNELS_MX_ROUND_TRIP_CUH

#include "qgmm_kernels_quant.cuh"

typedef struct qgmm_kround_trip {
    qgmm_kview x, out; /* bf16, s2 == 1 */
    int64_t E, R, C;   /* the blocks' dim (C for rows, R for cols) a multiple of 32 */
    int rceil;
    /* cols only, the fused pad (qgmm_kp_gather_plan's map, as qgmm_kquant.gmap): R counts
     * out's padded rows; 32-row block j reads x rows map[2 + 2j] onward, map[3 + 2j] of them
     * (the rest zero); map[0] == 0 (bad offsets): nothing written. NULL: x's rows are out's. */
    const int32_t *gmap;
} qgmm_kround_trip;

/* One block's scale as the round trip applies it: the e8m0 code, its reciprocal (quantize),
 * its value (dequantize) and whether the hardware conversions are exact for the block. */
typedef struct qgmm_krt_scale {
    uint8_t code;
    float mu, s;
    int fast;
} qgmm_krt_scale;

template <int FMT>
QGMM_DEV qgmm_krt_scale qgmm_krt_scale_of(uint32_t hx, uint32_t hn, int rceil)
{
    qgmm_krt_scale k;
    k.code = qgmm_mx_scale(qgmm_bf16_to_f32((uint16_t)hx), FMT, rceil);
    k.mu = qgmm_e8m0_reciprocal(k.code);
    k.s = qgmm_e8m0_to_f32(k.code);
    k.fast = qgmm_kq_bf16_fast<FMT>(hx, hn, k.mu);
    return k;
}

/* One bf16 value by the header rules, with its block's scale k (k.s is the code's value,
 * as dequantize reads it). */
template <int FMT>
QGMM_DEV uint32_t qgmm_krt_value(uint32_t h, const qgmm_krt_scale &k)
{
    const uint8_t q = qgmm_mx_quantize_value(qgmm_bf16_to_f32((uint16_t)h), k.code, FMT);
    return qgmm_f32_to_bf16(qgmm_dequant_mul(qgmm_fp8_to_f32(q, FMT), k.s));
}

/* A bf16 pair (bits 0-15 element 0) round-tripped, element i with scale k[i]. */
template <int FMT>
QGMM_DEV uint32_t qgmm_krt_pair(uint32_t w, const qgmm_krt_scale &k0, const qgmm_krt_scale &k1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if ((FMT == QGMM_FMT_E4M3FN || FMT == QGMM_FMT_E5M2) && k0.fast && k1.fast) {
        const float p0 = __fmul_rn(qgmm_bits_f32(w << 16), k0.mu), p1 = __fmul_rn(qgmm_bits_f32(w & 0xFFFF0000u), k1.mu);
        const unsigned short b = qgmm_k_cvt_pair<FMT>(p0, p1);
        uint32_t h, o;
        float f0, f1;
        if (FMT == QGMM_FMT_E4M3FN) asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"(b));
        else asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h) : "h"(b));
        asm("{.reg .b16 lo, hi; mov.b32 {lo, hi}, %2; cvt.f32.f16 %0, lo; cvt.f32.f16 %1, hi;}"
            : "=f"(f0), "=f"(f1) : "r"(h));
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o) : "f"(__fmul_rn(f1, k1.s)), "f"(__fmul_rn(f0, k0.s)));
        return o;
    }
#endif
    return qgmm_krt_value<FMT>(w & 0xFFFFu, k0) | (qgmm_krt_value<FMT>(w >> 16, k1) << 16);
}

/* Blocks along C: a lane holds half a block (16 elements, two 16-byte accesses where VEC,
 * else 2-byte ones) and two neighbouring lanes combine their statistics, so a warp's
 * access covers 512 contiguous bytes. 2D launch: x = lanes along a line (a multiple of 32:
 * a pair never leaves a warp), y = lines, stepped by gridDim.y * blockDim.y. */
template <int FMT, int VEC>
QGMM_KERNEL void qgmm_krt_rows(qgmm_kround_trip a)
{
    const int tx = QGMM_TID % QGMM_NTHREADS_X, ty = QGMM_TID / QGMM_NTHREADS_X;
    const int ty_n = QGMM_NTHREADS / QGMM_NTHREADS_X;
    const int64_t lc = QGMM_BID_X * QGMM_NTHREADS_X + tx, c = lc * 16;
    const int valid = lc < a.C / 16;
    const int64_t lines = a.E * a.R, step = QGMM_NBLOCKS_Y * ty_n;
    int64_t line = QGMM_BID_Y * ty_n + ty;
    int64_t e = line / a.R, r = line - e * a.R; /* then stepped by (de, dr) */
    const int64_t de = step / a.R, dr = step - de * a.R;
    /* the same trip count for the whole block (a 64-wide wave spans lines) */
    for (int64_t first = QGMM_BID_Y * ty_n; first < lines; first += step, line += step) {
        const int live = valid && line < lines;
        uint32_t w[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        const uint16_t *src = (const uint16_t *)a.x.ptr + qgmm_kidx(a.x, e, r, c);
        uint16_t *dst = (uint16_t *)a.out.ptr + qgmm_kidx(a.out, e, r, c);
        uint32_t mx = 0, mn = 0xFFFFFFFFu;
        if (live) {
            if (VEC) {
#pragma unroll
                for (int k = 0; k < 2; ++k) {
                    const uint4 u = QGMM_LDG((const uint4 *)src + k);
                    w[4 * k] = u.x; w[4 * k + 1] = u.y; w[4 * k + 2] = u.z; w[4 * k + 3] = u.w;
                }
            } else {
#pragma unroll
                for (int k = 0; k < 8; ++k)
                    w[k] = (uint32_t)QGMM_LDG(src + 2 * k) | ((uint32_t)QGMM_LDG(src + 2 * k + 1) << 16);
            }
#pragma unroll
            for (int k = 0; k < 8; ++k) qgmm_kq_bf16_stat_word(w[k], mx, mn);
        }
        /* the pair's statistics (every lane shuffles; the bits travel as f32) */
        uint32_t hx = qgmm_kq_u16_hi(mx), hn = qgmm_kq_u16_lo(mn);
        const uint32_t ox = qgmm_f32_bits(QGMM_SHFL_XOR_F32(qgmm_bits_f32(hx), 1));
        const uint32_t on = qgmm_f32_bits(QGMM_SHFL_XOR_F32(qgmm_bits_f32(hn), 1));
        hx = ox > hx ? ox : hx;
        hn = on < hn ? on : hn;
        if (live) {
            const qgmm_krt_scale ks = qgmm_krt_scale_of<FMT>(hx, hn, a.rceil);
#pragma unroll
            for (int k = 0; k < 8; ++k) w[k] = qgmm_krt_pair<FMT>(w[k], ks, ks);
            if (VEC) {
#pragma unroll
                for (int k = 0; k < 2; ++k) ((uint4 *)dst)[k] = make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
            } else {
#pragma unroll
                for (int k = 0; k < 8; ++k) {
                    dst[2 * k] = (uint16_t)w[k];
                    dst[2 * k + 1] = (uint16_t)(w[k] >> 16);
                }
            }
        }
        e += de;
        r += dr;
        if (r >= a.R) { r -= a.R; ++e; }
    }
}

/* Blocks along R: thread (e, 32-row block, W columns), W = 2 (4-byte aligned column pairs,
 * C even) or 1. */
template <int FMT, int W>
QGMM_KERNEL void qgmm_krt_cols(qgmm_kround_trip a)
{
    if (a.gmap && a.gmap[0] == 0) return; /* the fused pad's offsets were bad */
    const int64_t np = a.C / W, nrb = a.R / 32, total = a.E * nrb * np;
    for (int64_t t = QGMM_BID_X * QGMM_NTHREADS + QGMM_TID; t < total; t += QGMM_NBLOCKS_X * QGMM_NTHREADS) {
        const int64_t rest = t / np, c = (t - rest * np) * W, e = rest / nrb, r0 = (rest - e * nrb) * 32;
        int64_t xr = r0;
        int live = 32;
        if (a.gmap) {
            xr = a.gmap[2 + 2 * (r0 / 32)];
            live = a.gmap[3 + 2 * (r0 / 32)];
        }
        const uint16_t *src = (const uint16_t *)a.x.ptr + qgmm_kidx(a.x, e, xr, c);
        uint16_t *dst = (uint16_t *)a.out.ptr + qgmm_kidx(a.out, e, r0, c);
        uint32_t w[32];
#pragma unroll
        for (int i = 0; i < 32; ++i)
            w[i] = i >= live ? 0u
                 : W == 2    ? QGMM_LDG((const uint32_t *)(src + i * a.x.s1))
                             : (uint32_t)QGMM_LDG(src + i * a.x.s1);
        uint32_t mx = 0, mn = 0xFFFFFFFFu;
#pragma unroll
        for (int i = 0; i < 32; ++i) qgmm_kq_bf16_stat_word(w[i], mx, mn);
        const qgmm_krt_scale k0 = qgmm_krt_scale_of<FMT>(mx & 0xFFFFu, mn & 0xFFFFu, a.rceil);
        const qgmm_krt_scale k1 = qgmm_krt_scale_of<FMT>(mx >> 16, mn >> 16, a.rceil);
#pragma unroll
        for (int i = 0; i < 32; ++i) {
            const uint32_t o = qgmm_krt_pair<FMT>(w[i], k0, k1);
            if (W == 2) *(uint32_t *)(dst + i * a.out.s1) = o;
            else dst[i * a.out.s1] = (uint16_t)o;
        }
    }
}

#endif /* QGMM_KERNELS_MX_ROUND_TRIP_CUH */
