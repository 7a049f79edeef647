/*
 * qgmm_cases_gemm.c — GEMM and recipe cases: operands, execution and the float64 checks.
 *
 * Every GEMM operand is described LOGICALLY as (E, R, C) with the contraction along C:
 *   M-grouped: A = (1, M, Kc), B = (E, Nout, Kc)
 *   K-grouped: A = dy^T (1, N, M), B = x^T (1, K, M)   (contraction over tokens M)
 * The host quantizes these logical arrays with the kernels/ rules (the same functions
 * every backend calls), which gives the dequantized operands of the kernel-error
 * reference and the bf16 originals of the recipe-error reference.
 *  - GROUPED_GEMM cases upload the host-quantized operands in the layout the GEMM takes
 *    (blocked MX scales are laid out by the library's private CPU context).
 *  - RECIPE cases upload the bf16 sources and run the backend's OWN casts and layout op
 *    before its GEMM, so SQNR vs the bf16 float64 reference proves they fit together.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qgmm_cases_impl.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"
#include "qgmm_thresholds.h"

/* ------------------------------------------------------------------ logical operands */
typedef struct qc_lop {
    int64_t E, R, C;
    int64_t rb;             /* rows per scale block */
    int64_t nrb, ncb;       /* scale blocks per expert */
    int64_t *cidx;          /* column j -> its scale block column (-1: in no group) */
    int fmt;                /* fp8 dtype, or 0 for bf16 operands (no scales) */
    float *hp;              /* bf16-rounded originals, (E, R, C) */
    uint8_t *q;             /* fp8 codes, (E, R, C) */
    float *dqs;             /* dequant multiplier per block, (E, nrb, ncb) */
    uint8_t *e8m0;          /* MX: the scale bytes, same indexing */
} qc_lop;

static void lop_free(qc_lop *o)
{
    free(o->hp); free(o->q); free(o->dqs); free(o->e8m0); free(o->cidx);
    memset(o, 0, sizeof *o);
}

static inline int64_t lop_cblock(const qc_lop *o, int64_t j) { return o->cidx[j]; }

static inline double lop_val(const qc_lop *o, int64_t e, int64_t i, int64_t j, int hp)
{
    const int64_t idx = (e * o->R + i) * o->C + j;
    if (hp || !o->fmt) return o->hp[idx];
    const int64_t cbi = lop_cblock(o, j);
    if (cbi < 0) return 0.0;
    return (double)qgmm_fp8_to_f32(o->q[idx], o->fmt) *
           (double)o->dqs[(e * o->nrb + i / o->rb) * o->ncb + cbi];
}

/* The columns of `o` as runs of one scale block column (cb < 0: in no group): cidx is
 * constant over [j0, j1). */
typedef struct qc_span {
    int64_t j0, j1, cb;
} qc_span;

static qc_span *lop_spans(const qc_lop *o, int64_t *n)
{
    int64_t k = 0;
    for (int64_t j = 0; j < o->C; ++j) k += j == 0 || o->cidx[j] != o->cidx[j - 1];
    qc_span *sp = malloc((size_t)(k > 0 ? k : 1) * sizeof *sp);
    if (!sp) return NULL;
    k = 0;
    for (int64_t j = 0; j < o->C; ++j) {
        if (j == 0 || o->cidx[j] != o->cidx[j - 1]) sp[k++] = (qc_span){j, j, o->cidx[j]};
        sp[k - 1].j1 = j + 1;
    }
    *n = k;
    return sp;
}

/* The NaN-propagating amax of |h[0..n)| combined into *a, as the element-by-element
 * qgmm_amax_combine loop would (max is order-free without NaN; with a NaN the loop's first
 * NaN wins, so that case takes the loop). */
static inline void amax_span(float *a, const float *h, int64_t n)
{
    float m = 0.0f;
    int nan = 0;
#if defined(_OPENMP)
#pragma omp simd reduction(max : m) reduction(| : nan)
#endif
    for (int64_t j = 0; j < n; ++j) {
        const float v = qgmm_fabs_f32(h[j]);
        nan |= v != v;
        m = v > m ? v : m;
    }
    if (nan) {
        for (int64_t j = 0; j < n; ++j) *a = qgmm_amax_combine(*a, qgmm_fabs_f32(h[j]));
        return;
    }
    *a = qgmm_amax_combine(*a, m);
}

/* o->q from o->hp and each block's multiplier qmul, (E, nrb, ncb). */
static inline __attribute__((always_inline)) void quantize_rows(qc_lop *o, const float *qmul, const qc_span *sp,
                                                                int64_t nsp, const int fmt)
{
    const int64_t all_rows = o->E * o->R;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (all_rows * o->C > (1 << 16))
#endif
    for (int64_t er = 0; er < all_rows; ++er) {
        const int64_t e = er / o->R, i = er % o->R;
        const float *qm = qmul + (e * o->nrb + i / o->rb) * o->ncb;
        const float *hp = o->hp + er * o->C;
        uint8_t *q = o->q + er * o->C;
        for (int64_t s = 0; s < nsp; ++s) {
            if (sp[s].cb < 0) {
                memset(q + sp[s].j0, 0, (size_t)(sp[s].j1 - sp[s].j0));
                continue;
            }
            const float m = qm[sp[s].cb];
            for (int64_t j = sp[s].j0; j < sp[s].j1; ++j) q[j] = qgmm_f32_to_fp8(hp[j] * m, fmt);
        }
    }
}

/* Allocates and quantizes `o` (hp already filled) with the recipe's rule. */
static qgmm_status lop_quantize(qc_lop *o, qgmm_recipe recipe, int fmt, int rceil)
{
    o->fmt = recipe == QGMM_RECIPE_BF16 ? 0 : fmt;
    if (!o->fmt) return QGMM_OK;
    o->nrb = qgmm_ceil_div_i64(o->R, o->rb);
    const int64_t n = o->E * o->R * o->C, nb = o->E * o->nrb * o->ncb;
    int64_t nsp = 0;
    qc_span *sp = lop_spans(o, &nsp);
    o->q = malloc((size_t)(n > 0 ? n : 1));
    o->dqs = malloc((size_t)(nb > 0 ? nb : 1) * sizeof(float));
    o->e8m0 = malloc((size_t)(nb > 0 ? nb : 1));
    float *amax = malloc((size_t)(nb > 0 ? nb : 1) * sizeof(float));
    if (!sp || !o->q || !o->dqs || !o->e8m0 || !amax) {
        free(sp);
        free(amax);
        return QGMM_ERR_OUT_OF_MEMORY;
    }
    for (int64_t b = 0; b < nb; ++b) amax[b] = 0.0f;
    /* one (expert, row block) per iteration: its scale blocks belong to it alone */
    const int64_t rows_of_blocks = o->E * o->nrb;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (o->E * o->R * o->C > (1 << 16))
#endif
    for (int64_t eb = 0; eb < rows_of_blocks; ++eb) {
        const int64_t e = eb / o->nrb, rbi = eb % o->nrb;
        const int64_t i1 = (rbi + 1) * o->rb < o->R ? (rbi + 1) * o->rb : o->R;
        float *a = &amax[(e * o->nrb + rbi) * o->ncb];
        for (int64_t i = rbi * o->rb; i < i1; ++i) {
            const float *h = o->hp + (e * o->R + i) * o->C;
            for (int64_t s = 0; s < nsp; ++s)
                if (sp[s].cb >= 0) amax_span(&a[sp[s].cb], h + sp[s].j0, sp[s].j1 - sp[s].j0);
        }
    }
    /* per block: the multiplier used to quantize (qmul) and the dequant one (dqs) */
    float *qmul = amax; /* reuse: amax is read once per block below */
    for (int64_t b = 0; b < nb; ++b) {
        if (recipe == QGMM_RECIPE_MXFP8) {
            const uint8_t code = qgmm_mx_scale(amax[b], fmt, rceil);
            o->e8m0[b] = code;
            o->dqs[b] = qgmm_e8m0_to_f32(code);
            qmul[b] = qgmm_e8m0_reciprocal(code);
        } else {
            const float s = recipe == QGMM_RECIPE_FP8_BLOCKWISE ? qgmm_blockwise_scale(amax[b], fmt)
                                                                : qgmm_rowwise_scale(amax[b], fmt);
            o->e8m0[b] = 0;
            o->dqs[b] = qgmm_scale_reciprocal(s);
            qmul[b] = s;
        }
    }
    /* one loop per fp8 format, so each calls the conversion with a constant format (its
     * format table folds away; the same function, the same bytes) */
    switch (fmt) {
    case QGMM_FMT_E4M3FN: quantize_rows(o, qmul, sp, nsp, QGMM_FMT_E4M3FN); break;
    case QGMM_FMT_E4M3FNUZ: quantize_rows(o, qmul, sp, nsp, QGMM_FMT_E4M3FNUZ); break;
    case QGMM_FMT_E5M2: quantize_rows(o, qmul, sp, nsp, QGMM_FMT_E5M2); break;
    default: quantize_rows(o, qmul, sp, nsp, fmt); break;
    }
    free(sp);
    free(amax);
    return QGMM_OK;
}

/* ------------------------------------------------------------------ state */
enum { G_A = 0, G_B, G_SA, G_SB, G_OUT, G_SRC0, G_SRC1, G_T0, G_T1, G_T2, G_T3, G_OUT2, G_SRC2,
       G_WS, G_COUNT };

/* One GEMM whose output is checked: the pass it belongs to and its logical operands. */
typedef struct qc_prod {
    int pass, kgrouped;
    int64_t rows, nout, kc;   /* M-grouped: out (rows, nout), contraction kc */
    qc_lop A, B;
    int out;                  /* G_OUT or G_OUT2 */
} qc_prod;

typedef struct qc_gemm {
    qc_prod p[2];             /* MoE backward checks two (dx, dw); everything else one */
    int np;
    qgmm_tensor t[G_COUNT];   /* GEMM operands, sources and intermediates (by G_* index) */
    int slot[G_COUNT];
} qc_gemm;

void qc_release_gemm(qgmm_case_instance *in)
{
    qc_gemm *g = in->gemm;
    if (!g) return;
    for (int i = 0; i < 2; ++i) { lop_free(&g->p[i].A); lop_free(&g->p[i].B); }
    free(g);
    in->gemm = NULL;
}

qgmm_tensor *qc_gemm_tensors(qgmm_case_instance *in, int *n)
{
    qc_gemm *g = in->gemm;
    *n = g ? G_COUNT : 0;
    return g ? g->t : NULL;
}

/* bf16-rounded normal values into o->hp, (E, R, C), from the case seed. */
static qgmm_status fill_hp(qc_lop *o, const qgmm_case *c, uint64_t salt)
{
    const int64_t n = o->E * o->R * o->C;
    o->hp = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!o->hp) return QGMM_ERR_OUT_OF_MEMORY;
    /* rows only 2^[-1,1] apart: per-row scales still differ, while no handful of big rows
     * dominates ||ref|| (a sampled SQNR would then swing by a dB with the sample) */
    qc_fill_f32(o->hp, o->E * o->R, o->C, c->input, c->q_dtype, 1, 1, qc_mix_seed(c->seed, salt));
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (n > (1 << 16))
#endif
    for (int64_t i = 0; i < n; ++i) o->hp[i] = qgmm_bf16_to_f32(qgmm_f32_to_bf16(o->hp[i]));
    return QGMM_OK;
}

/* Replaces each expert's (R, C) f32 array by its (C, R) transpose. */
static qgmm_status transpose_hp(qc_lop *o)
{
    const int64_t n = o->E * o->R * o->C;
    float *t = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (!t) return QGMM_ERR_OUT_OF_MEMORY;
    /* in 64 x 64 tiles: a row-by-row transpose of the nightly shapes misses the cache on
     * every store */
    const int64_t TB = 64, tr = qgmm_ceil_div_i64(o->R, TB), tc = qgmm_ceil_div_i64(o->C, TB);
    const int64_t tiles = o->E * tr * tc;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (n > (1 << 16))
#endif
    for (int64_t tile = 0; tile < tiles; ++tile) {
        const int64_t e = tile / (tr * tc), i0 = (tile / tc) % tr * TB, j0 = tile % tc * TB;
        const int64_t i1 = i0 + TB < o->R ? i0 + TB : o->R, j1 = j0 + TB < o->C ? j0 + TB : o->C;
        const float *src = o->hp + e * o->R * o->C;
        float *dst = t + e * o->R * o->C;
        for (int64_t j = j0; j < j1; ++j)
            for (int64_t i = i0; i < i1; ++i) dst[j * o->R + i] = src[i * o->C + j];
    }
    free(o->hp);
    o->hp = t;
    const int64_t r = o->R;
    o->R = o->C;
    o->C = r;
    return QGMM_OK;
}

/* Scale granularity of a recipe for operand `which` (0 = A, 1 = B). K-grouped operands
 * are scaled along the tokens (C) per group: jagged rowwise has one block per group;
 * blockwise / MX blocks restart at every group start, as when each group is padded to
 * the block (the composite MoE op does that; with group sizes that are multiples of the
 * block — what the K-grouped GEMM requires — it is the plain j / block). */
static qgmm_status set_blocks(qc_lop *o, const qgmm_case_instance *in, qgmm_recipe r, int which,
                              int kgrouped)
{
    o->rb = (r == QGMM_RECIPE_FP8_BLOCKWISE && which == 1 && !kgrouped) ? 128 : 1;
    const int64_t cb = r == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : r == QGMM_RECIPE_MXFP8 ? 32 : 0;
    o->cidx = malloc((size_t)(o->C > 0 ? o->C : 1) * sizeof(int64_t));
    if (!o->cidx) return QGMM_ERR_OUT_OF_MEMORY;
    if (!kgrouped) {
        for (int64_t j = 0; j < o->C; ++j) o->cidx[j] = cb ? j / cb : 0;
        o->ncb = cb ? qgmm_ceil_div_i64(o->C, cb) : 1;
        return QGMM_OK;
    }
    int64_t start = 0, base = 0;
    for (int64_t j = 0; j < o->C; ++j) o->cidx[j] = -1;
    for (int64_t g = 0; g < in->G; ++g) {
        /* clamped: bad-offsets cases carry decreasing or out-of-range offsets */
        const int64_t end = in->offs[g] < start ? start : in->offs[g] > o->C ? o->C : in->offs[g];
        for (int64_t j = start; j < end; ++j) o->cidx[j] = cb ? base + (j - start) / cb : g;
        if (cb) base += qgmm_ceil_div_i64(end - start, cb);
        start = end;
    }
    o->ncb = cb ? base : in->G;
    return QGMM_OK;
}

/* ------------------------------------------------------------------ host-side helpers */
/* scales_to_blocked on the library's CPU context: plain bytes in, blocked bytes out. */
static qgmm_status helper_to_blocked(qgmm_blocked_variant v, const uint8_t *plain, int rank,
                                     const int64_t *shape, const int32_t *offs, int64_t G,
                                     uint8_t *out, size_t out_bytes)
{
    qgmm_context *h = qc_helper_ctx();
    if (!h) return QGMM_ERR_BACKEND_UNAVAILABLE;
    size_t pbytes = 1;
    for (int d = 0; d < rank; ++d) pbytes *= (size_t)shape[d];
    qgmm_buffer *bp = NULL, *bo = NULL, *bf = NULL;
    qgmm_status st = qgmm_buffer_alloc(h, pbytes, &bp);
    if (st == QGMM_OK) st = qgmm_buffer_alloc(h, out_bytes, &bo);
    if (st == QGMM_OK && G > 0) st = qgmm_buffer_alloc(h, (size_t)G * 4, &bf);
    if (st == QGMM_OK) st = qgmm_buffer_upload(bp, 0, plain, pbytes);
    if (st == QGMM_OK && G > 0) st = qgmm_buffer_upload(bf, 0, offs, (size_t)G * 4);
    if (st == QGMM_OK) {
        qgmm_tensor tp = qgmm_tensor_make(bp, 0, QGMM_E8M0, rank, shape);
        const int64_t osh[1] = {(int64_t)out_bytes}, gsh[1] = {G};
        qgmm_tensor to = qgmm_tensor_make(bo, 0, QGMM_E8M0, 1, osh);
        qgmm_tensor tf = qgmm_tensor_make(bf, 0, QGMM_I32, 1, gsh);
        qgmm_tensor none;
        memset(&none, 0, sizeof none);
        st = qgmm_scales_to_blocked(h, v, &tp, G > 0 ? &tf : &none, &to, &none);
        if (st == QGMM_OK) st = qgmm_synchronize(h);
        if (st == QGMM_OK) st = qgmm_buffer_download(bo, 0, out, out_bytes);
    }
    qgmm_buffer_free(bp);
    qgmm_buffer_free(bo);
    qgmm_buffer_free(bf);
    return st;
}

/* ------------------------------------------------------------------ prepare */
static qgmm_status add_in(qgmm_case_instance *in, qc_gemm *g, int idx, const char *name, const void *bytes,
                          size_t n)
{
    qgmm_status st;
    g->slot[idx] = qc_add_slot(in, name, QC_IN, n, bytes, &st);
    return g->slot[idx] < 0 ? st : QGMM_OK;
}

static qgmm_status add_tmp(qgmm_case_instance *in, qc_gemm *g, int idx, const char *name, size_t n)
{
    qgmm_status st;
    g->slot[idx] = qc_add_slot(in, name, QC_TMP, n, NULL, &st);
    return g->slot[idx] < 0 ? st : QGMM_OK;
}

#define TRY(x) do { qgmm_status s_ = (x); if (s_ != QGMM_OK) return s_; } while (0)

/* Uploads the host-quantized operand o as the GEMM takes it: the fp8 codes (or bf16) of
 * the logical (E, R, C) array; the tensor view is built by the caller. */
static qgmm_status upload_codes(qgmm_case_instance *in, qc_gemm *g, int idx, const char *name,
                                const qc_lop *o)
{
    const int64_t n = o->E * o->R * o->C;
    if (o->fmt) return add_in(in, g, idx, name, o->q, (size_t)n);
    uint16_t *h = malloc((size_t)(n > 0 ? n : 1) * 2);
    if (!h) return QGMM_ERR_OUT_OF_MEMORY;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (n > (1 << 16))
#endif
    for (int64_t i = 0; i < n; ++i) h[i] = qgmm_f32_to_bf16(o->hp[i]);
    const qgmm_status st = add_in(in, g, idx, name, h, (size_t)n * 2);
    free(h);
    return st;
}

/* f32 dequant scales of o, uploaded in one of three orders:
 *   SC_LOGICAL: (E, row blocks, col blocks) contiguous (rowwise (M) and (E, N) scales);
 *   SC_GROUP_MAJOR: jagged (G, rows) from the logical (rows, G);
 *   SC_VIEW: scattered through a blockwise scales view's strides (rank 2: E = 1). */
enum { SC_LOGICAL = 0, SC_GROUP_MAJOR = 1, SC_VIEW = 2 };

static qgmm_status upload_f32_scales(qgmm_case_instance *in, qc_gemm *g, int idx, const char *name,
                                     const qc_lop *o, int order, const qgmm_tensor *view,
                                     size_t bytes)
{
    float *f = calloc(bytes / 4 > 0 ? bytes / 4 : 1, sizeof *f);
    if (!f) return QGMM_ERR_OUT_OF_MEMORY;
    for (int64_t e = 0; e < o->E; ++e)
        for (int64_t rb = 0; rb < o->nrb; ++rb)
            for (int64_t cb = 0; cb < o->ncb; ++cb) {
                const float s = o->dqs[(e * o->nrb + rb) * o->ncb + cb];
                int64_t pos;
                if (order == SC_GROUP_MAJOR) pos = cb * o->nrb + rb;
                else if (order == SC_VIEW && view->rank == 3)
                    pos = e * view->strides[0] + rb * view->strides[1] + cb * view->strides[2];
                else if (order == SC_VIEW) pos = rb * view->strides[0] + cb * view->strides[1];
                else pos = (e * o->nrb + rb) * o->ncb + cb;
                if ((size_t)pos < bytes / 4) f[pos] = s;
            }
    const qgmm_status st = add_in(in, g, idx, name, f, bytes);
    free(f);
    return st;
}

static qgmm_tensor slot_view(qgmm_case_instance *in, qc_gemm *g, int idx, qgmm_dtype dt, int rank,
                             const int64_t *sh, const int64_t *strides)
{
    return qc_view(in, g->slot[idx], dt, rank, sh, strides);
}

/* MX blocked scales of operand o, uploaded as the GEMM takes them. */
static qgmm_status upload_mx_scales(qgmm_case_instance *in, qc_gemm *g, int idx, const char *name,
                                    const qc_lop *o, qgmm_blocked_variant v)
{
    size_t bytes;
    int64_t sh[3];
    int rank;
    if (v == QGMM_BLOCKED_3D) {
        sh[0] = o->E; sh[1] = o->R; sh[2] = o->ncb; rank = 3;
        bytes = (size_t)o->E * qgmm_blocked_scales_bytes(o->R, o->ncb);
    } else {
        sh[0] = o->R; sh[1] = o->ncb; rank = 2;
        bytes = v == QGMM_BLOCKED_M_GROUPS ? qgmm_blocked_m_groups_bytes(o->R, o->ncb, in->G)
                                           : qgmm_blocked_k_groups_bytes(o->R, o->ncb, in->G);
    }
    uint8_t *b = malloc(bytes ? bytes : 1);
    if (!b) return QGMM_ERR_OUT_OF_MEMORY;
    qgmm_status st = helper_to_blocked(v, o->e8m0, rank, sh, v == QGMM_BLOCKED_3D ? NULL : in->offs,
                                       v == QGMM_BLOCKED_3D ? 0 : in->G, b, bytes);
    if (st == QGMM_OK) st = add_in(in, g, idx, name, b, bytes);
    free(b);
    if (st != QGMM_OK) return st;
    const int64_t bsh[1] = {(int64_t)bytes};
    g->t[idx] = slot_view(in, g, idx, QGMM_E8M0, 1, bsh, NULL);
    return QGMM_OK;
}

/* GROUPED_GEMM: host operands uploaded in the GEMM's layouts. */
static qgmm_status prep_host_operands(qgmm_case_instance *in, qc_gemm *g)
{
    const qgmm_case *c = &in->c;
    const qgmm_recipe r = c->gemm.recipe;
    qc_lop *A = &g->p[0].A, *B = &g->p[0].B;
    const qgmm_dtype odt = r == QGMM_RECIPE_BF16 ? QGMM_BF16 : c->q_dtype;
    TRY(upload_codes(in, g, G_A, "a", A));
    TRY(upload_codes(in, g, G_B, "b", B));
    if (!g->p[0].kgrouped) {
        const int64_t ash[2] = {A->R, A->C}, bsh[3] = {B->E, B->R, B->C};
        g->t[G_A] = slot_view(in, g, G_A, odt, 2, ash, NULL);
        g->t[G_B] = slot_view(in, g, G_B, odt, 3, bsh, NULL);
    } else {
        /* logical A^T (N, M) row-major is the (M, N) column-major operand */
        const int64_t ash[2] = {A->C, A->R}, as[2] = {1, A->C};
        const int64_t bsh[2] = {B->C, B->R}, bs[2] = {1, B->C};
        g->t[G_A] = slot_view(in, g, G_A, odt, 2, ash, as);
        g->t[G_B] = slot_view(in, g, G_B, odt, 2, bsh, bs);
    }
    switch (r) {
    case QGMM_RECIPE_BF16:
        return QGMM_OK;
    case QGMM_RECIPE_FP8_ROWWISE:
        if (!g->p[0].kgrouped) {
            const int64_t s1[1] = {A->R}, s2[2] = {B->E, B->R};
            TRY(upload_f32_scales(in, g, G_SA, "a_scales", A, SC_LOGICAL, NULL, (size_t)A->R * 4));
            TRY(upload_f32_scales(in, g, G_SB, "b_scales", B, SC_LOGICAL, NULL, (size_t)(B->E * B->R) * 4));
            g->t[G_SA] = slot_view(in, g, G_SA, QGMM_F32, 1, s1, NULL);
            g->t[G_SB] = slot_view(in, g, G_SB, QGMM_F32, 2, s2, NULL);
        } else {
            const int64_t sa[2] = {in->G, A->R}, sb[2] = {in->G, B->R};
            TRY(upload_f32_scales(in, g, G_SA, "a_scales", A, SC_GROUP_MAJOR, NULL, (size_t)(in->G * A->R) * 4));
            TRY(upload_f32_scales(in, g, G_SB, "b_scales", B, SC_GROUP_MAJOR, NULL, (size_t)(in->G * B->R) * 4));
            g->t[G_SA] = slot_view(in, g, G_SA, QGMM_F32, 2, sa, NULL);
            g->t[G_SB] = slot_view(in, g, G_SB, QGMM_F32, 2, sb, NULL);
        }
        return QGMM_OK;
    case QGMM_RECIPE_FP8_BLOCKWISE: {
        qgmm_tensor va, vb;
        size_t ba, bb;
        if (!g->p[0].kgrouped) {
            const int64_t ash[2] = {A->R, A->C}, bsh[3] = {B->E, B->R, B->C};
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, c->blockwise_layout, 2, ash, NULL, 0, &va, &ba));
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_128X128, c->blockwise_layout, 3, bsh, NULL, 0, &vb, &bb));
        } else {
            const int64_t ash[2] = {A->R, A->C}, bsh[2] = {B->R, B->C};
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, QGMM_BLOCKWISE_ROW_MAJOR, 2, ash, NULL, 0, &va, &ba));
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, QGMM_BLOCKWISE_ROW_MAJOR, 2, bsh, NULL, 0, &vb, &bb));
        }
        TRY(upload_f32_scales(in, g, G_SA, "a_scales", A, SC_VIEW, &va, ba));
        TRY(upload_f32_scales(in, g, G_SB, "b_scales", B, SC_VIEW, &vb, bb));
        va.buffer = in->slots[g->slot[G_SA]].buf;
        vb.buffer = in->slots[g->slot[G_SB]].buf;
        g->t[G_SA] = va;
        g->t[G_SB] = vb;
        return QGMM_OK;
    }
    case QGMM_RECIPE_MXFP8:
        if (!g->p[0].kgrouped) {
            TRY(upload_mx_scales(in, g, G_SA, "a_scales", A, QGMM_BLOCKED_M_GROUPS));
            return upload_mx_scales(in, g, G_SB, "b_scales", B, QGMM_BLOCKED_3D);
        }
        TRY(upload_mx_scales(in, g, G_SA, "a_scales", A, QGMM_BLOCKED_K_GROUPS));
        return upload_mx_scales(in, g, G_SB, "b_scales", B, QGMM_BLOCKED_K_GROUPS);
    }
    return QGMM_ERR_INTERNAL;
}

/* RECIPE: bf16 sources uploaded; the backend's casts fill the GEMM operands. The
 * sources are the layer tensors in their natural layouts:
 *   fwd: src0 = x (M, K), src1 = w (E, N, K)
 *   dgrad: src0 = dy (M, N), src1 = w (E, N, K)
 *   wgrad: src0 = dy (M, N), src1 = x (M, K) */
static qgmm_status prep_recipe(qgmm_case_instance *in, qc_gemm *g, const float *src0, int64_t s0r,
                               int64_t s0c, const float *src1, int64_t s1n)
{
    const qgmm_case *c = &in->c;
    const qgmm_recipe r = c->gemm.recipe;
    const int64_t M = c->shape.M, N = c->shape.N, K = c->shape.K, E = in->G;
    const qgmm_dtype q = c->q_dtype;
    {
        uint16_t *h = malloc((size_t)((s0r * s0c) > s1n ? s0r * s0c : s1n) * 2 + 2);
        if (!h) return QGMM_ERR_OUT_OF_MEMORY;
        for (int64_t i = 0; i < s0r * s0c; ++i) h[i] = qgmm_f32_to_bf16(src0[i]);
        qgmm_status st = add_in(in, g, G_SRC0, "src0", h, (size_t)(s0r * s0c) * 2);
        for (int64_t i = 0; st == QGMM_OK && i < s1n; ++i) h[i] = qgmm_f32_to_bf16(src1[i]);
        if (st == QGMM_OK) st = add_in(in, g, G_SRC1, "src1", h, (size_t)s1n * 2);
        free(h);
        TRY(st);
    }
    const int64_t s0sh[2] = {s0r, s0c};
    g->t[G_SRC0] = slot_view(in, g, G_SRC0, QGMM_BF16, 2, s0sh, NULL);
    if (g->p[0].pass == QGMM_PASS_WGRAD) {
        const int64_t sh[2] = {M, K};
        g->t[G_SRC1] = slot_view(in, g, G_SRC1, QGMM_BF16, 2, sh, NULL);
    } else {
        const int64_t sh[3] = {E, N, K};
        g->t[G_SRC1] = slot_view(in, g, G_SRC1, QGMM_BF16, 3, sh, NULL);
    }
    /* GEMM operand codes: same element count as their sources */
    TRY(add_tmp(in, g, G_A, "qa", (size_t)(s0r * s0c)));
    TRY(add_tmp(in, g, G_B, "qb", (size_t)s1n));
    const int64_t ash_m[2] = {s0r, s0c};
    if (g->p[0].pass == QGMM_PASS_WGRAD) {
        const int64_t ash[2] = {M, N}, as[2] = {1, M}, bsh[2] = {M, K}, bs[2] = {1, M};
        g->t[G_A] = slot_view(in, g, G_A, q, 2, ash, as);
        g->t[G_B] = slot_view(in, g, G_B, q, 2, bsh, bs);
    } else {
        g->t[G_A] = slot_view(in, g, G_A, q, 2, ash_m, NULL);
        const int64_t bsh[3] = {E, g->p[0].nout, g->p[0].kc};
        g->t[G_B] = slot_view(in, g, G_B, q, 3, bsh, NULL);
    }
    switch (r) {
    case QGMM_RECIPE_FP8_ROWWISE:
        if (g->p[0].pass == QGMM_PASS_WGRAD) {
            const int64_t sa[2] = {E, N}, sb[2] = {E, K};
            TRY(add_tmp(in, g, G_SA, "sa", (size_t)(E * N) * 4));
            TRY(add_tmp(in, g, G_SB, "sb", (size_t)(E * K) * 4));
            g->t[G_SA] = slot_view(in, g, G_SA, QGMM_F32, 2, sa, NULL);
            g->t[G_SB] = slot_view(in, g, G_SB, QGMM_F32, 2, sb, NULL);
        } else {
            const int64_t sa[1] = {M}, sb[2] = {E, g->p[0].nout};
            TRY(add_tmp(in, g, G_SA, "sa", (size_t)M * 4));
            TRY(add_tmp(in, g, G_SB, "sb", (size_t)(E * g->p[0].nout) * 4));
            g->t[G_SA] = slot_view(in, g, G_SA, QGMM_F32, 1, sa, NULL);
            g->t[G_SB] = slot_view(in, g, G_SB, QGMM_F32, 2, sb, NULL);
        }
        return QGMM_OK;
    case QGMM_RECIPE_FP8_BLOCKWISE: {
        qgmm_tensor va, vb;
        size_t ba, bb;
        if (g->p[0].pass == QGMM_PASS_WGRAD) {
            const int64_t ash[2] = {N, M}, bsh[2] = {K, M};
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, QGMM_BLOCKWISE_ROW_MAJOR, 2, ash, NULL, 0, &va, &ba));
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, QGMM_BLOCKWISE_ROW_MAJOR, 2, bsh, NULL, 0, &vb, &bb));
        } else {
            const int64_t bsh[3] = {E, g->p[0].nout, g->p[0].kc};
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, c->blockwise_layout, 2, ash_m, NULL, 0, &va, &ba));
            TRY(qgmm_blockwise_scales_view(QGMM_BLOCK_128X128, c->blockwise_layout, 3, bsh, NULL, 0, &vb, &bb));
        }
        TRY(add_tmp(in, g, G_SA, "sa", ba));
        TRY(add_tmp(in, g, G_SB, "sb", bb));
        va.buffer = in->slots[g->slot[G_SA]].buf; va.offset = in->slots[g->slot[G_SA]].guard;
        vb.buffer = in->slots[g->slot[G_SB]].buf; vb.offset = in->slots[g->slot[G_SB]].guard;
        g->t[G_SA] = va;
        g->t[G_SB] = vb;
        return QGMM_OK;
    }
    case QGMM_RECIPE_MXFP8: {
        if (g->p[0].pass == QGMM_PASS_WGRAD) {
            const int64_t pa[2] = {N, M / 32}, pb[2] = {K, M / 32};
            TRY(add_tmp(in, g, G_T0, "sa_plain", (size_t)(N * (M / 32))));
            TRY(add_tmp(in, g, G_T1, "sb_plain", (size_t)(K * (M / 32))));
            g->t[G_T0] = slot_view(in, g, G_T0, QGMM_E8M0, 2, pa, NULL);
            g->t[G_T1] = slot_view(in, g, G_T1, QGMM_E8M0, 2, pb, NULL);
            const int64_t ba[1] = {(int64_t)qgmm_blocked_k_groups_bytes(N, M / 32, E)};
            const int64_t bb[1] = {(int64_t)qgmm_blocked_k_groups_bytes(K, M / 32, E)};
            TRY(add_tmp(in, g, G_SA, "sa", (size_t)ba[0]));
            TRY(add_tmp(in, g, G_SB, "sb", (size_t)bb[0]));
            g->t[G_SA] = slot_view(in, g, G_SA, QGMM_E8M0, 1, ba, NULL);
            g->t[G_SB] = slot_view(in, g, G_SB, QGMM_E8M0, 1, bb, NULL);
        } else {
            const int64_t pa[2] = {M, g->p[0].kc / 32};
            TRY(add_tmp(in, g, G_T0, "sa_plain", (size_t)(M * (g->p[0].kc / 32))));
            g->t[G_T0] = slot_view(in, g, G_T0, QGMM_E8M0, 2, pa, NULL);
            const int64_t ba[1] = {(int64_t)qgmm_blocked_m_groups_bytes(M, g->p[0].kc / 32, E)};
            const int64_t bb[1] = {E * (int64_t)qgmm_blocked_scales_bytes(g->p[0].nout, g->p[0].kc / 32)};
            TRY(add_tmp(in, g, G_SA, "sa", (size_t)ba[0]));
            TRY(add_tmp(in, g, G_SB, "sb", (size_t)bb[0]));
            g->t[G_SA] = slot_view(in, g, G_SA, QGMM_E8M0, 1, ba, NULL);
            g->t[G_SB] = slot_view(in, g, G_SB, QGMM_E8M0, 1, bb, NULL);
        }
        return QGMM_OK;
    }
    default:
        return QGMM_ERR_INTERNAL;
    }
}

/* bf16-rounded layer tensors: x (M, K), w (E, N, K), dy (M, N). */
typedef struct qc_layer { float *x, *w, *dy; } qc_layer;

static float *layer_tensor(const qgmm_case *c, int64_t rows, int64_t cols, uint64_t salt, qgmm_status *st)
{
    qc_lop t = {0};
    t.E = 1; t.R = rows; t.C = cols;
    *st = fill_hp(&t, c, salt);
    return t.hp;
}

/* Builds product `pr` of pass `pass` from the layer tensors (contraction along C):
 *   fwd:   A = x (1, M, K),      B = w (E, N, K)
 *   dgrad: A = dy (1, M, N),     B = w^T (E, K, N)
 *   wgrad: A = dy^T (1, N, M),   B = x^T (1, K, M)   (K-grouped) */
static qgmm_status build_prod(qgmm_case_instance *in, qc_prod *pr, int pass, const qc_layer *L)
{
    const qgmm_case *c = &in->c;
    const int64_t M = c->shape.M, N = c->shape.N, K = c->shape.K, E = in->G;
    pr->pass = pass;
    pr->kgrouped = pass == QGMM_PASS_WGRAD;
    pr->rows = M;
    pr->nout = pass == QGMM_PASS_DGRAD ? K : N;
    pr->kc = pass == QGMM_PASS_DGRAD ? N : K;
    qc_lop *A = &pr->A, *B = &pr->B;
    const float *a_src = pass == QGMM_PASS_FORWARD ? L->x : L->dy;
    const float *b_src = pass == QGMM_PASS_WGRAD ? L->x : L->w;
    A->E = 1; A->R = M; A->C = pass == QGMM_PASS_FORWARD ? K : N;
    if (pass == QGMM_PASS_WGRAD) { B->E = 1; B->R = M; B->C = K; }
    else { B->E = E; B->R = N; B->C = K; }
    const int64_t na = A->R * A->C, nb = B->E * B->R * B->C;
    A->hp = malloc((size_t)(na > 0 ? na : 1) * sizeof(float));
    B->hp = malloc((size_t)(nb > 0 ? nb : 1) * sizeof(float));
    if (!A->hp || !B->hp) return QGMM_ERR_OUT_OF_MEMORY;
    memcpy(A->hp, a_src, (size_t)na * sizeof(float));
    memcpy(B->hp, b_src, (size_t)nb * sizeof(float));
    if (pass == QGMM_PASS_WGRAD) { TRY(transpose_hp(A)); TRY(transpose_hp(B)); }
    if (pass == QGMM_PASS_DGRAD) TRY(transpose_hp(B));
    const qgmm_recipe r = c->gemm.recipe;
    TRY(set_blocks(A, in, r, 0, pr->kgrouped));
    TRY(set_blocks(B, in, r, 1, pr->kgrouped));
    const int rceil = c->mx.mode == QGMM_MX_RCEIL;
    TRY(lop_quantize(A, r, (int)c->q_dtype, rceil));
    return lop_quantize(B, r, (int)c->q_dtype, rceil);
}

static qgmm_status upload_bf16(qgmm_case_instance *in, qc_gemm *g, int idx, const char *name, const float *f,
                               int64_t n)
{
    uint16_t *h = malloc((size_t)(n > 0 ? n : 1) * 2);
    if (!h) return QGMM_ERR_OUT_OF_MEMORY;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (n > (1 << 16))
#endif
    for (int64_t i = 0; i < n; ++i) h[i] = qgmm_f32_to_bf16(f[i]);
    const qgmm_status st = add_in(in, g, idx, name, h, (size_t)n * 2);
    free(h);
    return st;
}

/* The checked output of product pr; M-grouped rows past the last group must stay
 * untouched. */
static qgmm_status add_product_output(qgmm_case_instance *in, qc_gemm *g, qc_prod *pr, int idx,
                                      const char *name)
{
    const qgmm_case *c = &in->c;
    const size_t es = qgmm_dtype_size(c->out_dtype);
    pr->out = idx;
    if (!pr->kgrouped) {
        const int64_t sh[2] = {pr->rows, pr->nout};
        TRY(add_tmp(in, g, idx, name, (size_t)(pr->rows * pr->nout) * es));
        in->slots[g->slot[idx]].role = QC_OUT;
        g->t[idx] = slot_view(in, g, idx, c->out_dtype, 2, sh, NULL);
        qc_mark_view(&in->slots[g->slot[idx]], &g->t[idx], 0, in->offs[in->G - 1]);
    } else {
        const int64_t sh[3] = {in->G, c->shape.N, c->shape.K};
        TRY(add_tmp(in, g, idx, name, (size_t)(in->G * c->shape.N * c->shape.K) * es));
        in->slots[g->slot[idx]].role = QC_OUT;
        g->t[idx] = slot_view(in, g, idx, c->out_dtype, 3, sh, NULL);
        qc_mark_view(&in->slots[g->slot[idx]], &g->t[idx], 0, -1);
    }
    return QGMM_OK;
}

/* MoE composite: x, w (and dy) uploaded in bf16, a workspace, y or (dx, dw) out. */
static qgmm_status prep_moe(qgmm_case_instance *in, qc_gemm *g, const qc_layer *L)
{
    const qgmm_case *c = &in->c;
    const int64_t M = c->shape.M, N = c->shape.N, K = c->shape.K, E = in->G;
    const int64_t xs[2] = {M, K}, ws[3] = {E, N, K}, ds[2] = {M, N};
    TRY(upload_bf16(in, g, G_SRC0, "x", L->x, M * K));
    TRY(upload_bf16(in, g, G_SRC1, "w", L->w, E * N * K));
    g->t[G_SRC0] = slot_view(in, g, G_SRC0, QGMM_BF16, 2, xs, NULL);
    g->t[G_SRC1] = slot_view(in, g, G_SRC1, QGMM_BF16, 3, ws, NULL);
    if (c->op == QGMM_CASE_MOE_BACKWARD) {
        TRY(upload_bf16(in, g, G_SRC2, "dy", L->dy, M * N));
        g->t[G_SRC2] = slot_view(in, g, G_SRC2, QGMM_BF16, 2, ds, NULL);
    }
    qgmm_moe_params mp = {c->gemm.recipe, c->q_dtype, c->mx.mode};
    const size_t wsb = qgmm_moe_workspace_bytes(&mp, M, N, K, E);
    if (wsb) TRY(add_tmp(in, g, G_WS, "workspace", wsb));
    return QGMM_OK;
}

qgmm_status qc_prepare_gemm(qgmm_case_instance *in)
{
    const qgmm_case *c = &in->c;
    qc_gemm *g = calloc(1, sizeof *g);
    if (!g) return QGMM_ERR_OUT_OF_MEMORY;
    in->gemm = g;
    for (int i = 0; i < G_COUNT; ++i) g->slot[i] = -1;
    const int64_t M = c->shape.M, N = c->shape.N, K = c->shape.K, E = in->G;
    if (E <= 0) return QGMM_ERR_INVALID_ARGUMENT;

    /* which passes are checked */
    int passes[2], np = 1;
    if (c->op == QGMM_CASE_GROUPED_GEMM)
        passes[0] = c->gemm.kind == QGMM_GEMM_K_GROUPED ? QGMM_PASS_WGRAD : QGMM_PASS_FORWARD;
    else if (c->op == QGMM_CASE_MOE_FORWARD) passes[0] = QGMM_PASS_FORWARD;
    else if (c->op == QGMM_CASE_MOE_BACKWARD) { passes[0] = QGMM_PASS_DGRAD; passes[1] = QGMM_PASS_WGRAD; np = 2; }
    else passes[0] = (int)c->pass;

    /* the layer tensors each pass needs (distinct salts: x, w, dy never coincide) */
    qc_layer L = {NULL, NULL, NULL};
    qgmm_status st = QGMM_OK;
    int need_x = 0, need_w = 0, need_dy = 0;
    for (int i = 0; i < np; ++i) {
        need_x |= passes[i] != QGMM_PASS_DGRAD || c->op == QGMM_CASE_MOE_BACKWARD;
        need_w |= passes[i] != QGMM_PASS_WGRAD || c->op == QGMM_CASE_MOE_BACKWARD;
        need_dy |= passes[i] != QGMM_PASS_FORWARD;
    }
    if (need_x) L.x = layer_tensor(c, M, K, 11, &st);
    if (st == QGMM_OK && need_w) L.w = layer_tensor(c, E * N, K, 12, &st);
    if (st == QGMM_OK && need_dy) L.dy = layer_tensor(c, M, N, 13, &st);
    for (int i = 0; st == QGMM_OK && i < np; ++i) st = build_prod(in, &g->p[i], passes[i], &L);
    g->np = np;
    if (st == QGMM_OK) {
        if (c->op == QGMM_CASE_RECIPE)
            st = prep_recipe(in, g, g->p[0].pass == QGMM_PASS_FORWARD ? L.x : L.dy, M,
                             g->p[0].pass == QGMM_PASS_FORWARD ? K : N,
                             g->p[0].pass == QGMM_PASS_WGRAD ? L.x : L.w,
                             g->p[0].pass == QGMM_PASS_WGRAD ? M * K : E * N * K);
        else if (c->op == QGMM_CASE_GROUPED_GEMM)
            st = prep_host_operands(in, g);
        else
            st = prep_moe(in, g, &L);
    }
    free(L.x);
    free(L.w);
    free(L.dy);
    if (st != QGMM_OK) return st;
    if (c->op == QGMM_CASE_MOE_BACKWARD) {
        TRY(add_product_output(in, g, &g->p[0], G_OUT, "dx"));
        return add_product_output(in, g, &g->p[1], G_OUT2, "dw");
    }
    return add_product_output(in, g, &g->p[0], G_OUT, c->op == QGMM_CASE_MOE_FORWARD ? "y" : "out");
}

/* ------------------------------------------------------------------ execute */
static qgmm_status run_recipe_casts(qgmm_case_instance *in, qc_gemm *g, const qgmm_tensor *offs)
{
    const qgmm_case *c = &in->c;
    qgmm_context *ctx = in->ctx;
    qgmm_tensor none, *t = g->t;
    memset(&none, 0, sizeof none);
    const int64_t M = c->shape.M, N = c->shape.N, K = c->shape.K, E = in->G;
    switch (c->gemm.recipe) {
    case QGMM_RECIPE_FP8_ROWWISE: {
        qgmm_fp8_rowwise_params p = {1, 0, QGMM_SCALE_RECIPROCAL};
        if (g->p[0].pass == QGMM_PASS_WGRAD) {
            p.reduce_dim = 0; /* jagged per-group over tokens, both operands in one call */
            return qgmm_quantize_fp8_rowwise_dual(ctx, &p, &t[G_SRC0], &t[G_A], &t[G_SA], &p,
                                                  &t[G_SRC1], &t[G_B], &t[G_SB], offs);
        }
        TRY(qgmm_quantize_fp8_rowwise(ctx, &p, &t[G_SRC0], &none, &t[G_A], &t[G_SA]));
        if (g->p[0].pass == QGMM_PASS_FORWARD) {
            p.reduce_dim = 2; /* per (e, n) */
            return qgmm_quantize_fp8_rowwise(ctx, &p, &t[G_SRC1], &none, &t[G_B], &t[G_SB]);
        }
        /* dgrad: the 3D transpose rhs — per (e, k) over N, each expert stored (K, N) */
        p.reduce_dim = 1;
        qgmm_tensor qt = t[G_B];
        qt.shape[0] = E; qt.shape[1] = N; qt.shape[2] = K;
        qt.strides[0] = N * K; qt.strides[1] = 1; qt.strides[2] = N;
        return qgmm_quantize_fp8_rowwise(ctx, &p, &t[G_SRC1], &none, &qt, &t[G_SB]);
    }
    case QGMM_RECIPE_FP8_BLOCKWISE: {
        qgmm_fp8_blockwise_params p1 = {QGMM_BLOCK_1X128}, p128 = {QGMM_BLOCK_128X128};
        if (g->p[0].pass == QGMM_PASS_WGRAD) {
            /* 1x128 blocks along tokens: quantize the transposed views */
            qgmm_tensor xa = t[G_SRC0], qa = t[G_A], xb = t[G_SRC1], qb = t[G_B];
            xa.shape[0] = N; xa.shape[1] = M; xa.strides[0] = 1; xa.strides[1] = N;
            qa.shape[0] = N; qa.shape[1] = M; qa.strides[0] = M; qa.strides[1] = 1;
            xb.shape[0] = K; xb.shape[1] = M; xb.strides[0] = 1; xb.strides[1] = K;
            qb.shape[0] = K; qb.shape[1] = M; qb.strides[0] = M; qb.strides[1] = 1;
            TRY(qgmm_quantize_fp8_blockwise(ctx, &p1, &xa, &qa, &t[G_SA]));
            return qgmm_quantize_fp8_blockwise(ctx, &p1, &xb, &qb, &t[G_SB]);
        }
        TRY(qgmm_quantize_fp8_blockwise(ctx, &p1, &t[G_SRC0], &t[G_A], &t[G_SA]));
        if (g->p[0].pass == QGMM_PASS_FORWARD)
            return qgmm_quantize_fp8_blockwise(ctx, &p128, &t[G_SRC1], &t[G_B], &t[G_SB]);
        qgmm_tensor wt = t[G_SRC1]; /* the (E, K, N) view of w */
        wt.shape[1] = K; wt.shape[2] = N; wt.strides[1] = 1; wt.strides[2] = K;
        return qgmm_quantize_fp8_blockwise(ctx, &p128, &wt, &t[G_B], &t[G_SB]);
    }
    case QGMM_RECIPE_MXFP8: {
        const qgmm_mx_mode mode = c->mx.mode;
        if (g->p[0].pass == QGMM_PASS_WGRAD) {
            qgmm_mxfp8_params p = {0, mode, QGMM_SCALES_PLAIN}; /* blocks along tokens */
            TRY(qgmm_quantize_mxfp8(ctx, &p, &t[G_SRC0], &t[G_A], &t[G_T0]));
            TRY(qgmm_quantize_mxfp8(ctx, &p, &t[G_SRC1], &t[G_B], &t[G_T1]));
            TRY(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_K_GROUPS, &t[G_T0], offs, &t[G_SA], &none));
            return qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_K_GROUPS, &t[G_T1], offs, &t[G_SB], &none);
        }
        qgmm_mxfp8_params pa = {1, mode, QGMM_SCALES_PLAIN};
        TRY(qgmm_quantize_mxfp8(ctx, &pa, &t[G_SRC0], &t[G_A], &t[G_T0]));
        TRY(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_M_GROUPS, &t[G_T0], offs, &t[G_SA], &none));
        if (g->p[0].pass == QGMM_PASS_FORWARD) {
            qgmm_mxfp8_params pb = {2, mode, QGMM_SCALES_BLOCKED};
            return qgmm_quantize_mxfp8(ctx, &pb, &t[G_SRC1], &t[G_B], &t[G_SB]);
        }
        qgmm_mxfp8_params pb = {1, mode, QGMM_SCALES_BLOCKED}; /* blocks along N */
        qgmm_tensor qt = t[G_B];
        qt.shape[0] = E; qt.shape[1] = N; qt.shape[2] = K;
        qt.strides[0] = N * K; qt.strides[1] = 1; qt.strides[2] = N;
        return qgmm_quantize_mxfp8(ctx, &pb, &t[G_SRC1], &qt, &t[G_SB]);
    }
    default:
        return QGMM_ERR_INTERNAL;
    }
}

qgmm_status qc_execute_gemm(qgmm_case_instance *in) { return qc_execute_gemm_profiled(in, NULL); }

qgmm_status qc_execute_gemm_profiled(qgmm_case_instance *in, qgmm_moe_profile *prof)
{
    qc_gemm *g = in->gemm;
    const int64_t gsh[1] = {in->G};
    const qgmm_tensor offs = qc_view(in, in->offs_slot, QGMM_I32, 1, gsh, NULL);
    const qgmm_case *c = &in->c;
    if (c->op == QGMM_CASE_MOE_FORWARD || c->op == QGMM_CASE_MOE_BACKWARD) {
        qgmm_moe_params mp = {c->gemm.recipe, c->q_dtype, c->mx.mode};
        qgmm_buffer *ws = g->slot[G_WS] >= 0 ? in->slots[g->slot[G_WS]].buf : NULL;
        if (c->op == QGMM_CASE_MOE_FORWARD)
            return qgmm_moe_experts_forward_profiled(in->ctx, &mp, &g->t[G_SRC0], &g->t[G_SRC1], &offs, &g->t[G_OUT],
                                                     ws, prof);
        return qgmm_moe_experts_backward_profiled(in->ctx, &mp, &g->t[G_SRC0], &g->t[G_SRC1], &g->t[G_SRC2], &offs,
                                                  &g->t[G_OUT], &g->t[G_OUT2], ws, prof);
    }
    if (prof) return QGMM_ERR_UNSUPPORTED;
    if (c->op == QGMM_CASE_RECIPE) TRY(run_recipe_casts(in, g, &offs));
    qgmm_tensor none;
    memset(&none, 0, sizeof none);
    const int scaled = c->gemm.recipe != QGMM_RECIPE_BF16;
    return qgmm_grouped_gemm(in->ctx, &c->gemm, &g->t[G_A], &g->t[G_B],
                             scaled ? &g->t[G_SA] : &none, scaled ? &g->t[G_SB] : &none, &offs,
                             &g->t[G_OUT]);
}

/* ------------------------------------------------------------------ check */
/* The dot product over contraction indices [j0, j1) of A row (0, i) and B row (e, n). */
static double lop_dot(const qc_lop *A, int64_t i, const qc_lop *B, int64_t e, int64_t n, int64_t j0,
                      int64_t j1, int hp)
{
    double s = 0.0;
    for (int64_t j = j0; j < j1; ++j) s += lop_val(A, 0, i, j, hp) * lop_val(B, e, n, j, hp);
    return s;
}

/* Kernel and recipe statistics of one product's output. */
static qgmm_status check_product(qgmm_case_instance *in, const qc_prod *pr, const qgmm_check_options *opts,
                                 qgmm_err_stats *k, qgmm_err_stats *h)
{
    const qgmm_case *c = &in->c;
    qc_gemm *g = in->gemm;
    const qc_slot *os = &in->slots[g->slot[pr->out]];
    const uint8_t *out = os->host + os->guard;
    const int64_t G = in->G;
    /* output elements: M-grouped (m < offs[G-1], n); K-grouped (g, n, k) */
    const int64_t covered = in->offs[G - 1];
    const int64_t total = pr->kgrouped ? G * c->shape.N * c->shape.K : covered * pr->nout;
    const int64_t n = (opts->gemm_sample_elems > 0 && opts->gemm_sample_elems < total) ? opts->gemm_sample_elems
                                                                                         : total;
    double *got = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    double *rdq = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    double *rhp = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!got || !rdq || !rhp) { free(got); free(rdq); free(rhp); return QGMM_ERR_OUT_OF_MEMORY; }
    const uint64_t sseed = qc_mix_seed(c->seed, 0x73616d70u + (uint64_t)pr->pass);
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 64) if (n * pr->kc > (1 << 16))
#endif
    for (int64_t s = 0; s < n; ++s) {
        const int64_t idx = n == total ? s : (int64_t)(qc_mix_seed(sseed, (uint64_t)s) % (uint64_t)total);
        if (!pr->kgrouped) {
            const int64_t m = idx / pr->nout, col = idx % pr->nout;
            const int64_t e = qgmm_group_of(in->offs, G, m);
            got[s] = qc_load_as_f64(out, c->out_dtype, m * pr->nout + col);
            rdq[s] = lop_dot(&pr->A, m, &pr->B, e, col, 0, pr->kc, 0);
            rhp[s] = lop_dot(&pr->A, m, &pr->B, e, col, 0, pr->kc, 1);
        } else {
            const int64_t NK = c->shape.N * c->shape.K;
            const int64_t e = idx / NK, nn = (idx % NK) / c->shape.K, kk = idx % c->shape.K;
            const int64_t j0 = e > 0 ? in->offs[e - 1] : 0, j1 = in->offs[e];
            got[s] = qc_load_as_f64(out, c->out_dtype, idx);
            /* out[e][n][k] = sum over the group's tokens of A^T[n][m] * B^T[k][m] */
            rdq[s] = lop_dot(&pr->A, nn, &pr->B, 0, kk, j0, j1, 0);
            rhp[s] = lop_dot(&pr->A, nn, &pr->B, 0, kk, j0, j1, 1);
        }
    }
    *k = qgmm_error_stats(got, rdq, n);
    *h = qgmm_error_stats(got, rhp, n);
    free(got); free(rdq); free(rhp);
    return QGMM_OK;
}

qgmm_status qc_check_gemm(qgmm_case_instance *in, const qgmm_check_options *opts, qgmm_case_result *r)
{
    const qgmm_case *c = &in->c;
    qc_gemm *g = in->gemm;
    /* torchao's floors are for e4m3 operands; an e5m2 GEMM case reports its recipe SQNR
     * (2 mantissa bits give ~6 dB less) without a floor. */
    const int e4m3 = c->q_dtype == QGMM_F8E4M3FN || c->q_dtype == QGMM_F8E4M3FNUZ;
    r->max_rel_fro_allowed = -1.0;
    for (int i = 0; i < g->np; ++i) {
        const qc_prod *pr = &g->p[i];
        qgmm_err_stats k, h;
        TRY(check_product(in, pr, opts, &k, &h));
        const double allowed = qgmm_threshold_max_rel_fro(
            c->gemm.recipe, pr->kgrouped ? QGMM_GEMM_K_GROUPED : QGMM_GEMM_M_GROUPED, c->out_dtype);
        const double floor = e4m3 ? qgmm_threshold_min_sqnr_db(c->gemm.recipe, pr->pass) : -1.0;
        /* the result reports the worst product */
        if (i == 0 || !(k.rel_fro <= r->rel_fro_err)) {
            r->rel_fro_err = k.rel_fro;
            r->sqnr_db = k.sqnr_db;
            r->max_rel_fro_allowed = allowed;
        }
        if (i == 0 || k.max_abs > r->max_abs_err) r->max_abs_err = k.max_abs;
        if (i == 0 || !(h.sqnr_db - (floor >= 0 ? floor : 0) >=
                        r->recipe_sqnr_db - (isnan(r->min_recipe_sqnr_db) ? 0 : r->min_recipe_sqnr_db))) {
            r->recipe_sqnr_db = h.sqnr_db;
            r->min_recipe_sqnr_db = floor >= 0.0 ? floor : NAN;
        }
        r->compared_elems += k.n;
        r->nonfinite_elems += k.nonfinite;
        const char *which = g->np > 1 ? (pr->pass == QGMM_PASS_DGRAD ? "dx: " : "dw: ") : "";
        char msg[256];
        msg[0] = 0;
        if (allowed < 0.0)
            snprintf(msg, sizeof msg, "%sno kernel threshold for this recipe/kind/out dtype in qgmm_thresholds.h",
                     which);
        else if (k.nonfinite)
            snprintf(msg, sizeof msg, "%s%lld output elements are NaN/inf where the float64 reference is finite",
                     which, (long long)k.nonfinite);
        else if (!(k.rel_fro <= allowed))
            snprintf(msg, sizeof msg,
                     "%skernel error: relative Frobenius %.3g > %.3g vs float64 of the dequantized operands",
                     which, k.rel_fro, allowed);
        else if (floor >= 0.0 && !(h.sqnr_db >= floor))
            snprintf(msg, sizeof msg, "%srecipe error: SQNR %.2f dB < %.1f dB vs float64 of the bf16 operands",
                     which, h.sqnr_db, floor);
        if (msg[0] && !r->message[0]) snprintf(r->message, sizeof r->message, "%s", msg);
    }
    return QGMM_OK;
}
