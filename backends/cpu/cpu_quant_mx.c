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

#include <stdlib.h>

#define MX_BLOCK 32

/* Element (e, o, l) where l runs along the blocked dim and o along the other. */
static int64_t mx_index(const qgmm_tensor *t, int along_last, int64_t e, int64_t o, int64_t l)
{
    const int64_t r = along_last ? o : l, c = along_last ? l : o;
    return t->rank == 2 ? qgmm_cpu_elem_index(t, r, c, 0) : qgmm_cpu_elem_index(t, e, r, c);
}

/* Where the grouped layouts put scale (o, b) of the (other, blocks) scale matrix
 * (docs/layouts.md, "2D M-groups" and "2D K-groups"): group bounds and padded starts from the checked offsets. */
typedef struct mx_groups {
    int m_groups;          /* 1: M-groups (o = token row); 0: K-groups (b = token block) */
    int64_t G;
    const int32_t *offs;   /* token end offsets */
    const int64_t *start;  /* padded start row (M) or scale column (K) of each group */
    int64_t cols_pad, rows_pad;
} mx_groups;

/* -1 when the scale belongs to no group (tokens past offs[G-1]). */
static int64_t mx_group_offset(const mx_groups *m, int64_t o, int64_t b)
{
    const int64_t tok = m->m_groups ? o : b * MX_BLOCK;
    const int64_t g = qgmm_group_of(m->offs, m->G, tok);
    if (g < 0) return -1;
    const int64_t t0 = g == 0 ? 0 : m->offs[g - 1];
    if (m->m_groups) return m->start[g] * m->cols_pad + qgmm_blocked_offset(o - t0, b, m->cols_pad);
    const int64_t width = qgmm_blocked_cols((m->offs[g] - t0) / MX_BLOCK);
    return m->start[g] * m->rows_pad + qgmm_blocked_offset(o, b - t0 / MX_BLOCK, width);
}

static qgmm_status mx_quantize(qgmm_context *ctx, const qgmm_mxfp8_params *p, const qgmm_tensor *x,
                               const qgmm_tensor *q, const qgmm_tensor *scales, const mx_groups *grp)
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
    } else if (grp) {
        for (int64_t k = 0; k < scales->shape[0]; ++k) sd[k * s_stride] = 0;
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
        if (grp) {
            const int64_t off = mx_group_offset(grp, o, b);
            if (off >= 0) sd[off * s_stride] = code;
            continue;
        }
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

qgmm_status qgmm_cpu_quantize_mxfp8(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                    const qgmm_tensor *x, const qgmm_tensor *q,
                                    const qgmm_tensor *scales)
{
    return mx_quantize(ctx, p, x, q, scales, NULL);
}

/* The same cast with the scales placed as qgmm_cpu_scales_to_blocked places the plain
 * ones (M-groups: offs over rows; K-groups: offs over the token blocks, multiples of 32);
 * offsets are checked before anything is written. */
qgmm_status qgmm_cpu_quantize_mxfp8_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                            const qgmm_tensor *x, const qgmm_tensor *offs,
                                            const qgmm_tensor *q, const qgmm_tensor *scales)
{
    const int mg = p->scale_layout == QGMM_SCALES_BLOCKED_M_GROUPS;
    if (x->rank != 2 || p->block_dim != (mg ? 1 : 0))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cpu mxfp8 grouped: rank %d, block_dim %d", x->rank,
                              p->block_dim);
    const int64_t G = offs->shape[0], T = x->shape[0], D = x->shape[1];
    int32_t *o = (int32_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int32_t));
    int64_t *start = (int64_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int64_t));
    if (!o || !start) {
        free(o);
        free(start);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cpu mxfp8 grouped: out of host memory");
    }
    const int32_t *src = (const int32_t *)qgmm_tensor_data(offs);
    for (int64_t g = 0; g < G; ++g) o[g] = src[g * offs->strides[0]];
    qgmm_status st = QGMM_OK;
    if (!qgmm_offsets_valid(o, G, T, mg ? 1 : MX_BLOCK)) {
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
    } else {
        int64_t s = 0;
        for (int64_t g = 0; g < G; ++g) {
            start[g] = s;
            const int64_t size = o[g] - (g == 0 ? 0 : o[g - 1]);
            s += mg ? qgmm_blocked_rows(size) : qgmm_blocked_cols(size / MX_BLOCK);
        }
        const mx_groups m = {mg, G, o, start, qgmm_blocked_cols(D / MX_BLOCK), qgmm_blocked_rows(D)};
        st = mx_quantize(ctx, p, x, q, scales, &m);
    }
    free(o);
    free(start);
    return st;
}
