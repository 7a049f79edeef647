/*
 * cast_rowwise.cu — FP8 rowwise quantize on CUDA (ops-spec §1), every variant:
 *   scale along C (rowwise, 3D per (e,n)): qgmm_kq_rowreg, a block per row with the row in
 *     registers (rows of 512-16384 bf16 / 512-8192 f32 elements); jagged per-group
 *     rowwise and other rows: qgmm_kq_rowseg, a warp per (row, group) segment.
 *   scale along R (colwise, jagged colwise, 3D transpose rhs) with q R-contiguous, bf16 x,
 *     on sm_90: qgmm_kq_colring, x read once (persistent clusters walking the (tensor,
 *     expert or group, 1, 2 or 4 128-byte column strips) segments, each warp's copies
 *     issued ahead through a ring of slots, the column amax across
 *     the cluster through distributed shared memory behind a split cluster barrier, whole
 *     32-byte sectors of q per store); the dual form runs both tensors in one launch.
 *     Otherwise (other GPUs, HIP, other layouts): qgmm_kq_colamax (partial column amax,
 *     atomicMax) -> qgmm_kq_colscale (scales + multiplier table) -> qgmm_kq_transpose.
 *     Offsets stay on the device: each kernel checks them and finds row groups itself.
 * Other layouts take qgmm_kq_generic (any strides). Kernels: kernels/qgmm_kernels_quant.cuh.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_quant.cuh"

/* Threads per row (64, 128 or 256) and units per thread (<= 8 bf16, <= 4 f32) for
 * qgmm_kq_rowreg; 0 when the row does not fit. */
static int rowreg_plan(int64_t units, int xf32, int *nt, int *u)
{
    const int umax = xf32 ? 4 : 8;
    if (units < 64) return 0; /* short rows: a warp per row (rowseg) uses the lanes better */
    for (int t = 64; t <= 256; t *= 2) {
        const int64_t k = (units + t - 1) / t;
        if (k <= umax) {
            *nt = t;
            *u = (int)k;
            return 1;
        }
    }
    return 0;
}

/* Units per lane qgmm_kq_rowseg holds in registers: 0 for f32 / f16 x (the body read twice);
 * bf16: 24 (168 registers, one 256-thread block per SM; the most that fits, and the fastest
 * of 8 / 16 / 24 and of reading twice: docs/backends-cuda.md), or 8 where the
 * segments (rows, or 1.5x the mean group) fit in 8 units per lane, so short segments keep
 * more warps resident. */
static int rowseg_hold(const qgmm_kquant &a)
{
    if (a.x_dtype != QGMM_K_BF16) return 0;
#if defined(QGMM_K_NVIDIA)
    const int64_t seg = a.offs ? (a.C * 3 / 2 + a.G - 1) / a.G : a.C;
    return seg <= 8 * 8 * 32 ? 8 : 24;
#else
    return 8; /* HIP: clang (gfx942) puts the 24-unit array in scratch memory */
#endif
}

template <int FMT, int XF, int U>
static void rowreg_run(qgmm_context *ctx, const qgmm_kquant &a, int nt)
{
    const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const unsigned grid = qgmm_cuda_grid(ctx, a.E * a.R, nt, qgmm_k_resident(qgmm_kq_rowreg<FMT, XF, U>, nt, 1024 / nt));
    qgmm_kq_rowreg<FMT, XF, U><<<grid, nt, 0, c->stream>>>(a);
}

/* u units per thread; f32 x has u <= 4 (the clamp only avoids instantiating what
 * rowreg_plan never picks). */
template <int FMT, int XF>
static void rowreg_units(qgmm_context *ctx, const qgmm_kquant &a, int nt, int u)
{
    switch (u) {
    case 1: rowreg_run<FMT, XF, 1>(ctx, a, nt); break;
    case 2: rowreg_run<FMT, XF, 2>(ctx, a, nt); break;
    case 3: rowreg_run<FMT, XF, 3>(ctx, a, nt); break;
    case 4: rowreg_run<FMT, XF, 4>(ctx, a, nt); break;
    case 5: rowreg_run<FMT, XF, XF ? 4 : 5>(ctx, a, nt); break;
    case 6: rowreg_run<FMT, XF, XF ? 4 : 6>(ctx, a, nt); break;
    case 7: rowreg_run<FMT, XF, XF ? 4 : 7>(ctx, a, nt); break;
    default: rowreg_run<FMT, XF, XF ? 4 : 8>(ctx, a, nt); break;
    }
}

static qgmm_status rowreg_launch(qgmm_context *ctx, const qgmm_kquant &a, int nt, int u)
{
    if (a.x_dtype == QGMM_K_F32) QGMM_FMT_DISPATCH(a.fmt, rowreg_units<FMT, 1>(ctx, a, nt, u));
    else QGMM_FMT_DISPATCH(a.fmt, rowreg_units<FMT, 0>(ctx, a, nt, u));
    return qgmm_cuda_launch_check(ctx, "qgmm_kq_rowreg");
}

#if defined(QGMM_K_NVIDIA)
/* A launch on the context's stream of `threads`-thread blocks with `smem` bytes of dynamic
 * shared memory in clusters of cs (the caller sets the grid); at holds the attribute. */
static void cluster_launch_config(const qgmm_cuda_ctx *c, int cs, unsigned threads, size_t smem,
                                  cudaLaunchConfig_t *cfg, cudaLaunchAttribute *at)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->blockDim = dim3(threads, 1, 1);
    cfg->dynamicSmemBytes = smem;
    cfg->stream = c->stream;
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = (unsigned)cs;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg->attrs = at;
    cfg->numAttrs = 1;
}

/* A persistent grid of kernel k: as many clusters of cs blocks as the device holds at once,
 * at most one per segment. Returns 0 (nothing launched, no error left) when not even one
 * cluster fits; otherwise 1 with the launch's status in *err. */
template <typename... P, typename... A>
static int persistent_cluster_launch(int dev, void (*k)(P...), cudaLaunchConfig_t *cfg, int cs, int64_t segs,
                                     cudaError_t *err, A... args)
{
    /* The attributes and the occupancy query cost more host time than a short cast takes
     * on the device: done once per (device, kernel, cluster, shared memory) and thread. */
    struct occ {
        int dev, cs, active;
        const void *k;
        size_t smem;
    };
    static thread_local occ seen[32];
    static thread_local int nseen;
    int active = 0;
    for (int i = 0; i < nseen && !active; ++i)
        if (seen[i].dev == dev && seen[i].k == (const void *)k && seen[i].cs == cs &&
            seen[i].smem == cfg->dynamicSmemBytes)
            active = seen[i].active;
    if (!active) {
        cudaError_t e = qgmm_cuda_allow_max_smem(k, cfg->dynamicSmemBytes);
        if (e == cudaSuccess && cs > 8)
            e = cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        cfg->gridDim = dim3((unsigned)cs, 1, 1);
        if (e == cudaSuccess) e = cudaOccupancyMaxActiveClusters(&active, k, cfg);
        if (e != cudaSuccess || active < 1) {
            (void)cudaGetLastError();
            return 0;
        }
        if (nseen < 32) seen[nseen++] = occ{dev, cs, active, (const void *)k, cfg->dynamicSmemBytes};
    }
    const int64_t ncl = segs < active ? segs : active;
    cfg->gridDim = dim3((unsigned)(ncl * cs), 1, 1);
    *err = cudaLaunchKernelEx(cfg, k, args...);
    return 1;
}
#include "cuda_smem_optin.h"
/* colring plan (qgmm_kq_colring: blocks of QGMM_KQ_PIPE_WARPS = 16 warps, one per SM,
 * QGMM_COLRING_NSW = 3 unit slots per warp: 48 units, 192 KiB of the SM's shared memory).
 * The segment it is planned for: R, or for jagged groups the mean group (the kernel takes
 * any group: a share above the ring passes through it twice), as pieces of 128 rows (+1: a
 * group's first piece starts at its first row rounded down to 32). The cluster: the
 * smallest (1-16 blocks, 16 non-portable) whose warps take at most QGMM_COLRING_SHARE units
 * each of a jagged group's segment, one more than the ring holds: each segment costs its
 * cluster an exchange and a barrier, and for the short segments of jagged groups halving
 * the segments per block (the cluster) paid more than the L2 re-read of the shares that
 * pass twice; segments of R rows (colwise, 3D weights) are long, and their shares stay
 * resident in the ring (at most QGMM_COLRING_NSW units per warp), where the re-read cost
 * more than it saved (docs/backends-cuda.md, colring). Where one
 * block holds the segment, its strips are widened (2 or 4 strips of 64 columns, the
 * block's warps split among them) while the warps still take at most that many units.
 * Segments longer than 16 blocks of 3 units per warp keep the three passes (the ring's
 * second pass would re-read x from HBM). */
#define QGMM_COLRING_NSW 3
#define QGMM_COLRING_SHARE 4
#define QGMM_COLRING_CSMAX 16

static int64_t colring_pieces(const qgmm_kquant &a)
{
    const int64_t r = a.offs ? (a.R + a.G - 1) / a.G : a.R;
    return (r + QGMM_KQ_PIECE - 1) / QGMM_KQ_PIECE + (a.offs ? 1 : 0);
}

/* The units each warp takes of np pieces split over cs blocks of 2^lw warps per strip. */
static int64_t colring_share(int64_t np, int cs, int lw)
{
    return ((np + cs - 1) / cs * 4 + (1 << lw) - 1) >> lw;
}

/* The cluster (*cs) and 2^*lw warps per strip for tensor a. */
static void colring_plan(const qgmm_kquant &a, int *cs, int *lw)
{
    const int64_t np = colring_pieces(a), most = a.offs ? QGMM_COLRING_SHARE : QGMM_COLRING_NSW;
    *cs = 1;
    while (*cs < QGMM_COLRING_CSMAX && colring_share(np, *cs, 4) > most) *cs *= 2;
    *lw = 4;
    while (*cs == 1 && *lw > 2 && colring_share(np, 1, *lw - 1) <= most) --*lw;
}

/* x read once by qgmm_kq_colring: sm_90, bf16 x with 16-byte rows, q R-contiguous, a
 * planned segment length, 32-bit row / column / segment indices. */
static int colring_ok(const qgmm_cuda_ctx *c, const qgmm_kquant &a)
{
    const int64_t np = colring_pieces(a);
    return c->cc_major >= 9 && a.x_dtype == QGMM_K_BF16 && qgmm_kquant_x_vec(&a) && a.q.s1 == 1 && a.C > 0 &&
           a.R < ((int64_t)1 << 31) - 256 && a.C < ((int64_t)1 << 31) - 256 &&
           (a.C + 63) / 64 * (a.offs ? a.G : a.E) < ((int64_t)1 << 30) &&
           colring_share(np, QGMM_COLRING_CSMAX, 4) <= QGMM_COLRING_NSW;
}

/* Launches colring over n (1 or 2) tensors with the cluster of the longer planned
 * segment; 0 (nothing launched, no error left) when the device cannot hold one cluster,
 * so the caller takes the three passes. */
static int colring_launch(qgmm_context *ctx, const qgmm_kquant *t, int n, qgmm_status *st)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_kq_pair pr;
    pr.t[0] = t[0];
    pr.t[1] = n > 1 ? t[1] : t[0];
    int vec_out[2] = {0, 0};
    int64_t segs = 0;
    int cs = 1, lw = 2;
    for (int i = 0; i < n; ++i) { /* the dual form: the larger cluster, the narrower segment */
        int cs_i, lw_i;
        colring_plan(t[i], &cs_i, &lw_i);
        if (cs_i > cs) cs = cs_i;
        if (lw_i > lw) lw = lw_i;
    }
    for (int i = 0; i < n; ++i) {
        const qgmm_kquant &a = t[i];
        const int64_t wide = 64 * (QGMM_KQ_PIPE_WARPS >> lw);
        segs += ((a.C + wide - 1) / wide) * (a.offs ? a.G : a.E);
        /* 2: whole-sector stores (32-byte aligned columns), 1: 16-byte runs, 0: bytes */
        vec_out[i] = ((uintptr_t)a.q.ptr % 16) == 0 && a.q.s2 % 16 == 0 && a.q.s0 % 16 == 0;
        if (((uintptr_t)a.q.ptr % 32) == 0 && a.q.s2 % 32 == 0 && a.q.s0 % 32 == 0) vec_out[i] = 2;
    }
    vec_out[1] = n > 1 ? vec_out[1] : vec_out[0];
    const int nsw = QGMM_COLRING_NSW;
    const size_t smem = (size_t)nsw * QGMM_KQ_PIPE_WARPS * QGMM_KQ_UNIT_BYTES;
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[1];
    cluster_launch_config(c, cs, 32 * QGMM_KQ_PIPE_WARPS, smem, &cfg, at);
    cudaError_t err = cudaSuccess;
    int launched = 0;
    QGMM_FMT_DISPATCH(t[0].fmt, {
        if (lw == 4)
            launched = persistent_cluster_launch(c->device, qgmm_kq_colring<FMT, 4>, &cfg, cs, segs, &err, pr, n, nsw,
                                                 vec_out[0], vec_out[1]);
        else if (lw == 3)
            launched = persistent_cluster_launch(c->device, qgmm_kq_colring<FMT, 3>, &cfg, cs, segs, &err, pr, n, nsw,
                                                 vec_out[0], vec_out[1]);
        else
            launched = persistent_cluster_launch(c->device, qgmm_kq_colring<FMT, 2>, &cfg, cs, segs, &err, pr, n, nsw,
                                                 vec_out[0], vec_out[1]);
    });
    if (!launched) return 0;
    *st = qgmm_cuda_check(ctx, err, "qgmm_kq_colring");
    return 1;
}
#endif

/* Arguments from qgmm_cuda_kquant_of (cast_entry.cu). */
qgmm_status qgmm_cuda_cast_rowwise(qgmm_context *ctx, qgmm_kquant a)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_status st = QGMM_OK;
    const int jagged = a.offs != NULL;
    if (a.E * a.R * a.C == 0 && !jagged) return QGMM_OK;
    if (a.G == 0) return QGMM_OK;

    if (a.along_c) {
        const int64_t warps = a.E * a.G * a.R;
        const int fast = qgmm_kquant_x_vec(&a) && qgmm_kquant_q_vec8(&a) && a.E * a.R < ((int64_t)1 << 31);
        int nt = 0, u = 0;
        if (fast && !jagged && (a.x_dtype == QGMM_K_BF16 || a.x_dtype == QGMM_K_F32) &&
            rowreg_plan(a.C / 8, a.x_dtype == QGMM_K_F32, &nt, &u))
            return rowreg_launch(ctx, a, nt, u);
        if (fast) {
            const unsigned grid = qgmm_cuda_grid(ctx, (warps + 7) / 8, 256, 16);
            const int hold = rowseg_hold(a);
            if (hold == 0) QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_rowseg<FMT, 0><<<grid, 256, 0, c->stream>>>(a)));
            else if (hold == 8) QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_rowseg<FMT, 8><<<grid, 256, 0, c->stream>>>(a)));
#if defined(QGMM_K_NVIDIA)
            else QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_rowseg<FMT, 24><<<grid, 256, 0, c->stream>>>(a)));
#endif
            return qgmm_cuda_launch_check(ctx, "qgmm_kq_rowseg");
        }
        const unsigned grid = qgmm_cuda_grid(ctx, (warps + 7) / 8, 256, 16);
        qgmm_kq_generic<<<grid, 256, 0, c->stream>>>(a);
        return qgmm_cuda_launch_check(ctx, "qgmm_kq_generic");
    }

#if defined(QGMM_K_NVIDIA)
    if (colring_ok(c, a) && colring_launch(ctx, &a, 1, &st)) return st;
#endif
    /* along R: amax pass, scale pass, cast+transpose pass; scratch = bits + table */
    const int64_t slots = jagged ? a.G : a.E;
    const size_t n = (size_t)(slots * a.C);
    char *ws = (char *)qgmm_cuda_scratch(ctx, n * 8);
    if (!ws) return QGMM_ERR_OUT_OF_MEMORY;
    a.amax_bits = (uint32_t *)ws;
    a.table = (float *)(ws + n * 4);
    st = qgmm_cuda_check(ctx, cudaMemsetAsync(a.amax_bits, 0, n * 4, c->stream), "memset amax");
    if (st != QGMM_OK) return st;
    if (a.R > 0 && a.C > 0) {
        dim3 g1((unsigned)((a.C + 255) / 256), (unsigned)((a.R + QGMM_KQ_COL_ROWS - 1) / QGMM_KQ_COL_ROWS),
                (unsigned)a.E);
        qgmm_kq_colamax<<<g1, 256, 0, c->stream>>>(a, qgmm_kquant_x_vec(&a));
        if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_colamax")) != QGMM_OK) return st;
    }
    {
        const unsigned grid = qgmm_cuda_grid(ctx, ((int64_t)n + 255) / 256, 256, 8);
        qgmm_kq_colscale<<<grid, 256, 0, c->stream>>>(a);
        if ((st = qgmm_cuda_launch_check(ctx, "qgmm_kq_colscale")) != QGMM_OK) return st;
    }
    if (a.R > 0 && a.C > 0) {
        if ((st = qgmm_cuda_launch_kq_transpose(ctx, a)) != QGMM_OK) return st;
    }
    return QGMM_OK;
}

qgmm_status qgmm_cuda_launch_kq_transpose(qgmm_context *ctx, const qgmm_kquant &a)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int vec_out = a.q.s1 == 1 && ((uintptr_t)a.q.ptr % 16) == 0 && a.q.s2 % 16 == 0 && a.q.s0 % 16 == 0;
    dim3 g2((unsigned)((a.C + QGMM_KQ_TC - 1) / QGMM_KQ_TC), (unsigned)((a.R + QGMM_KQ_TR - 1) / QGMM_KQ_TR),
            (unsigned)a.E);
    const int vec_in = qgmm_kquant_x_vec(&a);
    if (a.x_dtype == QGMM_K_BF16)
        QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_transpose<FMT, QGMM_K_BF16><<<g2, 256, 0, c->stream>>>(a, vec_in, vec_out)));
    else if (a.x_dtype == QGMM_K_F16)
        QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_transpose<FMT, QGMM_K_F16><<<g2, 256, 0, c->stream>>>(a, vec_in, vec_out)));
    else
        QGMM_FMT_DISPATCH(a.fmt, (qgmm_kq_transpose<FMT, QGMM_K_F32><<<g2, 256, 0, c->stream>>>(a, vec_in, vec_out)));
    return qgmm_cuda_launch_check(ctx, "qgmm_kq_transpose");
}

/* The arguments of one half of the dual form, from its cast description. */
static qgmm_kquant dual_half(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p, const qgmm_tensor *x,
                             const qgmm_tensor *q, const qgmm_tensor *scales, const qgmm_tensor *offs)
{
    qgmm_quant_format f = QGMM_QUANT_FORMAT_FP8_ROWWISE_INIT(p->reduce_dim);
    f.rowwise = *p;
    qgmm_cast_problem pr;
    qgmm_cast_problem_make(&f, 0, x, q, scales, offs, &pr);
    return qgmm_cuda_kquant_of(ctx, &pr);
}

/* The dual form (two tensors, one offs): one colring launch over both when both
 * scale along R into R-contiguous q with the same x dtype and fp8 format; otherwise two
 * casts. */
extern "C" qgmm_status qgmm_cuda_quantize_fp8_rowwise_dual(qgmm_context *ctx,
                                                           const qgmm_fp8_rowwise_params *p0,
                                                           const qgmm_tensor *x0, const qgmm_tensor *q0,
                                                           const qgmm_tensor *s0,
                                                           const qgmm_fp8_rowwise_params *p1,
                                                           const qgmm_tensor *x1, const qgmm_tensor *q1,
                                                           const qgmm_tensor *s1, const qgmm_tensor *offs)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_kquant t[2] = {dual_half(ctx, p0, x0, q0, s0, offs), dual_half(ctx, p1, x1, q1, s1, offs)};
#if defined(QGMM_K_NVIDIA)
    {
        const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
        if (!t[0].along_c && !t[1].along_c && t[0].x_dtype == t[1].x_dtype && t[0].fmt == t[1].fmt &&
            t[0].E == t[1].E && t[0].G == t[1].G && t[0].R == t[1].R && t[0].G > 0) {
            qgmm_status lst;
            if (colring_ok(c, t[0]) && colring_ok(c, t[1]) && colring_launch(ctx, t, 2, &lst)) return lst;
        }
    }
#endif
    st = qgmm_cuda_cast_rowwise(ctx, t[0]);
    if (st != QGMM_OK) return st;
    return qgmm_cuda_cast_rowwise(ctx, t[1]);
}
