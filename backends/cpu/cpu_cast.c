/*
 * cpu_cast.c — the CPU reference of every cast (ops-spec §1-§3) and of qgmm_dequantize, on
 * the one description the API builds (qgmm_problem.h, qgmm_cast_problem).
 *
 * A cast is a loop over units: the elements that share one scale, (e, lines og * o_div to
 * og * o_div + o_div - 1, segment g of r). Per unit: pass 1 takes the NaN-propagating amax
 * of x, the scale comes from kernels/qgmm_scale_rules.h (rowwise §1, MXFP8 §2 FLOOR or
 * RCEIL, blockwise §3), pass 2 casts each element and writes it through q's strides, and
 * the scale goes where the problem's scale map says. Dequantize reads the unit's scale and
 * writes each element back as f32 or bf16 (round to nearest even):
 *   FP8 rowwise, MULTIPLIER stored: out = f32(q) / s      RECIPROCAL: out = f32(q) * s
 *   MXFP8: out = f32(q) * 2^(b-127) (NaN for b = 255)     FP8 blockwise: out = f32(q) * s
 * Units are independent, so OpenMP parallelises over them with no change to any byte.
 * Group offsets are checked first: bad ones write nothing and raise the status bit. Jagged
 * rowwise elements past offs[G-1] are not written (nor read back by dequantize).
 */
#include "cpu_ops.h"

#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#include <stdlib.h>

/* The group bounds of a problem with offsets (host copies): ends[g] the token end of group
 * g; start[g] the padded start (row or scale column) of its grouped MXFP8 scale matrix. */
typedef struct cast_groups {
    int64_t G;
    int32_t *ends;
    int64_t *start;
} cast_groups;

/* Reads and checks the offsets (extent: the tokens; multiple: the per-op rule): 0 ok, 1 bad,
 * -1 out of memory. */
static int groups_read(const qgmm_cast_problem *p, int64_t extent, int64_t multiple, cast_groups *gr)
{
    const int64_t G = p->groups;
    gr->G = G;
    gr->ends = (int32_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int32_t));
    gr->start = (int64_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int64_t));
    if (!gr->ends || !gr->start) return -1;
    const int32_t *src = (const int32_t *)qgmm_ref_data(&p->offs);
    for (int64_t g = 0; g < G; ++g) gr->ends[g] = src[g];
    return qgmm_offsets_valid(gr->ends, G, extent, multiple) ? 0 : 1;
}

/* Byte of MX scale (o, b) in a grouped layout (docs/layouts.md, "2D M-groups" and "2D
 * K-groups"); -1 when the scale belongs to no group (tokens past offs[G-1]). */
static int64_t mx_group_byte(const qgmm_cast_problem *p, const cast_groups *gr, int64_t o, int64_t b)
{
    const int mg = p->layout == QGMM_SCALES_BLOCKED_M_GROUPS;
    const int64_t tok = mg ? o : b * 32;
    const int64_t g = qgmm_group_of(gr->ends, gr->G, tok);
    if (g < 0) return -1;
    const int64_t t0 = g == 0 ? 0 : gr->ends[g - 1];
    if (mg) return gr->start[g] * p->cols_pad + qgmm_blocked_offset(o - t0, b, p->cols_pad);
    const int64_t width = qgmm_blocked_cols((gr->ends[g] - t0) / 32);
    return gr->start[g] * p->rows_pad + qgmm_blocked_offset(o, b - t0 / 32, width);
}

/* Element index of the scale of unit (e, line o, segment g); -1: no scale (grouped). */
static int64_t scale_at(const qgmm_cast_problem *p, const cast_groups *gr, int64_t e, int64_t o, int64_t g)
{
    switch (p->layout) {
    case QGMM_SCALES_PLAIN: return e * p->ss_e + (o / p->o_div) * p->ss_o + g * p->ss_g;
    case QGMM_SCALES_BLOCKED: return (e * p->expert_bytes + qgmm_blocked_offset(o, g, p->cols_pad)) * p->s_byte;
    default: {
        const int64_t byte = mx_group_byte(p, gr, o, g);
        return byte < 0 ? -1 : byte * p->s_byte;
    }
    }
}

/* Unit (e, og, g) of the loop: its lines [o0, o1) and elements [j0, j1) along r. */
typedef struct cast_unit {
    int64_t e, o0, o1, g, j0, j1;
} cast_unit;

static cast_unit unit_of(const qgmm_cast_problem *p, const cast_groups *gr, int64_t lines, int64_t u)
{
    cast_unit c;
    c.g = u % p->nseg;
    const int64_t og = (u / p->nseg) % lines;
    c.e = u / (p->nseg * lines);
    c.o0 = og * p->o_div;
    c.o1 = c.o0 + p->o_div < p->o ? c.o0 + p->o_div : p->o;
    if (p->seg > 0 || !p->groups) {
        c.j0 = c.g * p->seg;
        c.j1 = c.j0 + p->seg;
    } else { /* jagged rowwise: segment g is group g */
        c.j0 = c.g == 0 ? 0 : gr->ends[c.g - 1];
        c.j1 = gr->ends[c.g];
    }
    return c;
}

/* qgmm_cpu_load_at, inlined: with a constant dtype the switch folds away. */
static inline __attribute__((always_inline)) float load_x(const char *xd, const qgmm_dtype xt, int64_t i)
{
    switch (xt) {
    case QGMM_F32: return ((const float *)xd)[i];
    case QGMM_BF16: return qgmm_bf16_to_f32(((const uint16_t *)xd)[i]);
    default: return qgmm_cpu_load_at(xd, xt, i);
    }
}

/* One unit, for the x dtype, fp8 format and kind given: quantize_unit calls it with
 * constants for the common combinations, so the loads and the conversion inline with their
 * format tables folded (the same functions, the same bytes as the generic call). */
static inline __attribute__((always_inline)) void quantize_unit_as(const qgmm_cast_problem *p, const cast_groups *gr,
                                                                   const cast_unit *c, const qgmm_dtype xt,
                                                                   const int fmt, const int mx)
{
    const char *xd = (const char *)qgmm_ref_data(&p->x.at);
    uint8_t *qd = (uint8_t *)qgmm_ref_data(&p->q.at);
    const int64_t xs = p->x.s_r, qs = p->q.s_r;
    float amax = 0.0f;
    for (int64_t o = c->o0; o < c->o1; ++o) {
        const int64_t xb = c->e * p->x.s_e + o * p->x.s_o;
        for (int64_t j = c->j0; j < c->j1; ++j)
            amax = qgmm_amax_combine(amax, qgmm_fabs_f32(load_x(xd, xt, xb + j * xs)));
    }
    float scale = 0.0f;
    uint8_t code = 0;
    if (mx) {
        code = qgmm_mx_scale(amax, fmt, p->rceil);
    } else if (p->kind == QGMM_QUANT_FP8_BLOCKWISE) {
        scale = qgmm_blockwise_scale(amax, fmt);
    } else {
        scale = qgmm_rowwise_scale(amax, fmt);
        if (p->pow2) scale = qgmm_scale_pow2_floor(scale);
    }
    for (int64_t o = c->o0; o < c->o1; ++o) {
        const int64_t xb = c->e * p->x.s_e + o * p->x.s_o, qb = c->e * p->q.s_e + o * p->q.s_o;
        for (int64_t j = c->j0; j < c->j1; ++j) {
            const float v = load_x(xd, xt, xb + j * xs);
            qd[qb + j * qs] = mx ? qgmm_mx_quantize_value(v, code, fmt) : qgmm_quantize_value(v, scale, fmt);
        }
    }
    const int64_t si = scale_at(p, gr, c->e, c->o0, c->g);
    if (si < 0) return;
    if (mx) ((uint8_t *)qgmm_ref_data(&p->scales))[si] = code;
    else ((float *)qgmm_ref_data(&p->scales))[si] = p->recip ? qgmm_scale_reciprocal(scale) : scale;
}

#define QUANTIZE_AS(XT, FMT)                                                                            \
    do {                                                                                                \
        if (mx) quantize_unit_as(p, gr, c, XT, FMT, 1);                                                 \
        else quantize_unit_as(p, gr, c, XT, FMT, 0);                                                    \
    } while (0)

static void quantize_unit(const qgmm_cast_problem *p, const cast_groups *gr, const cast_unit *c)
{
    const qgmm_dtype xt = p->x.at.dtype;
    const int fmt = (int)p->q.at.dtype, mx = p->kind == QGMM_QUANT_MXFP8;
    if (xt == QGMM_BF16 && fmt == QGMM_FMT_E4M3FN) QUANTIZE_AS(QGMM_BF16, QGMM_FMT_E4M3FN);
    else if (xt == QGMM_F32 && fmt == QGMM_FMT_E4M3FN) QUANTIZE_AS(QGMM_F32, QGMM_FMT_E4M3FN);
    else if (xt == QGMM_BF16 && fmt == QGMM_FMT_E5M2) QUANTIZE_AS(QGMM_BF16, QGMM_FMT_E5M2);
    else if (xt == QGMM_F32 && fmt == QGMM_FMT_E5M2) QUANTIZE_AS(QGMM_F32, QGMM_FMT_E5M2);
    else QUANTIZE_AS(xt, fmt);
}
#undef QUANTIZE_AS

static void dequantize_unit(const qgmm_cast_problem *p, const cast_groups *gr, const cast_unit *c)
{
    char *xd = (char *)qgmm_ref_data(&p->x.at);
    const uint8_t *qd = (const uint8_t *)qgmm_ref_data(&p->q.at);
    const qgmm_dtype xt = p->x.at.dtype;
    const int fmt = (int)p->q.at.dtype;
    const int64_t si = scale_at(p, gr, c->e, c->o0, c->g);
    const int mx = p->kind == QGMM_QUANT_MXFP8;
    const float s = mx ? qgmm_e8m0_to_f32(((const uint8_t *)qgmm_ref_data(&p->scales))[si])
                       : ((const float *)qgmm_ref_data(&p->scales))[si];
    for (int64_t o = c->o0; o < c->o1; ++o) {
        const int64_t xb = c->e * p->x.s_e + o * p->x.s_o, qb = c->e * p->q.s_e + o * p->q.s_o;
        for (int64_t j = c->j0; j < c->j1; ++j) {
            const float v = qgmm_fp8_to_f32(qd[qb + j * p->q.s_r], fmt);
            qgmm_cpu_store_at(xd, xt, xb + j * p->x.s_r, mx || p->recip ? qgmm_dequant_mul(v, s) : qgmm_dequant_div(v, s));
        }
    }
}

/* Zeroes the bytes of a blocked or grouped MXFP8 scale layout that no scale lands on. */
static void zero_scale_bytes(const qgmm_cast_problem *p)
{
    uint8_t *sd = (uint8_t *)qgmm_ref_data(&p->scales);
    const int64_t n = p->layout == QGMM_SCALES_BLOCKED ? p->e * p->expert_bytes : p->scales_len;
    for (int64_t k = 0; k < n; ++k) sd[k * p->s_byte] = 0;
}

qgmm_status qgmm_cpu_cast(qgmm_context *ctx, const qgmm_cast_problem *p)
{
    cast_groups gr = {0, NULL, NULL};
    if (p->offs.buffer) {
        /* jagged rowwise: groups along r; MX M-groups: token rows (o); K-groups: tokens along
         * r in whole 32-blocks */
        const int mg = p->layout == QGMM_SCALES_BLOCKED_M_GROUPS;
        const int rc = groups_read(p, mg ? p->o : p->r, p->layout == QGMM_SCALES_BLOCKED_K_GROUPS ? 32 : 1, &gr);
        if (rc != 0) {
            free(gr.ends);
            free(gr.start);
            if (rc < 0) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cpu cast: offsets copy");
            qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
            return QGMM_OK;
        }
        int64_t s = 0;
        for (int64_t g = 0; g < gr.G; ++g) {
            gr.start[g] = s;
            const int64_t size = gr.ends[g] - (g == 0 ? 0 : gr.ends[g - 1]);
            s += mg ? qgmm_blocked_rows(size) : qgmm_blocked_cols(size / 32);
        }
    }
    if (!p->dequantize && p->layout != QGMM_SCALES_PLAIN) zero_scale_bytes(p);
    const int64_t lines = qgmm_ceil_div_i64(p->o, p->o_div);
    const int64_t units = p->e * lines * p->nseg;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static)
#endif
    for (int64_t u = 0; u < units; ++u) {
        const cast_unit c = unit_of(p, &gr, lines, u);
        if (p->dequantize) dequantize_unit(p, &gr, &c);
        else quantize_unit(p, &gr, &c);
    }
    free(gr.ends);
    free(gr.start);
    return QGMM_OK;
}
