/*
 * gemm_mfma.hip — the HIP grouped GEMM on AMD matrix cores (MFMA), both kinds, all four
 * recipes, for gfx90a (MI250X) and gfx94x (MI300X).
 *
 * Workgroup = 256 threads = 4 waves of 64; tile 64 (r) x 64 (c); each wave owns a 32x32
 * quarter held in one 32x32 MFMA accumulator (16 f32 per lane). The contraction runs in
 * chunks of 32 staged in LDS:
 *   - FP8 MFMA (gfx94x, both operands e4m3fnuz — the format gfx94x's FP8 units read):
 *     raw bytes in LDS, two v_mfma_f32_32x32x16_fp8_fp8 per chunk;
 *   - BF16 MFMA (everything else: bf16 operands, e4m3fn/e5m2 operands anywhere, every fp8
 *     operand on gfx90a, which has no FP8 units): operands widened to bf16 while they are
 *     written to LDS (exact: fp8 values have <= 3 mantissa bits), four
 *     v_mfma_f32_32x32x8bf16_1k per chunk.
 * Scales: FP8 rowwise in the epilogue; FP8 blockwise (128) and MXFP8 (32) accumulate each
 * scale block in a second accumulator and promote it with that block's scales (staged in
 * LDS) into the main one, so every product is scaled in f32 exactly as the CPU reference.
 *
 * Scheduling (same semantics as the CUDA kernels): a persistent grid; every workgroup reads
 * offs itself, checks it with the shared kernels/ helper (bad -> nobody writes, block 0
 * raises the status word), builds the per-group tile prefix in LDS with the shared padded
 * scan (qgmm_kl_padded_starts: ceil(size/64) tiles = round_up(size, 64) / 64), and walks
 * tiles t = blockIdx, blockIdx + gridDim, ... . Empty groups own no tiles (M_GROUPED) or
 * write zeros (K_GROUPED). No host sync, no per-group launch.
 *
 * MFMA operand/result layouts (AMD CDNA2/CDNA3 ISA, 32x32 single-block forms):
 *   A[i][k]: lane i + 32 * (k / KH), element k % KH;  B[k][j]: lane j + 32 * (k / KH);
 *   D[i][j]: lane j + 32 * ((i / 4) % 2), register (i % 4) + 4 * (i / 8);
 *   KH = 4 (bf16, K = 8 per instruction), 8 (fp8, K = 16 per instruction).
 */
#include "qgmm_dialect_hip.h"
#include "hip_gemm.h"
#include "qgmm_kernels_layout.cuh"

/* The two matrix instructions. backends/hip/emu/ (host emulation test) defines these
 * first with a lane-by-lane model of the same operand/result layouts. */
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define QGMM_HG_HAS_FP8_MFMA 1
#endif
#ifndef HG_MFMA_BF16
#define HG_MFMA_BF16(a, b, acc) __builtin_amdgcn_mfma_f32_32x32x8bf16_1k((a), (b), (acc), 0, 0, 0)
#define HG_MFMA_FP8(a, b, acc) __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8((a), (b), (acc), 0, 0, 0)
#endif

#define HG_BM 64
#define HG_BN 64
#define HG_KC 32
#define HG_THREADS 256

#if defined(QGMM_HIP_EMU)
typedef float hg_f32x16 __attribute__((vector_size(64)));
typedef short hg_i16x4 __attribute__((vector_size(8)));
#else
typedef float hg_f32x16 __attribute__((ext_vector_type(16)));
typedef short hg_i16x4 __attribute__((ext_vector_type(4)));
#endif

/* LDS row pitch: bf16 tiles 32+8 elements (80 B: the 16-byte staging stores stay aligned),
 * fp8 tiles 32+8 bytes (40 B: 8-byte stores and operand reads aligned); the padding spreads
 * rows over banks. */
#define HG_PITCH16 (HG_KC + 8)
#define HG_PITCH8 (HG_KC + 8)

struct hg_lds {
    int32_t tstart[QGMM_HG_MAX_GROUPS + 1];  /* padded (64) group starts -> tile prefix */
    int32_t mstart[QGMM_HG_MAX_GROUPS + 1];  /* MX blocked-layout group starts */
    int64_t scan[HG_THREADS];
    union __attribute__((aligned(16))) {     /* 16-byte staging stores need it */
        uint16_t h[2][HG_BM * HG_PITCH16];   /* A rows, B columns as bf16 */
        uint8_t b[2][HG_BM * HG_PITCH8];     /* A rows, B columns as fp8 bytes */
    } t;
    float sa[HG_BM], sb[HG_BN];              /* scales of the current scale block */
};

/* Element (row i, contraction k) of an operand as f32 (bf16 or any fp8, exact). */
QGMM_DEV float hg_elem_f32(const qgmm_hg_operand &o, int64_t idx)
{
    if (o.dtype == 2 /* QGMM_BF16 */) return qgmm_bf16_to_f32(((const uint16_t *)o.ptr)[idx]);
    return qgmm_fp8_to_f32(o.ptr[idx], o.dtype);
}

/* Stages 8 consecutive contraction elements [k, k+8) of operand row `i` (global index
 * base = row offset) into LDS row `lr` at column kk; zero where k >= kend or !row_ok. */
template <bool FP8>
QGMM_DEV void hg_stage8(const qgmm_hg_operand &o, int64_t base, bool row_ok, int64_t k, int64_t kend,
                        hg_lds &L, int which, int lr, int kk)
{
    if (FP8) {
        uint8_t v[8];
        const bool vec = row_ok && o.s_k == 1 && k + 8 <= kend && ((uintptr_t)(o.ptr + base + k) & 7) == 0;
        if (vec) {
            const uint2 u = *(const uint2 *)(o.ptr + base + k);
            *(uint2 *)&L.t.b[which][lr * HG_PITCH8 + kk] = u;
            return;
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = (row_ok && k + e < kend) ? o.ptr[base + (k + e) * o.s_k] : 0;
#pragma unroll
        for (int e = 0; e < 8; ++e) L.t.b[which][lr * HG_PITCH8 + kk + e] = v[e];
    } else {
        uint16_t v[8];
        if (o.dtype == 2 && row_ok && o.s_k == 1 && k + 8 <= kend &&
            ((uintptr_t)((const uint16_t *)o.ptr + base + k) & 15) == 0) {
            const uint4 u = *(const uint4 *)((const uint16_t *)o.ptr + base + k);
            *(uint4 *)&L.t.h[which][lr * HG_PITCH16 + kk] = u;
            return;
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const bool ok = row_ok && k + e < kend;
            /* fp8 -> f32 -> bf16 keeps every bit (<= 3 mantissa bits, f32 exponent range) */
            v[e] = ok ? (uint16_t)(qgmm_f32_bits(hg_elem_f32(o, base + (k + e) * o.s_k)) >> 16) : 0;
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) L.t.h[which][lr * HG_PITCH16 + kk + e] = v[e];
    }
}

/* One chunk of 32 along the contraction, this wave's 32x32 quarter, into acc. */
template <bool FP8>
QGMM_DEV void hg_mfma_chunk(const hg_lds &L, int wr, int wc, int lane, hg_f32x16 &acc)
{
    const int i = lane & 31, half = lane >> 5;
    if (FP8) {
#if defined(QGMM_HG_HAS_FP8_MFMA)
#pragma unroll
        for (int s = 0; s < HG_KC / 16; ++s) {
            const int k = s * 16 + half * 8;
            const long a = *(const long *)&L.t.b[0][(wr * 32 + i) * HG_PITCH8 + k];
            const long b = *(const long *)&L.t.b[1][(wc * 32 + i) * HG_PITCH8 + k];
            acc = HG_MFMA_FP8(a, b, acc);
        }
#else
        __builtin_trap(); /* the host never selects FP8 MFMA for an arch without it */
#endif
    } else {
#pragma unroll
        for (int s = 0; s < HG_KC / 8; ++s) {
            const int k = s * 8 + half * 4;
            const hg_i16x4 a = *(const hg_i16x4 *)&L.t.h[0][(wr * 32 + i) * HG_PITCH16 + k];
            const hg_i16x4 b = *(const hg_i16x4 *)&L.t.h[1][(wc * 32 + i) * HG_PITCH16 + k];
            acc = HG_MFMA_BF16(a, b, acc);
        }
    }
}

/* The f32 scale of operand row/column i (global index) of group g for contraction block
 * kb (BLOCK128: 128-wide block index of the global contraction; MX32: 32-wide block index
 * counted from the group's contraction start). */
QGMM_DEV float hg_block_scale(const qgmm_hg_problem &p, const hg_lds &L, int which_b, int64_t g,
                              int64_t gstart, int64_t gend, int64_t i, int64_t kb)
{
    const qgmm_hg_scales &s = which_b ? p.sb : p.sa;
    if (p.scale_mode == QGMM_HG_SC_BLOCK128)
        return ((const float *)s.ptr)[g * s.s_grp + (i / s.i_div) * s.s_row + kb * s.s_k];
    int64_t off;
    if (p.kind == QGMM_HG_M_GROUPED) {
        const int64_t cols_pad = qgmm_blocked_cols(p.kdim / 32);
        if (!which_b) off = qgmm_blocked_offset((int64_t)L.mstart[g] + (i - gstart), kb, cols_pad);
        else off = g * qgmm_blocked_rows(p.cols) * cols_pad + qgmm_blocked_offset(i, kb, cols_pad);
    } else {
        const int64_t cols_pad = qgmm_blocked_cols((gend - gstart) / 32);
        const int64_t rows_pad = qgmm_blocked_rows(which_b ? p.cols : p.rows);
        off = (int64_t)L.mstart[g] * rows_pad + qgmm_blocked_offset(i, kb, cols_pad);
    }
    return qgmm_e8m0_to_f32(((const uint8_t *)s.ptr)[off]);
}

template <bool FP8>
__global__ __launch_bounds__(HG_THREADS) void qgmm_hg_kernel(qgmm_hg_problem p)
{
    __shared__ hg_lds L;
    const int tid = QGMM_TID, lane = tid & 63, wave = tid >> 6;
    const int wr = wave >> 1, wc = wave & 1;
    const bool mg = p.kind == QGMM_HG_M_GROUPED;
    const int64_t G = p.groups;

    if (!qgmm_block_offsets_ok(p.offs, p.offs_stride, G, mg ? p.rows : p.kdim, p.offs_multiple, p.status,
                               QGMM_BID_X == 0))
        return;
    if (mg) qgmm_kl_padded_starts(p.offs, p.offs_stride, G, 1, HG_BM, L.tstart, L.scan);
    if (p.scale_mode == QGMM_HG_SC_MX32)
        qgmm_kl_padded_starts(p.offs, p.offs_stride, G, mg ? 1 : 32, mg ? 128 : 4, L.mstart, L.scan);

    const int64_t tiles_c = (p.cols + HG_BN - 1) / HG_BN, tiles_r = (p.rows + HG_BM - 1) / HG_BM;
    const int64_t total = mg ? (int64_t)L.tstart[G] / HG_BM * tiles_c : G * tiles_r * tiles_c;
    const bool scaled_blocks = p.scale_mode == QGMM_HG_SC_BLOCK128 || p.scale_mode == QGMM_HG_SC_MX32;
    const int64_t sblk = p.scale_mode == QGMM_HG_SC_MX32 ? 32 : 128;

    for (int64_t t = QGMM_BID_X; t < total; t += QGMM_NBLOCKS_X) {
        int64_t g, r0, c0 = (t % tiles_c) * HG_BN;
        if (mg) {
            const int64_t pr = (t / tiles_c) * HG_BM;      /* row in the 64-padded space */
            g = qgmm_kl_owner(L.tstart, G, pr);
            r0 = (g == 0 ? 0 : (int64_t)p.offs[(g - 1) * p.offs_stride]) + (pr - L.tstart[g]);
        } else {
            g = t / (tiles_r * tiles_c);
            r0 = ((t / tiles_c) % tiles_r) * HG_BM;
        }
        const int64_t gstart = g == 0 ? 0 : (int64_t)p.offs[(g - 1) * p.offs_stride];
        const int64_t gend = p.offs[g * p.offs_stride];
        const int64_t row_end = mg ? gend : p.rows;
        const int64_t kbeg = mg ? 0 : gstart, kend = mg ? p.kdim : gend;

        hg_f32x16 acc, part;
#pragma unroll
        for (int r = 0; r < 16; ++r) { acc[r] = 0.0f; part[r] = 0.0f; }

        /* staging roles: threads 0..127 stage A rows, 128..255 B columns; 2 x 8 elements */
        const int which = tid >> 7, lt = tid & 127, lr = lt >> 1, kk = (lt & 1) * 16;
        const int64_t gi = (which ? c0 : r0) + lr;
        const bool row_ok = which ? gi < p.cols : gi < row_end;
        const qgmm_hg_operand &op = which ? p.b : p.a;
        const int64_t base = (which && mg ? g * op.s_grp : 0) + (row_ok ? gi : 0) * op.s_row;

        for (int64_t k0 = kbeg; k0 < kend; k0 += HG_KC) {
            QGMM_SYNC();
            hg_stage8<FP8>(op, base, row_ok, k0 + kk, kend, L, which, lr, kk);
            hg_stage8<FP8>(op, base, row_ok, k0 + kk + 8, kend, L, which, lr, kk + 8);
            if (scaled_blocks && (k0 - kbeg) % sblk == 0 && tid < HG_BM + HG_BN) {
                const int wb = tid >= HG_BM, j = tid - (wb ? HG_BM : 0);
                const int64_t ii = (wb ? c0 : r0) + j;
                const bool ok = wb ? ii < p.cols : ii < row_end;
                const int64_t kb = p.scale_mode == QGMM_HG_SC_MX32 ? (k0 - kbeg) / 32 : k0 / 128;
                const float v = ok ? hg_block_scale(p, L, wb, g, gstart, gend, ii, kb) : 0.0f;
                if (wb) L.sb[j] = v; else L.sa[j] = v;
            }
            QGMM_SYNC();
            if (!scaled_blocks) {
                hg_mfma_chunk<FP8>(L, wr, wc, lane, acc);
                continue;
            }
            hg_mfma_chunk<FP8>(L, wr, wc, lane, part);
            if ((k0 + HG_KC - kbeg) % sblk == 0 || k0 + HG_KC >= kend) {
                const float sb = L.sb[wc * 32 + (lane & 31)];
#pragma unroll
                for (int r = 0; r < 16; ++r) {
                    const int ri = wr * 32 + 8 * (r >> 2) + 4 * (lane >> 5) + (r & 3);
                    acc[r] += part[r] * L.sa[ri] * sb;
                    part[r] = 0.0f;
                }
            }
        }

        /* epilogue: lane owns column wc*32 + lane%32 and 16 rows */
        const int64_t col = c0 + wc * 32 + (lane & 31);
        if (col >= p.cols) continue;
        float sbc = 1.0f;
        if (p.scale_mode == QGMM_HG_SC_ROW) sbc = ((const float *)p.sb.ptr)[g * p.sb.s_grp + col * p.sb.s_row];
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            const int64_t row = r0 + wr * 32 + 8 * (r >> 2) + 4 * (lane >> 5) + (r & 3);
            if (row >= row_end) continue;
            float v = acc[r];
            if (p.scale_mode == QGMM_HG_SC_ROW)
                v = v * ((const float *)p.sa.ptr)[g * p.sa.s_grp + row * p.sa.s_row] * sbc;
            const int64_t oi = (mg ? 0 : g * p.so_g) + row * p.so_r + col * p.so_c;
            if (p.out_f32) ((float *)p.out)[oi] = v;
            else ((uint16_t *)p.out)[oi] = qgmm_f32_to_bf16(v);
        }
    }
}

#if !defined(QGMM_HIP_EMU)
/* The same launch in both builds; in the bare device-only check the shim declares the
 * runtime names, and only the two kernel instantiations matter. */
#include "cuda_runtime.h"
extern "C" int qgmm_hip_gemm_launch(const qgmm_hg_problem *p, int fp8_mfma, unsigned grid, void *stream)
{
    if (fp8_mfma) qgmm_hg_kernel<true><<<grid, HG_THREADS, 0, (hipStream_t)stream>>>(*p);
    else qgmm_hg_kernel<false><<<grid, HG_THREADS, 0, (hipStream_t)stream>>>(*p);
    return (int)hipGetLastError();
}
#endif
