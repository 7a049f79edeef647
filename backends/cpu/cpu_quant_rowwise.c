/*
 * cpu_quant_rowwise.c — the CPU reference of FP8 rowwise quantization (ops-spec §1):
 * one scale per 1-D slice along `reduce_dim`, optionally restricted to a token group.
 *
 * Every variant is one loop nest over "slices": a slice is the set of elements whose
 * indices differ only along reduce_dim (restricted to one group's range when offs is
 * given). The variant names of torchao map onto (rank, reduce_dim, offs, q strides):
 * see docs/casts.md. Per slice: pass 1 takes the NaN-propagating amax, the scale comes
 * from kernels/qgmm_scale_rules.h, pass 2 casts and writes through q's strides. Slices
 * are independent, so OpenMP parallelises over them with no change to any byte.
 */
#include "cpu_ops.h"

#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#include <stdlib.h>

/* Index (in elements, through the strides) of element (e, i, j) where j runs along
 * reduce_dim and i along the other of the last two dims. rank 2 ignores e. */
static int64_t slice_index(const qgmm_tensor *t, int reduce_dim, int64_t e, int64_t i, int64_t j)
{
    if (t->rank == 2) return reduce_dim == 1 ? qgmm_cpu_elem_index(t, i, j, 0)
                                             : qgmm_cpu_elem_index(t, j, i, 0);
    return reduce_dim == 2 ? qgmm_cpu_elem_index(t, e, i, j) : qgmm_cpu_elem_index(t, e, j, i);
}

/* Scales are logically (outer, inner): (E, other), (G, other) or (1, other). A rank-1
 * scales tensor holds them flattened outer-major; rank 2 is addressed by its strides. */
static int64_t scale_index(const qgmm_tensor *s, int64_t outer, int64_t inner, int64_t inner_n)
{
    if (s->rank == 1) return (outer * inner_n + inner) * s->strides[0];
    return outer * s->strides[0] + inner * s->strides[1];
}

/* Copies G int32 offsets out of a (host) offs tensor through its stride. NULL on OOM. */
static int32_t *read_offsets(const qgmm_tensor *offs, int64_t groups)
{
    int32_t *o = (int32_t *)malloc((size_t)(groups > 0 ? groups : 1) * sizeof(int32_t));
    if (!o) return NULL;
    const int32_t *src = (const int32_t *)qgmm_tensor_data(offs);
    const int64_t st = offs->rank >= 1 ? offs->strides[0] : 1;
    for (int64_t g = 0; g < groups; ++g) o[g] = src[g * st];
    return o;
}

qgmm_status qgmm_cpu_quantize_fp8_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                          const qgmm_tensor *x, const qgmm_tensor *offs,
                                          const qgmm_tensor *q, const qgmm_tensor *scales)
{
    const int rank = x->rank;
    const int rd = p->reduce_dim;
    const int fmt = (int)q->dtype;
    if (!((rank == 2 && (rd == 0 || rd == 1)) || (rank == 3 && (rd == 1 || rd == 2))))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "cpu fp8 rowwise: rank %d with reduce_dim %d is not a variant", rank, rd);
    const int jagged = offs && offs->buffer;
    if (jagged && rank != 2)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "cpu fp8 rowwise: offs (jagged groups) needs a rank-2 x, got rank %d", rank);

    const int64_t E = rank == 3 ? x->shape[0] : 1;
    const int64_t red_n = x->shape[rd];
    /* the other of the last two dims */
    const int other_dim = rank == 2 ? 1 - rd : (rd == 2 ? 1 : 2);
    const int64_t other_n = x->shape[other_dim];
    const int64_t G = jagged ? offs->shape[0] : 1;

    int32_t *ends = NULL;
    if (jagged) {
        ends = read_offsets(offs, G);
        if (!ends) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cpu fp8 rowwise: offsets copy");
        if (!qgmm_offsets_valid(ends, G, red_n, 1)) {
            /* device-side contract: write nothing, report at synchronize */
            free(ends);
            qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
            return QGMM_OK;
        }
    }

    uint8_t *qd = (uint8_t *)qgmm_tensor_data(q);
    const int recip = p->scale_kind == QGMM_SCALE_RECIPROCAL;
    const int64_t n_slices = E * G * other_n;

#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (int64_t s = 0; s < n_slices; ++s) {
        const int64_t i = s % other_n;
        const int64_t g = (s / other_n) % G;
        const int64_t e = s / (other_n * G);
        const int64_t j0 = jagged ? (g == 0 ? 0 : ends[g - 1]) : 0;
        const int64_t j1 = jagged ? ends[g] : red_n;

        /* element j of the slice sits at base + j * stride in each tensor */
        const int64_t xb = slice_index(x, rd, e, i, 0), xs = x->strides[rd];
        const int64_t qb = slice_index(q, rd, e, i, 0), qs = q->strides[rd];
        float amax = 0.0f;
        for (int64_t j = j0; j < j1; ++j)
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(qgmm_cpu_load_f32(x, xb + j * xs)));
        float scale = qgmm_rowwise_scale(amax, fmt);
        if (p->power_of_2) scale = qgmm_scale_pow2_floor(scale);

        for (int64_t j = j0; j < j1; ++j)
            qd[qb + j * qs] = qgmm_quantize_value(qgmm_cpu_load_f32(x, xb + j * xs), scale, fmt);
        const float stored = recip ? qgmm_scale_reciprocal(scale) : scale;
        qgmm_cpu_store_f32(scales, scale_index(scales, jagged ? g : e, i, other_n), stored);
    }
    free(ends);
    return QGMM_OK;
}
