/*
 * qgmm_kernels_dequant.cuh — single-source dequantize of every format (the inverse of
 * qgmm_kernels_quant.cuh): qgmm_dequant_mul(f32(q), s) (qgmm_dequant_div for rowwise
 * MULTIPLIER scales), the scale found exactly as the quantize found it, f32(q) from a
 * 256-entry table filled by qgmm_fp8_to_f32. 8 elements per thread over the flattened
 * chunks; 8-byte q loads and 16/32-byte stores when the layout allows (vec).
 */
#ifndef QGMM_KERNELS_DEQUANT_CUH
#define QGMM_KERNELS_DEQUANT_CUH

#include "qgmm_kernels_quant.cuh"

typedef struct qgmm_kdequant {
    qgmm_kquant a;           /* q in a.q (fp8 bytes), scales in a.s, out in a.x */
    int out_dtype;           /* QGMM_K_F32 / QGMM_K_BF16 */
    int vec;                 /* q.s2 == out.s2 == 1, C % 8 == 0, aligned rows */
} qgmm_kdequant;

/* The scale of element (e, r, c): returns 0 when no group owns it (jagged rowwise past
 * offs[G-1]: not written). */
QGMM_DEV int qgmm_kdq_scale(const qgmm_kquant &a, int64_t e, int64_t r, int64_t c, float *s)
{
    if (a.kind == QGMM_KQ_ROWWISE) {
        const int64_t i = a.along_c ? r : c, j = a.along_c ? c : r;
        int64_t outer = e;
        if (a.offs) {
            outer = qgmm_k_group_of(a.offs, a.offs_stride, a.G, j);
            if (outer < 0) return 0;
        }
        *s = ((const float *)a.s.ptr)[outer * a.s.s0 + i * a.s.s1];
    } else if (a.kind == QGMM_KQ_MX) {
        const int64_t o = a.along_c ? r : c, b = (a.along_c ? c : r) / 32;
        *s = qgmm_e8m0_to_f32(((const uint8_t *)a.s.ptr)[qgmm_kq_mx_scale_index(a, e, o, b)]);
    } else {
        *s = ((const float *)a.s.ptr)[e * a.s.s0 + (r / a.tile_rows) * a.s.s1 + (c / 128) * a.s.s2];
    }
    return 1;
}

/* f32(q) times / over the scale, with the header's NaN rule. */
QGMM_DEV float qgmm_kdq_apply(const qgmm_kquant &a, float v, float s)
{
    if (a.kind == QGMM_KQ_ROWWISE && !a.recip) return qgmm_dequant_div(v, s);
    return qgmm_dequant_mul(v, s);
}

/* One 8-element chunk (e, r, c0..c0+7): q bytes in, f32/bf16 out. */
QGMM_DEV void qgmm_kdq_chunk(const qgmm_kdequant &d, const float *lut, int64_t e, int64_t r, int64_t c0,
                             const uint8_t qv[8], int uniform)
{
    const qgmm_kquant &a = d.a;
    float o[8];
    int ok[8];
    float su = 0.0f;
    const int uok = uniform ? qgmm_kdq_scale(a, e, r, c0, &su) : 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        float sk = su;
        ok[k] = c0 + k < a.C && (uniform ? uok : qgmm_kdq_scale(a, e, r, c0 + k, &sk));
        o[k] = qgmm_kdq_apply(a, lut[qv[k]], sk);
    }
    const int all = ok[0] & ok[1] & ok[2] & ok[3] & ok[4] & ok[5] & ok[6] & ok[7];
    const int64_t oi = qgmm_kidx(a.x, e, r, c0);
    if (d.vec && all) {
        if (d.out_dtype == QGMM_K_BF16) {
            uint32_t w[4];
#pragma unroll
            for (int k = 0; k < 4; ++k)
                w[k] = (uint32_t)qgmm_f32_to_bf16(o[2 * k]) | ((uint32_t)qgmm_f32_to_bf16(o[2 * k + 1]) << 16);
            *(uint4 *)((uint16_t *)a.x.ptr + oi) = make_uint4(w[0], w[1], w[2], w[3]);
        } else {
            float4 *dst = (float4 *)((float *)a.x.ptr + oi);
            dst[0] = make_float4(o[0], o[1], o[2], o[3]);
            dst[1] = make_float4(o[4], o[5], o[6], o[7]);
        }
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k)
            if (ok[k]) qgmm_kstore(a.x.ptr, d.out_dtype, qgmm_kidx(a.x, e, r, c0 + k), o[k]);
    }
}

/* One thread per 8-element chunk, grid-stride over the flattened (E*R, C/8) chunks: on the
 * H100 this flat mapping is faster than a 2D row-strip mapping of the same body. */
QGMM_KERNEL void qgmm_kdq(qgmm_kdequant d)
{
    QGMM_SHARED float lut[256];
    const qgmm_kquant &a = d.a;
    /* fp8 -> f32 through a table built by the header codec itself: exact by construction */
    for (int i = QGMM_TID; i < 256; i += QGMM_NTHREADS) lut[i] = qgmm_fp8_to_f32((uint8_t)i, a.fmt);
    QGMM_SYNC();
    if (a.offs && !qgmm_block_offsets_ok(a.offs, a.offs_stride, a.G, a.along_c ? a.C : a.R, 1,
                                         a.status, QGMM_BID_X == 0))
        return;
    /* one scale for all 8 elements of a chunk: along C without groups (8 | 32 | 128) */
    const int uniform = a.along_c && !a.offs;
    const int64_t cpr = (a.C + 7) / 8;
    const int64_t total = a.E * a.R * cpr;
    const uint8_t *qb = (const uint8_t *)a.q.ptr;
    for (int64_t t = QGMM_BID_X * QGMM_NTHREADS + QGMM_TID; t < total; t += QGMM_NBLOCKS_X * QGMM_NTHREADS) {
        const int64_t c0 = (t % cpr) * 8, row = t / cpr, e = row / a.R, r = row % a.R;
        uint8_t qv[8];
        if (d.vec) {
            const uint2 w = *(const uint2 *)(qb + qgmm_kidx(a.q, e, r, c0));
#pragma unroll
            for (int k = 0; k < 4; ++k) { qv[k] = (uint8_t)(w.x >> (8 * k)); qv[4 + k] = (uint8_t)(w.y >> (8 * k)); }
        } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) qv[k] = c0 + k < a.C ? qb[qgmm_kidx(a.q, e, r, c0 + k)] : 0;
        }
        qgmm_kdq_chunk(d, lut, e, r, c0, qv, uniform);
    }
}

#endif /* QGMM_KERNELS_DEQUANT_CUH */
