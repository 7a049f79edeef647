/*
 * cast_round_trip.cu — the mx_round_trip slot on CUDA and HIP (qgmm_backend.h): bf16 x
 * quantized to MXFP8 and dequantized to bf16 in one pass (kernels/
 * qgmm_kernels_mx_round_trip.cuh), for the composite's MXFP8 operands, whose MXFP8 GEMM
 * here multiplies the dequantized bf16 values anyway. Every layout the slot's
 * contract names is taken: blocks along the contiguous dim (qgmm_krt_rows) or along a dim
 * whose lines are contiguous (qgmm_krt_cols); unaligned rows take narrower accesses. The
 * padded form (the wgrad operands) runs the fused pad's plan first (cast_pad.cu) and the
 * cols kernel through its map; past QGMM_KL_MAX_GROUPS groups it declines.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_mx_round_trip.cuh"

/* The rows kernel in the row kernels' launch shape (qgmm_k_row_shape). */
template <int FMT, int VEC>
static void rows_run(qgmm_context *ctx, const qgmm_kround_trip &a)
{
    const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    unsigned g[2], b[2];
    qgmm_k_row_shape(qgmm_krt_rows<FMT, VEC>, c->sm_count, a.C / 16, a.E * a.R, g, b);
    const dim3 grid(g[0], g[1]), block(b[0], b[1]);
    qgmm_krt_rows<FMT, VEC><<<grid, block, 0, c->stream>>>(a);
}

/* The cols kernel on its resident blocks once: a second, partial wave would leave SMs idle. */
template <int FMT, int W>
static void cols_run(qgmm_context *ctx, const qgmm_kround_trip &a)
{
    const int64_t threads = a.E * (a.R / 32) * (a.C / W);
    const unsigned grid =
        qgmm_cuda_grid(ctx, (threads + 255) / 256, 256, qgmm_k_resident(qgmm_krt_cols<FMT, W>, 256, 8));
    qgmm_krt_cols<FMT, W><<<grid, 256, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(a);
}

/* wide: elements per access (below) */
template <int FMT>
static qgmm_status launch(qgmm_context *ctx, const qgmm_kround_trip &a, int rows, int wide)
{
    if (rows) {
        if (wide == 8) rows_run<FMT, 1>(ctx, a);
        else rows_run<FMT, 0>(ctx, a);
        return qgmm_cuda_launch_check(ctx, "qgmm_krt_rows");
    }
    if (wide == 2) cols_run<FMT, 2>(ctx, a);
    else cols_run<FMT, 1>(ctx, a);
    return qgmm_cuda_launch_check(ctx, "qgmm_krt_cols");
}

extern "C" qgmm_status qgmm_cuda_mx_round_trip(qgmm_context *ctx, const qgmm_cast_problem *p,
                                               const qgmm_cast_operand *out, const qgmm_pad_gather *g)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    const int fmt = (int)p->q.at.dtype;
    const int rows = !g && p->x.s_r == 1 && out->s_r == 1, cols = !rows && p->x.s_o == 1 && out->s_o == 1;
    if (p->kind != QGMM_QUANT_MXFP8 || p->x.at.dtype != QGMM_BF16 || out->at.dtype != QGMM_BF16 ||
        (!rows && !cols) || p->r % 32 != 0 || (fmt != QGMM_FMT_E4M3FN && fmt != QGMM_FMT_E5M2))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "cuda mx_round_trip: not bf16 with contiguous blocks or lines and whole blocks");
    qgmm_kround_trip a;
    a.x = qgmm_cuda_kview_of(p->x, rows); /* C: the blocks (rows) or the lines (cols) */
    a.out = qgmm_cuda_kview_of(*out, rows);
    a.E = p->e;
    a.R = rows ? p->o : p->r;
    a.C = rows ? p->r : p->o;
    a.rceil = p->rceil;
    a.gmap = nullptr;
    if (g) { /* the plan (offsets checked, padded offsets written) and the map, in the scratch */
        const int64_t nblk = a.R / 32;
        int32_t *map = (int32_t *)qgmm_cuda_scratch(ctx, (size_t)(2 + 2 * nblk) * sizeof(int32_t));
        if (!map) return QGMM_ERR_OUT_OF_MEMORY;
        if ((st = qgmm_cuda_pad_gather_plan(ctx, g, map, nblk)) != QGMM_OK) return st; /* declines many groups */
        a.gmap = map;
    }
    if (a.E * a.R * a.C == 0) return QGMM_OK;
    /* elements per access where both operands' bases and strides allow it: 8 along the
     * block rows (rows kernel: else 1), 2 columns (cols kernel: else 1) */
    int wide = 1;
    const int64_t v = rows ? 8 : 2;
    if ((uintptr_t)a.x.ptr % (2 * v) == 0 && (uintptr_t)a.out.ptr % (2 * v) == 0 && a.x.s1 % v == 0 &&
        a.out.s1 % v == 0 && a.x.s0 % v == 0 && a.out.s0 % v == 0 && a.C % v == 0)
        wide = (int)v;
    return fmt == QGMM_FMT_E4M3FN ? launch<QGMM_FMT_E4M3FN>(ctx, a, rows, wide)
                                  : launch<QGMM_FMT_E5M2>(ctx, a, rows, wide);
}
