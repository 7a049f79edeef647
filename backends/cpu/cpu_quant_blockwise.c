/*
 * cpu_quant_blockwise.c — the CPU reference of FP8 blockwise quantization (ops-spec §3):
 * tiles of 1x128 (activations) or 128x128 (weights), the §1 scale rule per tile, the
 * reciprocal stored. Shapes are normalised to (E, N, K) with E = 1 for rank 2. The
 * torchao / DeepGEMM scale layouts are only strides of the logical scales tensor
 * (qgmm_blockwise_scales_view), so one write through the strides serves all of them.
 * 128x128 allows a ragged last tile row (N % 128 != 0): that tile spans the rows left.
 */
#include "cpu_ops.h"

#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#define BW_TILE 128

static int64_t idx3(const qgmm_tensor *t, int64_t e, int64_t r, int64_t c)
{
    return t->rank == 2 ? qgmm_cpu_elem_index(t, r, c, 0) : qgmm_cpu_elem_index(t, e, r, c);
}

qgmm_status qgmm_cpu_quantize_fp8_blockwise(qgmm_context *ctx, const qgmm_fp8_blockwise_params *p,
                                            const qgmm_tensor *x, const qgmm_tensor *q,
                                            const qgmm_tensor *scales)
{
    const int rank = x->rank;
    if (rank != 2 && rank != 3)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu fp8 blockwise: x rank %d (want 2 or 3)", rank);
    if (p->block != QGMM_BLOCK_1X128 && p->block != QGMM_BLOCK_128X128)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu fp8 blockwise: block %d", (int)p->block);
    const int64_t E = rank == 3 ? x->shape[0] : 1;
    const int64_t N = x->shape[rank - 2], K = x->shape[rank - 1];
    if (K % BW_TILE != 0)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "cpu fp8 blockwise: K = %lld is not a multiple of 128", (long long)K);
    const int fmt = (int)q->dtype;
    const int64_t tile_rows = p->block == QGMM_BLOCK_1X128 ? 1 : BW_TILE;
    const int64_t RT = qgmm_ceil_div_i64(N, tile_rows); /* tile rows (ragged last one) */
    const int64_t CT = K / BW_TILE;
    uint8_t *qd = (uint8_t *)qgmm_tensor_data(q);

    const int64_t n_tiles = E * RT * CT;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (int64_t s = 0; s < n_tiles; ++s) {
        const int64_t ct = s % CT;
        const int64_t rt = (s / CT) % RT;
        const int64_t e = s / (CT * RT);
        const int64_t r0 = rt * tile_rows;
        const int64_t r1 = r0 + tile_rows < N ? r0 + tile_rows : N;
        const int64_t c0 = ct * BW_TILE;

        /* within a tile row, column c sits at row base + (c - c0) * stride */
        const int64_t xs = x->strides[rank - 1], qs = q->strides[rank - 1];
        float amax = 0.0f;
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t xb = idx3(x, e, r, c0);
            for (int64_t c = 0; c < BW_TILE; ++c)
                amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_cpu_load_f32(x, xb + c * xs)));
        }
        const float scale = qgmm_blockwise_scale(amax, fmt);
        for (int64_t r = r0; r < r1; ++r) {
            const int64_t xb = idx3(x, e, r, c0), qb = idx3(q, e, r, c0);
            for (int64_t c = 0; c < BW_TILE; ++c)
                qd[qb + c * qs] = qgmm_quantize_value(qgmm_cpu_load_f32(x, xb + c * xs), scale, fmt);
        }
        qgmm_cpu_store_f32(scales, idx3(scales, e, rt, ct), qgmm_scale_reciprocal(scale));
    }
    return QGMM_OK;
}
