/*
 * test_props_casts.c — properties of every cast on random data (fixed seeds), on the
 * "cpu" backend, over several shapes including ragged ones:
 *
 *  P1 every op's bytes equal a naive reference written here (plain loops, the scale
 *     rules spelled out from ops-spec §1-§3, only the scalar fp8 codec shared — and that
 *     is checked exhaustively by test_kat_casts);
 *  P2 dequantize(quantize(x)) is within the bound below, per element, for each format;
 *  P3 scales are positive and finite for finite input (MX: never 255); with power_of_2
 *     they are powers of two; MX scales keep the scaled block in range: FLOOR gives
 *     2^emax <= amax/2^(b-127) < 2^(emax+1), RCEIL gives amax/2^(b-127) <= fp8max;
 *  P4 blocked MX scales round-trip through qgmm_scales_from_blocked to the plain ones,
 *     and every padding byte is 0;
 *  P5 layout invariance: row- vs column-major q, rank 3 vs per-expert rank 2, one group
 *     covering everything vs no offs, the dual call vs two single calls, bf16 output vs
 *     the f32 output rounded to bf16.
 *
 * The P2 bound. With s the multiplier applied to the data (rowwise: the scale; MX:
 * 2^(127-b); blockwise: 1/stored), y = |x|*s, m the mantissa bits, emin the smallest
 * normal exponent and fp8max of the format:
 *   |x - deq| <= ( max(min(y,fp8max) * 2^-(m+1), 2^(emin-m-1)) + max(y - fp8max, 0) ) / s
 *                + 2^-21 * |x|
 * i.e. half an fp8 ulp at the scaled value (the subnormal spacing below the normals),
 * plus the saturation overshoot (material only for MX FLOOR, whose blocks may reach
 * 2^(emax+1) > fp8max), plus f32 rounding slack for x*s and the dequant multiply.
 *
 * Prints case counts per property; exits 1 on any failure.
 */
#include "qgmm.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long g_cases, g_fail;
static long p_cases[6], p_fail[6];
static int g_prop; /* which property the CHECKs below count towards */
#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        g_cases++; p_cases[g_prop]++;                                                 \
        if (!(cond)) {                                                                \
            p_fail[g_prop]++;                                                         \
            if (++g_fail <= 40) {                                                     \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                  \
                fprintf(stderr, __VA_ARGS__);                                         \
                fputc('\n', stderr);                                                  \
            }                                                                         \
        }                                                                             \
    } while (0)

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* ---------------------------------------------------------------- random data */
static uint64_t g_rng;
static uint64_t rnd(void)
{
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* magnitudes spread over 2^-14..2^10 so that one slice holds normals, fp8 subnormals
 * and values that flush to zero; some exact zeros and negative zeros */
static float rnd_val(void)
{
    const uint64_t u = rnd();
    if (u % 29 == 0) return (u >> 8) & 1 ? -0.0f : 0.0f;
    const double m = (double)((u >> 11) & 0xFFFFFF) / 16777216.0 * 2.0 - 1.0;
    return (float)ldexp(m, (int)((u >> 40) % 25) - 14);
}

typedef struct { int fmt, mbits, emin; double maxv; int emax; } fmtinfo;
static fmtinfo finfo(int fmt)
{
    if (fmt == QGMM_FMT_E5M2) return (fmtinfo){fmt, 2, -14, 57344.0, 15};
    if (fmt == QGMM_FMT_E4M3FNUZ) return (fmtinfo){fmt, 3, -7, 240.0, 7};
    return (fmtinfo){fmt, 3, -6, 448.0, 8};
}
static const int FMTS[3] = {QGMM_F8E4M3FN, QGMM_F8E4M3FNUZ, QGMM_F8E5M2};

static double err_bound(double x, double s, fmtinfo f)
{
    const double y = fabs(x) * s;
    const double yc = y < f.maxv ? y : f.maxv;
    double half = yc * ldexp(1.0, -(f.mbits + 1));
    const double sub = ldexp(1.0, f.emin - f.mbits - 1);
    if (half < sub) half = sub;
    const double sat = y > f.maxv ? y - f.maxv : 0.0;
    return (half + sat) / s + ldexp(fabs(x), -21);
}

/* ---------------------------------------------------------------- API helpers */
static qgmm_context *g_ctx;

static qgmm_buffer *mkbuf(const void *src, size_t n, uint8_t poison)
{
    qgmm_buffer *b = NULL;
    if (qgmm_buffer_alloc(g_ctx, n ? n : 1, &b) != QGMM_OK) {
        fprintf(stderr, "buffer_alloc(%zu): %s\n", n, qgmm_last_error(g_ctx));
        exit(1);
    }
    if (src) qgmm_buffer_upload(b, 0, src, n);
    else qgmm_buffer_fill(b, 0, n, poison);
    return b;
}
static void *fetch(qgmm_buffer *b, size_t n)
{
    void *p = malloc(n ? n : 1);
    qgmm_buffer_download(b, 0, p, n);
    return p;
}
static qgmm_tensor tv(qgmm_buffer *b, qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2,
                      const int64_t *strides)
{
    const int64_t shape[3] = {d0, d1, d2};
    qgmm_tensor t = qgmm_tensor_make(b, 0, dt, rank, shape);
    if (strides) for (int i = 0; i < rank; ++i) t.strides[i] = strides[i];
    return t;
}
static int ok_sync(qgmm_status s, const char *what)
{
    if (s == QGMM_OK) s = qgmm_synchronize(g_ctx);
    if (s != QGMM_OK) {
        g_fail++;
        fprintf(stderr, "FAIL %s: %s (%s)\n", what, qgmm_status_string(s), qgmm_last_error(g_ctx));
        return 0;
    }
    return 1;
}

/* ================================================================ FP8 rowwise */
/* naive reference: amax with NaN propagation, scale = f32(fp8max / max(amax, 1e-12))
 * in double, power of 2 by frexp, q = codec(f32(x * scale)) */
static float ref_scale(float amax, double maxv, int pow2)
{
    if (isnan(amax)) return amax;
    const double a = amax < 1e-12 ? 1e-12 : (double)amax;
    float s = (float)(maxv / a);
    if (pow2) { int e; frexp((double)s, &e); s = (float)ldexp(1.0, e - 1); }
    return s;
}

typedef struct { int64_t R, C; int G; } shape2;

/* One rowwise configuration: rank-2 x (R,C) with optional random offs partitioning
 * reduce_dim; checks P1, P2, P3, and P5 (row- vs column-major q, bf16 out). */
static void rowwise_case(int64_t R, int64_t C, int rd, int G, int pow2, qgmm_scale_kind kind,
                         int fmt, int bf16_in)
{
    const fmtinfo fi = finfo(fmt);
    const int64_t n = R * C, red = rd == 1 ? C : R, oth = rd == 1 ? R : C;
    float *x = malloc((size_t)n * 4);
    uint16_t *xb = malloc((size_t)n * 2);
    for (int64_t i = 0; i < n; ++i) {
        x[i] = rnd_val();
        if (bf16_in) { xb[i] = qgmm_f32_to_bf16(x[i]); x[i] = qgmm_bf16_to_f32(xb[i]); }
    }
    /* offsets: G random cut points in [0, red], sorted; sometimes the last one short of
     * the extent (the tail is then never written); empty groups happen naturally */
    int32_t *offs = malloc((size_t)(G > 0 ? G : 1) * 4);
    for (int g = 0; g < G; ++g) offs[g] = (int32_t)(rnd() % (uint64_t)(red + 1));
    for (int g = 1; g < G; ++g) for (int h = g; h > 0 && offs[h] < offs[h - 1]; --h) {
        int32_t t = offs[h]; offs[h] = offs[h - 1]; offs[h - 1] = t;
    }
    if (G > 0 && rnd() % 3) offs[G - 1] = (int32_t)red;
    const int NG = G > 0 ? G : 1;

    qgmm_buffer *bx = bf16_in ? mkbuf(xb, (size_t)n * 2, 0) : mkbuf(x, (size_t)n * 4, 0);
    qgmm_buffer *bo = mkbuf(offs, (size_t)NG * 4, 0);
    qgmm_buffer *bq = mkbuf(NULL, (size_t)n, 0xAA), *bq2 = mkbuf(NULL, (size_t)n, 0xAA);
    qgmm_buffer *bs = mkbuf(NULL, (size_t)(NG * oth) * 4, 0xAA);
    qgmm_buffer *bd = mkbuf(NULL, (size_t)n * 4, 0xAA), *bdb = mkbuf(NULL, (size_t)n * 2, 0xAA);
    qgmm_tensor tx = tv(bx, bf16_in ? QGMM_BF16 : QGMM_F32, 2, R, C, 0, NULL);
    qgmm_tensor to = tv(bo, QGMM_I32, 1, NG, 0, 0, NULL);
    qgmm_tensor tq = tv(bq, fmt, 2, R, C, 0, NULL);
    qgmm_tensor tq2 = qgmm_tensor_make_colmajor(bq2, 0, fmt, R, C);
    qgmm_tensor ts = G > 0 ? tv(bs, QGMM_F32, 2, G, oth, 0, NULL) : tv(bs, QGMM_F32, 1, oth, 0, 0, NULL);
    qgmm_tensor td = tv(bd, QGMM_F32, 2, R, C, 0, NULL), tdb = tv(bdb, QGMM_BF16, 2, R, C, 0, NULL);
    const qgmm_fp8_rowwise_params p = {rd, pow2, kind};
    const qgmm_tensor *po = G > 0 ? &to : NULL;
    char what[160];
    snprintf(what, sizeof what, "rowwise R=%lld C=%lld rd=%d G=%d pow2=%d kind=%d fmt=%d bf16=%d",
             (long long)R, (long long)C, rd, G, pow2, (int)kind, fmt, bf16_in);
    if (!ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p, &tx, po, &tq, &ts), what)) goto out;
    if (!ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p, &tx, po, &tq2, &ts), what)) goto out;
    qgmm_quant_format f = {0};
    f.kind = QGMM_QUANT_FP8_ROWWISE; f.rowwise = p;
    if (!ok_sync(qgmm_dequantize(g_ctx, &f, &tq, &ts, po, &td), what)) goto out;
    if (!ok_sync(qgmm_dequantize(g_ctx, &f, &tq, &ts, po, &tdb), what)) goto out;
    uint8_t *q = fetch(bq, (size_t)n), *q2 = fetch(bq2, (size_t)n);
    float *s = fetch(bs, (size_t)(NG * oth) * 4), *d = fetch(bd, (size_t)n * 4);
    uint16_t *db = fetch(bdb, (size_t)n * 2);

    long bad1 = 0, bad2 = 0, bad3 = 0, bad5 = 0;
    for (int g = 0; g < NG; ++g) {
        const int64_t j0 = G > 0 ? (g ? offs[g - 1] : 0) : 0, j1 = G > 0 ? offs[g] : red;
        for (int64_t i = 0; i < oth; ++i) {
            float amax = 0.0f;
            for (int64_t j = j0; j < j1; ++j) {
                const float a = fabsf(x[rd == 1 ? i * C + j : j * C + i]);
                if (isnan(a) || a > amax) amax = a;
            }
            const float sc = ref_scale(amax, fi.maxv, pow2);
            const float st = kind == QGMM_SCALE_RECIPROCAL ? 1.0f / sc : sc;
            const float got_s = s[g * oth + i];
            if (fbits(got_s) != fbits(st)) bad1++;
            if (!(got_s > 0.0f) || isinf(got_s)) bad3++;
            if (pow2 && (fbits(got_s) & 0x7FFFFFu)) bad3++;
            for (int64_t j = j0; j < j1; ++j) {
                const int64_t e = rd == 1 ? i * C + j : j * C + i;
                const uint8_t want = qgmm_f32_to_fp8(x[e] * sc, fmt);
                if (q[e] != want) bad1++;
                const int64_t cm = (e % C) * R + e / C; /* column-major position */
                if (q2[cm] != q[e]) bad5++;
                if (fabs((double)x[e] - (double)d[e]) > err_bound(x[e], sc, fi)) {
                    if (++bad2 <= 3) fprintf(stderr, "  %s: x=%a deq=%a scale=%a\n", what, (double)x[e],
                                             (double)d[e], (double)sc);
                }
                if (db[e] != qgmm_f32_to_bf16(d[e])) bad5++;
            }
        }
    }
    /* outside every group (past offs[G-1]) nothing is written */
    if (G > 0)
        for (int64_t j = offs[G - 1]; j < red; ++j)
            for (int64_t i = 0; i < oth; ++i) {
                const int64_t e = rd == 1 ? i * C + j : j * C + i;
                if (q[e] != 0xAA || fbits(d[e]) != 0xAAAAAAAAu) bad1++;
            }
    g_prop = 1; CHECK(bad1 == 0, "%s: %ld bytes differ from the naive reference", what, bad1);
    g_prop = 2; CHECK(bad2 == 0, "%s: %ld elements outside the error bound", what, bad2);
    g_prop = 3; CHECK(bad3 == 0, "%s: %ld scales not positive/finite (or not pow2)", what, bad3);
    g_prop = 5; CHECK(bad5 == 0, "%s: %ld layout/bf16 mismatches", what, bad5);
    free(q); free(q2); free(s); free(d); free(db);
out:
    qgmm_buffer_free(bx); qgmm_buffer_free(bo); qgmm_buffer_free(bq); qgmm_buffer_free(bq2);
    qgmm_buffer_free(bs); qgmm_buffer_free(bd); qgmm_buffer_free(bdb);
    free(x); free(xb); free(offs);
}

/* rank 3 == per-expert rank 2 (both reduce dims, transposed q for reduce_dim 1); a
 * single group covering the whole extent == no offs; dual == two singles. */
static void rowwise_invariance(int64_t E, int64_t R, int64_t C, int fmt)
{
    g_prop = 5;
    const int64_t n = E * R * C;
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; ++i) x[i] = rnd_val();
    qgmm_buffer *bx = mkbuf(x, (size_t)n * 4, 0), *bq = mkbuf(NULL, (size_t)n, 0xAA),
                *bq2 = mkbuf(NULL, (size_t)n, 0xAA), *bs = mkbuf(NULL, (size_t)(E * (R + C)) * 4, 0xAA),
                *bs2 = mkbuf(NULL, (size_t)(R + C) * 4, 0xAA);
    for (int rd = 1; rd <= 2; ++rd) {
        const int64_t oth = rd == 2 ? R : C;
        qgmm_tensor x3 = tv(bx, QGMM_F32, 3, E, R, C, NULL);
        /* reduce_dim 1 writes each expert transposed (the 3D transpose rhs layout) */
        qgmm_tensor q3 = rd == 1 ? tv(bq, fmt, 3, E, R, C, (const int64_t[]){R * C, 1, R})
                                 : tv(bq, fmt, 3, E, R, C, NULL);
        qgmm_tensor s3 = tv(bs, QGMM_F32, 2, E, oth, 0, NULL);
        const qgmm_fp8_rowwise_params p3 = {rd, 1, QGMM_SCALE_RECIPROCAL};
        if (!ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p3, &x3, NULL, &q3, &s3), "rank3")) continue;
        uint8_t *q = fetch(bq, (size_t)n);
        float *s = fetch(bs, (size_t)(E * oth) * 4);
        long bad = 0;
        for (int64_t e = 0; e < E; ++e) {
            qgmm_tensor x2 = tv(bx, QGMM_F32, 2, R, C, 0, NULL);
            x2.offset = (size_t)(e * R * C) * 4;
            qgmm_tensor q2 = rd == 1 ? qgmm_tensor_make_colmajor(bq2, 0, fmt, R, C) : tv(bq2, fmt, 2, R, C, 0, NULL);
            qgmm_tensor s2 = tv(bs2, QGMM_F32, 1, oth, 0, 0, NULL);
            const qgmm_fp8_rowwise_params p2 = {rd - 1, 1, QGMM_SCALE_RECIPROCAL};
            if (!ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p2, &x2, NULL, &q2, &s2), "rank2")) continue;
            uint8_t *qq = fetch(bq2, (size_t)(R * C));
            float *ss = fetch(bs2, (size_t)oth * 4);
            bad += memcmp(qq, q + e * R * C, (size_t)(R * C)) != 0;
            bad += memcmp(ss, s + e * oth, (size_t)oth * 4) != 0;
            free(qq); free(ss);
        }
        CHECK(bad == 0, "rank 3 reduce_dim %d (E=%lld R=%lld C=%lld) != per-expert rank 2", rd,
              (long long)E, (long long)R, (long long)C);
        free(q); free(s);
    }
    /* one group covering everything == no offs (rank 2 view of expert 0) */
    for (int rd = 0; rd <= 1; ++rd) {
        const int64_t red = rd == 1 ? C : R, oth = rd == 1 ? R : C;
        const int32_t o1 = (int32_t)red;
        qgmm_buffer *bo = mkbuf(&o1, 4, 0);
        qgmm_tensor x2 = tv(bx, QGMM_F32, 2, R, C, 0, NULL), to = tv(bo, QGMM_I32, 1, 1, 0, 0, NULL);
        qgmm_tensor qa = tv(bq, fmt, 2, R, C, 0, NULL), qb = tv(bq2, fmt, 2, R, C, 0, NULL);
        qgmm_tensor sa = tv(bs, QGMM_F32, 2, 1, oth, 0, NULL), sb = tv(bs2, QGMM_F32, 1, oth, 0, 0, NULL);
        const qgmm_fp8_rowwise_params p = {rd, 0, QGMM_SCALE_MULTIPLIER};
        if (ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p, &x2, &to, &qa, &sa), "one group") &&
            ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p, &x2, NULL, &qb, &sb), "no offs")) {
            uint8_t *a = fetch(bq, (size_t)(R * C)), *b = fetch(bq2, (size_t)(R * C));
            float *s1 = fetch(bs, (size_t)oth * 4), *s2 = fetch(bs2, (size_t)oth * 4);
            CHECK(!memcmp(a, b, (size_t)(R * C)) && !memcmp(s1, s2, (size_t)oth * 4),
                  "one group covering all (rd %d) != no offs", rd);
            free(a); free(b); free(s1); free(s2);
        }
        qgmm_buffer_free(bo);
    }
    /* dual == two singles: two tensors (R,C) and (R,C') sharing offs over R (wgrad) */
    {
        const int G = 4;
        int32_t offs[4] = {(int32_t)(R / 4), (int32_t)(R / 4), (int32_t)(R / 2), (int32_t)R};
        qgmm_buffer *bo = mkbuf(offs, sizeof offs, 0);
        qgmm_tensor to = tv(bo, QGMM_I32, 1, G, 0, 0, NULL);
        const int64_t C1 = C, C2 = (E > 1 ? C : 1);
        qgmm_tensor x0 = tv(bx, QGMM_F32, 2, R, C1, 0, NULL);
        qgmm_tensor x1 = tv(bx, QGMM_F32, 2, R, C2, 0, NULL);
        x1.offset = (size_t)(R * C) * 4 * (E > 1 ? 1 : 0);
        qgmm_buffer *bqa = mkbuf(NULL, (size_t)(R * (C1 + C2)) * 2, 0xAA);
        qgmm_buffer *bsa = mkbuf(NULL, (size_t)(G * (C1 + C2)) * 8, 0xAA);
        qgmm_tensor q0 = qgmm_tensor_make_colmajor(bqa, 0, fmt, R, C1);
        qgmm_tensor q1 = qgmm_tensor_make_colmajor(bqa, (size_t)(R * C1), fmt, R, C2);
        qgmm_tensor q0s = qgmm_tensor_make_colmajor(bqa, (size_t)(R * (C1 + C2)), fmt, R, C1);
        qgmm_tensor q1s = qgmm_tensor_make_colmajor(bqa, (size_t)(R * (2 * C1 + C2)), fmt, R, C2);
        const int64_t sz[4] = {G * C1, G * C2, G * C1, G * C2};
        size_t so[4] = {0, 0, 0, 0};
        for (int k = 1; k < 4; ++k) so[k] = so[k - 1] + (size_t)sz[k - 1] * 4;
        qgmm_tensor s0 = tv(bsa, QGMM_F32, 2, G, C1, 0, NULL), s1 = tv(bsa, QGMM_F32, 2, G, C2, 0, NULL);
        qgmm_tensor s0s = s0, s1s = s1;
        s1.offset = so[1]; s0s.offset = so[2]; s1s.offset = so[3];
        const qgmm_fp8_rowwise_params p = {0, 1, QGMM_SCALE_MULTIPLIER};
        if (ok_sync(qgmm_quantize_fp8_rowwise_dual(g_ctx, &p, &x0, &q0, &s0, &p, &x1, &q1, &s1, &to), "dual") &&
            ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p, &x0, &to, &q0s, &s0s), "single0") &&
            ok_sync(qgmm_quantize_fp8_rowwise(g_ctx, &p, &x1, &to, &q1s, &s1s), "single1")) {
            uint8_t *qa = fetch(bqa, (size_t)(R * (C1 + C2)) * 2);
            uint8_t *sa = fetch(bsa, so[3] + (size_t)sz[3] * 4);
            const size_t nq = (size_t)(R * (C1 + C2));
            CHECK(!memcmp(qa, qa + nq, nq) && !memcmp(sa, sa + so[2], so[2]), "dual != two singles");
            free(qa); free(sa);
        }
        qgmm_buffer_free(bo); qgmm_buffer_free(bqa); qgmm_buffer_free(bsa);
    }
    qgmm_buffer_free(bx); qgmm_buffer_free(bq); qgmm_buffer_free(bq2); qgmm_buffer_free(bs);
    qgmm_buffer_free(bs2);
    free(x);
}

/* ================================================================ MXFP8 */
static uint8_t ref_mx_scale(float amax, fmtinfo f, int rceil)
{
    if (!rceil) {
        if (isnan(amax) || isinf(amax)) return 255;
        int e = -127;
        if (amax >= 0x1p-126f) { int ex; frexp((double)amax, &ex); e = ex - 1; }
        int u = e - f.emax;
        u = u < -127 ? -127 : u > 128 ? 128 : u;
        return (uint8_t)(u + 127);
    }
    const float d = amax * (float)(1.0 / f.maxv);
    if (isnan(d) || isinf(d)) return 255;
    if (d == 0.0f) return 0;
    for (int b = 0; b <= 254; ++b)
        if (ldexp(1.0, b - 127) >= (double)d) return (uint8_t)b;
    return 255;
}

/* One MX configuration on (E?, R, C): P1 (naive reference, plain scales), P2, P3, P4
 * (blocked == to_blocked(plain) via from_blocked, zero padding), P5 (bf16 out). */
static void mx_case(int rank, int64_t E, int64_t R, int64_t C, int along_last, int rceil, int fmt)
{
    const fmtinfo fi = finfo(fmt);
    const int64_t n = E * R * C;
    const int64_t L = along_last ? C : R, O = along_last ? R : C, NB = L / 32;
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; ++i) x[i] = rnd_val();
    const int bd = along_last ? rank - 1 : rank - 2;
    const int64_t per = (int64_t)qgmm_blocked_scales_bytes(O, NB);
    qgmm_buffer *bx = mkbuf(x, (size_t)n * 4, 0), *bq = mkbuf(NULL, (size_t)n, 0xAA),
                *bqb = mkbuf(NULL, (size_t)n, 0xAA), *bs = mkbuf(NULL, (size_t)(E * O * NB), 0xAA),
                *bsb = mkbuf(NULL, (size_t)(E * per), 0xAA), *bsr = mkbuf(NULL, (size_t)(E * O * NB), 0xAA),
                *bd_ = mkbuf(NULL, (size_t)n * 4, 0xAA), *bdb = mkbuf(NULL, (size_t)n * 2, 0xAA);
    qgmm_tensor tx = rank == 3 ? tv(bx, QGMM_F32, 3, E, R, C, NULL) : tv(bx, QGMM_F32, 2, R, C, 0, NULL);
    qgmm_tensor tq = rank == 3 ? tv(bq, fmt, 3, E, R, C, NULL) : tv(bq, fmt, 2, R, C, 0, NULL);
    qgmm_tensor tqb = tq; tqb.buffer = bqb;
    qgmm_tensor ts = rank == 3 ? tv(bs, QGMM_E8M0, 3, E, O, NB, NULL) : tv(bs, QGMM_E8M0, 2, O, NB, 0, NULL);
    qgmm_tensor tsr = ts; tsr.buffer = bsr;
    qgmm_tensor tsb = tv(bsb, QGMM_E8M0, 1, E * per, 0, 0, NULL);
    qgmm_tensor td = rank == 3 ? tv(bd_, QGMM_F32, 3, E, R, C, NULL) : tv(bd_, QGMM_F32, 2, R, C, 0, NULL);
    qgmm_tensor tdb = rank == 3 ? tv(bdb, QGMM_BF16, 3, E, R, C, NULL) : tv(bdb, QGMM_BF16, 2, R, C, 0, NULL);
    const qgmm_mxfp8_params pp = {bd, rceil ? QGMM_MX_RCEIL : QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
    const qgmm_mxfp8_params pb = {bd, pp.mode, QGMM_SCALES_BLOCKED};
    char what[160];
    snprintf(what, sizeof what, "mx rank=%d E=%lld R=%lld C=%lld last=%d rceil=%d fmt=%d", rank,
             (long long)E, (long long)R, (long long)C, along_last, rceil, fmt);
    if (!ok_sync(qgmm_quantize_mxfp8(g_ctx, &pp, &tx, &tq, &ts), what)) goto out;
    if (!ok_sync(qgmm_quantize_mxfp8(g_ctx, &pb, &tx, &tqb, &tsb), what)) goto out;
    if (!ok_sync(qgmm_scales_from_blocked(g_ctx, rank == 3 ? QGMM_BLOCKED_3D : QGMM_BLOCKED_2D, &tsb, NULL, &tsr),
                 what)) goto out;
    qgmm_quant_format f = {0};
    f.kind = QGMM_QUANT_MXFP8; f.mx = pp;
    if (!ok_sync(qgmm_dequantize(g_ctx, &f, &tq, &ts, NULL, &td), what)) goto out;
    if (!ok_sync(qgmm_dequantize(g_ctx, &f, &tq, &ts, NULL, &tdb), what)) goto out;
    {
        uint8_t *q = fetch(bq, (size_t)n), *qb = fetch(bqb, (size_t)n), *s = fetch(bs, (size_t)(E * O * NB)),
                *sb = fetch(bsb, (size_t)(E * per)), *sr = fetch(bsr, (size_t)(E * O * NB));
        float *d = fetch(bd_, (size_t)n * 4);
        uint16_t *db = fetch(bdb, (size_t)n * 2);
        long bad1 = 0, bad2 = 0, bad3 = 0, bad4 = 0, bad5 = 0;
        for (int64_t e = 0; e < E; ++e)
            for (int64_t o = 0; o < O; ++o)
                for (int64_t b = 0; b < NB; ++b) {
                    float amax = 0.0f;
                    int64_t idx[32];
                    for (int k = 0; k < 32; ++k) {
                        const int64_t l = b * 32 + k;
                        idx[k] = e * R * C + (along_last ? o * C + l : l * C + o);
                        const float a = fabsf(x[idx[k]]);
                        if (isnan(a) || a > amax) amax = a;
                    }
                    const uint8_t code = ref_mx_scale(amax, fi, rceil);
                    const uint8_t got = s[(e * O + o) * NB + b];
                    if (got != code) bad1++;
                    if (got == 255) bad3++;
                    /* the scaled block stays in range */
                    const double scaled = (double)amax * ldexp(1.0, 127 - got);
                    if (amax >= 0x1p-100f) {
                        if (!rceil && (scaled < ldexp(1.0, fi.emax) || scaled >= ldexp(1.0, fi.emax + 1))) bad3++;
                        if (rceil && scaled > fi.maxv) bad3++;
                    }
                    const float mul = (float)ldexp(1.0, 127 - code);
                    for (int k = 0; k < 32; ++k) {
                        const int64_t i = idx[k];
                        if (q[i] != qgmm_f32_to_fp8(x[i] * mul, fmt)) bad1++;
                        if (qb[i] != q[i]) bad4++;
                        if (fabs((double)x[i] - (double)d[i]) > err_bound(x[i], ldexp(1.0, 127 - got), fi)) {
                            if (++bad2 <= 3) fprintf(stderr, "  %s: x=%a deq=%a b=%d\n", what, (double)x[i],
                                                     (double)d[i], got);
                        }
                        if (db[i] != qgmm_f32_to_bf16(d[i])) bad5++;
                    }
                }
        if (memcmp(s, sr, (size_t)(E * O * NB))) bad4++;
        /* every byte of the blocked buffer outside the (O, NB) matrix is padding: 0 */
        const int64_t cp = qgmm_blocked_cols(NB);
        for (int64_t e = 0; e < E; ++e)
            for (int64_t off = 0; off < per; ++off) {
                int64_t r, c;
                qgmm_blocked_coords(off, cp, &r, &c);
                const uint8_t v = sb[e * per + off];
                if (r >= O || c >= NB) { if (v != 0) bad4++; }
                else if (v != s[(e * O + r) * NB + c]) bad4++;
            }
        g_prop = 1; CHECK(bad1 == 0, "%s: %ld bytes differ from the naive reference", what, bad1);
        g_prop = 2; CHECK(bad2 == 0, "%s: %ld elements outside the error bound", what, bad2);
        g_prop = 3; CHECK(bad3 == 0, "%s: %ld scales 255 or out of range", what, bad3);
        g_prop = 4; CHECK(bad4 == 0, "%s: %ld blocked-scale mismatches", what, bad4);
        g_prop = 5; CHECK(bad5 == 0, "%s: %ld bf16 mismatches", what, bad5);
        free(q); free(qb); free(s); free(sb); free(sr); free(d); free(db);
    }
out:
    qgmm_buffer_free(bx); qgmm_buffer_free(bq); qgmm_buffer_free(bqb); qgmm_buffer_free(bs);
    qgmm_buffer_free(bsb); qgmm_buffer_free(bsr); qgmm_buffer_free(bd_); qgmm_buffer_free(bdb);
    free(x);
}

/* ================================================================ FP8 blockwise */
static void bw_case(int rank, int64_t E, int64_t N, int64_t K, int tile128, int fmt, int transpose_scales)
{
    const fmtinfo fi = finfo(fmt);
    const int64_t n = E * N * K, tr = tile128 ? 128 : 1, RT = (N + tr - 1) / tr, CT = K / 128;
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; ++i) x[i] = rnd_val();
    qgmm_buffer *bx = mkbuf(x, (size_t)n * 4, 0), *bq = mkbuf(NULL, (size_t)n, 0xAA),
                *bs = mkbuf(NULL, (size_t)(E * RT * CT) * 4, 0xAA), *bd_ = mkbuf(NULL, (size_t)n * 4, 0xAA);
    qgmm_tensor tx = rank == 3 ? tv(bx, QGMM_F32, 3, E, N, K, NULL) : tv(bx, QGMM_F32, 2, N, K, 0, NULL);
    qgmm_tensor tq = rank == 3 ? tv(bq, fmt, 3, E, N, K, NULL) : tv(bq, fmt, 2, N, K, 0, NULL);
    /* scales (E?, RT, CT), optionally stored transposed per expert: (1, RT) strides */
    int64_t sst[3] = {0, 0, 0};
    if (rank == 3) { sst[0] = RT * CT; sst[1] = transpose_scales ? 1 : CT; sst[2] = transpose_scales ? RT : 1; }
    else { sst[0] = transpose_scales ? 1 : CT; sst[1] = transpose_scales ? RT : 1; }
    qgmm_tensor ts = rank == 3 ? tv(bs, QGMM_F32, 3, E, RT, CT, sst) : tv(bs, QGMM_F32, 2, RT, CT, 0, sst);
    qgmm_tensor td = rank == 3 ? tv(bd_, QGMM_F32, 3, E, N, K, NULL) : tv(bd_, QGMM_F32, 2, N, K, 0, NULL);
    const qgmm_fp8_blockwise_params p = {tile128 ? QGMM_BLOCK_128X128 : QGMM_BLOCK_1X128};
    char what[160];
    snprintf(what, sizeof what, "blockwise rank=%d E=%lld N=%lld K=%lld tile=%lld fmt=%d tscales=%d", rank,
             (long long)E, (long long)N, (long long)K, (long long)tr, fmt, transpose_scales);
    qgmm_quant_format f = {0};
    f.kind = QGMM_QUANT_FP8_BLOCKWISE; f.blockwise = p;
    if (ok_sync(qgmm_quantize_fp8_blockwise(g_ctx, &p, &tx, &tq, &ts), what) &&
        ok_sync(qgmm_dequantize(g_ctx, &f, &tq, &ts, NULL, &td), what)) {
        uint8_t *q = fetch(bq, (size_t)n);
        float *s = fetch(bs, (size_t)(E * RT * CT) * 4), *d = fetch(bd_, (size_t)n * 4);
        long bad1 = 0, bad2 = 0, bad3 = 0;
        for (int64_t e = 0; e < E; ++e)
            for (int64_t rt = 0; rt < RT; ++rt)
                for (int64_t ct = 0; ct < CT; ++ct) {
                    const int64_t r1 = (rt + 1) * tr < N ? (rt + 1) * tr : N;
                    float amax = 0.0f;
                    for (int64_t r = rt * tr; r < r1; ++r)
                        for (int64_t c = ct * 128; c < ct * 128 + 128; ++c) {
                            const float a = fabsf(x[(e * N + r) * K + c]);
                            if (isnan(a) || a > amax) amax = a;
                        }
                    const float sc = ref_scale(amax, fi.maxv, 0);
                    const int64_t si = rank == 3 ? e * sst[0] + rt * sst[1] + ct * sst[2] : rt * sst[0] + ct * sst[1];
                    if (fbits(s[si]) != fbits(1.0f / sc)) bad1++;
                    if (!(s[si] > 0.0f) || isinf(s[si])) bad3++;
                    for (int64_t r = rt * tr; r < r1; ++r)
                        for (int64_t c = ct * 128; c < ct * 128 + 128; ++c) {
                            const int64_t i = (e * N + r) * K + c;
                            if (q[i] != qgmm_f32_to_fp8(x[i] * sc, fmt)) bad1++;
                            if (fabs((double)x[i] - (double)d[i]) > err_bound(x[i], 1.0 / (double)s[si], fi))
                                bad2++;
                        }
                }
        g_prop = 1; CHECK(bad1 == 0, "%s: %ld bytes differ from the naive reference", what, bad1);
        g_prop = 2; CHECK(bad2 == 0, "%s: %ld elements outside the error bound", what, bad2);
        g_prop = 3; CHECK(bad3 == 0, "%s: %ld scales not positive/finite", what, bad3);
        free(q); free(s); free(d);
    }
    qgmm_buffer_free(bx); qgmm_buffer_free(bq); qgmm_buffer_free(bs); qgmm_buffer_free(bd_);
    free(x);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: test_props_casts [BACKEND] [seed]\n  Property tests of every cast op on BACKEND (default cpu)"
               " over random\n  data (default seed 1). Prints case counts per property; exit 1 on failure.\n");
        return 0;
    }
    /* [BACKEND] [seed]: a leading number is the seed (the older usage). A backend name must
     * never reach strtoull: seed 0 would leave the xorshift state at 0 and every input zero. */
    int ai = 1;
    const char *backend = "cpu";
    if (argc > ai && !isdigit((unsigned char)argv[ai][0])) backend = argv[ai++];
    g_rng = argc > ai ? strtoull(argv[ai], NULL, 10) : 1;
    if (g_rng == 0) g_rng = 1;
    if (qgmm_context_create(backend, 0, &g_ctx) != QGMM_OK) {
        if (strcmp(backend, "cpu") != 0) { /* a GPU backend this machine lacks */
            printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
            return 77;
        }
        fprintf(stderr, "FAIL: cannot create a cpu context: %s\n", qgmm_last_error(NULL));
        return 1;
    }
    /* rowwise: shapes incl. 1x1, ragged, > 128; groups 0 (none), 1, 3, 8; odd indices take bf16
     * x. (9, 96), (5, 64), (33, 200) and (16, 96) reach the Vulkan backend's jagged-row and
     * column shaders (rows of a multiple of 8 columns; bf16, f32, bf16, f32), with groups
     * narrower than 8 columns among 30 and 12 */
    static const shape2 shapes[] = {{1, 1, 0}, {7, 33, 3}, {64, 130, 8}, {129, 257, 1}, {3, 300, 5},
                                    {9, 96, 30}, {5, 64, 4}, {33, 200, 12}, {16, 96, 30}};
    for (unsigned si = 0; si < sizeof shapes / sizeof shapes[0]; ++si)
        for (int rd = 0; rd <= 1; ++rd)
            for (int k = 0; k < 3; ++k)
                for (int variant = 0; variant < 4; ++variant) {
                    const int G = variant == 0 ? 0 : variant == 1 ? shapes[si].G : 0;
                    rowwise_case(shapes[si].R, shapes[si].C, rd, G, variant == 2, variant == 3 ?
                                 QGMM_SCALE_RECIPROCAL : QGMM_SCALE_MULTIPLIER, FMTS[k], (int)(si & 1));
                }
    /* the scale division on 65536 arbitrary amax values (one row each, f32 x): fp8max / amax
     * and its reciprocal, each one correctly rounded f32 division (on Vulkan codec.glsl's
     * f32_div_rn: a float estimate fixed by the exact remainder) */
    rowwise_case(65536, 8, 1, 0, 0, QGMM_SCALE_RECIPROCAL, QGMM_F8E4M3FN, 0);
    rowwise_case(65536, 8, 1, 0, 0, QGMM_SCALE_MULTIPLIER, QGMM_F8E5M2, 0);
    /* 1100 row groups: the Vulkan jagged colwise cast's group scan (one group per lane)
     * takes five rounds of 256 lanes */
    rowwise_case(2300, 16, 0, 1100, 0, QGMM_SCALE_MULTIPLIER, QGMM_F8E4M3FN, 1);
    rowwise_invariance(3, 17, 40, QGMM_F8E4M3FN);
    rowwise_invariance(2, 64, 128, QGMM_F8E5M2);
    rowwise_invariance(1, 5, 3, QGMM_F8E4M3FNUZ);
    /* MX: rank 2 / 3, along last / second-to-last, ragged other extents, both modes */
    static const int64_t mxs[][4] = {{2, 1, 32, 32}, {2, 1, 130, 64}, {2, 1, 64, 96}, {3, 3, 33, 64},
                                     {3, 2, 64, 70}, {3, 1, 160, 256}};
    for (unsigned si = 0; si < sizeof mxs / sizeof mxs[0]; ++si)
        for (int last = 0; last <= 1; ++last) {
            const int64_t R = mxs[si][2], C = mxs[si][3];
            if ((last ? C : R) % 32) continue;
            for (int rc = 0; rc <= 1; ++rc)
                for (int k = 0; k < 3; ++k) mx_case((int)mxs[si][0], mxs[si][1], R, C, last, rc, FMTS[k]);
        }
    /* blockwise: 1x128 and 128x128 (ragged N), rank 2/3, transposed scale layouts */
    static const int64_t bws[][4] = {{2, 1, 5, 256}, {2, 1, 130, 128}, {3, 2, 200, 384}, {3, 3, 1, 128}};
    for (unsigned si = 0; si < sizeof bws / sizeof bws[0]; ++si)
        for (int t = 0; t <= 1; ++t)
            for (int k = 0; k < 3; ++k)
                bw_case((int)bws[si][0], bws[si][1], bws[si][2], bws[si][3], t, FMTS[k], (int)((si + k) & 1));
    qgmm_context_destroy(g_ctx);
    static const char *names[6] = {"", "P1 bytes == naive reference", "P2 dequant error within bound",
                                   "P3 scales positive/finite/pow2/in range", "P4 blocked scales round-trip",
                                   "P5 layout / dual / bf16 invariance"};
    for (int i = 1; i < 6; ++i) printf("%-44s %6ld cases  %ld failed\n", names[i], p_cases[i], p_fail[i]);
    printf("test_props_casts: %ld cases, %ld failed\n", g_cases, g_fail);
    return g_fail ? 1 : 0;
}
