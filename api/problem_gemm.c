/* The grouped GEMM's description (qgmm_problem.h), built once from the validated tensors:
 * the only place that knows which tensor dimension is r, c, the contraction or the group
 * for each kind and recipe (the shapes are api/qgmm.h's, checked by ops_gemm.c). */
#include "qgmm_internal.h"
#include "qgmm_layout_maps.h"

#include <string.h>

/* Strides of dims (row, k, grp) of t; a negative dim stands for 0. */
static void strides_of(const qgmm_tensor *t, int row, int k, int grp, int64_t *s_row, int64_t *s_k,
                       int64_t *s_grp)
{
    *s_row = row >= 0 ? t->strides[row] : 0;
    *s_k = k >= 0 ? t->strides[k] : 0;
    *s_grp = grp >= 0 ? t->strides[grp] : 0;
}

static void operand(qgmm_gemm_operand *o, const qgmm_tensor *t, int row, int k, int grp)
{
    o->at = qgmm_ref_of(t);
    strides_of(t, row, k, grp, &o->s_row, &o->s_k, &o->s_grp);
}

static void f32_scales(qgmm_gemm_scales *s, const qgmm_tensor *t, int row, int k, int grp, int64_t i_div)
{
    s->at = qgmm_ref_of(t);
    strides_of(t, row, k, grp, &s->s_row, &s->s_k, &s->s_grp);
    s->i_div = i_div;
}

static void mx_scales(qgmm_gemm_scales *s, const qgmm_tensor *t, int64_t rows_pad, int64_t cols_pad)
{
    s->at = qgmm_ref_of(t);
    s->i_div = 1;
    s->s_byte = t->strides[0];
    s->rows_pad = rows_pad;
    s->cols_pad = cols_pad;
}

void qgmm_gemm_problem_make(const qgmm_grouped_gemm_params *prm, const qgmm_tensor *a,
                            const qgmm_tensor *b, const qgmm_tensor *a_scales,
                            const qgmm_tensor *b_scales, const qgmm_tensor *offs,
                            const qgmm_tensor *out, qgmm_gemm_problem *p)
{
    memset(p, 0, sizeof *p);
    const int mg = prm->kind == QGMM_GEMM_M_GROUPED;
    p->kind = prm->kind;
    p->recipe = prm->recipe;
    p->groups = offs->shape[0];
    p->offs = qgmm_ref_of(offs);
    p->out = qgmm_ref_of(out);
    p->offs_multiple = 1;
    p->sa.i_div = p->sb.i_div = 1;
    p->tokens = a->shape[0];
    if (mg) { /* a (M, K), b (E, N, K), out (M, N) */
        p->rows = a->shape[0];
        p->cols = b->shape[1];
        p->kdim = a->shape[1];
        operand(&p->a, a, 0, 1, -1);
        operand(&p->b, b, 1, 2, 0);
        p->so_row = out->strides[0];
        p->so_col = out->strides[1];
    } else { /* a (M, N), b (M, K), out (G, N, K) */
        p->rows = a->shape[1];
        p->cols = b->shape[1];
        p->kdim = a->shape[0];
        operand(&p->a, a, 1, 0, -1);
        operand(&p->b, b, 1, 0, -1);
        p->so_grp = out->strides[0];
        p->so_row = out->strides[1];
        p->so_col = out->strides[2];
    }
    switch (prm->recipe) {
    case QGMM_RECIPE_BF16: break;
    case QGMM_RECIPE_FP8_ROWWISE:
        if (mg) { /* a_scales (M), b_scales (E, N) */
            f32_scales(&p->sa, a_scales, 0, -1, -1, 1);
        } else { /* a_scales (G, N), b_scales (G, K) */
            f32_scales(&p->sa, a_scales, 1, -1, 0, 1);
        }
        f32_scales(&p->sb, b_scales, 1, -1, 0, 1);
        break;
    case QGMM_RECIPE_FP8_BLOCKWISE:
        /* M: a_scales (M, K/128); K: a_scales (N, M/128), b_scales (K, M/128) */
        f32_scales(&p->sa, a_scales, 0, 1, -1, 1);
        if (mg) { /* b_scales (E, ceil(N/128), K/128) */
            f32_scales(&p->sb, b_scales, 1, 2, 0, 128);
        } else {
            f32_scales(&p->sb, b_scales, 0, 1, -1, 1);
            p->offs_multiple = 128;
        }
        break;
    case QGMM_RECIPE_MXFP8:
        if (mg) { /* BLOCKED_M_GROUPS of (M, K/32), BLOCKED_3D of (E, N, K/32) */
            const int64_t cols_pad = qgmm_blocked_cols(p->kdim / 32);
            mx_scales(&p->sa, a_scales, 0, cols_pad);
            mx_scales(&p->sb, b_scales, qgmm_blocked_rows(p->cols), cols_pad);
            p->mx_group_div = 1;
            p->mx_group_align = 128;
        } else { /* BLOCKED_K_GROUPS of (N, M/32) and of (K, M/32) */
            mx_scales(&p->sa, a_scales, qgmm_blocked_rows(p->rows), 0);
            mx_scales(&p->sb, b_scales, qgmm_blocked_rows(p->cols), 0);
            p->offs_multiple = 32;
            p->mx_group_div = 32;
            p->mx_group_align = 4;
        }
        break;
    }
}
