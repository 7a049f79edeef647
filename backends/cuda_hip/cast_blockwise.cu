/*
 * cast_blockwise.cu — FP8 blockwise quantize on CUDA (ops-spec §3): 1x128 with
 * qgmm_kq_rowblock (8 lanes x 2 units of 8 elements per 128-element block, the units of a
 * lane loaded together), 128x128 with qgmm_kq_tile128 (resident blocks looping over the
 * tiles, a tile's units held as bits in registers, single pass), or qgmm_kq_tile128t where
 * q is R-contiguous; both for bf16 / f32 x (f16 takes the generic kernel). The torchao /
 * DeepGEMM scale layouts are strides of the scales tensor, written through.
 * x given as the transposed view of a row-major tensor (the composite's wgrad operands,
 * blocks along the tokens, and its dgrad weights as (E, K, N)) is read as that row-major
 * tensor: R and C swap, a 1x128 block becomes 128 rows of one column (qgmm_kq_transpose,
 * R-contiguous q), a 128x128 tile stays a tile. Other layouts take qgmm_kq_generic.
 * The rowblock launch (a grid of resident blocks) lives here for cast_mx.cu too.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_quant.cuh"

/* The 128x128 tile kernels on a grid of resident blocks (occupancy query) looping over
 * the tiles. */
static int64_t tile128_count(const qgmm_kquant &a)
{
    return a.E * ((a.R + 127) / 128) * (a.C / 128);
}

template <int FMT, int XF>
static void tile128_run(qgmm_context *ctx, const qgmm_kquant &a)
{
    const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const unsigned grid = qgmm_cuda_grid(ctx, tile128_count(a), 256, qgmm_k_resident(qgmm_kq_tile128<FMT, XF>, 256, 4));
    qgmm_kq_tile128<FMT, XF><<<grid, 256, 0, c->stream>>>(a);
}

template <int FMT, int XF>
static void tile128t_run(qgmm_context *ctx, const qgmm_kquant &a, int vec_out)
{
    const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const unsigned grid =
        qgmm_cuda_grid(ctx, tile128_count(a), 256, qgmm_k_resident(qgmm_kq_tile128t<FMT, XF>, 256, 4));
    qgmm_kq_tile128t<FMT, XF><<<grid, 256, 0, c->stream>>>(a, vec_out);
}

/* Arguments from qgmm_cuda_kquant_of (cast_entry.cu). */
qgmm_status qgmm_cuda_cast_blockwise(qgmm_context *ctx, qgmm_kquant a)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    if (a.E * a.R * a.C == 0) return QGMM_OK;
    if (a.x.s2 != 1 && a.x.s1 == 1 && (a.tile_rows == 1 || a.R % 128 == 0)) {
        /* the transposed view of a row-major tensor: swap R and C in x and q (C, the
         * blocked extent, is a multiple of 128; a tile's R must be one too) */
        int64_t t = a.R; a.R = a.C; a.C = t;
        t = a.x.s1; a.x.s1 = a.x.s2; a.x.s2 = t;
        t = a.q.s1; a.q.s1 = a.q.s2; a.q.s2 = t;
        if (a.tile_rows == 1) { /* 128x1 blocks; the scale index keeps its roles (header) */
            a.along_c = 0;
            return qgmm_cuda_launch_kq_transpose(ctx, a);
        }
        t = a.s.s1; a.s.s1 = a.s.s2; a.s.s2 = t; /* tiles swap their row and column index */
    }
    const int x_fast = qgmm_kquant_x_vec(&a) && a.E * a.R < ((int64_t)1 << 31);
    const int fast = x_fast && qgmm_kquant_q_vec8(&a);
    if (fast && a.tile_rows == 1 && a.x_dtype != QGMM_K_F16) {
        return qgmm_cuda_launch_kq_rowblock(ctx, a);
    }
    const int tile_x = x_fast && a.x_dtype != QGMM_K_F16; /* the tile kernels hold bf16 / f32 units */
    if (tile_x && a.tile_rows == 128 && a.q.s1 == 1 && a.q.s2 != 1) {
        const int vec_out = ((uintptr_t)a.q.ptr % 16) == 0 && a.q.s2 % 16 == 0 && a.q.s0 % 16 == 0;
        if (a.x_dtype == QGMM_K_F32) QGMM_FMT_DISPATCH(a.fmt, (tile128t_run<FMT, 1>(ctx, a, vec_out)));
        else QGMM_FMT_DISPATCH(a.fmt, (tile128t_run<FMT, 0>(ctx, a, vec_out)));
        return qgmm_cuda_launch_check(ctx, "qgmm_kq_tile128t");
    }
    if (fast && tile_x && a.tile_rows == 128) {
        if (a.x_dtype == QGMM_K_F32) QGMM_FMT_DISPATCH(a.fmt, (tile128_run<FMT, 1>(ctx, a)));
        else QGMM_FMT_DISPATCH(a.fmt, (tile128_run<FMT, 0>(ctx, a)));
        return qgmm_cuda_launch_check(ctx, "qgmm_kq_tile128");
    }
    const int64_t warps = a.E * ((a.R + a.tile_rows - 1) / a.tile_rows) * (a.C / 128);
    const unsigned grid = qgmm_cuda_grid(ctx, (warps + 7) / 8, 256, 16);
    qgmm_kq_generic<<<grid, 256, 0, c->stream>>>(a);
    return qgmm_cuda_launch_check(ctx, "qgmm_kq_generic");
}

template <int LPB, int V, int FMT, int XF>
static void rowblock_run(qgmm_context *ctx, const qgmm_kquant &a)
{
    const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    unsigned g[2], b[2];
    qgmm_k_row_shape(qgmm_kq_rowblock<LPB, V, FMT, XF>, c->sm_count, a.C / (8 * V), a.E * a.R, g, b);
    const dim3 grid(g[0], g[1]), block(b[0], b[1]);
    qgmm_kq_rowblock<LPB, V, FMT, XF><<<grid, block, 0, c->stream>>>(a);
}

/* MX: 2 lanes x 2 units per 32-element block; 1x128: 8 lanes x 2 units per block (4 x 4,
 * 64 bytes of bf16 per lane, is latency bound: docs/backends-cuda.md). */
qgmm_status qgmm_cuda_launch_kq_rowblock(qgmm_context *ctx, const qgmm_kquant &a)
{
    const int xf = a.x_dtype == QGMM_K_F32, mx = a.kind == QGMM_KQ_MX;
    if (mx && xf) QGMM_FMT_DISPATCH(a.fmt, (rowblock_run<2, 2, FMT, 1>(ctx, a)));
    else if (mx) QGMM_FMT_DISPATCH(a.fmt, (rowblock_run<2, 2, FMT, 0>(ctx, a)));
    else if (xf) QGMM_FMT_DISPATCH(a.fmt, (rowblock_run<8, 2, FMT, 1>(ctx, a)));
    else QGMM_FMT_DISPATCH(a.fmt, (rowblock_run<8, 2, FMT, 0>(ctx, a)));
    return qgmm_cuda_launch_check(ctx, "qgmm_kq_rowblock");
}
