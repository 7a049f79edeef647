/*
 * gemm_hopper.cu — the Hopper (sm_90a) grouped GEMM: BF16, FP8 rowwise, FP8 blockwise and
 * MXFP8 (e4m3 / e5m2; dequantized to bf16 in a workspace, then the BF16 kernel:
 * gemm_mx_dequant.cuh), M- and K-grouped, contraction-contiguous operands with 16-byte
 * aligned rows, or BF16 operands contiguous along their rows / columns (MN-major: the
 * dgrad weights' (E, K, N) view, row-major dy and x in wgrad) (bf16 output for FP8
 * rowwise and blockwise, whose f32 output takes the portable kernel; MXFP8 bf16 or f32).
 *
 * Persistent grid of 384-thread CTAs: warpgroup 0 is the producer (one thread issues TMA
 * `cp.async.bulk.tensor` loads of 128-byte-wide A (128 rows) and B (256 rows) slices into a
 * shared-memory ring, completing on "full" mbarriers), warpgroups 1 and 2 are the
 * consumers (each a 64x256 half of the 128x256 tile with wgmma m64n256, releasing stages
 * on "empty" mbarriers). setmaxnreg moves registers from the producer to the consumers.
 * Tiles come from the same device scheduler as the portable kernel (gemm_sched.cuh), so
 * uneven and empty groups and bad offsets behave identically. A tile's A rows past its
 * group's end belong to the next group (or are zero past M, TMA OOB fill): they only
 * feed output rows that the epilogue masks, so they never reach memory. K tails are zero
 * (OOB fill) in both operands. The epilogue applies the rowwise scales and either writes
 * the tile through a 128B-swizzled shared-memory staging area that a TMA bulk store copies
 * out while the warpgroup already runs its next tile's main loop, or (outputs TMA cannot
 * store, half tiles that cross a group's end) stores straight from the accumulators.
 * The fast kernel's ping-pong form gives each consumer warpgroup its own 128x128 tile, the
 * two taking turns on the tensor cores (one's epilogue under the other's main loop).
 * The kernels: gemm_hopper_common.cuh (shared pieces), gemm_hopper_fast.cuh,
 * gemm_hopper_pingpong.cuh, gemm_hopper_promo.cuh, gemm_mx_dequant.cuh; this file holds
 * the tensor maps, configurations and launch.
 */
#include "gemm_hopper_fast.cuh"
#include "gemm_hopper_pingpong.cuh"
#include "gemm_hopper_promo.cuh"
#include "gemm_mx_dequant.cuh"
#include "cuda_smem_optin.h"

#include <stdlib.h>
#include <string.h>

namespace {

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

/* Tensor maps of a (M, K) and b (E, N, K) with 128-byte-wide boxes of `brows_a` / `brows_b`
 * rows (128B swizzle, zero fill out of bounds). An MN-major operand (s_k != 1: BF16 with
 * s_row == 1, qgmm_cuda_gemm_hopper checked it) is mapped the other way round: its rows /
 * columns inner, the contraction outer, boxes of 64 x one slice (the fast kernel's). */
int qg_make_maps(const qg_problem *p, int brows_a, int brows_b, CUtensorMap *ta, CUtensorMap *tb, const char **why)
{
    const int esz = p->elem == QG_ELEM_BF16 ? 2 : 1;
    PFN_cuTensorMapEncodeTiled_v12000 enc = qg_encode_fn();
    if (!enc) { *why = "Hopper grouped GEMM: cuTensorMapEncodeTiled not available"; return 1; }
    const CUtensorMapDataType dt = p->elem == QG_ELEM_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
    const int bke = HBKB / esz;
    memset(ta, 0, sizeof *ta);
    memset(tb, 0, sizeof *tb);
    if (p->a.s_k != 1) {
        const cuuint64_t dims[2] = {(cuuint64_t)(p->rows > 0 ? p->rows : 1), (cuuint64_t)p->kdim};
        const cuuint64_t strides[1] = {(cuuint64_t)(p->a.s_k * esz)};
        const cuuint32_t box[2] = {64, (cuuint32_t)bke};
        const cuuint32_t es[2] = {1, 1};
        if (enc(ta, dt, 2, (void *)p->a.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for a rejected";
            return 1;
        }
    } else {
        const cuuint64_t dims[2] = {(cuuint64_t)p->kdim, (cuuint64_t)(p->rows > 0 ? p->rows : 1)};
        const cuuint64_t strides[1] = {(cuuint64_t)(p->a.s_row * esz)};
        const cuuint32_t box[2] = {(cuuint32_t)bke, (cuuint32_t)brows_a};
        const cuuint32_t es[2] = {1, 1};
        if (enc(ta, dt, 2, (void *)p->a.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for a rejected";
            return 1;
        }
    }
    if (p->b.s_k != 1) { /* MN-major: (columns, contraction[, group]) */
        const bool kg = p->kind == QG_K_GROUPED;
        const cuuint64_t dims[3] = {(cuuint64_t)p->cols, (cuuint64_t)p->kdim, (cuuint64_t)p->groups};
        const cuuint64_t strides[2] = {(cuuint64_t)(p->b.s_k * esz),
                                       (cuuint64_t)((p->groups > 1 ? p->b.s_grp : p->b.s_k * p->kdim) * esz)};
        const cuuint32_t box[3] = {64, (cuuint32_t)bke, 1};
        const cuuint32_t es[3] = {1, 1, 1};
        if (enc(tb, dt, kg ? 2 : 3, (void *)p->b.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for b rejected";
            return 1;
        }
    } else if (p->kind == QG_K_GROUPED) { /* b (M, K) stored K x M (token-contiguous) */
        const cuuint64_t dims[2] = {(cuuint64_t)p->kdim, (cuuint64_t)p->cols};
        const cuuint64_t strides[1] = {(cuuint64_t)(p->b.s_row * esz)};
        const cuuint32_t box[2] = {(cuuint32_t)bke, (cuuint32_t)brows_b};
        const cuuint32_t es[2] = {1, 1};
        if (enc(tb, dt, 2, (void *)p->b.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for b rejected";
            return 1;
        }
    } else {
        const cuuint64_t dims[3] = {(cuuint64_t)p->kdim, (cuuint64_t)p->cols, (cuuint64_t)p->groups};
        const cuuint64_t strides[2] = {(cuuint64_t)(p->b.s_row * esz),
                                       (cuuint64_t)((p->groups > 1 ? p->b.s_grp : p->b.s_row * p->cols) * esz)};
        const cuuint32_t box[3] = {(cuuint32_t)bke, (cuuint32_t)brows_b, 1};
        const cuuint32_t es[3] = {1, 1, 1};
        if (enc(tb, dt, 3, (void *)p->b.ptr, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            *why = "Hopper grouped GEMM: tensor map for b rejected";
            return 1;
        }
    }
    return 0;
}

/* Tensor map of the output for the epilogue's TMA stores: (column, row, group) with
 * 128-byte x 64-row boxes, 128B swizzle. Returns 0 when the output cannot take TMA
 * stores (not row-contiguous, rows or groups not 16-byte aligned): the kernel then
 * stores from registers. */
int qg_make_out_map(const qg_problem *p, CUtensorMap *to)
{
    const int osz = p->out_f32 ? 4 : 2;
    const bool kg = p->kind == QG_K_GROUPED;
    if (p->so_c != 1 || ((uintptr_t)p->out % 16) != 0 || (p->so_r * osz) % 16 != 0 || p->so_r < p->cols ||
        (kg && ((p->so_g * osz) % 16 != 0 || p->so_g < p->so_r * p->rows)) || p->rows <= 0 || p->cols <= 0)
        return 0;
    PFN_cuTensorMapEncodeTiled_v12000 enc = qg_encode_fn();
    if (!enc) return 0;
    memset(to, 0, sizeof *to);
    const cuuint64_t dims[3] = {(cuuint64_t)p->cols, (cuuint64_t)p->rows, (cuuint64_t)(kg ? p->groups : 1)};
    const cuuint64_t strides[2] = {(cuuint64_t)(p->so_r * osz),
                                   (cuuint64_t)((kg ? p->so_g : p->so_r * p->rows) * osz)};
    const cuuint32_t box[3] = {(cuuint32_t)(128 / osz), 64, 1};
    const cuuint32_t es[3] = {1, 1, 1};
    return enc(to, p->out_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, p->out, dims,
               strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
               CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <typename K>
int qg_launch_tma_kernel(K kern, const qg_problem *p, cudaStream_t stream, int bm, int bn, int cl, size_t smem,
                         int sms, const char **why)
{
    CUtensorMap ta, tb, to;
    const int rc = qg_make_maps(p, bm, bn / cl, &ta, &tb, why);
    if (rc) return rc;
    const int tma_out = qg_make_out_map(p, &to);
    if (!tma_out) memset(&to, 0, sizeof to);
    if (qgmm_cuda_allow_max_smem(kern, smem) != cudaSuccess) {
        *why = "Hopper grouped GEMM: cudaFuncSetAttribute failed";
        return 2;
    }
    /* one CTA (cluster) per SM (cluster slot), no more than there are tiles (tile pairs) */
    const int64_t tr = (p->rows + bm * cl - 1) / (bm * cl), tcn = (p->cols + bn - 1) / bn;
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)cl;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(HTHR, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = cl > 1 ? 1 : 0; /* a plain launch without clusters */
    int64_t units = sms > 0 ? sms : 1;
    if (cl > 1) {
        int clusters = 0;
        cfg.gridDim = dim3((unsigned)(units - units % cl), 1, 1);
        if (cudaOccupancyMaxActiveClusters(&clusters, kern, &cfg) != cudaSuccess || clusters < 1) {
            *why = "Hopper grouped GEMM: no cluster of this size fits";
            return 1;
        }
        units = clusters;
    }
    const int64_t bound = p->kind == QG_M_GROUPED ? (tr + p->groups) * tcn : (int64_t)p->groups * tr * tcn;
    if (bound < units) units = bound;
    if (units < 1) units = 1;
    cfg.gridDim = dim3((unsigned)(units * cl), 1, 1);
    const int osz = p->out_f32 ? 4 : 2;
    const int pair_ok = p->so_c == 1 && (p->so_r % 2) == 0 && ((uintptr_t)p->out % (2 * osz)) == 0;
    if (cudaLaunchKernelEx(&cfg, kern, ta, tb, to, *p, pair_ok, tma_out) != cudaSuccess ||
        cudaGetLastError() != cudaSuccess) {
        *why = "Hopper grouped GEMM: kernel launch failed";
        return 2;
    }
    return 0;
}

/* One Hopper kernel configuration: which kernel, ring depth, staging bytes per consumer,
 * CTAs per cluster, ping-pong, coarse promotion. */
struct qg_hconf {
    bool promo;  /* the 128x128 promoted kernel (FP8 blockwise), else the 128x256 fast one */
    int stages;
    int sb;      /* 0: epilogue from registers */
    int cl;      /* 2: B tiles multicast to a pair of CTAs */
    bool pp;     /* fast kernel: ping-pong consumers, a 128x128 tile each (one CTA) */
    int pk;      /* fast kernel, FP8 rowwise: promotion into f32 every pk slices (0: none) */
};

/* The configurations each kernel is built in; the benchmark names one through
 * qg_problem.variant (index + 1), the ops take the one qg_default_conf picks. */
enum { QG_CONF_STAGED = 0, /* TMA-store epilogue, one CTA */
       QG_CONF_REGS = 1,   /* register epilogue, deepest ring, one CTA: where a staged one does
                            * not fit beside the schedule of many groups */
       QG_CONF_CLUSTER = 2, /* TMA-store epilogue, B tiles multicast to a pair of CTAs */
       QG_CONF_PINGPONG = 3, /* fast kernel: ping-pong consumers, 4 stages x 32 KiB + 2 x 32 KiB
                              * staging */
       QG_CONF_PK_STAGED = 4, /* fast kernel, FP8 rowwise, coarse promotion (every QG_PK slices):
                               * one CTA */
       QG_CONF_PK_CLUSTER = 5, /* the same on a pair of CTAs */
       QG_CONF_PK_SMALL = 6, /* the same, one CTA, 2 stages: where 3 do not fit beside the
                              * schedule of many groups (the staging area holds the f32 sums, so
                              * there is no register-epilogue form) */
       QG_CONF_DEEP = 7 /* fast kernel, BF16: 4 stages + 16 KiB staging (two store passes per
                         * half), one CTA: fits only without the rowwise scales */ };
/* Slices (128 tokens each) the tensor cores sum between two promotions of the coarse-
 * promotion configurations: 64 = 8192 tokens, whose error (measured 2.6e-3 at any length,
 * the fast kernel's at 8192 tokens) is a quarter of the bf16-output bound, at the fast
 * kernel's speed within the noise; every 16 cost 3-17 % of the time for 1.9e-3
 * (docs/backends-cuda-gemm.md, "FP8 precision on Hopper"). */
constexpr int QG_PK = 64;
constexpr qg_hconf QG_FAST_CONFS[] = {{false, 3, 32768, 1}, {false, 4, 0, 1}, {false, 3, 32768, 2},
                                      {false, 4, 32768, 1, true}, {false, 3, 32768, 1, false, QG_PK},
                                      {false, 3, 32768, 2, false, QG_PK}, {false, 2, 32768, 1, false, QG_PK},
                                      {false, 4, 16384, 1}};
constexpr qg_hconf QG_PROMO_CONFS[] = {{true, 5, 16384, 1}, {true, 6, 0, 1}, {true, 5, 16384, 2}};
constexpr int QG_NFAST = 8, QG_NPROMO = 3;
/* K-grouped FP8 rowwise whose contraction (the problem's M tokens, of which any one group
 * may hold all: the group sizes are on the device) is longer than this takes the coarse
 * promotion: the fast kernel's tensor-core accumulation over a whole group loses precision
 * with the group's length. At this bound its worst case (one group) stays within half the
 * bf16-output bound (docs/numerics.md, "FP8 accumulation on Hopper"). */
constexpr int64_t QG_ROW_PROMO_TOKENS = 32768;

size_t qg_conf_smem(const qg_hconf &c, int groups, int scale_mode)
{
    const size_t fixed = c.promo ? qg_smem_fixed(c.stages, PA_BYTES, PB_BYTES, c.sb, qg_promo_sf(c.stages))
                         : c.pp  ? qg_smem_fixed(c.stages, PP_A_BYTES, PP_B_BYTES, c.sb, 2 * PP_SCALE_FLOATS)
                                 : qg_smem_fixed(c.stages, HA_BYTES, HB_BYTES, c.sb,
                                                 qg_fast_scale_floats(scale_mode, c.pk));
    return fixed + (size_t)qg_sched_smem_ints(groups) * 4;
}

/* The default configuration of a problem. BF16 with bf16 output takes the deep ring: the
 * consumers of the staged kernel waited for operands in a quarter of their samples (ncu,
 * K-grouped, 64 groups), and with the epilogue's passes compiled per output size
 * (qg_epi_tma_passes) the deep ring's two store passes per half no longer cost what the
 * fourth slice in flight gains: 1.02-1.20x the staged kernel's speed on 22 of the 24
 * issue-20 BF16 problems (both kinds, both layouts), 0.97-0.99x on the other two
 * (docs/backends-cuda-gemm.md). M-grouped FP8
 * rowwise takes the ping-pong kernel, which measured faster than the cooperative kernel on
 * every issue-20 shape. K-grouped FP8 rowwise (wgrad) takes the 2-CTA cluster, with the
 * coarse promotion past QG_ROW_PROMO_TOKENS: its tiles are short (a group's tokens deep) and
 * both CTAs of a pair share every B slice, so the multicast halves that operand's L2 reads.
 * Everything else stays on the cooperative kernel on one CTA: M-grouped pairs of 128-row tiles waste more rows at group ends and
 * leave half as many scheduling units, and the cluster measured slower there and no faster
 * for K-grouped BF16 or FP8 blockwise; the ping-pong kernel was slower K-grouped
 * (both recipes, every shape) and within noise or slower for BF16 M-grouped (figures:
 * docs/backends-cuda-gemm.md). */
int qg_default_conf(const qg_problem *p, bool promo, bool long_row)
{
    if (long_row) return QG_CONF_PK_CLUSTER;
    if (p->elem == QG_ELEM_BF16 && p->scale_mode == QG_SC_NONE && !p->out_f32) return QG_CONF_DEEP;
    if (p->scale_mode == QG_SC_ROW && p->kind == QG_K_GROUPED) return QG_CONF_CLUSTER;
    if (promo) return QG_CONF_STAGED;
    if (p->scale_mode == QG_SC_ROW) return QG_CONF_PINGPONG;
    return QG_CONF_STAGED;
}

template <int E, int SC, int MN = 0>
int qg_launch_conf(const qg_hconf &c, const qg_problem *p, cudaStream_t stream, size_t smem, int sms,
                   const char **why)
{
    if (c.pp) {
        if constexpr (SC == QG_SC_NONE || SC == QG_SC_ROW) {
            if (c.stages == 4 && c.sb == 32768)
                return qg_launch_tma_kernel(qg_hopper_pp_kernel<E, SC, 4, 32768, MN>, p, stream, PPM, PPN, 1, smem,
                                            sms, why);
        }
        *why = "Hopper grouped GEMM: configuration not built";
        return 1;
    }
#define QG_LC(PROMO, ST, SB, CL, PK)                                                                  \
    if (c.promo == PROMO && c.stages == ST && c.sb == SB && c.cl == CL && c.pk == PK) {              \
        if constexpr (PROMO) {                                                                       \
            if constexpr (SC == QG_SC_BLOCK128)                                                      \
                return qg_launch_tma_kernel(qg_hopper_promo_kernel<E, SC, ST, SB, CL>, p, stream, PBM, PBN, CL, \
                                            smem, sms, why);                                         \
        } else if constexpr ((SC == QG_SC_NONE && PK == 0) || SC == QG_SC_ROW) {                     \
            return qg_launch_tma_kernel(qg_hopper_kernel<E, SC, ST, SB, CL, MN, PK>, p, stream, HBM, HBN, CL,  \
                                        smem, sms, why);                                             \
        }                                                                                            \
    }
    QG_LC(false, 3, 32768, 1, 0)
    QG_LC(false, 4, 0, 1, 0)
    QG_LC(false, 3, 32768, 2, 0)
    QG_LC(false, 3, 32768, 1, QG_PK)
    QG_LC(false, 3, 32768, 2, QG_PK)
    QG_LC(false, 2, 32768, 1, QG_PK)
    if constexpr (SC == QG_SC_NONE) QG_LC(false, 4, 16384, 1, 0)
    QG_LC(true, 5, 16384, 1, 0)
    QG_LC(true, 6, 0, 1, 0)
    QG_LC(true, 5, 16384, 2, 0)
#undef QG_LC
    *why = "Hopper grouped GEMM: configuration not built";
    return 1;
}

int qg_launch_recipe(const qg_hconf &c, const qg_problem *p, cudaStream_t stream, size_t smem, int sms,
                     const char **why)
{
    if (p->elem == QG_ELEM_BF16 && p->scale_mode == QG_SC_NONE) { /* each operand K- or MN-major */
        switch ((p->a.s_k != 1 ? 1 : 0) | (p->b.s_k != 1 ? 2 : 0)) {
        case 0: return qg_launch_conf<QG_ELEM_BF16, QG_SC_NONE, 0>(c, p, stream, smem, sms, why);
        case 1: return qg_launch_conf<QG_ELEM_BF16, QG_SC_NONE, 1>(c, p, stream, smem, sms, why);
        case 2: return qg_launch_conf<QG_ELEM_BF16, QG_SC_NONE, 2>(c, p, stream, smem, sms, why);
        default: return qg_launch_conf<QG_ELEM_BF16, QG_SC_NONE, 3>(c, p, stream, smem, sms, why);
        }
    }
    if (p->elem == QG_ELEM_E4M3 && p->scale_mode == QG_SC_ROW)
        return qg_launch_conf<QG_ELEM_E4M3, QG_SC_ROW>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E5M2 && p->scale_mode == QG_SC_ROW)
        return qg_launch_conf<QG_ELEM_E5M2, QG_SC_ROW>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E4M3 && p->scale_mode == QG_SC_BLOCK128)
        return qg_launch_conf<QG_ELEM_E4M3, QG_SC_BLOCK128>(c, p, stream, smem, sms, why);
    if (p->elem == QG_ELEM_E5M2 && p->scale_mode == QG_SC_BLOCK128)
        return qg_launch_conf<QG_ELEM_E5M2, QG_SC_BLOCK128>(c, p, stream, smem, sms, why);
    *why = "Hopper grouped GEMM: element type / recipe not implemented";
    return 1;
}

/* MXFP8: which layout its bf16 operands take (qg_mx_ws). M-grouped: K-major (an M-grouped A
 * must be, and K-major weights are the BF16 kernel's faster M-grouped B). K-grouped:
 * MN-major (contraction index outer), the layout of the BF16 wgrad path (row-major dy and
 * x); K-major measured level with it (docs/backends-cuda-gemm.md). Benchmark variants:
 * 1 K-major, 2 MN-major (K-grouped only). -1: no such variant. */
int qg_mx_mn(const qg_problem *p)
{
    if (p->variant == 1) return 0;
    if (p->variant == 2) return p->kind == QG_K_GROUPED ? 1 : -1;
    if (p->variant != 0) return -1;
    return p->kind == QG_K_GROUPED ? 1 : 0;
}

template <int E, int MN>
int qg_mx_dequant(const qg_problem *p, const qg_mx_ws &w, cudaStream_t stream, int sms, const char **why)
{
    const size_t smem = (size_t)qg_sched_smem_ints(p->groups) * 4;
    if (smem > 48 * 1024 && qgmm_cuda_allow_max_smem(qg_mx_dequant_kernel<E, MN>, smem) != cudaSuccess) {
        *why = "Hopper grouped GEMM: cudaFuncSetAttribute failed (MX dequantize)";
        return 2;
    }
    /* threads: MN one per row pair and 32-element block, K-major a warp per row; a grid the
     * SMs hold at once (the threads stride over the rest) */
    const int64_t items = MN ? (p->kdim + 31) / 32 * ((w.rows_a + 1) / 2 + (w.rows_b + 1) / 2)
                             : (w.rows_a + w.rows_b) * 32;
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, qg_mx_dequant_kernel<E, MN>, 256, smem) != cudaSuccess ||
        per_sm < 1)
        per_sm = 1;
    int64_t blocks = (items + 255) / 256;
    if (blocks > (int64_t)sms * per_sm) blocks = (int64_t)sms * per_sm;
    if (blocks < 1) blocks = 1;
    qg_mx_dequant_kernel<E, MN><<<(unsigned)blocks, 256, smem, stream>>>(*p, w);
    if (cudaGetLastError() != cudaSuccess) {
        *why = "Hopper grouped GEMM: MX dequantize launch failed";
        return 2;
    }
    return 0;
}

} // namespace

/* MXFP8 on Hopper: both operands dequantized exactly to bf16 into p->ws (the layout
 * qg_mx_mn picks), then the BF16 problem on them through qgmm_cuda_gemm_hopper (the same
 * kernel choice as any BF16 problem, f32 output included: bf16 products are exact and
 * summed in f32). No workspace, or too small: 1 (the portable kernel runs on the fp8
 * operands). */
static int qg_mx_via_bf16(const qg_problem *p, cudaStream_t stream, int sms, const char **why)
{
    const int mn = qg_mx_mn(p);
    if (mn < 0) { *why = "Hopper grouped GEMM: no such variant"; return 1; }
    if (p->elem == QG_ELEM_BF16 || p->kdim <= 0 || p->kdim >= (1ll << 31) || p->rows <= 0 ||
        p->rows >= (1ll << 31) || p->cols <= 0 || p->cols >= (1ll << 31)) {
        *why = "Hopper grouped GEMM: MXFP8 problem outside the dequantizing path";
        return 1;
    }
    const qg_mx_ws w = qg_mx_ws_of(*p, mn);
    if (!p->ws || p->ws_bytes < (int64_t)w.bytes || ((uintptr_t)p->ws % 256) != 0) {
        *why = "Hopper grouped GEMM: MXFP8 needs a workspace for its bf16 operands";
        return 1;
    }
    qg_problem q = *p;
    q.elem = QG_ELEM_BF16;
    q.scale_mode = QG_SC_NONE;
    q.variant = 0;
    q.ws = nullptr;
    q.ws_bytes = 0;
    memset(&q.sa, 0, sizeof q.sa);
    memset(&q.sb, 0, sizeof q.sb);
    const uint8_t *wa = (const uint8_t *)p->ws, *wb = (const uint8_t *)p->ws + w.off_b;
    if (mn) {
        q.a = {wa, 1, w.ld_a, 0};
        q.b = {wb, 1, w.ld_b, 0};
    } else {
        q.a = {wa, w.ld_a, 1, 0};
        q.b = {wb, w.ld_b, 1, p->kind == QG_M_GROUPED ? p->cols * w.ld_b : 0};
    }
    const bool e4 = p->elem == QG_ELEM_E4M3;
    const int rc = mn ? (e4 ? qg_mx_dequant<QG_ELEM_E4M3, 1>(p, w, stream, sms, why)
                            : qg_mx_dequant<QG_ELEM_E5M2, 1>(p, w, stream, sms, why))
                      : (e4 ? qg_mx_dequant<QG_ELEM_E4M3, 0>(p, w, stream, sms, why)
                            : qg_mx_dequant<QG_ELEM_E5M2, 0>(p, w, stream, sms, why));
    if (rc) return rc;
    return qgmm_cuda_gemm_hopper(&q, stream, why);
}

/* Whether the current device (its ordinal in *dev) is an sm_90 GPU, the Hopper kernels'. */
static bool qg_current_is_sm90(int *dev)
{
    int maj = 0, min = 0;
    cudaGetDevice(dev);
    cudaDeviceGetAttribute(&maj, cudaDevAttrComputeCapabilityMajor, *dev);
    cudaDeviceGetAttribute(&min, cudaDevAttrComputeCapabilityMinor, *dev);
    return maj == 9 && min == 0;
}

size_t qgmm_cuda_gemm_ws_bytes(const qg_problem *p)
{
    if (p->scale_mode != QG_SC_MX32 || p->elem == QG_ELEM_BF16) return 0;
    int dev = 0;
    const int mn = qg_mx_mn(p);
    if (mn < 0 || !qg_current_is_sm90(&dev)) return 0;
    return qg_mx_ws_of(*p, mn).bytes;
}

/* The one place that decides whether and how the Hopper kernels take a problem. */
int qgmm_cuda_gemm_hopper(const qg_problem *p, cudaStream_t stream, const char **why)
{
    int dev = 0, sms = 0, maxsm = 0;
    if (!qg_current_is_sm90(&dev)) { *why = "Hopper grouped GEMM: needs an sm_90 GPU"; return 1; }
    if (p->scale_mode == QG_SC_MX32) {
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        return qg_mx_via_bf16(p, stream, sms, why);
    }
    /* QGMMA accumulates fp8 products with reduced precision: measured on the H100, rel.
     * error vs float64 2e-4..5e-4 accumulating a whole K of 128..1024 (bit-identical to
     * torch._scaled_grouped_mm(use_fast_accum=True)) and still 1.3e-4 when promoted into
     * f32 every 128-deep slice. Both pass the bf16-output bound (1e-2), neither the f32 one
     * (1e-5): FP8 with f32 output runs on the portable kernel (exact products, f32 sums).
     * BF16 and FP8 rowwise -> the fast 128x256 kernel; FP8 blockwise -> the promoted
     * 128x128 kernel (per-block scales need the promotion anyway); MXFP8 (above) -> its
     * operands dequantized to bf16, then the BF16 choice (the exact dequantization runs
     * at BF16's tensor-core rate, where promoting every 32-deep block did not). The fast
     * kernel's error grows with the contraction (docs/numerics.md), so K-grouped FP8
     * rowwise with more than QG_ROW_PROMO_TOKENS tokens takes its coarse-promotion
     * configuration (the tensor-core sums added into f32 every QG_PK slices).
     * M-grouped contractions are K (a few thousand): the fast kernel as it is.
     * Benchmark variants: FP8 rowwise 1..QG_NFAST (the fast kernel's configurations; the
     * last is built for BF16 only), BF16 those without the coarse promotion, MXFP8 its
     * operands' layouts (qg_mx_mn). */
    const bool row = p->scale_mode == QG_SC_ROW && !p->out_f32;
    const bool fast = p->scale_mode == QG_SC_NONE || row;
    const bool long_row = row && p->kind == QG_K_GROUPED && p->kdim > QG_ROW_PROMO_TOKENS;
    const bool promo = p->elem != QG_ELEM_BF16 && !p->out_f32 && p->scale_mode == QG_SC_BLOCK128;
    if (!fast && !promo) {
        *why = "Hopper grouped GEMM: FP8 with f32 output is not implemented (the portable kernel's exact sums)";
        return 1;
    }
    const int esz = p->elem == QG_ELEM_BF16 ? 2 : 1;
    /* an operand is K-major (s_k == 1) or, BF16 on the fast kernel, MN-major (s_row == 1;
     * wgmma transposes 16-bit operands only); TMA steps by the other stride. An MN-major
     * box starts at a tile's first row / column, which TMA needs 16-byte aligned: B's
     * columns and K-grouped A's rows start at multiples of 64, M-grouped A's rows at group
     * starts (any row), so an M-grouped A stays K-major */
    const bool mn_ok = p->elem == QG_ELEM_BF16 && fast;
    const bool a_ok = p->a.s_k == 1 || (mn_ok && p->kind == QG_K_GROUPED && p->a.s_row == 1 && p->a.s_k > 0);
    const bool b_ok = p->b.s_k == 1 || (mn_ok && p->b.s_row == 1 && p->b.s_k > 0);
    const int64_t lda = p->a.s_k == 1 ? p->a.s_row : p->a.s_k, ldb = p->b.s_k == 1 ? p->b.s_row : p->b.s_k;
    const bool tma_ok = a_ok && b_ok && ((uintptr_t)p->a.ptr % 16) == 0 && ((uintptr_t)p->b.ptr % 16) == 0 &&
                        ((lda * esz) % 16) == 0 && ((ldb * esz) % 16) == 0 && ((p->b.s_grp * esz) % 16) == 0 &&
                        p->kdim > 0 && p->kdim < (1ll << 31) && p->rows < (1ll << 31) && p->cols < (1ll << 31) &&
                        (p->kind == QG_K_GROUPED || p->groups == 1 || p->b.s_grp > 0);
    if (!tma_ok) {
        *why = "Hopper grouped GEMM: an operand neither contraction-contiguous nor (BF16) row-contiguous, "
               "or strides not 16-byte aligned";
        return 1;
    }
    /* BF16: the configurations without the coarse promotion */
    const bool bf16_ok = p->variant <= QG_CONF_PINGPONG + 1 || p->variant == QG_CONF_DEEP + 1;
    if (p->variant < 0 || p->variant > (promo ? QG_NPROMO : QG_NFAST) || (!row && !promo && !bf16_ok)) {
        *why = "Hopper grouped GEMM: no such variant";
        return 1;
    }
    const int variant = p->variant;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&maxsm, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    /* the default configuration, or the register-epilogue one where its staging does not
     * fit beside the schedule of many groups, or one CTA where no cluster can be placed */
    const qg_hconf *confs = promo ? QG_PROMO_CONFS : QG_FAST_CONFS;
    qg_hconf c = confs[variant > 0 ? variant - 1 : qg_default_conf(p, promo, long_row)];
    if (variant == 0 && qg_conf_smem(c, p->groups, p->scale_mode) > (size_t)maxsm)
        c = confs[c.pk ? QG_CONF_PK_SMALL : QG_CONF_REGS];
    const size_t smem = qg_conf_smem(c, p->groups, p->scale_mode);
    if (smem > (size_t)maxsm) { *why = "Hopper grouped GEMM: too many groups for shared memory"; return 1; }
    const int rc = qg_launch_recipe(c, p, stream, smem, sms, why);
    if (rc == 1 && p->variant == 0 && c.cl > 1) /* the cluster could not be placed */
        return qg_launch_recipe(confs[c.pk ? QG_CONF_PK_STAGED : QG_CONF_STAGED], p, stream, smem, sms, why);
    return rc;
}
