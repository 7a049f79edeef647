/*
 * cpu_gemm.c — the CPU reference grouped GEMM (ops-spec §6): M-grouped and K-grouped,
 * recipes BF16, FP8 rowwise, FP8 blockwise and MXFP8, f32 accumulation, bf16/f32 out.
 * It is the oracle the GPU GEMMs are compared against (by relative error), so it must be
 * plainly right first and fast enough for CI second:
 *  - output tiles of TM x TN, operands converted to f32 once per (tile, depth chunk) into
 *    small panels, inner loop over a fixed-width row of TN accumulators (vectorizes
 *    without reassociating any sum: each output's sum runs in depth order);
 *  - scaled recipes promote per block as the GPU kernels do: FP8 blockwise sums each
 *    128-deep block in f32 and adds blk * (sa * sb) (DeepGEMM's promotion), MXFP8 does the
 *    same per 32-deep block with the two E8M0 scales; FP8 rowwise scales in the epilogue;
 *  - OpenMP over output tiles when available; results do not depend on thread count.
 * Bad offsets: nothing written, status word raised, QGMM_OK returned.
 */
#include "cpu_ops.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define TM 64      /* output rows per tile (M for M-grouped, N for K-grouped) */
#define TN 64      /* output cols per tile (N for M-grouped, K for K-grouped) */
#define DC 256     /* depth chunk: a multiple of both scale blocks (128 and 32) */

/* ------------------------------------------------------------------ operand access */

/* Operands are decoded to f32 once per panel: fp8 through a 256-entry table, bf16 and
 * f32 inline (these loads are a visible share of the time), anything else through
 * qgmm_cpu_load_f32. All decodes are exact. */
enum { OPD_F32, OPD_BF16, OPD_FP8, OPD_OTHER };

typedef struct operand {
    const qgmm_tensor *t;
    const uint8_t *base;
    int how;
    float lut[256];
} operand;

static void operand_init(operand *o, const qgmm_tensor *t)
{
    o->t = t;
    o->base = (const uint8_t *)qgmm_tensor_data(t);
    if (qgmm_dtype_is_fp8(t->dtype)) {
        o->how = OPD_FP8;
        for (int b = 0; b < 256; ++b) o->lut[b] = qgmm_fp8_to_f32((uint8_t)b, (int)t->dtype);
    } else if (t->dtype == QGMM_BF16) {
        o->how = OPD_BF16;
    } else if (t->dtype == QGMM_F32) {
        o->how = OPD_F32;
    } else {
        o->how = OPD_OTHER;
    }
}

/* Element at strided element index idx as f32. */
static inline float operand_load(const operand *o, int64_t idx)
{
    switch (o->how) {
    case OPD_FP8: return o->lut[o->base[idx]];
    case OPD_BF16: {
        uint16_t h;
        memcpy(&h, o->base + idx * 2, 2);
        return qgmm_bf16_to_f32(h);
    }
    case OPD_F32: {
        float f;
        memcpy(&f, o->base + idx * 4, 4);
        return f;
    }
    default: return qgmm_cpu_load_f32(o->t, idx);
    }
}

static inline float scale_f32(const qgmm_tensor *t, int64_t idx)
{
    return ((const float *)qgmm_tensor_data(t))[idx];
}

static inline float scale_e8m0(const qgmm_tensor *t, int64_t byte_off)
{
    return qgmm_e8m0_to_f32(((const uint8_t *)qgmm_tensor_data(t))[byte_off * t->strides[0]]);
}

/* ------------------------------------------------------------------ the shared problem */

typedef struct gemm_problem {
    qgmm_gemm_kind kind;
    qgmm_recipe recipe;
    const qgmm_tensor *a, *b, *sa, *sb, *out;
    operand oa, ob;
    int64_t groups;
    int32_t *offs;
    int64_t rows, cols, depth;   /* output tile space per group: rows x cols, contracted over depth */
    int64_t sblock;              /* promotion block along depth: 128 / 32, 0 = none */
    /* MXFP8 blocked-scale geometry (from the offsets, as the layout op computes it) */
    int64_t *mx_start;           /* M-grouped: padded start row of group g in a_scales;
                                    K-grouped: padded start scale column of group g */
    int64_t a_cols_pad, b_cols_pad, a_rows_pad, b_rows_pad;
    /* tiles */
    int64_t *tile_start;         /* first tile index of each group, G + 1 entries */
    int64_t tiles_c;             /* tiles along cols */
} gemm_problem;

static int64_t group_begin(const int32_t *offs, int64_t g) { return g == 0 ? 0 : offs[g - 1]; }

/* Output element (row i, col j) of group g goes to: */
static inline int64_t out_index(const gemm_problem *p, int64_t g, int64_t i, int64_t j)
{
    if (p->kind == QGMM_GEMM_M_GROUPED) return qgmm_cpu_elem_index(p->out, i, j, 0);
    return qgmm_cpu_elem_index(p->out, g, i, j);
}

/* Operand A at (output row i, depth d) and B at (output col j, depth d) for group g. */
static inline int64_t a_index(const gemm_problem *p, int64_t i, int64_t d)
{
    if (p->kind == QGMM_GEMM_M_GROUPED) return qgmm_cpu_elem_index(p->a, i, d, 0); /* a (M, K) */
    return qgmm_cpu_elem_index(p->a, d, i, 0);                                    /* a (M, N) */
}
static inline int64_t b_index(const gemm_problem *p, int64_t g, int64_t j, int64_t d)
{
    if (p->kind == QGMM_GEMM_M_GROUPED) return qgmm_cpu_elem_index(p->b, g, j, d); /* b (E, N, K) */
    return qgmm_cpu_elem_index(p->b, d, j, 0);                                    /* b (M, K) */
}

/* Per-block dequant multipliers of A (output row i) and B (output col j) for the depth
 * block that starts at absolute depth d, in group g whose depth starts at d0. */
static inline float a_block_scale(const gemm_problem *p, int64_t g, int64_t i, int64_t d, int64_t d0)
{
    if (p->recipe == QGMM_RECIPE_FP8_BLOCKWISE) /* M: (M, K/128); K: (N, M/128) */
        return scale_f32(p->sa, qgmm_cpu_elem_index(p->sa, i, d / 128, 0));
    if (p->kind == QGMM_GEMM_M_GROUPED) { /* BLOCKED_M_GROUPS of (M, K/32) */
        const int64_t r = i - group_begin(p->offs, g);
        return scale_e8m0(p->sa, p->mx_start[g] * p->a_cols_pad +
                                     qgmm_blocked_offset(r, d / 32, p->a_cols_pad));
    }
    /* BLOCKED_K_GROUPS of (N, M/32) */
    const int64_t width = qgmm_blocked_cols((p->offs[g] - d0) / 32);
    return scale_e8m0(p->sa, p->mx_start[g] * p->a_rows_pad + qgmm_blocked_offset(i, (d - d0) / 32, width));
}

static inline float b_block_scale(const gemm_problem *p, int64_t g, int64_t j, int64_t d, int64_t d0)
{
    if (p->recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        if (p->kind == QGMM_GEMM_M_GROUPED) /* (E, ceil(N/128), K/128) */
            return scale_f32(p->sb, qgmm_cpu_elem_index(p->sb, g, j / 128, d / 128));
        return scale_f32(p->sb, qgmm_cpu_elem_index(p->sb, j, d / 128, 0)); /* (K, M/128) */
    }
    if (p->kind == QGMM_GEMM_M_GROUPED) { /* BLOCKED_3D of (E, N, K/32) */
        const int64_t per_expert = p->b_rows_pad * p->b_cols_pad;
        return scale_e8m0(p->sb, g * per_expert + qgmm_blocked_offset(j, d / 32, p->b_cols_pad));
    }
    /* BLOCKED_K_GROUPS of (K, M/32) */
    const int64_t width = qgmm_blocked_cols((p->offs[g] - d0) / 32);
    return scale_e8m0(p->sb, p->mx_start[g] * p->b_rows_pad + qgmm_blocked_offset(j, (d - d0) / 32, width));
}

/* ------------------------------------------------------------------ one output tile */

typedef struct tile_scratch {
    float ap[TM * DC];   /* A panel: [row][depth] */
    float bp[DC * TN];   /* B panel: [depth][col], cols past the edge zero */
    float acc[TM * TN];
    float blk[TM * TN];
    float sa[TM], sb[TN];
} tile_scratch;

/* blk[i][:] += sum over depth [k0, k1) of ap[i][k] * bp[k][:] for the first `nr` rows
 * (rounded up to 4: the panel's extra rows are zero). A 4 x 8 register block: each
 * output's sum still runs in depth order, so the result equals the plain triple loop. */
static void panel_mac(float *restrict blk, const float *restrict ap, const float *restrict bp,
                      int64_t nr, int64_t k0, int64_t k1)
{
    for (int64_t i = 0; i < nr; i += 4) {
        const float *restrict a0 = ap + i * DC, *restrict a1 = a0 + DC, *restrict a2 = a1 + DC,
                    *restrict a3 = a2 + DC;
        for (int j0 = 0; j0 < TN; j0 += 8) {
            float c0[8], c1[8], c2[8], c3[8];
            float *restrict o0 = blk + i * TN + j0;
            for (int j = 0; j < 8; ++j) {
                c0[j] = o0[j];
                c1[j] = o0[TN + j];
                c2[j] = o0[2 * TN + j];
                c3[j] = o0[3 * TN + j];
            }
            for (int64_t k = k0; k < k1; ++k) {
                const float *restrict b = bp + k * TN + j0;
                const float x0 = a0[k], x1 = a1[k], x2 = a2[k], x3 = a3[k];
                for (int j = 0; j < 8; ++j) {
                    c0[j] += x0 * b[j];
                    c1[j] += x1 * b[j];
                    c2[j] += x2 * b[j];
                    c3[j] += x3 * b[j];
                }
            }
            for (int j = 0; j < 8; ++j) {
                o0[j] = c0[j];
                o0[TN + j] = c1[j];
                o0[2 * TN + j] = c2[j];
                o0[3 * TN + j] = c3[j];
            }
        }
    }
}

static void run_tile(const gemm_problem *p, tile_scratch *s, int64_t g, int64_t r0, int64_t nr,
                     int64_t c0, int64_t nc)
{
    /* Depth range of this group: all of K (M-grouped) or the group's rows (K-grouped). */
    int64_t d_lo = 0, d_hi = p->depth;
    if (p->kind == QGMM_GEMM_K_GROUPED) {
        d_lo = group_begin(p->offs, g);
        d_hi = p->offs[g];
    }
    memset(s->acc, 0, sizeof s->acc);
    for (int64_t dc = d_lo; dc < d_hi; dc += DC) {
        const int64_t dn = (d_hi - dc < DC) ? d_hi - dc : DC;
        for (int64_t i = 0; i < nr; ++i)
            for (int64_t k = 0; k < dn; ++k)
                s->ap[i * DC + k] = operand_load(&p->oa, a_index(p, r0 + i, dc + k));
        for (int64_t i = nr; i < qgmm_round_up_i64(nr, 4); ++i) /* rows panel_mac rounds up to */
            memset(s->ap + i * DC, 0, sizeof(float) * DC);
        for (int64_t k = 0; k < dn; ++k) {
            float *brow = s->bp + k * TN;
            for (int64_t j = 0; j < nc; ++j) brow[j] = operand_load(&p->ob, b_index(p, g, c0 + j, dc + k));
            for (int64_t j = nc; j < TN; ++j) brow[j] = 0.0f;
        }
        if (p->sblock == 0) { /* one sum over the whole depth, promoted never */
            panel_mac(s->acc, s->ap, s->bp, nr, 0, dn);
            continue;
        }
        for (int64_t kb = 0; kb < dn; kb += p->sblock) {
            const int64_t ke = (kb + p->sblock < dn) ? kb + p->sblock : dn;
            const int64_t d = dc + kb; /* absolute depth of the block start */
            memset(s->blk, 0, sizeof s->blk);
            panel_mac(s->blk, s->ap, s->bp, nr, kb, ke);
            for (int64_t i = 0; i < nr; ++i) s->sa[i] = a_block_scale(p, g, r0 + i, d, d_lo);
            for (int64_t j = 0; j < nc; ++j) s->sb[j] = b_block_scale(p, g, c0 + j, d, d_lo);
            for (int64_t i = 0; i < nr; ++i)
                for (int64_t j = 0; j < nc; ++j)
                    s->acc[i * TN + j] += (s->sa[i] * s->sb[j]) * s->blk[i * TN + j];
        }
    }
    /* Epilogue: FP8 rowwise scales; everything stored through the out strides. */
    for (int64_t i = 0; i < nr; ++i) {
        float ra = 1.0f;
        if (p->recipe == QGMM_RECIPE_FP8_ROWWISE)
            ra = (p->kind == QGMM_GEMM_M_GROUPED)
                     ? scale_f32(p->sa, qgmm_cpu_elem_index(p->sa, r0 + i, 0, 0))      /* (M) */
                     : scale_f32(p->sa, qgmm_cpu_elem_index(p->sa, g, r0 + i, 0));     /* (G, N) */
        for (int64_t j = 0; j < nc; ++j) {
            float v = s->acc[i * TN + j];
            if (p->recipe == QGMM_RECIPE_FP8_ROWWISE) {
                /* M: (E, N); K: (G, K) */
                const float rb = scale_f32(p->sb, qgmm_cpu_elem_index(p->sb, g, c0 + j, 0));
                v = v * ra * rb;
            }
            qgmm_cpu_store_f32(p->out, out_index(p, g, r0 + i, c0 + j), v);
        }
    }
}

/* ------------------------------------------------------------------ driver */

static int64_t find_group(const int64_t *tile_start, int64_t groups, int64_t t)
{
    int64_t lo = 0, hi = groups; /* last g with tile_start[g] <= t */
    while (hi - lo > 1) {
        const int64_t mid = (lo + hi) / 2;
        if (tile_start[mid] <= t) lo = mid; else hi = mid;
    }
    return lo;
}

static void problem_free(gemm_problem *p)
{
    free(p->offs);
    free(p->mx_start);
    free(p->tile_start);
}

qgmm_status qgmm_cpu_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *prm,
                                  const qgmm_tensor *a, const qgmm_tensor *b,
                                  const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                  const qgmm_tensor *offs, const qgmm_tensor *out)
{
    gemm_problem *p = (gemm_problem *)calloc(1, sizeof *p);
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "grouped_gemm: out of host memory");
    p->kind = prm->kind;
    p->recipe = prm->recipe;
    p->a = a; p->b = b; p->sa = a_scales; p->sb = b_scales; p->out = out;
    operand_init(&p->oa, a);
    operand_init(&p->ob, b);

    p->groups = offs->shape[0];
    const int64_t G = p->groups;
    p->offs = (int32_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int32_t));
    p->mx_start = (int64_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int64_t));
    p->tile_start = (int64_t *)malloc((size_t)(G + 1) * sizeof(int64_t));
    if (!p->offs || !p->mx_start || !p->tile_start) {
        problem_free(p);
        free(p);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "grouped_gemm: out of host memory");
    }
    const int32_t *po = (const int32_t *)qgmm_tensor_data(offs);
    for (int64_t g = 0; g < G; ++g) p->offs[g] = po[g * offs->strides[0]];

    const int64_t M = a->shape[0];
    int64_t multiple = 1;
    if (p->kind == QGMM_GEMM_M_GROUPED) {
        p->cols = b->shape[1];   /* N */
        p->depth = a->shape[1];  /* K */
    } else {
        p->rows = a->shape[1];   /* N */
        p->cols = b->shape[1];   /* K */
        p->depth = M;
        if (p->recipe == QGMM_RECIPE_FP8_BLOCKWISE) multiple = 128;
        if (p->recipe == QGMM_RECIPE_MXFP8) multiple = 32;
    }
    if (!qgmm_offsets_valid(p->offs, G, M, multiple)) {
        problem_free(p);
        free(p);
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    p->sblock = p->recipe == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : p->recipe == QGMM_RECIPE_MXFP8 ? 32 : 0;

    /* MXFP8 blocked-scale geometry, exactly as qgmm_cpu_scales_to_blocked lays it out. */
    if (p->recipe == QGMM_RECIPE_MXFP8) {
        int64_t s = 0;
        for (int64_t g = 0; g < G; ++g) {
            const int64_t size = p->offs[g] - group_begin(p->offs, g);
            p->mx_start[g] = s;
            s += (p->kind == QGMM_GEMM_M_GROUPED) ? qgmm_blocked_rows(size) : qgmm_blocked_cols(size / 32);
        }
        if (p->kind == QGMM_GEMM_M_GROUPED) {
            p->a_cols_pad = qgmm_blocked_cols(p->depth / 32);
            p->b_cols_pad = p->a_cols_pad;
            p->b_rows_pad = qgmm_blocked_rows(p->cols);
        } else {
            p->a_rows_pad = qgmm_blocked_rows(p->rows);
            p->b_rows_pad = qgmm_blocked_rows(p->cols);
        }
    }

    /* Tile list: per group, (row tiles) x (col tiles). M-grouped rows are the group's
     * rows; K-grouped rows are N for every group (empty groups still get zero tiles). */
    p->tiles_c = qgmm_ceil_div_i64(p->cols, TN);
    p->tile_start[0] = 0;
    for (int64_t g = 0; g < G; ++g) {
        const int64_t nrows = (p->kind == QGMM_GEMM_M_GROUPED) ? p->offs[g] - group_begin(p->offs, g) : p->rows;
        p->tile_start[g + 1] = p->tile_start[g] + qgmm_ceil_div_i64(nrows, TM) * p->tiles_c;
    }
    const int64_t ntiles = p->tile_start[G];

    /* Scratch for every thread is taken before any output is written, so running out of
     * memory still leaves the outputs untouched. */
    int nthreads = 1;
#ifdef _OPENMP
    nthreads = omp_get_max_threads();
#endif
    tile_scratch *scratch = (tile_scratch *)malloc((size_t)nthreads * sizeof *scratch);
    if (!scratch) {
        problem_free(p);
        free(p);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "grouped_gemm: out of host memory");
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(nthreads) if (ntiles > 1)
#endif
    for (int64_t t = 0; t < ntiles; ++t) {
        int tid = 0;
#ifdef _OPENMP
        tid = omp_get_thread_num();
#endif
        const int64_t g = find_group(p->tile_start, G, t);
        const int64_t lt = t - p->tile_start[g];
        const int64_t rbase = (p->kind == QGMM_GEMM_M_GROUPED) ? group_begin(p->offs, g) : 0;
        const int64_t rend = (p->kind == QGMM_GEMM_M_GROUPED) ? p->offs[g] : p->rows;
        const int64_t r0 = rbase + (lt / p->tiles_c) * TM;
        const int64_t c0 = (lt % p->tiles_c) * TN;
        const int64_t nr = (rend - r0 < TM) ? rend - r0 : TM;
        const int64_t nc = (p->cols - c0 < TN) ? p->cols - c0 : TN;
        run_tile(p, &scratch[tid], g, r0, nr, c0, nc);
    }
    free(scratch);
    problem_free(p);
    free(p);
    return QGMM_OK;
}
