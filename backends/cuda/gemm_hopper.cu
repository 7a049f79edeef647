/*
 * gemm_hopper.cu — the Hopper (sm_90a) grouped GEMM for the hot cases: M-grouped BF16 and
 * FP8 rowwise (e4m3 / e5m2), K-contiguous operands with 16-byte aligned rows.
 *
 * Persistent grid of 384-thread CTAs: warpgroup 0 is the producer (one thread issues TMA
 * `cp.async.bulk.tensor` loads of 128-byte-wide A (128 rows) and B (256 rows) slices into a
 * 4-stage shared-memory ring, completing on "full" mbarriers), warpgroups 1 and 2 are the
 * consumers (each a 64x256 half of the 128x256 tile with wgmma m64n256, releasing stages
 * on "empty" mbarriers). setmaxnreg moves registers from the producer to the consumers.
 * Tiles come from the same device scheduler as the portable kernel (gemm_sched.cuh), so
 * uneven and empty groups and bad offsets behave identically. A tile's A rows past its
 * group's end belong to the next group (or are zero past M, TMA OOB fill): they only
 * feed output rows that the epilogue masks, so they never reach memory. K tails are zero
 * (OOB fill) in both operands. The epilogue applies the rowwise scales and stores bf16/f32
 * straight from the accumulators.
 */
#include "gemm_scales.cuh"
#include "gemm_wgmma.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>

namespace {

constexpr int HBM = 128, HBN = 256, HBKB = 128, HSTAGES = 4, HTHR = 384;
constexpr int HA_BYTES = HBM * HBKB, HB_BYTES = HBN * HBKB;
constexpr size_t H_SMEM_FIXED = 1024 /* alignment slack */ + (size_t)HSTAGES * (HA_BYTES + HB_BYTES) +
                                (size_t)2 * HSTAGES * 8;

#ifdef QG_HAS_WGMMA
__device__ __forceinline__ uint32_t h_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(h_smem(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(h_smem(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(h_smem(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    uint32_t done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(h_smem(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}
__device__ __forceinline__ void tma_2d(uint32_t dst, const CUtensorMap *map, int c0, int c1, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(h_smem(bar))
                 : "memory");
}
__device__ __forceinline__ void tma_3d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2,
                                       uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(h_smem(bar))
                 : "memory");
}
/* K-major operand in 128-byte-swizzled smem: rows of 128 bytes, 8-row atoms 1024 apart. */
__device__ __forceinline__ uint64_t wg_desc(uint32_t addr)
{
    uint64_t d = (uint64_t)((addr & 0x3FFFFu) >> 4);
    d |= (uint64_t)1 << 16;            /* leading byte offset (unused for this layout) */
    d |= (uint64_t)(1024 >> 4) << 32;  /* stride byte offset: next 8-row atom */
    d |= (uint64_t)1 << 62;            /* 128B swizzle */
    return d;
}
#endif

template <int E, int SC>
__global__ void __launch_bounds__(HTHR, 1)
qg_hopper_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                 const qg_problem p, int pair_ok)
{
#ifdef QG_HAS_WGMMA
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *sA = smem;
    uint8_t *sB = smem + HSTAGES * HA_BYTES;
    uint64_t *full = (uint64_t *)(sB + HSTAGES * HB_BYTES);
    uint64_t *empty = full + HSTAGES;
    int *sched_mem = (int *)(empty + HSTAGES);

    qg_sched s;
    if (!qg_sched_build<HBM, HBN>(p, sched_mem, s)) return;
    if (threadIdx.x == 0) {
        for (int i = 0; i < HSTAGES; ++i) {
            mbar_init(&full[i], 1);
            mbar_init(&empty[i], 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    constexpr int ESZ = E == QG_ELEM_BF16 ? 2 : 1;
    constexpr int BKE = HBKB / ESZ; /* elements per slice */
    const int nk = (int)((p.kdim + BKE - 1) / BKE);
    const int wg = threadIdx.x / 128;

    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < s.total; t += gridDim.x) {
                int g; int64_t r0, c0;
                qg_sched_tile<HBM, HBN>(p, s, t, g, r0, c0);
                for (int kt = 0; kt < nk; ++kt, ++it) {
                    const int st = it % HSTAGES;
                    mbar_wait(&empty[st], ((it / HSTAGES) & 1) ^ 1);
                    mbar_expect_tx(&full[st], HA_BYTES + HB_BYTES);
                    tma_2d(h_smem(sA + st * HA_BYTES), &tmA, kt * BKE, (int)r0, &full[st]);
                    tma_3d(h_smem(sB + st * HB_BYTES), &tmB, kt * BKE, (int)c0, g, &full[st]);
                }
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int cw = wg - 1;                  /* consumer half: rows cw*64 .. +63 */
        const int lt = threadIdx.x % 128, warp = lt / 32, lane = lt % 32;
        int it = 0;
        for (int t = blockIdx.x; t < s.total; t += gridDim.x) {
            int g; int64_t r0, c0;
            qg_sched_tile<HBM, HBN>(p, s, t, g, r0, c0);
            const int64_t r_end = s.bounds[g + 1];
            float acc[128];
#pragma unroll
            for (int i = 0; i < 128; ++i) acc[i] = 0.f;
            for (int kt = 0; kt < nk; ++kt, ++it) {
                const int st = it % HSTAGES;
                mbar_wait(&full[st], (it / HSTAGES) & 1);
                const uint64_t da = wg_desc(h_smem(sA + st * HA_BYTES + cw * 64 * 128));
                const uint64_t db = wg_desc(h_smem(sB + st * HB_BYTES));
                asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
                for (int ks = 0; ks < 4; ++ks) {
                    /* +32 bytes along K inside the swizzle atom = +2 in the address field */
                    if constexpr (E == QG_ELEM_BF16) qg_wgmma_bf16(acc, da + 2 * ks, db + 2 * ks);
                    else if constexpr (E == QG_ELEM_E4M3) qg_wgmma_e4m3(acc, da + 2 * ks, db + 2 * ks);
                    else qg_wgmma_e5m2(acc, da + 2 * ks, db + 2 * ks);
                }
                asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
                /* keep this slice's MMAs in flight; the previous slice's are done now,
                 * so its stage goes back to the producer */
                asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
                if (kt > 0) mbar_arrive(&empty[(it + HSTAGES - 1) % HSTAGES]);
            }
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            if (nk > 0) mbar_arrive(&empty[(it + HSTAGES - 1) % HSTAGES]);
            /* epilogue: acc[j*4 + h*2 + e] is row lane/4 + 8h, col j*8 + (lane%4)*2 + e */
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int64_t r = r0 + cw * 64 + warp * 16 + lane / 4 + h * 8;
                if (r >= r_end) continue;
                float va = 1.f;
                if constexpr (SC == QG_SC_ROW) va = qg_row_scale(p.sa, g, r);
#pragma unroll
                for (int j = 0; j < 32; ++j) {
                    const int64_t c = c0 + j * 8 + (lane % 4) * 2;
                    if (c >= p.cols) continue;
                    float v0 = acc[j * 4 + h * 2], v1 = acc[j * 4 + h * 2 + 1];
                    if constexpr (SC == QG_SC_ROW) {
                        v0 = v0 * va * qg_row_scale(p.sb, g, c);
                        if (c + 1 < p.cols) v1 = v1 * va * qg_row_scale(p.sb, g, c + 1);
                    }
                    qg_store2(p, pair_ok, g, r, c, v0, v1);
                }
            }
        }
    }
#else
    __trap();
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 qg_encode_fn()
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    static bool tried = false;
    if (!tried) {
        tried = true;
        void *f = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (PFN_cuTensorMapEncodeTiled_v12000)f;
    }
    return fn;
}

template <int E, int SC>
int qg_launch_hopper(const qg_problem *p, cudaStream_t stream, const char **why)
{
    const int esz = E == QG_ELEM_BF16 ? 2 : 1;
    PFN_cuTensorMapEncodeTiled_v12000 enc = qg_encode_fn();
    if (!enc) { *why = "Hopper grouped GEMM: cuTensorMapEncodeTiled not available"; return 1; }
    const CUtensorMapDataType dt = E == QG_ELEM_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    const int bke = HBKB / esz;
    CUtensorMap ta, tb;
    memset(&ta, 0, sizeof ta);
    memset(&tb, 0, sizeof tb);
    {
        const cuuint64_t dims[2] = {(cuuint64_t)p->kdim, (cuuint64_t)(p->rows > 0 ? p->rows : 1)};
        const cuuint64_t strides[1] = {(cuuint64_t)(p->a.s_row * esz)};
        const cuuint32_t box[2] = {(cuuint32_t)bke, (cuuint32_t)HBM};
        const cuuint32_t es[2] = {1, 1};
        if (enc(&ta, dt, 2, (void *)p->a.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for a rejected";
            return 1;
        }
    }
    {
        const cuuint64_t dims[3] = {(cuuint64_t)p->kdim, (cuuint64_t)p->cols, (cuuint64_t)p->groups};
        const cuuint64_t strides[2] = {(cuuint64_t)(p->b.s_row * esz),
                                       (cuuint64_t)((p->groups > 1 ? p->b.s_grp : p->b.s_row * p->cols) * esz)};
        const cuuint32_t box[3] = {(cuuint32_t)bke, (cuuint32_t)HBN, 1};
        const cuuint32_t es[3] = {1, 1, 1};
        if (enc(&tb, dt, 3, (void *)p->b.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for b rejected";
            return 1;
        }
    }
    const size_t smem = H_SMEM_FIXED + (size_t)qg_sched_smem_ints(p->groups) * 4;
    int dev = 0, sms = 0, maxsm = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&maxsm, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if ((size_t)maxsm < smem) { *why = "Hopper grouped GEMM: too many groups for shared memory"; return 1; }
    auto kern = qg_hopper_kernel<E, SC>;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess) {
        *why = "Hopper grouped GEMM: cudaFuncSetAttribute failed";
        return 2;
    }
    const int64_t tr = (p->rows + HBM - 1) / HBM, tcn = (p->cols + HBN - 1) / HBN;
    int64_t grid = sms > 0 ? sms : 1;
    const int64_t bound = (tr + p->groups) * tcn;
    if (bound < grid) grid = bound;
    if (grid < 1) grid = 1;
    const int osz = p->out_f32 ? 4 : 2;
    const int pair_ok = p->so_c == 1 && (p->so_r % 2) == 0 && ((uintptr_t)p->out % (2 * osz)) == 0;
    kern<<<(unsigned)grid, HTHR, smem, stream>>>(ta, tb, *p, pair_ok);
    if (cudaGetLastError() != cudaSuccess) { *why = "Hopper grouped GEMM: kernel launch failed"; return 2; }
    return 0;
}

} // namespace

int qgmm_cuda_gemm_hopper(const qg_problem *p, cudaStream_t stream, const char **why)
{
    int dev = 0, maj = 0, min = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&maj, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&min, cudaDevAttrComputeCapabilityMinor, dev);
    if (maj != 9 || min != 0) { *why = "Hopper grouped GEMM: needs an sm_90 GPU"; return 1; }
    if (p->kind != QG_M_GROUPED) { *why = "Hopper grouped GEMM: only M-grouped is implemented"; return 1; }
    if (p->elem != QG_ELEM_BF16 && p->out_f32) {
        /* QGMMA accumulates fp8 products with reduced precision (measured rel. error ~3e-4
         * at K=256..1024, like torch's use_fast_accum): fine under bf16 output (1e-2) but
         * not under the f32 contract (1e-5), which the portable kernel meets. */
        *why = "Hopper grouped GEMM: FP8 with f32 output needs promoted accumulation (portable kernel)";
        return 1;
    }
    if (p->scale_mode != QG_SC_NONE && p->scale_mode != QG_SC_ROW) {
        *why = "Hopper grouped GEMM: only BF16 and FP8 rowwise are implemented";
        return 1;
    }
    const int esz = p->elem == QG_ELEM_BF16 ? 2 : 1;
    const bool tma_ok = p->a.s_k == 1 && p->b.s_k == 1 && ((uintptr_t)p->a.ptr % 16) == 0 &&
                        ((uintptr_t)p->b.ptr % 16) == 0 && ((p->a.s_row * esz) % 16) == 0 &&
                        ((p->b.s_row * esz) % 16) == 0 && ((p->b.s_grp * esz) % 16) == 0 &&
                        p->kdim > 0 && p->rows < (1ll << 31) && p->cols < (1ll << 31) &&
                        (p->groups == 1 || p->b.s_grp > 0);
    if (!tma_ok) { *why = "Hopper grouped GEMM: operands not K-contiguous with 16-byte aligned rows"; return 1; }
#define QG_HCASE(E, SC) \
    if (p->elem == E && p->scale_mode == SC) return qg_launch_hopper<E, SC>(p, stream, why);
    QG_HCASE(QG_ELEM_BF16, QG_SC_NONE)
    QG_HCASE(QG_ELEM_E4M3, QG_SC_ROW)
    QG_HCASE(QG_ELEM_E5M2, QG_SC_ROW)
#undef QG_HCASE
    *why = "Hopper grouped GEMM: element type / recipe not implemented";
    return 1;
}
