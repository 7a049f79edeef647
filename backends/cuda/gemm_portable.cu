/*
 * gemm_portable.cu — the portable grouped GEMM (sm_80+ for BF16, sm_89+ for FP8): every
 * recipe x kind on one kernel template, and the only path on GPUs other than Hopper.
 *
 * Persistent grid, one 128x128 output tile per CTA iteration from the device scheduler
 * (gemm_sched.cuh); 8 warps of 64x32; a 4-stage cp.async pipeline of 128-byte contraction
 * slices (64 bf16 or 128 fp8 elements) in XOR-swizzled shared memory feeding ldmatrix +
 * mma.sync. Scales:
 *   ROW      — in the epilogue, acc * sa[row] * sb[col].
 *   BLOCK128 — one 128-element slice is exactly one scale block (groups are 128-aligned):
 *              the slice is accumulated in the tensor cores into a zeroed partial, then
 *              promoted into the f32 accumulator with the scale product (DeepGEMM style).
 *   MX32     — the same promotion per 32-element k-step (one mma.k32 step = one MX block).
 *              Chosen over dequantising tiles to bf16 in shared memory because it keeps the
 *              operands in fp8 (half the shared-memory traffic, fp8 mma rate) and is exact:
 *              the e8m0 scale product is a power of two, so promotion adds no rounding
 *              beyond the f32 accumulation itself.
 * Scales are staged per pipeline stage in shared memory (as f32) by ordinary loads.
 * Rows/columns past a group's or the tensor's end are zero-filled on load and masked on
 * store; contraction tails are zero-filled; operands that are not contraction-contiguous
 * and 16-byte aligned (per tile: a K-grouped group may start at any token) are gathered
 * element by element into the same shared layout.
 */
#include "gemm_mma.cuh"
#include "gemm_scales.cuh"
#include "cuda_smem_optin.h"

namespace {

constexpr int BM = 128, BN = 128, BKB = 128 /* bytes of contraction per stage */;
constexpr int STAGES = 4, NTHR = 256;
constexpr int A_BYTES = BM * BKB, B_BYTES = BN * BKB;

template <int SC>
struct qg_sc_cfg {
    static constexpr int KB = SC == QG_SC_MX32 ? 4 : (SC == QG_SC_BLOCK128 ? 1 : 0);
    static constexpr int FLOATS = KB * (BM + BN); /* per stage */
};

__host__ __device__ constexpr size_t qg_portable_smem_fixed(int floats)
{
    return (size_t)STAGES * (A_BYTES + B_BYTES) + (size_t)STAGES * floats * 4;
}

struct qg_tile_ctx {
    int g;
    int64_t r0, c0, r_end, kstart, klen;
    int64_t b_grp;
    bool vec_a, vec_b;
};

/* One 16-byte chunk of an operand row into shared memory. kbyte: byte offset of the chunk
 * inside the group's contraction range. */
template <int ESZ>
__device__ __forceinline__ void qg_load_chunk(uint8_t *dst, const qg_operand &op, int64_t grp, int64_t row,
                                              int64_t row_end, int64_t kstart, int64_t klen,
                                              int64_t kbyte, bool vec)
{
    if (vec) {
        const int64_t rem = klen * ESZ - kbyte;
        const int bytes = (row < row_end && rem > 0) ? (rem >= 16 ? 16 : (int)rem) : 0;
        const uint8_t *src = bytes ? op.ptr + (grp * op.s_grp + row * op.s_row + kstart) * ESZ + kbyte
                                   : op.ptr;
        qg_cp_async16(qg_smem_u32(dst), src, bytes);
    } else {
        uint32_t w[4] = {0u, 0u, 0u, 0u};
        if (row < row_end) {
            const int64_t k0 = kbyte / ESZ;
#pragma unroll
            for (int e = 0; e < 16 / ESZ; ++e) {
                const int64_t kel = k0 + e;
                if (kel < klen) {
                    const int64_t idx = grp * op.s_grp + row * op.s_row + (kstart + kel) * op.s_k;
                    uint32_t v;
                    if (ESZ == 2) v = __ldg((const uint16_t *)op.ptr + idx);
                    else v = __ldg(op.ptr + idx);
                    const int bit = (e * ESZ) * 8;
                    w[bit >> 5] |= v << (bit & 31);
                }
            }
        }
        *(uint4 *)dst = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

template <int E, int SC>
__global__ void __launch_bounds__(NTHR, 1)
qg_portable_kernel(const qg_problem p, int vec_a_static, int vec_b_static, int pair_ok)
{
    constexpr int ESZ = E == QG_ELEM_BF16 ? 2 : 1;
    constexpr int KB = qg_sc_cfg<SC>::KB;
    constexpr int SCF = qg_sc_cfg<SC>::FLOATS;
    extern __shared__ __align__(128) uint8_t smem[];
    uint8_t *sA = smem;
    uint8_t *sB = smem + STAGES * A_BYTES;
    float *sS = (float *)(sB + STAGES * B_BYTES);
    int *sched_mem = (int *)(sS + STAGES * SCF);

    qg_sched s;
    if (!qg_sched_build<BM, BN>(p, sched_mem, s)) return;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3; /* warp tile: rows wm*64.., cols wn*32.. */

    for (int t = blockIdx.x; t < s.total; t += gridDim.x) {
        qg_tile_ctx tc;
        qg_sched_tile<BM, BN>(p, s, t, tc.g, tc.r0, tc.c0);
        const int g = tc.g;
        const int64_t gs = s.bounds[g], ge = s.bounds[g + 1];
        if (p.kind == QG_M_GROUPED) {
            tc.r_end = ge; tc.kstart = 0; tc.klen = p.kdim; tc.b_grp = g;
        } else {
            tc.r_end = p.rows; tc.kstart = gs; tc.klen = ge - gs; tc.b_grp = 0;
        }
        const bool kal = ((tc.kstart * ESZ) & 15) == 0;
        tc.vec_a = vec_a_static && kal;
        tc.vec_b = vec_b_static && kal;
        const int nk = (int)((tc.klen * ESZ + BKB - 1) / BKB);

        auto load_tile = [&](int stage, int kt) {
            uint8_t *As = sA + stage * A_BYTES;
            uint8_t *Bs = sB + stage * B_BYTES;
            const int64_t kb0 = (int64_t)kt * BKB;
#pragma unroll
            for (int i = 0; i < (BM * 8) / NTHR; ++i) {
                const int id = tid + i * NTHR, r = id >> 3, c = id & 7;
                qg_load_chunk<ESZ>(As + r * 128 + ((c ^ (r & 7)) << 4), p.a, 0, tc.r0 + r, tc.r_end,
                                   tc.kstart, tc.klen, kb0 + c * 16, tc.vec_a);
            }
#pragma unroll
            for (int i = 0; i < (BN * 8) / NTHR; ++i) {
                const int id = tid + i * NTHR, r = id >> 3, c = id & 7;
                qg_load_chunk<ESZ>(Bs + r * 128 + ((c ^ (r & 7)) << 4), p.b, tc.b_grp, tc.c0 + r, p.cols,
                                   tc.kstart, tc.klen, kb0 + c * 16, tc.vec_b);
            }
            if constexpr (SC == QG_SC_BLOCK128) {
                float *ss = sS + stage * SCF;
                const int64_t kb = (tc.kstart + kb0) / 128; /* ESZ == 1 */
                for (int i = tid; i < BM + BN; i += NTHR) {
                    float v = 0.f;
                    if (i < BM) {
                        const int64_t r = tc.r0 + i;
                        if (r < tc.r_end) v = qg_block_scale(p.sa, 0, r, kb);
                    } else {
                        const int64_t c = tc.c0 + (i - BM);
                        if (c < p.cols) v = qg_block_scale(p.sb, g, c, kb);
                    }
                    ss[i] = v;
                }
            } else if constexpr (SC == QG_SC_MX32) {
                float *ss = sS + stage * SCF;
                for (int i = tid; i < KB * (BM + BN); i += NTHR) {
                    const int j = i / (BM + BN), x = i - j * (BM + BN);
                    const int64_t kbl = (int64_t)kt * 4 + j;
                    float v = 0.f;
                    if (kbl * 32 < tc.klen) {
                        if (x < BM) {
                            const int64_t r = tc.r0 + x;
                            if (r < tc.r_end) v = qg_mx_scale(p, s, 0, g, r, kbl);
                        } else {
                            const int64_t c = tc.c0 + (x - BM);
                            if (c < p.cols) v = qg_mx_scale(p, s, 1, g, c, kbl);
                        }
                    }
                    ss[i] = v;
                }
            }
        };

        float acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

#pragma unroll
        for (int st = 0; st < STAGES - 1; ++st) {
            if (st < nk) load_tile(st, st);
            qg_cp_async_commit();
        }

        for (int kt = 0; kt < nk; ++kt) {
            qg_cp_async_wait<STAGES - 2>();
            __syncthreads();
            {
                const int nxt = kt + STAGES - 1;
                if (nxt < nk) load_tile(nxt % STAGES, nxt);
                qg_cp_async_commit();
            }
            const int stage = kt % STAGES;
            const uint8_t *As = sA + stage * A_BYTES;
            const uint8_t *Bs = sB + stage * B_BYTES;
            const float *ss = sS + stage * SCF;
            float part[4][4][4];
            if constexpr (SC == QG_SC_BLOCK128) {
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j)
#pragma unroll
                        for (int e = 0; e < 4; ++e) part[i][j][e] = 0.f;
            }
#pragma unroll
            for (int ks = 0; ks < 4; ++ks) {
                uint32_t af[4][4], bfr[4][2];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int row = wm * 64 + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                    const int ch = ks * 2 + (lane >> 4);
                    qg_ldmatrix_x4(af[i][0], af[i][1], af[i][2], af[i][3],
                                   qg_smem_u32(As + row * 128 + ((ch ^ (row & 7)) << 4)));
                }
#pragma unroll
                for (int jj = 0; jj < 2; ++jj) {
                    const int n = wn * 32 + jj * 16 + (lane & 7) + (lane >> 4) * 8;
                    const int ch = ks * 2 + ((lane >> 3) & 1);
                    qg_ldmatrix_x4(bfr[2 * jj][0], bfr[2 * jj][1], bfr[2 * jj + 1][0], bfr[2 * jj + 1][1],
                                   qg_smem_u32(Bs + n * 128 + ((ch ^ (n & 7)) << 4)));
                }
                if constexpr (SC == QG_SC_MX32) {
#pragma unroll
                    for (int i = 0; i < 4; ++i)
#pragma unroll
                        for (int j = 0; j < 4; ++j)
#pragma unroll
                            for (int e = 0; e < 4; ++e) part[i][j][e] = 0.f;
                }
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        if constexpr (SC == QG_SC_NONE || SC == QG_SC_ROW) qg_mma<E>(acc[i][j], af[i], bfr[j]);
                        else qg_mma<E>(part[i][j], af[i], bfr[j]);
                    }
                if constexpr (SC == QG_SC_MX32) {
                    const float *sa = ss + ks * (BM + BN), *sb = sa + BM;
#pragma unroll
                    for (int i = 0; i < 4; ++i)
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const float va = sa[wm * 64 + i * 16 + (lane >> 2) + h * 8];
#pragma unroll
                            for (int j = 0; j < 4; ++j) {
                                const int c = wn * 32 + j * 8 + (lane & 3) * 2;
                                acc[i][j][2 * h] += (va * sb[c]) * part[i][j][2 * h];
                                acc[i][j][2 * h + 1] += (va * sb[c + 1]) * part[i][j][2 * h + 1];
                            }
                        }
                }
            }
            if constexpr (SC == QG_SC_BLOCK128) {
                const float *sa = ss, *sb = ss + BM;
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const float va = sa[wm * 64 + i * 16 + (lane >> 2) + h * 8];
#pragma unroll
                        for (int j = 0; j < 4; ++j) {
                            const int c = wn * 32 + j * 8 + (lane & 3) * 2;
                            acc[i][j][2 * h] += (va * sb[c]) * part[i][j][2 * h];
                            acc[i][j][2 * h + 1] += (va * sb[c + 1]) * part[i][j][2 * h + 1];
                        }
                    }
            }
        }
        qg_cp_async_wait<0>();
        __syncthreads(); /* every warp is done with the stages before the next tile refills them */

        /* epilogue */
        const bool empty = tc.klen == 0;
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int64_t r = tc.r0 + wm * 64 + i * 16 + (lane >> 2) + h * 8;
                if (r >= tc.r_end) continue;
                float va = 1.f;
                if constexpr (SC == QG_SC_ROW) { if (!empty) va = qg_row_scale(p.sa, g, r); }
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int64_t c = tc.c0 + wn * 32 + j * 8 + (lane & 3) * 2;
                    if (c >= p.cols) continue;
                    float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
                    if (empty) {
                        v0 = 0.f; v1 = 0.f;
                    } else if constexpr (SC == QG_SC_ROW) {
                        v0 = v0 * va * qg_row_scale(p.sb, g, c);
                        if (c + 1 < p.cols) v1 = v1 * va * qg_row_scale(p.sb, g, c + 1);
                    }
                    qg_store2(p, pair_ok, g, r, c, v0, v1);
                }
            }
    }
}

template <int E, int SC>
int qg_launch_portable(const qg_problem *p, cudaStream_t stream, int vec_a, int vec_b, int pair_ok,
                       const char **why)
{
    const size_t smem = qg_portable_smem_fixed(qg_sc_cfg<SC>::FLOATS) +
                        (size_t)qg_sched_smem_ints(p->groups) * 4;
    int dev = 0, sms = 0, maxsm = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&maxsm, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if ((size_t)maxsm < smem) {
        *why = "portable grouped GEMM: not enough shared memory on this GPU (too many groups?)";
        return 1;
    }
    auto kern = qg_portable_kernel<E, SC>;
    if (qgmm_cuda_allow_max_smem(kern, smem) != cudaSuccess) {
        *why = "portable grouped GEMM: cudaFuncSetAttribute failed";
        return 2;
    }
    /* Upper bound of tiles without reading offs; the grid never exceeds one CTA per SM. */
    const int64_t tr = (p->rows + BM - 1) / BM, tcn = (p->cols + BN - 1) / BN;
    int64_t bound = p->kind == QG_M_GROUPED ? (tr + p->groups) * tcn : (int64_t)p->groups * tr * tcn;
    int64_t grid = sms > 0 ? sms : 1;
    if (bound < grid) grid = bound;
    if (grid < 1) grid = 1;
    kern<<<(unsigned)grid, NTHR, smem, stream>>>(*p, vec_a, vec_b, pair_ok);
    if (cudaGetLastError() != cudaSuccess) {
        *why = "portable grouped GEMM: kernel launch failed";
        return 2;
    }
    return 0;
}

/* The cp.async path needs contraction-contiguous rows whose starts are 16-byte aligned. */
int qg_operand_vec_ok(const qg_operand &o, int esz)
{
    return o.s_k == 1 && ((uintptr_t)o.ptr % 16) == 0 && ((o.s_row * esz) % 16) == 0 &&
           ((o.s_grp * esz) % 16) == 0;
}

} // namespace

int qgmm_cuda_gemm_portable(const qg_problem *p, cudaStream_t stream, const char **why)
{
    const int esz = p->elem == QG_ELEM_BF16 ? 2 : 1;
    const int vec_a = qg_operand_vec_ok(p->a, esz), vec_b = qg_operand_vec_ok(p->b, esz);
    const int osz = p->out_f32 ? 4 : 2;
    const int pair_ok = p->so_c == 1 && (p->so_r % 2) == 0 && (p->so_g % 2) == 0 &&
                        ((uintptr_t)p->out % (2 * osz)) == 0;
    if (p->elem != QG_ELEM_BF16) {
        int dev = 0, maj = 0, min = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&maj, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&min, cudaDevAttrComputeCapabilityMinor, dev);
        if (maj * 10 + min < 89) {
            *why = "FP8 grouped GEMM needs an sm_89+ GPU (fp8 mma.sync)";
            return 1;
        }
    }
#define QG_CASE(E, SC)                                                                             \
    if (p->elem == E && p->scale_mode == SC)                                                      \
        return qg_launch_portable<E, SC>(p, stream, vec_a, vec_b, pair_ok, why);
    QG_CASE(QG_ELEM_BF16, QG_SC_NONE)
    QG_CASE(QG_ELEM_E4M3, QG_SC_ROW)
    QG_CASE(QG_ELEM_E4M3, QG_SC_BLOCK128)
    QG_CASE(QG_ELEM_E4M3, QG_SC_MX32)
    QG_CASE(QG_ELEM_E5M2, QG_SC_ROW)
    QG_CASE(QG_ELEM_E5M2, QG_SC_BLOCK128)
    QG_CASE(QG_ELEM_E5M2, QG_SC_MX32)
#undef QG_CASE
    *why = "portable grouped GEMM: this element type / recipe combination is not implemented";
    return 1;
}
