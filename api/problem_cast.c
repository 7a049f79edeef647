/* The casts' description (qgmm_problem.h), built once from the validated tensors: the only
 * place that knows which tensor dim is e, o or r for each format, how each scales tensor
 * (rank 1, 2 or 3, plain or blocked) addresses a segment's scale, and the scale rule. The
 * shapes are api/qgmm.h's, checked by ops_cast.c. */
#include "qgmm_internal.h"
#include "qgmm_layout_maps.h"

#include <string.h>

static void operand(qgmm_cast_operand *o, const qgmm_tensor *t, int odim, int rdim)
{
    o->at = qgmm_ref_of(t);
    o->s_e = t->rank == 3 ? t->strides[0] : 0;
    o->s_o = t->strides[odim];
    o->s_r = t->strides[rdim];
}

/* Plain scales (e, o / o_div, g): a rank-1 tensor holds them flattened in that order (no
 * e for rank-2 data), a rank-2 one is (o, g) or, with offsets or rank-3 data, (e or g, o)
 * for rowwise, a rank-3 one (e, o, g). */
static void plain_scales(qgmm_cast_problem *p, const qgmm_tensor *s)
{
    const int64_t *st = s->strides;
    if (p->kind == QGMM_QUANT_FP8_ROWWISE) {
        /* one scale per line (and group or expert): (e or g) * outer + o * inner */
        const int64_t outer = s->rank == 1 ? p->o * st[0] : st[0];
        p->ss_e = outer;
        p->ss_g = outer;
        p->ss_o = s->rank == 1 ? st[0] : st[1];
        return;
    }
    const int64_t lines = qgmm_ceil_div_i64(p->o, p->o_div), nseg = p->nseg;
    if (s->rank == 1) {
        p->ss_e = lines * nseg * st[0];
        p->ss_o = nseg * st[0];
        p->ss_g = st[0];
    } else if (s->rank == 2) {
        p->ss_o = st[0];
        p->ss_g = st[1];
    } else {
        p->ss_e = st[0];
        p->ss_o = st[1];
        p->ss_g = st[2];
    }
}

void qgmm_cast_problem_make(const qgmm_quant_format *f, int dequantize, const qgmm_tensor *x,
                            const qgmm_tensor *q, const qgmm_tensor *scales, const qgmm_tensor *offs,
                            qgmm_cast_problem *p)
{
    memset(p, 0, sizeof *p);
    const int rank = x->rank, last = rank - 1;
    p->kind = f->kind;
    p->dequantize = dequantize;
    p->o_div = 1;
    p->layout = QGMM_SCALES_PLAIN;
    switch (f->kind) {
    case QGMM_QUANT_FP8_ROWWISE: {
        const int rd = f->rowwise.reduce_dim;
        p->rdim = rd;
        p->odim = rank == 2 ? 1 - rd : (rd == 2 ? 1 : 2);
        p->pow2 = f->rowwise.power_of_2;
        p->recip = f->rowwise.scale_kind == QGMM_SCALE_RECIPROCAL;
        break;
    }
    case QGMM_QUANT_MXFP8:
        p->rdim = f->mx.block_dim;
        p->odim = f->mx.block_dim == last ? last - 1 : last;
        p->seg = 32;
        p->layout = f->mx.scale_layout;
        p->rceil = f->mx.mode == QGMM_MX_RCEIL;
        break;
    case QGMM_QUANT_FP8_BLOCKWISE:
        p->rdim = last;
        p->odim = last - 1;
        p->seg = 128;
        p->o_div = f->blockwise.block == QGMM_BLOCK_128X128 ? 128 : 1;
        p->recip = 1;
        break;
    }
    p->e = rank == 3 ? x->shape[0] : 1;
    p->o = x->shape[p->odim];
    p->r = x->shape[p->rdim];
    operand(&p->x, x, p->odim, p->rdim);
    operand(&p->q, q, p->odim, p->rdim);
    p->offs = qgmm_ref_of(offs);
    p->groups = p->offs.buffer ? offs->shape[0] : 0;
    if (f->kind == QGMM_QUANT_FP8_ROWWISE) {
        p->seg = p->groups ? 0 : p->r;
        p->nseg = p->groups ? p->groups : 1;
    } else {
        p->nseg = p->r / p->seg;
    }
    p->scales = qgmm_ref_of(scales);
    p->s_byte = scales->strides[0];
    /* Products of extents fit in int64 only where the tensors hold elements (their bytes lie
     * inside buffers); an empty cast reads no scale, so its scale map stays 0. */
    const int empty = p->e == 0 || p->o == 0 || p->r == 0;
    p->scales_len = 1;
    for (int d = 0; d < scales->rank; ++d)
        if (!scales->shape[d]) p->scales_len = 0;
    for (int d = 0; d < scales->rank && p->scales_len; ++d) p->scales_len *= scales->shape[d];
    if (f->kind == QGMM_QUANT_MXFP8) {
        p->cols_pad = qgmm_blocked_cols(p->nseg);
        p->rows_pad = qgmm_blocked_rows(p->o);
        if (!empty) p->expert_bytes = p->rows_pad * p->cols_pad;
    }
    if (p->layout == QGMM_SCALES_PLAIN && (f->kind == QGMM_QUANT_FP8_ROWWISE || !empty)) plain_scales(p, scales);
}

void qgmm_mx_round_trip_problem_make(const qgmm_mxfp8_params *prm, qgmm_dtype fp8, const qgmm_tensor *x,
                                     const qgmm_tensor *out, qgmm_cast_problem *p, qgmm_cast_operand *o)
{
    qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(0);
    f.mx = *prm;
    f.mx.scale_layout = QGMM_SCALES_PLAIN;
    qgmm_tensor q = *out, scales;
    q.buffer = NULL;
    q.dtype = fp8;
    memset(&scales, 0, sizeof scales);
    scales.dtype = QGMM_E8M0;
    scales.rank = 1;
    scales.strides[0] = 1;
    qgmm_cast_problem_make(&f, 0, x, &q, &scales, NULL, p);
    p->q.at.dtype = fp8; /* an absent tensor's reference has no dtype */
    *o = p->q;
    o->at = qgmm_ref_of(out);
}
