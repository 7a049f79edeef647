/*
 * gemm_scales.cuh — where each recipe's scale for (group, row-or-column, contraction block)
 * lives, and the output store. Shared by the portable and Hopper kernels so both read the
 * same bytes. Conventions: api/qgmm.h (qgmm_grouped_gemm) and ops-spec §4 for MX.
 */
#ifndef QGMM_CUDA_GEMM_SCALES_CUH
#define QGMM_CUDA_GEMM_SCALES_CUH

#include "gemm_sched.cuh"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include <cuda_bf16.h>

/* FP8 rowwise: scale of row/column i in group g (a: (M) or (G,N); b: (E,N) or (G,K)). */
__device__ __forceinline__ float qg_row_scale(const qg_scales &s, int g, int64_t i)
{
    return __ldg((const float *)s.ptr + (int64_t)g * s.s_grp + i * s.s_row);
}

/* FP8 blockwise: scale of row/column i, contraction block kb (128 wide). */
__device__ __forceinline__ float qg_block_scale(const qg_scales &s, int g, int64_t i, int64_t kb)
{
    return __ldg((const float *)s.ptr + (int64_t)g * s.s_grp + (i / s.i_div) * s.s_row + kb * s.s_k);
}

/* MXFP8: the byte offset (qg_mx_offset) and the value as f32 (qg_mx_scale: 2^(b-127), NaN
 * for 255) of the e8m0 scale of operand row/column i of group g, block kbl (32 wide)
 * counted from the group's contraction start.
 *   M_GROUPED a: BLOCKED_M_GROUPS — one blocked matrix of round4(K/32) columns whose group
 *     g rows start at mxpref[g] (sum of 128-rounded sizes); i is the global token row.
 *   M_GROUPED b: BLOCKED_3D — expert g's blocked (N, K/32) matrix at g*round128(N)*cols.
 *   K_GROUPED a/b: BLOCKED_K_GROUPS — group g's blocked (rows, size_g/32) matrix, padded to
 *     round4(size_g/32) columns, at byte mxpref[g] * round128(rows) (torchao's layout). */
__device__ __forceinline__ int64_t qg_mx_offset(const qg_problem &p, const qg_sched &s, int which_b, int g,
                                               int64_t i, int64_t kbl)
{
    int64_t off;
    if (p.kind == QG_M_GROUPED) {
        const int64_t cols_pad = qgmm_blocked_cols(p.kdim / 32);
        if (!which_b) {
            const int64_t prow = (int64_t)s.mxpref[g] + (i - s.bounds[g]);
            off = qgmm_blocked_offset(prow, kbl, cols_pad);
        } else {
            off = (int64_t)g * qgmm_blocked_rows(p.cols) * cols_pad + qgmm_blocked_offset(i, kbl, cols_pad);
        }
    } else {
        const int64_t size = (int64_t)s.bounds[g + 1] - s.bounds[g];
        const int64_t cols_pad = qgmm_blocked_cols(size / 32);
        const int64_t rows_pad = qgmm_blocked_rows(which_b ? p.cols : p.rows);
        off = (int64_t)s.mxpref[g] * rows_pad + qgmm_blocked_offset(i, kbl, cols_pad);
    }
    return off;
}
__device__ __forceinline__ float qg_mx_scale(const qg_problem &p, const qg_sched &s, int which_b,
                                             int g, int64_t i, int64_t kbl)
{
    const uint8_t *base = (const uint8_t *)(which_b ? p.sb.ptr : p.sa.ptr);
    return qgmm_e8m0_to_f32(__ldg(base + qg_mx_offset(p, s, which_b, g, i, kbl)));
}

/* v0 (low half) and v1 as bf16x2, round to nearest even, by the hardware conversion: the
 * bits of qgmm_f32_to_bf16 for every finite and infinite value (checked over all 2^32
 * inputs on the H100), and for the NaN the kernels' arithmetic produces (0x7FFFFFFF, the
 * canonical NaN, gives 0x7FFF either way; a NaN with the sign bit set would give 0x7FFF
 * here and 0xFFFF there). */
__device__ __forceinline__ uint32_t qg_bf16x2(float v0, float v1)
{
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(v1), "f"(v0));
    return r;
}

/* Stores v0 (column c) and v1 (column c+1) of row r in group g, masked to the extents. */
__device__ __forceinline__ void qg_store2(const qg_problem &p, int pair_ok, int g, int64_t r, int64_t c,
                                          float v0, float v1)
{
    const int64_t idx = (int64_t)g * p.so_g + r * p.so_r + c * p.so_c;
    const bool has1 = (c + 1) < p.cols;
    if (p.out_f32) {
        float *o = (float *)p.out + idx;
        if (pair_ok && has1) {
            *(float2 *)o = make_float2(v0, v1);
        } else {
            o[0] = v0;
            if (has1) o[p.so_c] = v1;
        }
    } else {
        uint16_t *o = (uint16_t *)p.out + idx;
        const uint32_t h = qg_bf16x2(v0, v1);
        if (pair_ok && has1) {
            *(uint32_t *)o = h;
        } else {
            o[0] = (uint16_t)(h & 0xFFFFu);
            if (has1) o[p.so_c] = (uint16_t)(h >> 16);
        }
    }
}

#endif /* QGMM_CUDA_GEMM_SCALES_CUH */
