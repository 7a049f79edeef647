/*
 * test_group_counts.c — every op that takes group offsets, at 1, 32767, 32768 and 65536
 * groups (the API allows up to 65536): the counts where 15- and 16-bit group indices,
 * per-lane loop limits or dispatch limits would break. Per count: small groups, most of
 * them empty, the non-empty ones spread out (the second group, groups 32767 and 32768
 * where they exist, the middle, the last two) and a tail of rows no group covers.
 *
 * Ops: group_row_ids (plain and padded space), pad / unpad token groups (16-byte rows and
 * 6-byte rows), jagged FP8 rowwise along both axes (bf16 and f32 x, row- and column-major
 * q, the dual form), jagged dequantize, scales to/from the blocked layout with M-groups and
 * K-groups, and the M- and K-grouped GEMMs in all four recipes.
 * Every output is poisoned first. Casts, layout and data ops must equal the CPU reference
 * byte for byte (poison around the written elements included); GEMM outputs must be within
 * the kernel-error threshold of qgmm_thresholds.h of the CPU backend's output on the same
 * operands, and bytes the op must leave alone (rows past the last group) must still hold
 * the poison. A backend may refuse an op with QGMM_ERR_UNSUPPORTED (printed, outputs must
 * be unchanged), never return wrong results.
 * Backend: argv[1] (default cpu); exit 77 when it is absent, 1 on any failure.
 */
#include "qgmm.h"
#include "qgmm_thresholds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static qgmm_context *g_ctx; /* the context OK() names in its message */
static long g_failures;

#include "qgmm_test_check.h"

#define POISON 0xFF /* as bf16 / f32 a NaN, as an i32 -1: any unwritten GEMM row shows */

static qgmm_context *g_side[2]; /* [0] the backend under test, [1] the cpu reference */
static const char *g_backend;
static long g_ops, g_unsupported;
static int g_verbose; /* --verbose: one line per op with the seconds since the previous one */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double g_last;

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) { return qgmm_test_xorshift(&g_rng); }
static int64_t rnd_below(int64_t n) { return (int64_t)(rnd() % (uint64_t)n); }

/* ------------------------------------------------------------------ buffers on both sides */
typedef struct pair {
    qgmm_buffer *b[2];
    size_t n;
} pair;

static pair pair_alloc(size_t n)
{
    pair p = {{NULL, NULL}, n};
    for (int s = 0; s < 2; ++s) {
        g_ctx = g_side[s];
        OK(qgmm_buffer_alloc(g_side[s], n ? n : 1, &p.b[s]));
    }
    return p;
}

static pair pair_upload(const void *src, size_t n)
{
    pair p = pair_alloc(n);
    for (int s = 0; s < 2; ++s) {
        g_ctx = g_side[s];
        if (n) OK(qgmm_buffer_upload(p.b[s], 0, src, n));
    }
    return p;
}

static pair pair_poisoned(size_t n)
{
    pair p = pair_alloc(n);
    for (int s = 0; s < 2; ++s) {
        g_ctx = g_side[s];
        OK(qgmm_buffer_fill(p.b[s], 0, n ? n : 1, POISON));
    }
    return p;
}

static void pair_free(pair *p)
{
    qgmm_buffer_free(p->b[0]);
    qgmm_buffer_free(p->b[1]);
    p->b[0] = p->b[1] = NULL;
}

static void *fetch(qgmm_buffer *b, size_t n)
{
    void *h = malloc(n ? n : 1);
    if (!h) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", n);
        exit(2);
    }
    if (n) OK(qgmm_buffer_download(b, 0, h, n));
    return h;
}

/* The reference side's bytes of p (after its op ran), for feeding a later op. */
static void *fetch_ref(const pair *p)
{
    g_ctx = g_side[1];
    return fetch(p->b[1], p->n);
}

static void *random_bytes(size_t n)
{
    uint8_t *h = malloc(n ? n : 1);
    if (!h) exit(2);
    for (size_t i = 0; i < n; i += 8) {
        const uint64_t v = rnd();
        memcpy(h + i, &v, n - i < 8 ? n - i : 8);
    }
    return h;
}

static qgmm_tensor tv(const pair *p, int s, qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t sh[3] = {d0, d1, d2};
    return qgmm_tensor_make(p->b[s], 0, dt, rank, sh);
}

static qgmm_tensor tcol(const pair *p, int s, qgmm_dtype dt, int64_t rows, int64_t cols)
{
    return qgmm_tensor_make_colmajor(p->b[s], 0, dt, rows, cols);
}

/* ------------------------------------------------------------------ inputs */
static uint16_t bf16_of(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}

static float urand(void) { return (float)(rnd() >> 40) / 16777216.0f * 2.0f - 1.0f; }

/* n high-precision values (bf16 or f32), ~U(-1, 1) scaled by 2^[-4, 4] per 8 values */
static void *hp_values(qgmm_dtype dt, size_t n)
{
    void *h = malloc(n * 4 + 1);
    if (!h) exit(2);
    float scale = 1.0f;
    for (size_t i = 0; i < n; ++i) {
        if (i % 8 == 0) scale = ldexpf(1.0f, (int)rnd_below(9) - 4);
        const float v = urand() * scale;
        if (dt == QGMM_BF16) ((uint16_t *)h)[i] = bf16_of(v);
        else ((float *)h)[i] = v;
    }
    return h;
}

/* n e4m3fn bytes, never NaN (0x7F / 0xFF become 0x7E / 0xFE) */
static void *fp8_values(size_t n)
{
    uint8_t *h = random_bytes(n);
    for (size_t i = 0; i < n; ++i)
        if ((h[i] & 0x7F) == 0x7F) h[i] ^= 1;
    return h;
}

/* n positive f32 scales in [0.5, 2) */
static void *scale_values(size_t n)
{
    float *h = malloc(n * 4 + 1);
    if (!h) exit(2);
    for (size_t i = 0; i < n; ++i) h[i] = 1.25f + 0.75f * urand();
    return h;
}

/* n e8m0 scales near 1 (2^-3 .. 2^3) */
static void *e8m0_values(size_t n)
{
    uint8_t *h = malloc(n + 1);
    if (!h) exit(2);
    for (size_t i = 0; i < n; ++i) h[i] = (uint8_t)(124 + rnd_below(7));
    return h;
}

/* G end offsets: every group empty except a spread-out few (the second, 32767 and 32768
 * where they exist, the middle one, the last two; the only one when G = 1), each of
 * 1..max_units units of `mult`. Returns offs[G-1]. */
static int64_t make_offs(int32_t *offs, int64_t G, int64_t mult, int64_t max_units)
{
    const int64_t pick[] = {1, 32767, 32768, G / 2, G - 2, G - 1};
    int64_t end = 0;
    for (int64_t g = 0; g < G; ++g) {
        int full = 0;
        for (size_t i = 0; i < sizeof pick / sizeof pick[0]; ++i) full |= pick[i] == g;
        if (full) end += (1 + rnd_below(max_units)) * mult;
        offs[g] = (int32_t)end;
    }
    return end;
}

/* ------------------------------------------------------------------ verdicts */
/* Both sides' statuses after the op was enqueued on each. The reference must succeed; the
 * backend may refuse with UNSUPPORTED (then its outputs must still hold the poison). Returns
 * 1 when the outputs are to be compared. */
static int settle(const char *what, int64_t G, const qgmm_status st[2], pair **outs, int nout)
{
    ++g_ops;
    g_ctx = g_side[1];
    if (st[1] != QGMM_OK) {
        fprintf(stderr, "FATAL %s G=%lld: the cpu reference failed: %s (%s)\n", what, (long long)G,
                qgmm_status_string(st[1]), qgmm_last_error(g_side[1]));
        exit(2);
    }
    OK(qgmm_synchronize(g_side[1]));
    const qgmm_status sync = qgmm_synchronize(g_side[0]);
    if (g_verbose) {
        const double t = now_s();
        printf("  %-40s G=%-6lld %7.3f s\n", what, (long long)G, t - g_last);
        g_last = t;
    }
    if (st[0] == QGMM_ERR_UNSUPPORTED) {
        ++g_unsupported;
        printf("  %-34s G=%-6lld unsupported on %s: %s\n", what, (long long)G, g_backend, qgmm_last_error(g_side[0]));
        for (int i = 0; i < nout; ++i) {
            g_ctx = g_side[0];
            uint8_t *d = fetch(outs[i]->b[0], outs[i]->n);
            size_t touched = 0;
            for (size_t j = 0; j < outs[i]->n; ++j) touched += d[j] != POISON;
            CHECK(touched == 0, "%s G=%lld: refused with UNSUPPORTED but changed %zu output bytes", what, (long long)G,
                  touched);
            free(d);
        }
        return 0;
    }
    CHECK(st[0] == QGMM_OK, "%s G=%lld: %s (%s)", what, (long long)G, qgmm_status_string(st[0]),
          qgmm_last_error(g_side[0]));
    CHECK(sync == QGMM_OK, "%s G=%lld: synchronize after it returned %s (%s)", what, (long long)G,
          qgmm_status_string(sync), qgmm_last_error(g_side[0]));
    return st[0] == QGMM_OK && sync == QGMM_OK;
}

/* Byte-for-byte comparison of the outputs of both sides. */
static void same_bytes(const char *what, int64_t G, const char *name, const pair *p)
{
    g_ctx = g_side[0];
    uint8_t *d = fetch(p->b[0], p->n);
    g_ctx = g_side[1];
    uint8_t *r = fetch(p->b[1], p->n);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < p->n; ++i)
        if (d[i] != r[i] && bad++ == 0) first = i;
    CHECK(bad == 0, "%s G=%lld: %s: %zu of %zu bytes differ from the cpu reference, first at +%zu (got 0x%02x want 0x%02x)",
          what, (long long)G, name, bad, p->n, first, bad ? d[first] : 0, bad ? r[first] : 0);
    free(d);
    free(r);
}

static void run_and_compare(const char *what, int64_t G, const qgmm_status st[2], pair **outs, const char **names,
                            int nout)
{
    if (!settle(what, G, st, outs, nout)) return;
    for (int i = 0; i < nout; ++i) same_bytes(what, G, names[i], outs[i]);
}

/* GEMM output (bf16, n elements) of the backend against the cpu backend's: where the cpu
 * left the poison the backend must have too (bytes equal); elsewhere the relative Frobenius
 * error must stay within the kernel threshold and no value may be non-finite. */
static void gemm_compare(const char *what, int64_t G, const qgmm_status st[2], pair *out, qgmm_recipe recipe,
                         qgmm_gemm_kind kind)
{
    if (!settle(what, G, st, &out, 1)) return;
    g_ctx = g_side[0];
    uint16_t *d = fetch(out->b[0], out->n);
    g_ctx = g_side[1];
    uint16_t *r = fetch(out->b[1], out->n);
    const size_t n = out->n / 2;
    const uint16_t poison = (uint16_t)(POISON | POISON << 8);
    size_t kept_wrong = 0, nonfinite = 0, first = 0;
    double num = 0, den = 0;
    for (size_t i = 0; i < n; ++i) {
        if (r[i] == poison) {
            if (d[i] != poison && kept_wrong++ == 0) first = i;
            continue;
        }
        const union { uint32_t u; float f; } dv = {(uint32_t)d[i] << 16}, rv = {(uint32_t)r[i] << 16};
        if (!isfinite(dv.f)) {
            if (nonfinite++ == 0) first = i;
            continue;
        }
        num += ((double)dv.f - rv.f) * ((double)dv.f - rv.f);
        den += (double)rv.f * rv.f;
    }
    const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    const double lim = qgmm_threshold_max_rel_fro(recipe, kind, QGMM_BF16);
    CHECK(kept_wrong == 0, "%s G=%lld: %zu output elements past the last group were written, first #%zu", what,
          (long long)G, kept_wrong, first);
    CHECK(nonfinite == 0, "%s G=%lld: %zu output elements non-finite (unwritten?) where the cpu wrote values, first #%zu",
          what, (long long)G, nonfinite, first);
    CHECK(lim > 0 && rel <= lim, "%s G=%lld: relative Frobenius error %.3g against the cpu backend, threshold %.3g", what,
          (long long)G, rel, lim);
    free(d);
    free(r);
}

/* ------------------------------------------------------------------ the ops */
static void data_ops(int64_t G)
{
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)G);
    const int64_t T = make_offs(offs, G, 1, 40), rows = T + 5;
    pair po = pair_upload(offs, 4 * (size_t)G);
    qgmm_status st[2];

    /* row ids over T + 5 rows (the tail gets -1), checked on the host too */
    pair ids = pair_poisoned(4 * (size_t)rows);
    for (int s = 0; s < 2; ++s) {
        qgmm_tensor to = tv(&po, s, QGMM_I32, 1, G, 0, 0), ti = tv(&ids, s, QGMM_I32, 1, rows, 0, 0);
        st[s] = qgmm_group_row_ids(g_side[s], &to, NULL, &ti);
    }
    run_and_compare("group_row_ids", G, st, (pair *[]){&ids}, (const char *[]){"row_ids"}, 1);
    {
        g_ctx = g_side[0];
        int32_t *h = fetch(ids.b[0], ids.n);
        int64_t g = 0, bad = 0;
        for (int64_t r = 0; r < rows; ++r) {
            while (g < G && offs[g] <= r) ++g;
            bad += h[r] != (g < G ? g : -1);
        }
        CHECK(bad == 0, "group_row_ids G=%lld: %lld row ids differ from the host's", (long long)G, (long long)bad);
        free(h);
    }
    pair_free(&ids);

    /* pad (16-byte rows: bf16 x 8, the vector path; 6-byte rows: bf16 x 3), row ids in the
     * padded space, unpad back */
    const struct { int align; int64_t D; } pads[2] = {{16, 8}, {32, 3}};
    for (int v = 0; v < 2; ++v) {
        const int A = pads[v].align;
        const int64_t D = pads[v].D, PR = qgmm_padded_rows_bound(T, G, A);
        void *hx = hp_values(QGMM_BF16, (size_t)(T * D));
        pair x = pair_upload(hx, 2 * (size_t)(T * D));
        pair out = pair_poisoned(2 * (size_t)(PR * D)), pst = pair_poisoned(4 * (size_t)G),
             pof = pair_poisoned(4 * (size_t)G);
        for (int s = 0; s < 2; ++s) {
            qgmm_tensor tx = tv(&x, s, QGMM_BF16, 2, T, D, 0), to = tv(&po, s, QGMM_I32, 1, G, 0, 0);
            qgmm_tensor tout = tv(&out, s, QGMM_BF16, 2, PR, D, 0), ts = tv(&pst, s, QGMM_I32, 1, G, 0, 0),
                        tof = tv(&pof, s, QGMM_I32, 1, G, 0, 0);
            st[s] = qgmm_pad_token_groups(g_side[s], A, &tx, &to, &tout, &ts, &tof);
        }
        char what[64];
        snprintf(what, sizeof what, "pad_token_groups A=%d D=%lld", A, (long long)D);
        run_and_compare(what, G, st, (pair *[]){&out, &pst, &pof},
                        (const char *[]){"out", "padded_start", "padded_offs"}, 3);
        if (st[0] == QGMM_OK) { /* a refused pad (UNSUPPORTED) leaves padded_offs poisoned */
            g_ctx = g_side[0];
            int32_t *h = fetch(pof.b[0], pof.n);
            int64_t end = 0, bad = 0;
            for (int64_t g = 0; g < G; ++g) {
                end += (offs[g] - (g ? offs[g - 1] : 0) + A - 1) / A * A;
                bad += h[g] != end;
            }
            CHECK(bad == 0, "%s G=%lld: %lld padded offsets differ from the host's", what, (long long)G, (long long)bad);
            free(h);
        }

        /* the padded space's row ids and the unpad read the reference's padded outputs */
        void *hpof = fetch_ref(&pof), *hout = fetch_ref(&out);
        pair pof2 = pair_upload(hpof, pof.n), xp = pair_upload(hout, out.n);
        pair pids = pair_poisoned(4 * (size_t)PR);
        for (int s = 0; s < 2; ++s) {
            qgmm_tensor to = tv(&po, s, QGMM_I32, 1, G, 0, 0), tp = tv(&pof2, s, QGMM_I32, 1, G, 0, 0),
                        ti = tv(&pids, s, QGMM_I32, 1, PR, 0, 0);
            st[s] = qgmm_group_row_ids(g_side[s], &to, &tp, &ti);
        }
        snprintf(what, sizeof what, "group_row_ids padded A=%d", A);
        run_and_compare(what, G, st, (pair *[]){&pids}, (const char *[]){"row_ids"}, 1);

        pair back = pair_poisoned(2 * (size_t)(T * D));
        for (int s = 0; s < 2; ++s) {
            qgmm_tensor txp = tv(&xp, s, QGMM_BF16, 2, PR, D, 0), to = tv(&po, s, QGMM_I32, 1, G, 0, 0),
                        tb = tv(&back, s, QGMM_BF16, 2, T, D, 0);
            st[s] = qgmm_unpad_token_groups(g_side[s], A, &txp, &to, &tb);
        }
        snprintf(what, sizeof what, "unpad_token_groups A=%d D=%lld", A, (long long)D);
        run_and_compare(what, G, st, (pair *[]){&back}, (const char *[]){"out"}, 1);
        if (st[0] == QGMM_OK) { /* a refused pad or unpad (UNSUPPORTED) leaves back poisoned */
            g_ctx = g_side[0];
            void *h = fetch(back.b[0], back.n);
            CHECK(!memcmp(h, hx, back.n), "%s G=%lld: pad then unpad is not the identity", what, (long long)G);
            free(h);
        }
        free(hx);
        free(hpof);
        free(hout);
        pair_free(&x); pair_free(&out); pair_free(&pst); pair_free(&pof);
        pair_free(&pof2); pair_free(&xp); pair_free(&pids); pair_free(&back);
    }
    pair_free(&po);
    free(offs);
}

/* jagged FP8 rowwise along both axes, the dual form, and their dequantize */
static void cast_ops(int64_t G)
{
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)G);
    /* ext: rows (or columns) of x, a multiple of 8 past the last group (the Vulkan backend's
     * fast paths want 16-byte rows); one case adds 3 for ragged rows (its generic path) */
    const int64_t T = make_offs(offs, G, 1, 40), ext = (T + 5 + 7) / 8 * 8;
    pair po = pair_upload(offs, 4 * (size_t)G);
    qgmm_status st[2];
    char what[96];
    const qgmm_dtype xdts[2] = {QGMM_BF16, QGMM_F32};
    for (int xi = 0; xi < 2; ++xi) {
        const qgmm_dtype xdt = xdts[xi];
        const size_t es = xdt == QGMM_F32 ? 4 : 2;
        /* groups along dim 1: x (R, C1), scales (G, R); bf16 rows of a multiple of 8
         * elements, f32 rows of any length */
        {
            const int64_t R = 3, C1 = xi == 0 ? ext : ext + 3;
            const qgmm_fp8_rowwise_params prm = {1, xi == 0, xi == 0 ? QGMM_SCALE_MULTIPLIER : QGMM_SCALE_RECIPROCAL};
            void *hx = hp_values(xdt, (size_t)(R * C1));
            pair x = pair_upload(hx, es * (size_t)(R * C1));
            pair q = pair_poisoned((size_t)(R * C1)), sc = pair_poisoned(4 * (size_t)(G * R));
            for (int s = 0; s < 2; ++s) {
                qgmm_tensor tx = tv(&x, s, xdt, 2, R, C1, 0), to = tv(&po, s, QGMM_I32, 1, G, 0, 0);
                qgmm_tensor tq = tv(&q, s, QGMM_F8E4M3FN, 2, R, C1, 0), ts = tv(&sc, s, QGMM_F32, 2, G, R, 0);
                st[s] = qgmm_quantize_fp8_rowwise(g_side[s], &prm, &tx, &to, &tq, &ts);
            }
            snprintf(what, sizeof what, "fp8_rowwise jagged dim1 %s", xi ? "f32" : "bf16");
            run_and_compare(what, G, st, (pair *[]){&q, &sc}, (const char *[]){"q", "scales"}, 2);

            void *hq = fetch_ref(&q), *hs = fetch_ref(&sc);
            pair q2 = pair_upload(hq, q.n), s2 = pair_upload(hs, sc.n), out = pair_poisoned(4 * (size_t)(R * C1));
            const qgmm_quant_format f = {QGMM_QUANT_FP8_ROWWISE, prm, {0}, {0}};
            for (int s = 0; s < 2; ++s) {
                qgmm_tensor tq = tv(&q2, s, QGMM_F8E4M3FN, 2, R, C1, 0), ts = tv(&s2, s, QGMM_F32, 2, G, R, 0);
                qgmm_tensor to = tv(&po, s, QGMM_I32, 1, G, 0, 0), tout = tv(&out, s, QGMM_F32, 2, R, C1, 0);
                st[s] = qgmm_dequantize(g_side[s], &f, &tq, &ts, &to, &tout);
            }
            snprintf(what, sizeof what, "dequantize jagged dim1 %s", xi ? "f32" : "bf16");
            run_and_compare(what, G, st, (pair *[]){&out}, (const char *[]){"out"}, 1);
            free(hx); free(hq); free(hs);
            pair_free(&x); pair_free(&q); pair_free(&sc); pair_free(&q2); pair_free(&s2); pair_free(&out);
        }
        /* groups along dim 0: x (ext, N), q row- and column-major, scales (G, N) */
        for (int colmajor = 0; colmajor < 2; ++colmajor) {
            const int64_t N = 8;
            const qgmm_fp8_rowwise_params prm = {0, 0, QGMM_SCALE_RECIPROCAL};
            void *hx = hp_values(xdt, (size_t)(ext * N));
            pair x = pair_upload(hx, es * (size_t)(ext * N));
            pair q = pair_poisoned((size_t)(ext * N)), sc = pair_poisoned(4 * (size_t)(G * N));
            for (int s = 0; s < 2; ++s) {
                qgmm_tensor tx = tv(&x, s, xdt, 2, ext, N, 0), to = tv(&po, s, QGMM_I32, 1, G, 0, 0);
                qgmm_tensor tq = colmajor ? tcol(&q, s, QGMM_F8E4M3FN, ext, N) : tv(&q, s, QGMM_F8E4M3FN, 2, ext, N, 0);
                qgmm_tensor ts = tv(&sc, s, QGMM_F32, 2, G, N, 0);
                st[s] = qgmm_quantize_fp8_rowwise(g_side[s], &prm, &tx, &to, &tq, &ts);
            }
            snprintf(what, sizeof what, "fp8_rowwise jagged dim0 %s q %s", xi ? "f32" : "bf16",
                     colmajor ? "col-major" : "row-major");
            run_and_compare(what, G, st, (pair *[]){&q, &sc}, (const char *[]){"q", "scales"}, 2);

            void *hq = fetch_ref(&q), *hs = fetch_ref(&sc);
            pair q2 = pair_upload(hq, q.n), s2 = pair_upload(hs, sc.n), out = pair_poisoned(2 * (size_t)(ext * N));
            const qgmm_quant_format f = {QGMM_QUANT_FP8_ROWWISE, prm, {0}, {0}};
            for (int s = 0; s < 2; ++s) {
                qgmm_tensor tq = colmajor ? tcol(&q2, s, QGMM_F8E4M3FN, ext, N) : tv(&q2, s, QGMM_F8E4M3FN, 2, ext, N, 0);
                qgmm_tensor ts = tv(&s2, s, QGMM_F32, 2, G, N, 0), to = tv(&po, s, QGMM_I32, 1, G, 0, 0);
                qgmm_tensor tout = tv(&out, s, QGMM_BF16, 2, ext, N, 0);
                st[s] = qgmm_dequantize(g_side[s], &f, &tq, &ts, &to, &tout);
            }
            snprintf(what, sizeof what, "dequantize jagged dim0 %s", colmajor ? "col-major" : "row-major");
            run_and_compare(what, G, st, (pair *[]){&out}, (const char *[]){"out"}, 1);
            free(hx); free(hq); free(hs);
            pair_free(&x); pair_free(&q); pair_free(&sc); pair_free(&q2); pair_free(&s2); pair_free(&out);
        }
    }
    /* the dual form: two column-major wgrad operands sharing the row groups */
    {
        const int64_t N0 = 8, N1 = 8;
        const qgmm_fp8_rowwise_params prm = {0, 0, QGMM_SCALE_RECIPROCAL};
        void *h0 = hp_values(QGMM_BF16, (size_t)(ext * N0)), *h1 = hp_values(QGMM_BF16, (size_t)(ext * N1));
        pair x0 = pair_upload(h0, 2 * (size_t)(ext * N0)), x1 = pair_upload(h1, 2 * (size_t)(ext * N1));
        pair q0 = pair_poisoned((size_t)(ext * N0)), q1 = pair_poisoned((size_t)(ext * N1));
        pair s0 = pair_poisoned(4 * (size_t)(G * N0)), s1 = pair_poisoned(4 * (size_t)(G * N1));
        for (int s = 0; s < 2; ++s) {
            qgmm_tensor tx0 = tv(&x0, s, QGMM_BF16, 2, ext, N0, 0), tx1 = tv(&x1, s, QGMM_BF16, 2, ext, N1, 0);
            qgmm_tensor tq0 = tcol(&q0, s, QGMM_F8E4M3FN, ext, N0), tq1 = tcol(&q1, s, QGMM_F8E4M3FN, ext, N1);
            qgmm_tensor ts0 = tv(&s0, s, QGMM_F32, 2, G, N0, 0), ts1 = tv(&s1, s, QGMM_F32, 2, G, N1, 0);
            qgmm_tensor to = tv(&po, s, QGMM_I32, 1, G, 0, 0);
            st[s] = qgmm_quantize_fp8_rowwise_dual(g_side[s], &prm, &tx0, &tq0, &ts0, &prm, &tx1, &tq1, &ts1, &to);
        }
        run_and_compare("fp8_rowwise_dual jagged dim0", G, st, (pair *[]){&q0, &s0, &q1, &s1},
                        (const char *[]){"q0", "scales0", "q1", "scales1"}, 4);
        free(h0); free(h1);
        pair_free(&x0); pair_free(&x1); pair_free(&q0); pair_free(&q1); pair_free(&s0); pair_free(&s1);
    }
    pair_free(&po);
    free(offs);
}

/* Blocked layout of (R, C) e8m0 scales with `variant` groups (offs over rows for
 * M_GROUPS, over K = 32 C elements for K_GROUPS), and back. check 0: only the reference
 * runs it (to make GEMM operands), its blocked bytes go to *blocked (malloc'ed, *bytes). */
static void blocked_op(int64_t G, qgmm_blocked_variant variant, const pair *po, const void *plain, int64_t R, int64_t C,
                       int check, void **blocked, size_t *bytes)
{
    const int mg = variant == QGMM_BLOCKED_M_GROUPS;
    const size_t nb = mg ? qgmm_blocked_m_groups_bytes(R, C, G) : qgmm_blocked_k_groups_bytes(R, C, G);
    pair in = pair_upload(plain, (size_t)(R * C)), out = pair_poisoned(nb), starts = pair_poisoned(4 * (size_t)G);
    qgmm_status st[2];
    for (int s = check ? 0 : 1; s < 2; ++s) {
        qgmm_tensor ti = tv(&in, s, QGMM_E8M0, 2, R, C, 0), to = tv(po, s, QGMM_I32, 1, G, 0, 0);
        qgmm_tensor tb = tv(&out, s, QGMM_E8M0, 1, (int64_t)nb, 0, 0), ts = tv(&starts, s, QGMM_I32, 1, G, 0, 0);
        st[s] = qgmm_scales_to_blocked(g_side[s], variant, &ti, &to, &tb, &ts);
    }
    if (!check) {
        g_ctx = g_side[1];
        OK(st[1]);
        OK(qgmm_synchronize(g_side[1]));
        *blocked = fetch_ref(&out);
        *bytes = nb;
        pair_free(&in); pair_free(&out); pair_free(&starts);
        return;
    }
    run_and_compare(mg ? "scales_to_blocked M-groups" : "scales_to_blocked K-groups", G, st,
                    (pair *[]){&out, &starts}, (const char *[]){"out", "group_starts"}, 2);
    void *hb = fetch_ref(&out);
    pair in2 = pair_upload(hb, nb), back = pair_poisoned((size_t)(R * C));
    for (int s = 0; s < 2; ++s) {
        qgmm_tensor tb = tv(&in2, s, QGMM_E8M0, 1, (int64_t)nb, 0, 0), to = tv(po, s, QGMM_I32, 1, G, 0, 0);
        qgmm_tensor tp = tv(&back, s, QGMM_E8M0, 2, R, C, 0);
        st[s] = qgmm_scales_from_blocked(g_side[s], variant, &tb, &to, &tp);
    }
    run_and_compare(mg ? "scales_from_blocked M-groups" : "scales_from_blocked K-groups", G, st, (pair *[]){&back},
                    (const char *[]){"out"}, 1);
    free(hb);
    pair_free(&in); pair_free(&out); pair_free(&starts); pair_free(&in2); pair_free(&back);
}

/* M-groups: (T + 5, 2) scales, groups over rows; K-groups: (3, T/32 + 1) scales, groups over
 * K elements in multiples of 32. */
static void layout_ops(int64_t G)
{
    static const struct { qgmm_blocked_variant variant; int64_t multiple, max_units; } kinds[] = {
        {QGMM_BLOCKED_M_GROUPS, 1, 40},
        {QGMM_BLOCKED_K_GROUPS, 32, 3},
    };
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)G);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
        const int64_t T = make_offs(offs, G, kinds[i].multiple, kinds[i].max_units);
        const int mg = kinds[i].variant == QGMM_BLOCKED_M_GROUPS;
        const int64_t R = mg ? T + 5 : 3, C = mg ? 2 : T / 32 + 1;
        pair po = pair_upload(offs, 4 * (size_t)G);
        void *plain = e8m0_values((size_t)(R * C));
        blocked_op(G, kinds[i].variant, &po, plain, R, C, 1, NULL, NULL);
        free(plain);
        pair_free(&po);
    }
    free(offs);
}

/* ------------------------------------------------------------------ GEMMs */
static const char *recipe_name(qgmm_recipe r)
{
    static const char *n[] = {"bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"};
    return n[r];
}

/* M-grouped: a (M, K), b (G, N, K), out (M, N) bf16; rows past offs[G-1] stay poisoned. */
static void gemm_m(int64_t G, qgmm_recipe recipe)
{
    const int64_t N = 8, K = recipe == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : 32;
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)G);
    const int64_t M = make_offs(offs, G, 1, 40) + 5;
    pair po = pair_upload(offs, 4 * (size_t)G);
    const int bf = recipe == QGMM_RECIPE_BF16;
    const qgmm_dtype dt = bf ? QGMM_BF16 : QGMM_F8E4M3FN;
    void *ha = bf ? hp_values(QGMM_BF16, (size_t)(M * K)) : fp8_values((size_t)(M * K));
    void *hb = bf ? hp_values(QGMM_BF16, (size_t)(G * N * K)) : fp8_values((size_t)(G * N * K));
    const size_t es = bf ? 2 : 1;
    pair a = pair_upload(ha, es * (size_t)(M * K)), b = pair_upload(hb, es * (size_t)(G * N * K));
    free(ha);
    free(hb);
    pair sa = {{NULL, NULL}, 0}, sb = {{NULL, NULL}, 0};
    qgmm_tensor tsa[2], tsb[2];
    memset(tsa, 0, sizeof tsa);
    memset(tsb, 0, sizeof tsb);
    if (recipe == QGMM_RECIPE_FP8_ROWWISE || recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        /* rowwise: (M), (G, N); blockwise: (M, K/128), (G, ceil(N/128), K/128) */
        void *h1 = scale_values((size_t)M), *h2 = scale_values((size_t)(G * N));
        sa = pair_upload(h1, 4 * (size_t)M);
        sb = pair_upload(h2, 4 * (size_t)(recipe == QGMM_RECIPE_FP8_ROWWISE ? G * N : G));
        free(h1);
        free(h2);
        for (int s = 0; s < 2; ++s) {
            if (recipe == QGMM_RECIPE_FP8_ROWWISE) {
                tsa[s] = tv(&sa, s, QGMM_F32, 1, M, 0, 0);
                tsb[s] = tv(&sb, s, QGMM_F32, 2, G, N, 0);
            } else {
                tsa[s] = tv(&sa, s, QGMM_F32, 2, M, 1, 0);
                tsb[s] = tv(&sb, s, QGMM_F32, 3, G, 1, 1);
            }
        }
    } else if (recipe == QGMM_RECIPE_MXFP8) {
        /* a_scales: (M, K/32) in the M-groups blocked layout; b_scales: (G, N, K/32) 3D blocked */
        void *hplain = e8m0_values((size_t)M), *hblk;
        size_t nb;
        blocked_op(G, QGMM_BLOCKED_M_GROUPS, &po, hplain, M, 1, 0, &hblk, &nb);
        sa = pair_upload(hblk, nb);
        free(hplain);
        free(hblk);
        const size_t per = qgmm_blocked_scales_bytes(N, 1);
        uint8_t *hb3 = malloc(per * (size_t)G);
        for (int64_t e = 0; e < G; ++e) { /* the 3D layout built on the host: one 128x4 tile per expert */
            memset(hb3 + per * (size_t)e, 0, per);
            for (int64_t n = 0; n < N; ++n) hb3[per * (size_t)e + (size_t)(n % 32) * 16 + (size_t)(n / 32) * 4] =
                (uint8_t)(124 + rnd_below(7));
        }
        sb = pair_upload(hb3, per * (size_t)G);
        free(hb3);
        for (int s = 0; s < 2; ++s) {
            tsa[s] = tv(&sa, s, QGMM_E8M0, 1, (int64_t)nb, 0, 0);
            tsb[s] = tv(&sb, s, QGMM_E8M0, 1, (int64_t)(per * (size_t)G), 0, 0);
        }
    }
    pair out = pair_poisoned(2 * (size_t)(M * N));
    const qgmm_grouped_gemm_params gp = {QGMM_GEMM_M_GROUPED, recipe};
    qgmm_status st[2];
    for (int s = 0; s < 2; ++s) {
        qgmm_tensor ta = tv(&a, s, dt, 2, M, K, 0), tb = tv(&b, s, dt, 3, G, N, K);
        qgmm_tensor to = tv(&po, s, QGMM_I32, 1, G, 0, 0), tout = tv(&out, s, QGMM_BF16, 2, M, N, 0);
        st[s] = qgmm_grouped_gemm(g_side[s], &gp, &ta, &tb, bf ? NULL : &tsa[s], bf ? NULL : &tsb[s], &to, &tout);
    }
    char what[64];
    snprintf(what, sizeof what, "grouped_gemm M-grouped %s", recipe_name(recipe));
    gemm_compare(what, G, st, &out, recipe, QGMM_GEMM_M_GROUPED);
    pair_free(&po); pair_free(&a); pair_free(&b); pair_free(&out);
    if (sa.b[0]) pair_free(&sa);
    if (sb.b[0]) pair_free(&sb);
    free(offs);
}

/* K-grouped: a (M, N), b (M, K), out (G, N, K) bf16 (empty groups: zeros). */
static void gemm_k(int64_t G, qgmm_recipe recipe)
{
    const int64_t N = 8, K = 32;
    const int64_t mult = recipe == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : recipe == QGMM_RECIPE_MXFP8 ? 32 : 1;
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)G);
    const int64_t M = make_offs(offs, G, mult, mult > 1 ? 3 : 40);
    pair po = pair_upload(offs, 4 * (size_t)G);
    const int bf = recipe == QGMM_RECIPE_BF16;
    const qgmm_dtype dt = bf ? QGMM_BF16 : QGMM_F8E4M3FN;
    void *ha = bf ? hp_values(QGMM_BF16, (size_t)(M * N)) : fp8_values((size_t)(M * N));
    void *hb = bf ? hp_values(QGMM_BF16, (size_t)(M * K)) : fp8_values((size_t)(M * K));
    const size_t es = bf ? 2 : 1;
    pair a = pair_upload(ha, es * (size_t)(M * N)), b = pair_upload(hb, es * (size_t)(M * K));
    free(ha);
    free(hb);
    pair sa = {{NULL, NULL}, 0}, sb = {{NULL, NULL}, 0};
    qgmm_tensor tsa[2], tsb[2];
    memset(tsa, 0, sizeof tsa);
    memset(tsb, 0, sizeof tsb);
    if (recipe == QGMM_RECIPE_FP8_ROWWISE || recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        /* rowwise: (G, N), (G, K); blockwise: (N, M/128), (K, M/128) */
        const int64_t ra = recipe == QGMM_RECIPE_FP8_ROWWISE ? G * N : N * (M / 128);
        const int64_t rb = recipe == QGMM_RECIPE_FP8_ROWWISE ? G * K : K * (M / 128);
        void *h1 = scale_values((size_t)ra), *h2 = scale_values((size_t)rb);
        sa = pair_upload(h1, 4 * (size_t)ra);
        sb = pair_upload(h2, 4 * (size_t)rb);
        free(h1);
        free(h2);
        for (int s = 0; s < 2; ++s) {
            if (recipe == QGMM_RECIPE_FP8_ROWWISE) {
                tsa[s] = tv(&sa, s, QGMM_F32, 2, G, N, 0);
                tsb[s] = tv(&sb, s, QGMM_F32, 2, G, K, 0);
            } else {
                tsa[s] = tv(&sa, s, QGMM_F32, 2, N, M / 128, 0);
                tsb[s] = tv(&sb, s, QGMM_F32, 2, K, M / 128, 0);
            }
        }
    } else if (recipe == QGMM_RECIPE_MXFP8) {
        /* both scales in the K-groups blocked layout of (N, M/32) and (K, M/32) */
        void *h1 = e8m0_values((size_t)(N * (M / 32))), *h2 = e8m0_values((size_t)(K * (M / 32))), *b1, *b2;
        size_t n1, n2;
        blocked_op(G, QGMM_BLOCKED_K_GROUPS, &po, h1, N, M / 32, 0, &b1, &n1);
        blocked_op(G, QGMM_BLOCKED_K_GROUPS, &po, h2, K, M / 32, 0, &b2, &n2);
        sa = pair_upload(b1, n1);
        sb = pair_upload(b2, n2);
        free(h1); free(h2); free(b1); free(b2);
        for (int s = 0; s < 2; ++s) {
            tsa[s] = tv(&sa, s, QGMM_E8M0, 1, (int64_t)n1, 0, 0);
            tsb[s] = tv(&sb, s, QGMM_E8M0, 1, (int64_t)n2, 0, 0);
        }
    }
    pair out = pair_poisoned(2 * (size_t)(G * N * K));
    const qgmm_grouped_gemm_params gp = {QGMM_GEMM_K_GROUPED, recipe};
    qgmm_status st[2];
    for (int s = 0; s < 2; ++s) {
        qgmm_tensor ta = tcol(&a, s, dt, M, N), tb = tcol(&b, s, dt, M, K);
        qgmm_tensor to = tv(&po, s, QGMM_I32, 1, G, 0, 0), tout = tv(&out, s, QGMM_BF16, 3, G, N, K);
        st[s] = qgmm_grouped_gemm(g_side[s], &gp, &ta, &tb, bf ? NULL : &tsa[s], bf ? NULL : &tsb[s], &to, &tout);
    }
    char what[64];
    snprintf(what, sizeof what, "grouped_gemm K-grouped %s", recipe_name(recipe));
    gemm_compare(what, G, st, &out, recipe, QGMM_GEMM_K_GROUPED);
    pair_free(&po); pair_free(&a); pair_free(&b); pair_free(&out);
    if (sa.b[0]) pair_free(&sa);
    if (sb.b[0]) pair_free(&sb);
    free(offs);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: %s [BACKEND] [--verbose] [--groups G]\n"
               "  Every grouped op at 1, 32767, 32768 and 65536 groups on BACKEND (default cpu),\n"
               "  compared with the cpu reference (casts and layouts byte for byte, GEMMs within\n"
               "  the kernel-error thresholds). --verbose: each op's seconds; --groups G: only\n"
               "  that count of the four. Exits 77 when BACKEND is absent, 1 on any failure.\n",
               argv[0]);
        return 0;
    }
    int64_t only = 0;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) g_verbose = 1;
        else if (!strcmp(argv[i], "--groups") && i + 1 < argc) only = atoll(argv[++i]);
        else g_backend = argv[i];
    }
    if (!g_backend) g_backend = "cpu";
    g_last = now_s();
    if (qgmm_context_create(g_backend, 0, &g_side[0]) != QGMM_OK) {
        if (strcmp(g_backend, "cpu") != 0) {
            printf("SKIP: backend %s unavailable: %s\n", g_backend, qgmm_last_error(NULL));
            return 77;
        }
        fprintf(stderr, "cannot create a cpu context: %s\n", qgmm_last_error(NULL));
        return 2;
    }
    if (qgmm_context_create("cpu", 0, &g_side[1]) != QGMM_OK) {
        fprintf(stderr, "cannot create the cpu reference context: %s\n", qgmm_last_error(NULL));
        return 2;
    }
    const int64_t counts[] = {1, 32767, 32768, 65536};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; ++i) {
        const int64_t G = counts[i];
        if (only && G != only) continue;
        const long f0 = g_failures, o0 = g_ops;
        data_ops(G);
        cast_ops(G);
        layout_ops(G);
        for (int r = QGMM_RECIPE_BF16; r <= QGMM_RECIPE_MXFP8; ++r) {
            gemm_m(G, (qgmm_recipe)r);
            gemm_k(G, (qgmm_recipe)r);
        }
        printf("G=%-6lld %ld ops, %ld failures\n", (long long)G, g_ops - o0, g_failures - f0);
        fflush(stdout);
    }
    qgmm_context_destroy(g_side[0]);
    qgmm_context_destroy(g_side[1]);
    printf("test_group_counts (%s): %ld ops, %ld unsupported, %ld failures\n", g_backend, g_ops, g_unsupported,
           g_failures);
    return g_failures ? 1 : 0;
}
