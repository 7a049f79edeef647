/*
 * cpu_quant_mx.c — the CPU reference of MXFP8 quantization (ops-spec §2): blocks of 32
 * consecutive elements along block_dim, one E8M0 byte per block (FLOOR or RCEIL from
 * kernels/qgmm_scale_rules.h), data cast with the block's reciprocal.
 *
 * Shapes are normalised to (E, R, C) with E = 1 for rank 2. "along last" blocks run
 * along C (dim0 / 1x32); otherwise along R (dim1 / 32x1). The scale matrix of one
 * expert is (other, L/32) where other is the non-blocked extent and L the blocked one;
 * it is written plain (through the scales tensor's strides) or straight into the §4
 * blocked layout, whose padding bytes are written 0.
 */
#include "cpu_ops.h"

#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#define MX_BLOCK 32

/* Element (e, o, l) where l runs along the blocked dim and o along the other. */
static int64_t mx_index(const qgmm_tensor *t, int along_last, int64_t e, int64_t o, int64_t l)
{
    const int64_t r = along_last ? o : l, c = along_last ? l : o;
    return t->rank == 2 ? qgmm_cpu_elem_index(t, r, c, 0) : qgmm_cpu_elem_index(t, e, r, c);
}

qgmm_status qgmm_cpu_quantize_mxfp8(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                    const qgmm_tensor *x, const qgmm_tensor *q,
                                    const qgmm_tensor *scales)
{
    const int rank = x->rank;
    if (rank != 2 && rank != 3)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu mxfp8: x rank %d (want 2 or 3)", rank);
    const int last = rank - 1;
    if (p->block_dim != last && p->block_dim != last - 1)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "cpu mxfp8: block_dim %d (want %d or %d for rank %d)", p->block_dim,
                              last, last - 1, rank);
    const int along_last = p->block_dim == last;
    const int fmt = (int)q->dtype;
    const int rceil = p->mode == QGMM_MX_RCEIL;

    const int64_t E = rank == 3 ? x->shape[0] : 1;
    const int64_t R = x->shape[rank - 2], C = x->shape[rank - 1];
    const int64_t L = along_last ? C : R;     /* blocked extent */
    const int64_t O = along_last ? R : C;     /* other extent: rows of the scale matrix */
    if (L % MX_BLOCK != 0)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "cpu mxfp8: blocked extent %lld is not a multiple of 32", (long long)L);
    const int64_t NB = L / MX_BLOCK;          /* cols of the scale matrix */

    uint8_t *qd = (uint8_t *)qgmm_tensor_data(q);
    uint8_t *sd = (uint8_t *)qgmm_tensor_data(scales);
    const int blocked = p->scale_layout == QGMM_SCALES_BLOCKED;
    const int64_t cols_pad = qgmm_blocked_cols(NB);
    const int64_t per_expert = qgmm_blocked_rows(O) * cols_pad;
    const int64_t s_stride = scales->strides[0];

    if (blocked) {
        /* every byte of the blocked buffer is written: padding is 0, data below */
        for (int64_t k = 0; k < E * per_expert; ++k) sd[k * s_stride] = 0;
    }

    const int64_t n_blocks = E * O * NB;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (int64_t s = 0; s < n_blocks; ++s) {
        const int64_t b = s % NB;
        const int64_t o = (s / NB) % O;
        const int64_t e = s / (NB * O);
        const int64_t l0 = b * MX_BLOCK;

        /* element k of the block sits at base + k * stride (the blocked dim's stride) */
        const int64_t xb = mx_index(x, along_last, e, o, l0), xs = x->strides[p->block_dim];
        const int64_t qb = mx_index(q, along_last, e, o, l0), qs = q->strides[p->block_dim];
        float v[MX_BLOCK];
        float amax = 0.0f;
        for (int k = 0; k < MX_BLOCK; ++k) {
            v[k] = qgmm_cpu_load_f32(x, xb + k * xs);
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(v[k]));
        }
        const uint8_t code = qgmm_mx_scale(amax, fmt, rceil);
        for (int k = 0; k < MX_BLOCK; ++k) qd[qb + k * qs] = qgmm_mx_quantize_value(v[k], code, fmt);

        int64_t si;
        if (blocked)
            si = (e * per_expert + qgmm_blocked_offset(o, b, cols_pad)) * s_stride;
        else if (scales->rank == 1)
            si = ((e * O + o) * NB + b) * s_stride;
        else
            si = scales->rank == 2 ? qgmm_cpu_elem_index(scales, o, b, 0)
                                   : qgmm_cpu_elem_index(scales, e, o, b);
        sd[si] = code;
    }
    return QGMM_OK;
}
