/*
 * test_mx_grouped.c — qgmm_quantize_mxfp8_grouped (MXFP8 cast writing the M-groups or
 * K-groups blocked scale layout directly), on the backend named by argv[1] (default cpu):
 *  - its q and scale bytes equal qgmm_quantize_mxfp8 with PLAIN scales followed by
 *    qgmm_scales_to_blocked(QGMM_BLOCKED_M_GROUPS / _K_GROUPS) on the same backend, for
 *    ragged, empty, single and short-tailed groups, M-group sizes that are not multiples
 *    of 32 or 128, many groups, NaN / inf / zero / subnormal inputs, bf16 and f32 x,
 *    both MX modes, row- and column-major q;
 *  - bad offsets (decreasing, negative, past the end, K-groups not multiples of 32)
 *    write nothing, q included, and the next qgmm_synchronize reports
 *    QGMM_ERR_BAD_OFFSETS;
 *  - refused calls (wrong layout for the entry point, block_dim, rank, scales size,
 *    aliasing, dequantize of a grouped layout) name the argument and change nothing.
 * Prints the number of cases; exits non-zero on any failure (77: backend absent).
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static long g_cases, g_failures;

#include "qgmm_test_check.h"

static uint64_t g_rng = 0x51ED270B27A5F1E3ull;
static uint64_t rnd(void) { return qgmm_test_xorshift(&g_rng); }
static int64_t rnd_below(int64_t n) { return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0; }

/* x (T, D) of f32 bit patterns: normal values with a per-row scale of 2^[-8, 8], and a
 * few NaN, +-inf, zeros and f32 subnormals (stored as bf16 by truncation when bf16). */
static void fill_x(uint8_t *dst, qgmm_dtype dt, int64_t T, int64_t D)
{
    for (int64_t r = 0; r < T; ++r) {
        const float row_scale = (float)(1 << (rnd_below(17))) / 256.0f;
        for (int64_t c = 0; c < D; ++c) {
            float v = ((float)rnd_below(2000001) / 1000000.0f - 1.0f) * 3.0f * row_scale;
            uint32_t bits;
            memcpy(&bits, &v, 4);
            const int64_t k = rnd_below(400);
            if (k == 0) bits = 0x7FC00000u;             /* NaN */
            else if (k == 1) bits = 0x7F800000u;        /* +inf */
            else if (k == 2) bits = 0xFF800000u;        /* -inf */
            else if (k == 3) bits = 0x00000000u;        /* +0 */
            else if (k == 4) bits = 0x00400000u;        /* subnormal */
            const int64_t i = r * D + c;
            if (dt == QGMM_F32) {
                memcpy(dst + 4 * i, &bits, 4);
            } else {
                const uint16_t h = (uint16_t)(bits >> 16);
                memcpy(dst + 2 * i, &h, 2);
            }
        }
        if (rnd_below(8) == 0) /* an all-zero row: zero blocks */
            memset(dst + (size_t)(r * D) * qgmm_dtype_size(dt), 0, (size_t)D * qgmm_dtype_size(dt));
    }
}

/* G end offsets over `extent`, sizes multiples of `mult`. pattern: 0 ragged, 1 empty
 * groups (first, middle, last), 2 one group, 3 a tail no group covers. */
static void make_offs(int32_t *offs, int G, int64_t extent, int64_t mult, int pattern)
{
    const int64_t units = extent / mult;
    const int64_t end = pattern == 3 && units > 1 ? units - 1 - rnd_below(units / 2) : units;
    int64_t *cut = malloc(sizeof(int64_t) * (size_t)G);
    for (int g = 0; g < G - 1; ++g) cut[g] = pattern == 2 ? end : rnd_below(end + 1);
    for (int a = 1; a < G - 1; ++a) /* sort the cut points */
        for (int b = a; b > 0 && cut[b - 1] > cut[b]; --b) {
            const int64_t t = cut[b]; cut[b] = cut[b - 1]; cut[b - 1] = t;
        }
    cut[G - 1] = end;
    if (pattern == 1) {
        cut[0] = 0;                               /* first group empty */
        if (G > 2) cut[G / 2] = cut[G / 2 - 1];   /* a middle group empty */
        if (G > 3) cut[G - 2] = end;              /* last group empty */
    }
    for (int g = 0; g < G; ++g) offs[g] = (int32_t)(cut[g] * mult);
    free(cut);
}

static size_t grouped_bytes(int mg, int64_t T, int64_t D, int G)
{
    return mg ? qgmm_blocked_m_groups_bytes(T, D / 32, G) : qgmm_blocked_k_groups_bytes(D, T / 32, G);
}

/* One case: the fused call against PLAIN + scales_to_blocked, both on g_ctx. */
static void same_bytes_case(int mg, int64_t T, int64_t D, int G, int pattern, qgmm_dtype xdt, qgmm_dtype qdt,
                            qgmm_mx_mode mode, int colmajor_q)
{
    g_cases++;
    const size_t xs = qgmm_dtype_size(xdt), n = (size_t)(T * D);
    uint8_t *xh = malloc(n * xs + 1);
    fill_x(xh, xdt, T, D);
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)G);
    make_offs(offs, G, T, mg ? 1 : 32, pattern);
    const int64_t other = mg ? T : D, blocks = (mg ? D : T) / 32;
    const size_t sbytes = grouped_bytes(mg, T, D, G), pbytes = (size_t)(other * blocks);

    qgmm_buffer *bx = qgmm_test_buf_from(xh, n * xs), *boffs = qgmm_test_buf_from(offs, sizeof(int32_t) * (size_t)G);
    qgmm_buffer *bqa = qgmm_test_buf_poisoned(n, 0x11), *bqb = qgmm_test_buf_poisoned(n, 0x22);
    qgmm_buffer *bplain = qgmm_test_buf_poisoned(pbytes, 0x33), *bsa = qgmm_test_buf_poisoned(sbytes, 0x44);
    qgmm_buffer *bsb = qgmm_test_buf_poisoned(sbytes, 0x55);
    const int64_t xsh[2] = {T, D}, psh[2] = {other, blocks};
    const qgmm_tensor x = qgmm_tensor_make(bx, 0, xdt, 2, xsh);
    const qgmm_tensor qa = colmajor_q ? qgmm_tensor_make_colmajor(bqa, 0, qdt, T, D) : qgmm_tensor_make(bqa, 0, qdt, 2, xsh);
    const qgmm_tensor qb = colmajor_q ? qgmm_tensor_make_colmajor(bqb, 0, qdt, T, D) : qgmm_tensor_make(bqb, 0, qdt, 2, xsh);
    const qgmm_tensor plain = qgmm_tensor_make(bplain, 0, QGMM_E8M0, 2, psh);
    const qgmm_tensor sa = qgmm_test_t1(bsa, QGMM_E8M0, (int64_t)sbytes), sb = qgmm_test_t1(bsb, QGMM_E8M0, (int64_t)sbytes);
    const qgmm_tensor to = qgmm_test_t1(boffs, QGMM_I32, G);

    qgmm_mxfp8_params p = QGMM_MXFP8_PARAMS_INIT(mg ? 1 : 0);
    p.mode = mode;
    OK(qgmm_quantize_mxfp8(g_ctx, &p, &x, &qa, &plain));
    OK(qgmm_scales_to_blocked(g_ctx, mg ? QGMM_BLOCKED_M_GROUPS : QGMM_BLOCKED_K_GROUPS, &plain, &to, &sa, NULL));
    p.scale_layout = mg ? QGMM_SCALES_BLOCKED_M_GROUPS : QGMM_SCALES_BLOCKED_K_GROUPS;
    OK(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &qb, &sb));
    OK(qgmm_synchronize(g_ctx));

    uint8_t *ha = qgmm_test_fetch(bqa, n), *hb = qgmm_test_fetch(bqb, n);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; ++i)
        if (ha[i] != hb[i] && !bad++) first = i;
    CHECK(bad == 0, "%s T=%lld D=%lld G=%d pattern %d %s->%s mode %d%s: %zu q bytes differ (first %zu: %02x vs %02x)",
          mg ? "M-groups" : "K-groups", (long long)T, (long long)D, G, pattern, qgmm_dtype_name(xdt),
          qgmm_dtype_name(qdt), (int)mode, colmajor_q ? " col-major q" : "", bad, first, ha[first], hb[first]);
    free(ha);
    free(hb);
    ha = qgmm_test_fetch(bsa, sbytes);
    hb = qgmm_test_fetch(bsb, sbytes);
    bad = 0;
    for (size_t i = 0; i < sbytes; ++i)
        if (ha[i] != hb[i] && !bad++) first = i;
    CHECK(bad == 0, "%s T=%lld D=%lld G=%d pattern %d %s->%s mode %d: %zu of %zu scale bytes differ (first %zu: %02x vs %02x)",
          mg ? "M-groups" : "K-groups", (long long)T, (long long)D, G, pattern, qgmm_dtype_name(xdt),
          qgmm_dtype_name(qdt), (int)mode, bad, sbytes, first, ha[first], hb[first]);
    free(ha);
    free(hb);
    qgmm_buffer_free(bx); qgmm_buffer_free(boffs); qgmm_buffer_free(bqa); qgmm_buffer_free(bqb);
    qgmm_buffer_free(bplain); qgmm_buffer_free(bsa); qgmm_buffer_free(bsb);
    free(xh);
    free(offs);
}

static void same_bytes_suite(void)
{
    static const qgmm_dtype qdts[3] = {QGMM_F8E4M3FN, QGMM_F8E5M2, QGMM_F8E4M3FNUZ};
    /* M-groups: (T, D, G); group sizes anything, 128-row group padding and 4-column
     * scale padding both visible */
    static const int64_t mshape[][3] = {{300, 192, 5}, {64, 32, 1}, {1000, 256, 7}, {130, 96, 3},
                                        {500, 64, 70}, {7, 224, 4}, {0, 64, 3}};
    /* K-groups: (T, D, G), T and every group a multiple of 32 tokens */
    static const int64_t kshape[][3] = {{640, 150, 4}, {256, 64, 3}, {1280, 200, 9}, {96, 1, 1},
                                        {32 * 70, 40, 33}, {0, 16, 2}};
    int i = 0;
    for (size_t s = 0; s < sizeof mshape / sizeof mshape[0]; ++s)
        for (int pat = 0; pat < 4; ++pat, ++i)
            same_bytes_case(1, mshape[s][0], mshape[s][1], (int)mshape[s][2], pat, i % 3 == 2 ? QGMM_F32 : QGMM_BF16,
                            qdts[i % 3], (qgmm_mx_mode)(i & 1), 0);
    for (size_t s = 0; s < sizeof kshape / sizeof kshape[0]; ++s)
        for (int pat = 0; pat < 4; ++pat, ++i)
            same_bytes_case(0, kshape[s][0], kshape[s][1], (int)kshape[s][2], pat, i % 3 == 1 ? QGMM_F32 : QGMM_BF16,
                            qdts[i % 3], (qgmm_mx_mode)(i & 1), pat != 2);
}

/* ------------------------------------------------------------------ bad offsets */
static void bad_offsets_suite(void)
{
    const int64_t T = 128, D = 64;
    const int32_t bad_m[][3] = {{10, 5, 64}, {10, 20, 129}, {-1, 5, 64}};   /* decreasing, past end, negative */
    const int32_t bad_k[][3] = {{32, 48, 128}, {64, 32, 128}, {32, 64, 160}}; /* not x32, decreasing, past end */
    uint8_t *xh = malloc((size_t)(T * D) * 2);
    fill_x(xh, QGMM_BF16, T, D);
    for (int kind = 0; kind < 2; ++kind)
        for (int i = 0; i < 3; ++i) {
            g_cases++;
            const int mg = !kind;
            const size_t sbytes = grouped_bytes(mg, T, D, 3), n = (size_t)(T * D);
            qgmm_buffer *bx = qgmm_test_buf_from(xh, n * 2), *boffs = qgmm_test_buf_from(mg ? bad_m[i] : bad_k[i], 12);
            qgmm_buffer *bq = qgmm_test_buf_poisoned(n, 0xA5), *bs = qgmm_test_buf_poisoned(sbytes, 0xA5);
            const int64_t xsh[2] = {T, D};
            const qgmm_tensor x = qgmm_tensor_make(bx, 0, QGMM_BF16, 2, xsh);
            const qgmm_tensor q = mg ? qgmm_tensor_make(bq, 0, QGMM_F8E4M3FN, 2, xsh)
                                     : qgmm_tensor_make_colmajor(bq, 0, QGMM_F8E4M3FN, T, D);
            const qgmm_tensor s = qgmm_test_t1(bs, QGMM_E8M0, (int64_t)sbytes), to = qgmm_test_t1(boffs, QGMM_I32, 3);
            qgmm_mxfp8_params p = QGMM_MXFP8_PARAMS_INIT(mg ? 1 : 0);
            p.scale_layout = mg ? QGMM_SCALES_BLOCKED_M_GROUPS : QGMM_SCALES_BLOCKED_K_GROUPS;
            OK(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &q, &s));
            const qgmm_status st = qgmm_synchronize(g_ctx);
            CHECK(st == QGMM_ERR_BAD_OFFSETS, "%s bad offsets %d: synchronize returned %s", mg ? "M" : "K", i,
                  qgmm_status_string(st));
            CHECK(strstr(qgmm_last_error(g_ctx), "qgmm_quantize_mxfp8_grouped") && strstr(qgmm_last_error(g_ctx), "offs"),
                  "the bad-offsets message names the op and offs: \"%s\"", qgmm_last_error(g_ctx));
            CHECK(qgmm_synchronize(g_ctx) == QGMM_OK, "status word not cleared");
            uint8_t *hq = qgmm_test_fetch(bq, n), *hs = qgmm_test_fetch(bs, sbytes);
            size_t changed = 0;
            for (size_t k = 0; k < n; ++k) changed += hq[k] != 0xA5;
            for (size_t k = 0; k < sbytes; ++k) changed += hs[k] != 0xA5;
            CHECK(changed == 0, "%s bad offsets %d: %zu output bytes written", mg ? "M" : "K", i, changed);
            free(hq);
            free(hs);
            qgmm_buffer_free(bx); qgmm_buffer_free(boffs); qgmm_buffer_free(bq); qgmm_buffer_free(bs);
        }
    free(xh);
}

/* ------------------------------------------------------------------ refusals */
static void expect_refused(qgmm_status st, const char *what, const char *want1, const char *want2)
{
    g_cases++;
    const char *msg = qgmm_last_error(g_ctx);
    CHECK(st == QGMM_ERR_INVALID_ARGUMENT, "%s: returned %s, expected QGMM_ERR_INVALID_ARGUMENT", what,
          qgmm_status_string(st));
    CHECK(strstr(msg, want1) != NULL && (!want2 || strstr(msg, want2) != NULL),
          "%s: message \"%s\" should name \"%s\"%s%s", what, msg, want1, want2 ? " and " : "", want2 ? want2 : "");
}

static void refusal_suite(void)
{
    const int64_t T = 96, D = 64, G = 2;
    const size_t n = (size_t)(T * D), ms = grouped_bytes(1, T, D, G), ks = grouped_bytes(0, T, D, G);
    uint8_t *xh = calloc(n, 4);
    const int32_t offs[2] = {32, 96};
    qgmm_buffer *bx = qgmm_test_buf_from(xh, n * 4), *boffs = qgmm_test_buf_from(offs, 8);
    qgmm_buffer *bq = qgmm_test_buf_poisoned(n, 0xA5), *bs = qgmm_test_buf_poisoned(ms > ks ? ms : ks, 0xA5);
    const int64_t xsh[2] = {T, D}, x3[3] = {1, T, D};
    const qgmm_tensor x = qgmm_tensor_make(bx, 0, QGMM_F32, 2, xsh), to = qgmm_test_t1(boffs, QGMM_I32, G);
    const qgmm_tensor xr3 = qgmm_tensor_make(bx, 0, QGMM_F32, 3, x3), qr3 = qgmm_tensor_make(bq, 0, QGMM_F8E4M3FN, 3, x3);
    const qgmm_tensor q = qgmm_tensor_make(bq, 0, QGMM_F8E4M3FN, 2, xsh);
    const qgmm_tensor sm = qgmm_test_t1(bs, QGMM_E8M0, (int64_t)ms), sk = qgmm_test_t1(bs, QGMM_E8M0, (int64_t)ks);
    const qgmm_tensor s2d = qgmm_test_t1(bs, QGMM_E8M0, (int64_t)qgmm_blocked_scales_bytes(T, D / 32));
    qgmm_mxfp8_params p = QGMM_MXFP8_PARAMS_INIT(1);

    p.scale_layout = QGMM_SCALES_BLOCKED_M_GROUPS;
    expect_refused(qgmm_quantize_mxfp8(g_ctx, &p, &x, &q, &sm), "quantize_mxfp8 with M-groups", "scale_layout",
                   "qgmm_quantize_mxfp8_grouped");
    p.scale_layout = QGMM_SCALES_PLAIN;
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &q, &sm), "grouped with PLAIN",
                   "qgmm_quantize_mxfp8_grouped", "QGMM_SCALES_PLAIN");
    p.scale_layout = (qgmm_scale_layout)7;
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &q, &sm), "layout 7", "scale_layout", "7");
    p.scale_layout = QGMM_SCALES_BLOCKED_M_GROUPS;
    p.block_dim = 0;
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &q, &sm), "M-groups block_dim 0", "block_dim", "1");
    p.block_dim = 1;
    p.scale_layout = QGMM_SCALES_BLOCKED_K_GROUPS;
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &q, &sk), "K-groups block_dim 1", "block_dim", "0");
    p.scale_layout = QGMM_SCALES_BLOCKED_M_GROUPS;
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &xr3, &to, &qr3, &sm), "rank 3", "x", "rank 3");
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &q, &s2d), "2D blocked size", "scales", NULL);
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, NULL, &q, &sm), "no offs", "offs", NULL);
    const qgmm_tensor s_on_x = qgmm_test_t1(bx, QGMM_E8M0, (int64_t)ms);
    expect_refused(qgmm_quantize_mxfp8_grouped(g_ctx, &p, &x, &to, &q, &s_on_x), "scales over x", "scales", "x");
    qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(1);
    f.mx.scale_layout = QGMM_SCALES_BLOCKED_M_GROUPS;
    const qgmm_tensor out = qgmm_tensor_make(bx, 0, QGMM_F32, 2, xsh);
    expect_refused(qgmm_dequantize(g_ctx, &f, &q, &sm, NULL, &out), "dequantize M-groups", "scale_layout",
                   "qgmm_scales_from_blocked");
    OK(qgmm_synchronize(g_ctx));
    uint8_t *hq = qgmm_test_fetch(bq, n);
    size_t changed = 0;
    for (size_t k = 0; k < n; ++k) changed += hq[k] != 0xA5;
    CHECK(changed == 0, "refused calls wrote %zu bytes of q", changed);
    free(hq);
    free(xh);
    qgmm_buffer_free(bx); qgmm_buffer_free(boffs); qgmm_buffer_free(bq); qgmm_buffer_free(bs);
}

int main(int argc, char **argv)
{
    const char *backend = (argc > 1 && argv[1][0] != '-') ? argv[1] : "cpu";
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: %s [BACKEND]\n  qgmm_quantize_mxfp8_grouped on BACKEND (default cpu): the same bytes as PLAIN\n"
               "  quantize + qgmm_scales_to_blocked, bad offsets, refused calls. Exits 1 on any failure.\n",
               argv[0]);
        return 0;
    }
    if (qgmm_context_create(backend, 0, &g_ctx) != QGMM_OK) {
        if (strcmp(backend, "cpu") != 0) {
            printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
            return 77;
        }
        fprintf(stderr, "cannot create a cpu context: %s\n", qgmm_last_error(NULL));
        return 2;
    }
    same_bytes_suite();
    bad_offsets_suite();
    refusal_suite();
    qgmm_context_destroy(g_ctx);
    printf("test_mx_grouped (%s): %ld cases, %ld failures\n", backend, g_cases, g_failures);
    return g_failures ? 1 : 0;
}
