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
 * The problem arrives described (api/qgmm_problem.h): rows r, columns c and the contraction
 * with each operand's strides along them, so one loop nest serves both kinds.
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

/* Operands (bf16 or fp8) are decoded to f32 once per panel: fp8 through a 256-entry
 * table, bf16 inline (these loads are a visible share of the time). Both decodes are exact. */
typedef struct operand {
    const uint8_t *base;
    int fp8;
    int64_t s_row, s_k, s_grp;
    float lut[256];
} operand;

static void operand_init(operand *o, const qgmm_gemm_operand *d)
{
    o->base = (const uint8_t *)qgmm_ref_data(&d->at);
    o->fp8 = qgmm_dtype_is_fp8(d->at.dtype);
    o->s_row = d->s_row;
    o->s_k = d->s_k;
    o->s_grp = d->s_grp;
    if (o->fp8)
        for (int b = 0; b < 256; ++b) o->lut[b] = qgmm_fp8_to_f32((uint8_t)b, (int)d->at.dtype);
}

/* Element (group g, r or c index i, contraction index d) as f32. */
static inline float operand_load(const operand *o, int64_t g, int64_t i, int64_t d)
{
    const int64_t idx = g * o->s_grp + i * o->s_row + d * o->s_k;
    if (o->fp8) return o->lut[o->base[idx]];
    uint16_t h;
    memcpy(&h, o->base + idx * 2, 2);
    return qgmm_bf16_to_f32(h);
}

/* f32 scale of (group g, index i, 128-block kb) (qgmm_problem.h) */
static inline float scale_f32(const qgmm_gemm_scales *s, int64_t g, int64_t i, int64_t kb)
{
    const float *base = (const float *)qgmm_ref_data(&s->at);
    return base[g * s->s_grp + (i / s->i_div) * s->s_row + kb * s->s_k];
}

static inline float scale_e8m0(const qgmm_gemm_scales *s, int64_t byte_off)
{
    return qgmm_e8m0_to_f32(((const uint8_t *)qgmm_ref_data(&s->at))[byte_off * s->s_byte]);
}

/* ------------------------------------------------------------------ one run */

/* The problem (qgmm_problem.h) plus what this run derives from it on the host: the
 * offsets read back, the start of each group's blocked MXFP8 scales, the tile list. */
typedef struct gemm_run {
    const qgmm_gemm_problem *d;
    operand oa, ob;
    int32_t *offs;
    int64_t sblock;              /* promotion block along depth: 128 / 32, 0 = none */
    int64_t *mx_start;           /* MXFP8: the first blocked-scale row (M-grouped a) or
                                    column (K-grouped) of group g */
    int64_t *tile_start;         /* first tile index of each group, G + 1 entries */
    int64_t tiles_c;             /* tiles along cols */
} gemm_run;

static int64_t group_begin(const int32_t *offs, int64_t g) { return g == 0 ? 0 : offs[g - 1]; }

static inline void store_out(const gemm_run *p, int64_t g, int64_t i, int64_t j, float v)
{
    const qgmm_gemm_problem *d = p->d;
    const int64_t idx = g * d->so_grp + i * d->so_row + j * d->so_col;
    char *base = (char *)qgmm_ref_data(&d->out);
    if (d->out.dtype == QGMM_F32) memcpy(base + idx * 4, &v, 4);
    else {
        const uint16_t h = qgmm_f32_to_bf16(v);
        memcpy(base + idx * 2, &h, 2);
    }
}

/* Per-block dequant multipliers of A (output row i) and B (output col j) for the depth
 * block that starts at absolute depth d, in group g whose depth starts at d0. */
static inline float a_block_scale(const gemm_run *p, int64_t g, int64_t i, int64_t d, int64_t d0)
{
    const qgmm_gemm_scales *s = &p->d->sa;
    if (p->d->recipe == QGMM_RECIPE_FP8_BLOCKWISE) return scale_f32(s, g, i, d / 128);
    if (p->d->kind == QGMM_GEMM_M_GROUPED) { /* BLOCKED_M_GROUPS of (M, K/32) */
        const int64_t r = i - group_begin(p->offs, g);
        return scale_e8m0(s, p->mx_start[g] * s->cols_pad + qgmm_blocked_offset(r, d / 32, s->cols_pad));
    }
    /* BLOCKED_K_GROUPS of (N, M/32) */
    const int64_t width = p->mx_start[g + 1] - p->mx_start[g];
    return scale_e8m0(s, p->mx_start[g] * s->rows_pad + qgmm_blocked_offset(i, (d - d0) / 32, width));
}

static inline float b_block_scale(const gemm_run *p, int64_t g, int64_t j, int64_t d, int64_t d0)
{
    const qgmm_gemm_scales *s = &p->d->sb;
    if (p->d->recipe == QGMM_RECIPE_FP8_BLOCKWISE) return scale_f32(s, g, j, d / 128);
    if (p->d->kind == QGMM_GEMM_M_GROUPED) /* BLOCKED_3D of (E, N, K/32) */
        return scale_e8m0(s, g * s->rows_pad * s->cols_pad + qgmm_blocked_offset(j, d / 32, s->cols_pad));
    /* BLOCKED_K_GROUPS of (K, M/32) */
    const int64_t width = p->mx_start[g + 1] - p->mx_start[g];
    return scale_e8m0(s, p->mx_start[g] * s->rows_pad + qgmm_blocked_offset(j, (d - d0) / 32, width));
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

static void run_tile(const gemm_run *p, tile_scratch *s, int64_t g, int64_t r0, int64_t nr,
                     int64_t c0, int64_t nc)
{
    /* Depth range of this group: all of K (M-grouped) or the group's rows (K-grouped). */
    int64_t d_lo = 0, d_hi = p->d->kdim;
    if (p->d->kind == QGMM_GEMM_K_GROUPED) {
        d_lo = group_begin(p->offs, g);
        d_hi = p->offs[g];
    }
    memset(s->acc, 0, sizeof s->acc);
    for (int64_t dc = d_lo; dc < d_hi; dc += DC) {
        const int64_t dn = (d_hi - dc < DC) ? d_hi - dc : DC;
        for (int64_t i = 0; i < nr; ++i)
            for (int64_t k = 0; k < dn; ++k)
                s->ap[i * DC + k] = operand_load(&p->oa, 0, r0 + i, dc + k);
        for (int64_t i = nr; i < qgmm_round_up_i64(nr, 4); ++i) /* rows panel_mac rounds up to */
            memset(s->ap + i * DC, 0, sizeof(float) * DC);
        for (int64_t k = 0; k < dn; ++k) {
            float *brow = s->bp + k * TN;
            for (int64_t j = 0; j < nc; ++j) brow[j] = operand_load(&p->ob, g, c0 + j, dc + k);
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
        const int rowwise = p->d->recipe == QGMM_RECIPE_FP8_ROWWISE;
        const float ra = rowwise ? scale_f32(&p->d->sa, g, r0 + i, 0) : 1.0f;
        for (int64_t j = 0; j < nc; ++j) {
            float v = s->acc[i * TN + j];
            if (rowwise) {
                const float rb = scale_f32(&p->d->sb, g, c0 + j, 0);
                v = v * ra * rb;
            }
            store_out(p, g, r0 + i, c0 + j, v);
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

static void run_free(gemm_run *p)
{
    free(p->offs);
    free(p->mx_start);
    free(p->tile_start);
    free(p);
}

qgmm_status qgmm_cpu_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *d)
{
    gemm_run *p = (gemm_run *)calloc(1, sizeof *p);
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "grouped_gemm: out of host memory");
    p->d = d;
    operand_init(&p->oa, &d->a);
    operand_init(&p->ob, &d->b);

    const int64_t G = d->groups;
    p->offs = (int32_t *)malloc((size_t)(G > 0 ? G : 1) * sizeof(int32_t));
    p->mx_start = (int64_t *)malloc((size_t)(G + 1) * sizeof(int64_t));
    p->tile_start = (int64_t *)malloc((size_t)(G + 1) * sizeof(int64_t));
    if (!p->offs || !p->mx_start || !p->tile_start) {
        run_free(p);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "grouped_gemm: out of host memory");
    }
    memcpy(p->offs, qgmm_ref_data(&d->offs), (size_t)G * sizeof(int32_t));
    if (!qgmm_offsets_valid(p->offs, G, d->tokens, d->offs_multiple)) {
        run_free(p);
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    p->sblock = d->recipe == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : d->recipe == QGMM_RECIPE_MXFP8 ? 32 : 0;

    /* MXFP8: where each group's blocked scales start (qgmm_problem.h, mx_group_*) */
    if (d->recipe == QGMM_RECIPE_MXFP8) {
        p->mx_start[0] = 0;
        for (int64_t g = 0; g < G; ++g) {
            const int64_t size = p->offs[g] - group_begin(p->offs, g);
            p->mx_start[g + 1] = p->mx_start[g] + qgmm_round_up_i64(size / d->mx_group_div, d->mx_group_align);
        }
    }

    /* Tile list: per group, (row tiles) x (col tiles). M-grouped rows are the group's
     * rows; K-grouped rows are N for every group (empty groups still get zero tiles). */
    const int mg = d->kind == QGMM_GEMM_M_GROUPED;
    p->tiles_c = qgmm_ceil_div_i64(d->cols, TN);
    p->tile_start[0] = 0;
    for (int64_t g = 0; g < G; ++g) {
        const int64_t nrows = mg ? p->offs[g] - group_begin(p->offs, g) : d->rows;
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
        run_free(p);
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
        const int64_t rbase = mg ? group_begin(p->offs, g) : 0;
        const int64_t rend = mg ? p->offs[g] : d->rows;
        const int64_t r0 = rbase + (lt / p->tiles_c) * TM;
        const int64_t c0 = (lt % p->tiles_c) * TN;
        const int64_t nr = (rend - r0 < TM) ? rend - r0 : TM;
        const int64_t nc = (d->cols - c0 < TN) ? d->cols - c0 : TN;
        run_tile(p, &scratch[tid], g, r0, nr, c0, nc);
    }
    free(scratch);
    run_free(p);
    return QGMM_OK;
}
