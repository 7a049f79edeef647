/*
 * cpu_dequant.c — the CPU reference of qgmm_dequantize: the inverse of each quantize,
 * element by element, written as f32 or bf16 (round to nearest even) through out's
 * strides. The scale of an element is found exactly as its quantize found it (same
 * slice / block / tile maps), so a quantize's outputs dequantize without reshaping.
 *   FP8 rowwise, scale_kind MULTIPLIER: out = f32(q) / s   (ops-spec §1: x ~ q / scale)
 *   FP8 rowwise, scale_kind RECIPROCAL: out = f32(q) * s
 *   MXFP8:                              out = f32(q) * 2^(b-127)  (NaN for b = 255)
 *   FP8 blockwise (reciprocal stored):  out = f32(q) * s
 * Jagged rowwise: elements outside every group (past offs[G-1]) are not written, as
 * the quantize does not write them either; bad offsets write nothing at all.
 */
#include "cpu_ops.h"

#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#include <stdlib.h>

static int64_t idx3(const qgmm_tensor *t, int64_t e, int64_t r, int64_t c)
{
    return t->rank == 2 ? qgmm_cpu_elem_index(t, r, c, 0) : qgmm_cpu_elem_index(t, e, r, c);
}

static float load_f32_scale(const qgmm_tensor *s, int64_t idx)
{
    return ((const float *)qgmm_tensor_data(s))[idx];
}

/* ------------------------------------------------------------------ FP8 rowwise */
static int64_t slice_index(const qgmm_tensor *t, int rd, int64_t e, int64_t i, int64_t j)
{
    if (t->rank == 2) return rd == 1 ? qgmm_cpu_elem_index(t, i, j, 0) : qgmm_cpu_elem_index(t, j, i, 0);
    return rd == 2 ? qgmm_cpu_elem_index(t, e, i, j) : qgmm_cpu_elem_index(t, e, j, i);
}

static int64_t scale_index(const qgmm_tensor *s, int64_t outer, int64_t inner, int64_t inner_n)
{
    if (s->rank == 1) return (outer * inner_n + inner) * s->strides[0];
    return outer * s->strides[0] + inner * s->strides[1];
}

static qgmm_status dequant_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                   const qgmm_tensor *q, const qgmm_tensor *scales,
                                   const qgmm_tensor *offs, const qgmm_tensor *out)
{
    const int rank = q->rank, rd = p->reduce_dim, fmt = (int)q->dtype;
    if (!((rank == 2 && (rd == 0 || rd == 1)) || (rank == 3 && (rd == 1 || rd == 2))))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "cpu dequantize rowwise: rank %d with reduce_dim %d", rank, rd);
    const int jagged = offs && offs->buffer;
    if (jagged && rank != 2)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu dequantize rowwise: offs needs rank 2");
    const int64_t E = rank == 3 ? q->shape[0] : 1;
    const int64_t red_n = q->shape[rd];
    const int other_dim = rank == 2 ? 1 - rd : (rd == 2 ? 1 : 2);
    const int64_t other_n = q->shape[other_dim];
    const int64_t G = jagged ? offs->shape[0] : 1;

    int32_t *ends = NULL;
    if (jagged) {
        ends = (int32_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int32_t));
        if (!ends) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cpu dequantize: offsets copy");
        const int32_t *src = (const int32_t *)qgmm_tensor_data(offs);
        for (int64_t g = 0; g < G; ++g) ends[g] = src[g * offs->strides[0]];
        if (!qgmm_offsets_valid(ends, G, red_n, 1)) {
            free(ends);
            qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
            return QGMM_OK;
        }
    }
    const uint8_t *qd = (const uint8_t *)qgmm_tensor_data(q);
    const int recip = p->scale_kind == QGMM_SCALE_RECIPROCAL;
    const int64_t n_slices = E * G * other_n;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (int64_t s = 0; s < n_slices; ++s) {
        const int64_t i = s % other_n, g = (s / other_n) % G, e = s / (other_n * G);
        const int64_t j0 = jagged ? (g == 0 ? 0 : ends[g - 1]) : 0;
        const int64_t j1 = jagged ? ends[g] : red_n;
        const float sc = load_f32_scale(scales, scale_index(scales, jagged ? g : e, i, other_n));
        const int64_t qb = slice_index(q, rd, e, i, 0), qs = q->strides[rd];
        const int64_t ob = slice_index(out, rd, e, i, 0), os = out->strides[rd];
        for (int64_t j = j0; j < j1; ++j) {
            const float v = qgmm_fp8_to_f32(qd[qb + j * qs], fmt);
            qgmm_cpu_store_f32(out, ob + j * os, recip ? qgmm_dequant_mul(v, sc) : qgmm_dequant_div(v, sc));
        }
    }
    free(ends);
    return QGMM_OK;
}

/* ------------------------------------------------------------------ MXFP8 */
static qgmm_status dequant_mx(qgmm_context *ctx, const qgmm_mxfp8_params *p, const qgmm_tensor *q,
                              const qgmm_tensor *scales, const qgmm_tensor *out)
{
    const int rank = q->rank, last = rank - 1, fmt = (int)q->dtype;
    if ((rank != 2 && rank != 3) || (p->block_dim != last && p->block_dim != last - 1))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu dequantize mxfp8: rank %d block_dim %d",
                              rank, p->block_dim);
    const int along_last = p->block_dim == last;
    const int64_t E = rank == 3 ? q->shape[0] : 1;
    const int64_t R = q->shape[rank - 2], C = q->shape[rank - 1];
    const int64_t L = along_last ? C : R, O = along_last ? R : C;
    if (L % 32 != 0)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "cpu dequantize mxfp8: blocked extent %lld not a multiple of 32", (long long)L);
    const int64_t NB = L / 32;
    const int64_t cols_pad = qgmm_blocked_cols(NB);
    const int64_t per_expert = qgmm_blocked_rows(O) * cols_pad;
    const int blocked = p->scale_layout == QGMM_SCALES_BLOCKED;
    const uint8_t *qd = (const uint8_t *)qgmm_tensor_data(q);
    const uint8_t *sd = (const uint8_t *)qgmm_tensor_data(scales);
    const int64_t n_blocks = E * O * NB;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (int64_t s = 0; s < n_blocks; ++s) {
        const int64_t b = s % NB, o = (s / NB) % O, e = s / (NB * O);
        int64_t si;
        if (blocked) si = (e * per_expert + qgmm_blocked_offset(o, b, cols_pad)) * scales->strides[0];
        else if (scales->rank == 1) si = ((e * O + o) * NB + b) * scales->strides[0];
        else si = idx3(scales, e, o, b);
        const float m = qgmm_e8m0_to_f32(sd[si]);
        const int64_t r0 = along_last ? o : b * 32, c0 = along_last ? b * 32 : o;
        const int64_t qb = idx3(q, e, r0, c0), qs = q->strides[p->block_dim];
        const int64_t ob = idx3(out, e, r0, c0), os = out->strides[p->block_dim];
        for (int64_t k = 0; k < 32; ++k)
            qgmm_cpu_store_f32(out, ob + k * os, qgmm_dequant_mul(qgmm_fp8_to_f32(qd[qb + k * qs], fmt), m));
    }
    return QGMM_OK;
}

/* ------------------------------------------------------------------ FP8 blockwise */
static qgmm_status dequant_blockwise(qgmm_context *ctx, const qgmm_fp8_blockwise_params *p,
                                     const qgmm_tensor *q, const qgmm_tensor *scales,
                                     const qgmm_tensor *out)
{
    const int rank = q->rank, fmt = (int)q->dtype;
    if ((rank != 2 && rank != 3) || (p->block != QGMM_BLOCK_1X128 && p->block != QGMM_BLOCK_128X128))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu dequantize blockwise: rank %d block %d",
                              rank, (int)p->block);
    const int64_t E = rank == 3 ? q->shape[0] : 1;
    const int64_t N = q->shape[rank - 2], K = q->shape[rank - 1];
    if (E == 0 || N == 0 || K == 0) return QGMM_OK; /* nothing to write; E * N may not fit */
    const int64_t tile_rows = p->block == QGMM_BLOCK_1X128 ? 1 : 128;
    const uint8_t *qd = (const uint8_t *)qgmm_tensor_data(q);
    const int64_t n_rows = E * N;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (int64_t s = 0; s < n_rows; ++s) {
        const int64_t r = s % N, e = s / N;
        const int64_t qb = idx3(q, e, r, 0), qs = q->strides[rank - 1];
        const int64_t ob = idx3(out, e, r, 0), os = out->strides[rank - 1];
        for (int64_t c = 0; c < K; ++c) {
            const float sc = load_f32_scale(scales, idx3(scales, e, r / tile_rows, c / 128));
            qgmm_cpu_store_f32(out, ob + c * os, qgmm_dequant_mul(qgmm_fp8_to_f32(qd[qb + c * qs], fmt), sc));
        }
    }
    return QGMM_OK;
}

qgmm_status qgmm_cpu_dequantize(qgmm_context *ctx, const qgmm_quant_format *f,
                                const qgmm_tensor *q, const qgmm_tensor *scales,
                                const qgmm_tensor *offs, const qgmm_tensor *out)
{
    switch (f->kind) {
    case QGMM_QUANT_FP8_ROWWISE: return dequant_rowwise(ctx, &f->rowwise, q, scales, offs, out);
    case QGMM_QUANT_MXFP8: return dequant_mx(ctx, &f->mx, q, scales, out);
    case QGMM_QUANT_FP8_BLOCKWISE: return dequant_blockwise(ctx, &f->blockwise, q, scales, out);
    }
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu dequantize: format kind %d", (int)f->kind);
}
