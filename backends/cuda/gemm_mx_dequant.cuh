/*
 * gemm_mx_dequant.cuh — MXFP8 on Hopper: both operands dequantized to bf16 in the caller's
 * workspace, then the BF16 grouped GEMM runs on them (gemm_hopper.cu, qg_mx_via_bf16).
 * Hopper has no block-scaled MMA; promoting every 32-deep block on the CUDA cores limited
 * the former MX mode of the promoted kernel, while the BF16 kernel runs at the bf16
 * tensor-core rate. Included by gemm_hopper.cu only (one translation unit, anonymous
 * namespace).
 *
 * Exactness: an e4m3 / e5m2 value has 3 / 2 mantissa bits and bf16 has 7 and f32's
 * exponent range, so q * 2^(b-127) is the bf16 of the product, exact unless it falls below
 * bf16's normal range (2^-126: gradual underflow rounds it) or past f32's (inf). NaN
 * (fp8 NaN, e8m0 255) stays NaN, e5m2 inf stays inf. The BF16 kernel's products of bf16
 * values are exact and summed in f32.
 *
 * Work: one thread per 32-element MX block of one operand row (one e8m0 scale). The scale
 * is found as the GEMM kernels find it (gemm_scales.cuh, qg_mx_offset) from the schedule
 * every block builds and validates from the offsets (gemm_sched.cuh): bad offsets make
 * every block return before it writes, and block 0 raises the status word, as the GEMM
 * does. Elements no group owns (M-grouped token rows and K-grouped token blocks past the
 * last group) are written as zeros.
 */
#pragma once

#include "gemm_scales.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {

/* Where the bf16 operands go in the workspace. K-major: row i's contraction elements at
 * i * ld + k; MN-major (K-grouped only): contraction index k's row at k * ld + i. ld is
 * rounded up to 8 elements (the 16-byte row alignment TMA needs). M-grouped B holds the G
 * experts' (N, K) matrices one after the other (rows_b = G * N). */
struct qg_mx_ws {
    int mn;                  /* 1: MN-major (K-grouped), 0: K-major */
    int64_t rows_a, rows_b;  /* rows of each operand (r extent, c extent or G * N) */
    int64_t ld_a, ld_b;      /* elements between rows (K-major) / contraction indices (MN) */
    size_t off_b, bytes;     /* B's byte offset in the workspace, the bytes both take */
};

__host__ inline qg_mx_ws qg_mx_ws_of(const qg_problem &p, int mn)
{
    qg_mx_ws w;
    const int64_t kd = p.kdim > 0 ? p.kdim : 0;
    w.mn = mn;
    w.rows_a = p.rows > 0 ? p.rows : 0;
    w.rows_b = (p.cols > 0 ? p.cols : 0) * (p.kind == QG_M_GROUPED ? p.groups : 1);
    const int64_t kd8 = (kd + 7) / 8 * 8;
    w.ld_a = mn ? (w.rows_a + 7) / 8 * 8 : kd8;
    w.ld_b = mn ? (w.rows_b + 7) / 8 * 8 : kd8;
    const int64_t ea = mn ? w.ld_a * kd : w.rows_a * w.ld_a, eb = mn ? w.ld_b * kd : w.rows_b * w.ld_b;
    w.off_b = ((size_t)ea * 2 + 255) / 256 * 256;
    w.bytes = w.off_b + (size_t)eb * 2;
    return w;
}

/* The group whose range [bounds[g], bounds[g+1]) holds x (x < bounds[G]). */
__device__ __forceinline__ int qg_dq_group(const qg_sched &s, int64_t x)
{
    int lo = 0, hi = s.groups - 1;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if ((int64_t)s.bounds[mid + 1] <= x) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* Four fp8 bytes of a 32-bit word to f32 (exact: through f16, which holds e4m3 and e5m2). */
template <int E>
__device__ __forceinline__ void qg_dq_word(uint32_t w, float *v)
{
    constexpr __nv_fp8_interpretation_t fi = E == QG_ELEM_E4M3 ? __NV_E4M3 : __NV_E5M2;
    const __half2 lo = __half2(__nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w & 0xFFFFu), fi));
    const __half2 hi = __half2(__nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(w >> 16), fi));
    const float2 a = __half22float2(lo), b = __half22float2(hi);
    v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
}

/* The scale and the source of contraction element k0 of row `row` of operand `which`;
 * false where no group owns it (or row < 0): its elements are zeros. */
__device__ __forceinline__ bool qg_dq_where(const qg_problem &p, const qg_sched &s, int which, int64_t row, int64_t k0,
                                            float &sc, const uint8_t *&src)
{
    const qg_operand &o = which ? p.b : p.a;
    if (row < 0 || k0 >= p.kdim) return false;
    int g = 0;
    int64_t i = row, kbl = k0 / 32;
    src = o.ptr + k0 * o.s_k;
    if (p.kind == QG_M_GROUPED) {
        if (!which) { /* token row: its group's scales */
            if (row >= s.bounds[s.groups]) return false;
            g = qg_dq_group(s, row);
            src += row * o.s_row;
        } else {      /* expert g's row n */
            g = (int)(row / p.cols);
            i = row - (int64_t)g * p.cols;
            src += (int64_t)g * o.s_grp + i * o.s_row;
        }
    } else {          /* a group's 32-token blocks: groups start at multiples of 32 */
        if (k0 >= s.bounds[s.groups]) return false;
        g = qg_dq_group(s, k0);
        kbl = (k0 - s.bounds[g]) / 32;
        src += row * o.s_row;
    }
    sc = qg_mx_scale(p, s, which, g, i, kbl);
    return true;
}

/* n (4 or 8) fp8 bytes from src, contraction stride s_k, zero past the contraction
 * (k0 + j >= kdim), as 32-bit words. */
template <int N>
__device__ __forceinline__ void qg_dq_load(const uint8_t *src, int64_t s_k, int64_t left, uint32_t (&w)[N / 4])
{
    if (s_k == 1 && ((uintptr_t)src & (N == 8 ? 7 : 15)) == 0 && left >= N) {
        if constexpr (N == 8) {
            const uint2 x = __ldg((const uint2 *)src);
            w[0] = x.x; w[1] = x.y;
        } else {
            const uint4 x0 = __ldg((const uint4 *)src), x1 = __ldg((const uint4 *)src + 1);
            w[0] = x0.x; w[1] = x0.y; w[2] = x0.z; w[3] = x0.w;
            w[4] = x1.x; w[5] = x1.y; w[6] = x1.z; w[7] = x1.w;
        }
        return;
    }
#pragma unroll
    for (int j = 0; j < N / 4; ++j) {
        uint32_t x = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b)
            if (4 * j + b < left) x |= (uint32_t)__ldg(src + (4 * j + b) * s_k) << (8 * b);
        w[j] = x;
    }
}

/* fp8 words times the scale, as bf16 pairs (element 2j low, 2j + 1 high). */
template <int E, int NW>
__device__ __forceinline__ void qg_dq_convert(const uint32_t (&w)[NW], float sc, uint32_t (&v)[2 * NW])
{
#pragma unroll
    for (int j = 0; j < NW; ++j) {
        float f[4];
        qg_dq_word<E>(w[j], f);
        const __nv_bfloat162 lo = __floats2bfloat162_rn(f[0] * sc, f[1] * sc);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(f[2] * sc, f[3] * sc);
        v[2 * j] = *(const uint32_t *)&lo;
        v[2 * j + 1] = *(const uint32_t *)&hi;
    }
}

/* Contraction elements per K-major step of a warp: its lanes take 8 each, QG_DQ_SEG / 256
 * times. */
constexpr int QG_DQ_SEG = 1024, QG_DQ_NC = QG_DQ_SEG / 256;

/* What a K-major (M-grouped) operand row needs for every contraction block: its source
 * row, its scales' row in the blocked layout and their base, or none (a token row past
 * the last group: zeros). The same places qg_dq_where / qg_mx_offset find, once per row. */
struct qg_dq_row {
    const uint8_t *src, *sc;
    int64_t srow;
    bool owned;
};

__device__ __forceinline__ qg_dq_row qg_dq_row_of(const qg_problem &p, const qg_sched &s, int which, int64_t row,
                                                  int64_t cols_pad)
{
    qg_dq_row r;
    r.owned = true;
    if (!which) { /* token row: its group's rows of the M-groups blocked scales */
        r.owned = row < s.bounds[s.groups];
        const int g = r.owned ? qg_dq_group(s, row) : 0;
        r.src = p.a.ptr + row * p.a.s_row;
        r.srow = (int64_t)s.mxpref[g] + (row - s.bounds[g]);
        r.sc = (const uint8_t *)p.sa.ptr;
    } else {      /* expert g's row n: expert g's blocked matrix */
        const int64_t g = row / p.cols, n = row - g * p.cols;
        r.src = p.b.ptr + g * p.b.s_grp + n * p.b.s_row;
        r.srow = n;
        r.sc = (const uint8_t *)p.sb.ptr + g * qgmm_blocked_rows(p.cols) * cols_pad;
    }
    return r;
}

/* Both operands of an MX problem into the workspace layout w. Dynamic shared memory: the
 * schedule's qg_sched_smem_ints(p.groups) ints.
 * K-major: a warp takes a row (M-grouped: its group, source and scale row found once; the
 * K-grouped benchmark variant finds them per block of the contraction) and walks its
 * contraction QG_DQ_SEG elements at a time, each lane 8 elements (8 bytes in,
 * 16 out) at lane * 8 + 256 c, c < QG_DQ_NC, all its loads issued before the first store,
 * so every load and store instruction of the warp covers contiguous bytes.
 * MN-major: consecutive threads take consecutive row pairs of one 32-element block (two
 * 32-byte loads; 32 four-byte stores, one per contraction index, a warp's 128 bytes
 * contiguous). */
template <int E, int MN>
__global__ void __launch_bounds__(256) qg_mx_dequant_kernel(const qg_problem p, const qg_mx_ws w)
{
    extern __shared__ int qg_dq_smem[];
    qg_sched s;
    if (!qg_sched_build<128, 128>(p, qg_dq_smem, s)) return;
    uint16_t *const base = (uint16_t *)p.ws;
    if constexpr (!MN) {
        const int64_t cols_pad = qgmm_blocked_cols(p.kdim / 32);
        const int lane = threadIdx.x & 31;
        for (int64_t u = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; u < w.rows_a + w.rows_b;
             u += ((int64_t)gridDim.x * blockDim.x) >> 5) {
            const int which = u >= w.rows_a;
            const int64_t row = which ? u - w.rows_a : u, s_k = which ? p.b.s_k : p.a.s_k;
            const bool mg = p.kind == QG_M_GROUPED; /* K-grouped K-major: a benchmark variant */
            const qg_dq_row r = mg ? qg_dq_row_of(p, s, which, row, cols_pad) : qg_dq_row{nullptr, nullptr, 0, false};
            const int64_t ld = which ? w.ld_b : w.ld_a;
            uint16_t *dst = base + (which ? w.off_b / 2 : 0) + row * ld;
            for (int64_t k00 = lane * 8; k00 < ld; k00 += QG_DQ_SEG) {
                float sc[QG_DQ_NC];
                uint32_t raw[QG_DQ_NC][2];
#pragma unroll
                for (int c = 0; c < QG_DQ_NC; ++c) {
                    const int64_t k0 = k00 + c * 256;
                    sc[c] = 0.f;
                    raw[c][0] = raw[c][1] = 0u;
                    const uint8_t *src = nullptr;
                    if (mg && r.owned && k0 < p.kdim) {
                        sc[c] = qgmm_e8m0_to_f32(__ldg(r.sc + qgmm_blocked_offset(r.srow, k0 / 32, cols_pad)));
                        qg_dq_load<8>(r.src + k0 * s_k, s_k, p.kdim - k0, raw[c]);
                    } else if (!mg && qg_dq_where(p, s, which, row, k0, sc[c], src)) {
                        qg_dq_load<8>(src, s_k, p.kdim - k0, raw[c]);
                    }
                }
#pragma unroll
                for (int c = 0; c < QG_DQ_NC; ++c) {
                    const int64_t k0 = k00 + c * 256;
                    if (k0 >= ld) continue; /* ld: a multiple of 8 */
                    uint32_t v[4];
                    qg_dq_convert<E>(raw[c], sc[c], v);
                    *(uint4 *)(dst + k0) = make_uint4(v[0], v[1], v[2], v[3]);
                }
            }
        }
    } else {
        const int64_t nkb = (p.kdim + 31) / 32;
        const int64_t per_a = nkb * ((w.rows_a + 1) / 2), total = per_a + nkb * ((w.rows_b + 1) / 2);
        for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
             t += (int64_t)gridDim.x * blockDim.x) {
            const int which = t >= per_a;
            const int64_t u = which ? t - per_a : t;
            const int64_t rows = which ? w.rows_b : w.rows_a, ld = which ? w.ld_b : w.ld_a;
            const int64_t npair = (rows + 1) / 2;
            const int64_t kb = u / npair, row = 2 * (u - kb * npair), k0 = kb * 32;
            const int64_t s_k = (which ? p.b : p.a).s_k;
            float sc0 = 0.f, sc1 = 0.f;
            const uint8_t *src0 = nullptr, *src1 = nullptr;
            uint32_t w0[8] = {0, 0, 0, 0, 0, 0, 0, 0}, w1[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (qg_dq_where(p, s, which, row, k0, sc0, src0)) qg_dq_load<32>(src0, s_k, p.kdim - k0, w0);
            if (qg_dq_where(p, s, which, row + 1 < rows ? row + 1 : -1, k0, sc1, src1))
                qg_dq_load<32>(src1, s_k, p.kdim - k0, w1);
            uint32_t v0[16], v1[16];
            qg_dq_convert<E>(w0, sc0, v0);
            qg_dq_convert<E>(w1, sc1, v1);
            uint32_t *d = (uint32_t *)(base + (which ? w.off_b / 2 : 0) + k0 * ld + row);
            const int nk = (int)min((int64_t)32, p.kdim - k0);
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                if (j < nk) {
                    const uint32_t a = j & 1 ? v0[j / 2] >> 16 : v0[j / 2] & 0xFFFFu;
                    const uint32_t b = j & 1 ? v1[j / 2] >> 16 : v1[j / 2] & 0xFFFFu;
                    d[(int64_t)j * (ld / 2)] = a | (b << 16);
                }
            }
        }
    }
}

} // namespace
