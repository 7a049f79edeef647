/*
 * qgmm_cases_util.c — the deterministic pieces of the case library: random numbers,
 * input patterns, group offsets, FNV-1a, the float64 reference GEMM and error stats.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qgmm_cases_impl.h"
#include "qgmm_fp8_codec.h"

/* ------------------------------------------------------------------ rng */
double qc_uniform(qc_rng *r) { return (double)(qc_next(r) >> 11) * (1.0 / 9007199254740992.0); }

int64_t qc_range(qc_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo) return lo;
    return lo + (int64_t)(qc_next(r) % (uint64_t)(hi - lo + 1));
}

uint64_t qc_mix_seed(uint64_t seed, uint64_t salt)
{
    qc_rng r = {seed ^ (salt * 0xD1B54A32D192ED03ull)};
    return qc_next(&r);
}

/* ------------------------------------------------------------------ inputs */
static float pow2f(int k) { return ldexpf(1.0f, k); } /* exact for the ranges used */

/* Row kinds of QGMM_INPUT_EDGE, chosen by row index so every shape gets each of them. */
enum { EDGE_NORMAL = 0, EDGE_EQUAL, EDGE_ZERO, EDGE_TIES, EDGE_SPECIALS, EDGE_TINY, EDGE_MAX,
       EDGE_KINDS };

/* Row i of qc_fill_f32 into row[0..cols). */
static void fill_row(float *row, int64_t i, int64_t cols, qgmm_input_pattern pat, float fmax, int allow_subnormal,
                     int row_exp, uint64_t seed)
{
    qc_rng r = {qc_mix_seed(seed, (uint64_t)i)};
    const int rk = pat == QGMM_INPUT_WIDE ? (int)qc_range(&r, -30, 30) : (int)qc_range(&r, -row_exp, row_exp);
    const float rscale = pow2f(rk);
    for (int64_t j = 0; j < cols; ++j) {
        float v = qc_normalish(&r);
        if (pat == QGMM_INPUT_WIDE && (j % 32) == 0) v *= pow2f((int)qc_range(&r, -6, 6));
        row[j] = v * rscale;
        if (row[j] == 0.0f) row[j] = rscale; /* never a zero by accident */
    }
    if (pat != QGMM_INPUT_EDGE) return;
    switch ((int)(i % EDGE_KINDS)) {
    case EDGE_EQUAL: { /* all-equal row: amax == every element */
        const float v = row[0];
        for (int64_t j = 0; j < cols; ++j) row[j] = (j & 1) ? -v : v;
        break;
    }
    case EDGE_ZERO: /* amax 0: scale clamps (1e-12), MX gives the smallest scale */
        for (int64_t j = 0; j < cols; ++j) row[j] = (j % 3 == 1) ? -0.0f : 0.0f;
        break;
    case EDGE_TIES: { /* amax = fmax * 2^k so the scale is an exact power of two; the
                         rest are midpoints of the fp8 grid (5 significant bits) */
        const int k = (int)qc_range(&r, -3, 3);
        for (int64_t j = 0; j < cols; ++j) {
            /* (8 + m + 1/2) / 8: exactly halfway between two e4m3 neighbours */
            const int m = (int)qc_range(&r, 0, 7);
            const int e = (int)qc_range(&r, -9, 7);
            float v = ((float)(17 + 2 * m) / 16.0f) * pow2f(e + k);
            if (qc_next(&r) & 1) v = -v;
            row[j] = v;
        }
        for (int64_t j = 0; j < cols; j += 32) row[j] = fmax * pow2f(k);
        break;
    }
    case EDGE_SPECIALS: {
        const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, fmax, -fmax,
                                  fmax * 1.0625f, -fmax * 1.5f, 1e-40f, -3e-39f};
        const int ns = (int)(sizeof specials / sizeof specials[0]);
        const int64_t stride = cols > 64 ? 37 : 5;
        int s = (int)(i / EDGE_KINDS) % ns;
        for (int64_t j = (i / EDGE_KINDS) % 7; j < cols; j += stride, s = (s + 1) % ns) {
            float v = specials[s];
            if (!allow_subnormal && v != 0.0f && fabsf(v) < 1e-37f) v = v * 1e10f;
            row[j] = v;
        }
        break;
    }
    case EDGE_TINY: /* amax below the 1e-12 clamp, and values at the bottom of f32 */
        for (int64_t j = 0; j < cols; ++j) row[j] *= 1e-14f;
        if (allow_subnormal && cols > 1) row[cols - 1] = 1e-41f;
        break;
    case EDGE_MAX: /* just above / at fp8max, so saturation and the top binade show */
        for (int64_t j = 0; j < cols; ++j) {
            const float t[] = {fmax, fmax * 1.03125f, -fmax * 0.96875f, fmax * 0.5f};
            row[j] = (j % 5 == 0) ? t[(j / 5) % 4] : row[j];
        }
        break;
    default:
        break;
    }
}

void qc_fill_f32(float *dst, int64_t rows, int64_t cols, qgmm_input_pattern pat,
                 qgmm_dtype fp8_dtype, int allow_subnormal, int row_exp, uint64_t seed)
{
    const float fmax = qgmm_fp8_max(fp8_dtype == QGMM_DTYPE_INVALID ? QGMM_F8E4M3FN : (int)fp8_dtype);
    /* one generator per row (seeded by the row index): the same bytes whatever the
     * thread count, and the nightly shapes fill in parallel */
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (rows * cols > (1 << 16))
#endif
    for (int64_t i = 0; i < rows; ++i) fill_row(dst + i * cols, i, cols, pat, fmax, allow_subnormal, row_exp, seed);
}

void qc_fill_as(uint8_t *dst, qgmm_dtype dt, int64_t rows, int64_t cols, qgmm_input_pattern pat,
                qgmm_dtype fp8_dtype, int allow_subnormal, int row_exp, uint64_t seed)
{
    if (dt != QGMM_BF16) {
        qc_fill_f32((float *)(void *)dst, rows, cols, pat, fp8_dtype, allow_subnormal, row_exp, seed);
        return;
    }
    const float fmax = qgmm_fp8_max(fp8_dtype == QGMM_DTYPE_INVALID ? QGMM_F8E4M3FN : (int)fp8_dtype);
    /* a row at a time through a row of f32 per thread, converted in place */
#if defined(_OPENMP)
#pragma omp parallel if (rows * cols > (1 << 16))
#endif
    {
        float *f = malloc((size_t)(cols > 0 ? cols : 1) * sizeof *f);
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
        for (int64_t i = 0; i < rows; ++i) {
            if (!f) continue; /* dst keeps what it held; the caller checked memory before */
            fill_row(f, i, cols, pat, fmax, allow_subnormal, row_exp, seed);
            uint8_t *d = dst + (size_t)(i * cols) * 2;
            for (int64_t j = 0; j < cols; ++j) {
                const uint16_t h = qgmm_f32_to_bf16(f[j]);
                memcpy(d + 2 * j, &h, 2);
            }
        }
        free(f);
    }
}

double qc_load_as_f64(const uint8_t *src, qgmm_dtype dt, int64_t i)
{
    switch (dt) {
    case QGMM_F32: { float f; memcpy(&f, src + 4 * i, 4); return f; }
    case QGMM_BF16: { uint16_t h; memcpy(&h, src + 2 * i, 2); return qgmm_bf16_to_f32(h); }
    case QGMM_F8E4M3FN: case QGMM_F8E4M3FNUZ: case QGMM_F8E5M2:
        return qgmm_fp8_to_f32(src[i], (int)dt);
    case QGMM_E8M0: case QGMM_U8: return qgmm_e8m0_to_f32(src[i]);
    case QGMM_I32: { int32_t v; memcpy(&v, src + 4 * i, 4); return v; }
    default: return NAN;
    }
}

/* ------------------------------------------------------------------ offsets */
/* The extent the groups of a case partition. */
int64_t qc_group_extent(const qgmm_case *c)
{
    switch (c->op) {
    case QGMM_CASE_FP8_ROWWISE:
        return c->rowwise.reduce_dim == 1 ? c->shape.K : c->shape.M;
    case QGMM_CASE_DEQUANTIZE:
        return c->rowwise.reduce_dim == 1 ? c->shape.K : c->shape.M;
    case QGMM_CASE_SCALES_TO_BLOCKED:
    case QGMM_CASE_SCALES_FROM_BLOCKED:
        return c->blocked == QGMM_BLOCKED_K_GROUPS ? c->shape.K : c->shape.M;
    default:
        return c->shape.M;
    }
}

int64_t qgmm_case_offsets(const qgmm_case *c, int32_t *offs, int64_t cap)
{
    if (c->groups == QGMM_GROUPS_NONE) return 0;
    const int64_t G = c->groups == QGMM_GROUPS_SINGLE ? 1 : c->shape.G;
    if (!offs) return G;
    if (cap < G || G <= 0) return G;
    const int64_t mult = c->group_multiple > 1 ? c->group_multiple : 1;
    const int64_t units = qc_group_extent(c) / mult;
    qc_rng r = {qc_mix_seed(c->seed, 0x6f666673u)};
    int64_t *size = calloc((size_t)G, sizeof *size);
    char *empty = calloc((size_t)G, 1);
    if (!size || !empty) { free(size); free(empty); return -1; }
    int64_t total = units;
    if (c->groups == QGMM_GROUPS_SHORT) total = units - (units > 4 ? qc_range(&r, 1, units / 4) : (units > 0));
    if (c->groups == QGMM_GROUPS_EMPTY && G >= 3) { empty[0] = 1; empty[G / 2] = 1; empty[G - 1] = 1; }
    if (c->groups == QGMM_GROUPS_EMPTY && G < 3) empty[0] = 1;
    int64_t live = 0;
    for (int64_t g = 0; g < G; ++g) live += !empty[g];
    if (c->groups == QGMM_GROUPS_EVEN || c->groups == QGMM_GROUPS_SINGLE) {
        for (int64_t g = 0; g < G; ++g) size[g] = total / G;
        size[G - 1] += total - (total / G) * G;
    } else if (live > 0) {
        /* random positive weights, then units split by the weights; at least one unit
         * per live group where the extent allows */
        double *w = calloc((size_t)G, sizeof *w);
        double wsum = 0.0;
        for (int64_t g = 0; g < G; ++g) { w[g] = empty[g] ? 0.0 : 0.25 + qc_uniform(&r); wsum += w[g]; }
        const int64_t base = total >= live ? 1 : 0;
        int64_t rest = total - base * live, used = 0, last = -1;
        for (int64_t g = 0; g < G; ++g) {
            if (empty[g]) continue;
            size[g] = base + (int64_t)((double)rest * w[g] / wsum);
            used += size[g];
            last = g;
        }
        if (last >= 0) size[last] += total - used;
        free(w);
    }
    int64_t acc = 0;
    for (int64_t g = 0; g < G; ++g) { acc += size[g] * mult; offs[g] = (int32_t)acc; }
    if (c->groups == QGMM_GROUPS_BAD) {
        /* break the rule one way or the other: the seed's parity chooses */
        if ((c->seed & 1) && G >= 2) {
            const int64_t g = G / 2;
            offs[g] = offs[g - 1] > 0 ? offs[g - 1] - 1 : -1; /* decreasing */
        } else {
            offs[G - 1] = (int32_t)(qc_group_extent(c) + mult); /* past the end */
        }
    }
    free(size);
    free(empty);
    return G;
}

/* ------------------------------------------------------------------ hashing */
uint64_t qgmm_fnv1a64(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < n; ++i) { h ^= p[i]; h *= 0x100000001b3ull; }
    return h;
}

static uint64_t chunk_hash(const uint8_t *p, size_t n, size_t i)
{
    const size_t off = i * QGMM_CASE_HASH_CHUNK, len = n - off < QGMM_CASE_HASH_CHUNK ? n - off : QGMM_CASE_HASH_CHUNK;
    return qgmm_fnv1a64(QGMM_FNV1A_INIT, p + off, len);
}

static uint64_t fold_le(uint64_t h, uint64_t v)
{
    uint8_t le[8];
    for (int b = 0; b < 8; ++b) le[b] = (uint8_t)(v >> (8 * b));
    return qgmm_fnv1a64(h, le, 8);
}

uint64_t qgmm_case_hash(uint64_t h, const void *data, size_t n)
{
    const uint8_t *p = data;
    const size_t nc = (n + QGMM_CASE_HASH_CHUNK - 1) / QGMM_CASE_HASH_CHUNK;
    uint64_t *part = nc > 1 ? malloc(nc * sizeof *part) : NULL;
    if (!part) { /* one chunk, or no memory for the list: the same value, serially */
        for (size_t i = 0; i < nc; ++i) h = fold_le(h, chunk_hash(p, n, i));
        return h;
    }
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 8)
#endif
    for (size_t i = 0; i < nc; ++i) part[i] = chunk_hash(p, n, i);
    for (size_t i = 0; i < nc; ++i) h = fold_le(h, part[i]);
    free(part);
    return h;
}

/* ------------------------------------------------------------------ float64 reference */
void qgmm_ref_gemm_f64(int64_t M, int64_t N, int64_t K, const double *a, int64_t a_rs,
                       int64_t a_cs, const double *b, int64_t b_rs, int64_t b_cs, double *c)
{
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double s = 0.0;
            for (int64_t k = 0; k < K; ++k) s += a[m * a_rs + k * a_cs] * b[n * b_rs + k * b_cs];
            c[m * N + n] = s;
        }
}

qgmm_err_stats qgmm_error_stats(const double *out, const double *ref, int64_t n)
{
    qgmm_err_stats st = {0.0, 0.0, 0.0, n, 0};
    double err2 = 0.0, ref2 = 0.0, maxabs = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (!isfinite(out[i]) && isfinite(ref[i])) { st.nonfinite++; continue; }
        if (!isfinite(ref[i])) continue; /* callers keep references finite */
        const double d = out[i] - ref[i];
        err2 += d * d;
        ref2 += ref[i] * ref[i];
        if (fabs(d) > maxabs) maxabs = fabs(d);
    }
    if (st.nonfinite) {
        st.rel_fro = INFINITY; st.sqnr_db = -INFINITY; st.max_abs = INFINITY;
        return st;
    }
    st.max_abs = maxabs;
    st.rel_fro = ref2 > 0.0 ? sqrt(err2 / ref2) : (err2 > 0.0 ? INFINITY : 0.0);
    st.sqnr_db = err2 > 0.0 ? 10.0 * log10(ref2 / err2) : INFINITY;
    return st;
}

double qgmm_sqnr_db(const double *out, const double *ref, int64_t n)
{
    return qgmm_error_stats(out, ref, n).sqnr_db;
}
