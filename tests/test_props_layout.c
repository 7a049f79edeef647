/*
 * test_props_layout.c — properties of the layout and data-movement ops on the CPU
 * reference (ops-spec §4, §5, DeepGEMM row ids), through the public API:
 *  - every blocked map (2D, 3D, M-groups, K-groups) is a bijection from the plain scales
 *    onto the non-padding bytes of its buffer, and every other byte is zero. Proved by
 *    running the op itself on three "position code" inputs whose bytes, read back,
 *    name the source element of every output byte (no formula is shared with the op);
 *  - the bytes equal an independent torchao-style construction (pad, cut into 128x4
 *    tiles, lay the four 32x4 row slices of each tile side by side);
 *  - hand-derived bytes for small cases; to/from blocked round trips; group starts;
 *  - pad then unpad is the identity bit for bit for every alignment and element size;
 *    padded starts/offsets; padding rows and the tail are zero; row ids;
 *  - bad offsets leave every output untouched and make qgmm_synchronize report
 *    QGMM_ERR_BAD_OFFSETS.
 * Prints the number of cases; exits non-zero on any failure.
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static long g_cases, g_failures;

#include "qgmm_test_check.h"

/* ------------------------------------------------------------------ helpers */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { return qgmm_test_xorshift(&g_rng); }
static int64_t rnd_below(int64_t n) { return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0; }

static int64_t up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

static qgmm_tensor t2(qgmm_buffer *b, qgmm_dtype dt, int64_t r, int64_t c)
{
    const int64_t s[2] = {r, c};
    return qgmm_tensor_make(b, 0, dt, 2, s);
}
static qgmm_tensor t3(qgmm_buffer *b, qgmm_dtype dt, int64_t e, int64_t r, int64_t c)
{
    const int64_t s[3] = {e, r, c};
    return qgmm_tensor_make(b, 0, dt, 3, s);
}

/* G group end offsets over `extent`, every size a multiple of `mult`. pattern:
 * 0 ragged, 1 empties (first, a middle one, last), 2 single group, 3 short tail. */
static void make_offs(int32_t *offs, int G, int64_t extent, int64_t mult, int pattern)
{
    const int64_t units = extent / mult;
    int64_t end_units = units;
    if (pattern == 3) end_units = units > 1 ? units - 1 - rnd_below(units / 2) : 0;
    if (pattern == 2 || G == 1) {
        for (int g = 0; g < G; ++g) offs[g] = (int32_t)(end_units * mult);
        return;
    }
    /* G-1 sorted random cut points in [0, end_units] */
    int64_t *cut = malloc(sizeof(int64_t) * (size_t)G);
    for (int g = 0; g < G - 1; ++g) cut[g] = rnd_below(end_units + 1);
    for (int i = 1; i < G - 1; ++i)
        for (int j = i; j > 0 && cut[j - 1] > cut[j]; --j) {
            int64_t t = cut[j]; cut[j] = cut[j - 1]; cut[j - 1] = t;
        }
    cut[G - 1] = end_units;
    if (pattern == 1) {
        cut[0] = 0;                                  /* first group empty */
        if (G > 2) cut[G / 2] = cut[G / 2 - 1];      /* a middle group empty */
        if (G > 3) cut[G - 2] = end_units;           /* last group empty */
    }
    for (int g = 0; g < G; ++g) offs[g] = (int32_t)(cut[g] * mult);
    free(cut);
}

/* ------------------------------------------------------------------ blocked reference
 * An independent construction of torchao's to_blocked for an R x C byte matrix read
 * with leading dimension ld: zero-pad to (128*ceil(R/128), 4*ceil(C/4)), walk the 128x4
 * tiles in row-major tile order (512 bytes each), and inside a tile lay its four 32x4
 * row slices side by side as a 32x16 row-major block. */
static void ref_to_blocked(const uint8_t *in, int64_t ld, int64_t R, int64_t C, uint8_t *dst)
{
    const int64_t tiles_r = up(R, 128) / 128, tiles_c = up(C, 4) / 4;
    for (int64_t tr = 0; tr < tiles_r; ++tr)
        for (int64_t tc = 0; tc < tiles_c; ++tc) {
            uint8_t *tile = dst + (tr * tiles_c + tc) * 512;
            for (int slice = 0; slice < 4; ++slice)
                for (int rr = 0; rr < 32; ++rr)
                    for (int cc = 0; cc < 4; ++cc) {
                        const int64_t r = tr * 128 + slice * 32 + rr, c = tc * 4 + cc;
                        tile[rr * 16 + slice * 4 + cc] = (r < R && c < C) ? in[r * ld + c] : 0;
                    }
        }
}

/* Expected blocked buffer of any variant, built from ref_to_blocked and the group rules
 * of torchao's torch_to_blocked_2d_M_groups / _K_groups. in is (E, R, C) row-major;
 * offs in rows (M-groups) or elements (K-groups). Also fills expected group starts. */
static void ref_variant(qgmm_blocked_variant v, const uint8_t *in, int64_t E, int64_t R, int64_t C,
                        const int32_t *offs, int G, uint8_t *dst, size_t dst_len, int32_t *starts)
{
    memset(dst, 0, dst_len);
    if (v == QGMM_BLOCKED_2D || v == QGMM_BLOCKED_3D) {
        for (int64_t e = 0; e < E; ++e)
            ref_to_blocked(in + e * R * C, C, R, C, dst + e * up(R, 128) * up(C, 4));
        return;
    }
    if (v == QGMM_BLOCKED_M_GROUPS) {
        int64_t start = 0, prev = 0;
        for (int g = 0; g < G; ++g) {
            const int64_t size = offs[g] - prev;
            starts[g] = (int32_t)start;
            if (size > 0) ref_to_blocked(in + prev * C, C, size, C, dst + start * up(C, 4));
            start += up(size, 128);
            prev = offs[g];
        }
        return;
    }
    /* K-groups: each group's column slice is a blocked matrix of up(R,128) x up(cols,4)
     * bytes, placed at byte start_col * up(R,128). */
    int64_t start = 0, prev = 0;
    for (int g = 0; g < G; ++g) {
        const int64_t c0 = prev / 32, c1 = offs[g] / 32, w = c1 - c0;
        starts[g] = (int32_t)start;
        if (w > 0) {
            uint8_t *slice = malloc((size_t)(R * w));
            for (int64_t r = 0; r < R; ++r) memcpy(slice + r * w, in + r * C + c0, (size_t)w);
            ref_to_blocked(slice, w, R, w, dst + start * up(R, 128));
            free(slice);
        }
        start += up(w, 4);
        prev = offs[g];
    }
}

/* Does plain element (e, r, c) have a home in the blocked buffer? */
static int owned(qgmm_blocked_variant v, const int32_t *offs, int G, int64_t r, int64_t c)
{
    if (v == QGMM_BLOCKED_M_GROUPS) return G > 0 && r < offs[G - 1];
    if (v == QGMM_BLOCKED_K_GROUPS) return G > 0 && c * 32 < offs[G - 1];
    return 1;
}

static size_t variant_bytes(qgmm_blocked_variant v, int64_t E, int64_t R, int64_t C, int G)
{
    switch (v) {
    case QGMM_BLOCKED_2D: return qgmm_blocked_scales_bytes(R, C);
    case QGMM_BLOCKED_3D: return (size_t)E * qgmm_blocked_scales_bytes(R, C);
    case QGMM_BLOCKED_M_GROUPS: return qgmm_blocked_m_groups_bytes(R, C, G);
    default: return qgmm_blocked_k_groups_bytes(R, C, G);
    }
}

/* Runs qgmm_scales_to_blocked; returns the downloaded buffer (caller frees). */
static uint8_t *run_to_blocked(qgmm_blocked_variant v, const uint8_t *in, int64_t E, int64_t R,
                               int64_t C, const int32_t *offs, int G, size_t *len, int32_t *starts)
{
    const size_t n = (size_t)(E * R * C);
    *len = variant_bytes(v, E, R, C, G);
    qgmm_buffer *bin = qgmm_test_buf_from(in, n);
    qgmm_buffer *bout = qgmm_test_buf_poisoned(*len, 0xA5);
    qgmm_buffer *boffs = G ? qgmm_test_buf_from(offs, sizeof(int32_t) * (size_t)G) : NULL;
    qgmm_buffer *bst = G ? qgmm_test_buf_poisoned(sizeof(int32_t) * (size_t)G, 0xEE) : NULL;
    qgmm_tensor tin = (v == QGMM_BLOCKED_3D) ? t3(bin, QGMM_E8M0, E, R, C) : t2(bin, QGMM_E8M0, R, C);
    qgmm_tensor tout = qgmm_test_t1(bout, QGMM_E8M0, (int64_t)*len);
    qgmm_tensor toffs = qgmm_test_t1(boffs, QGMM_I32, G), tst = qgmm_test_t1(bst, QGMM_I32, G);
    OK(qgmm_scales_to_blocked(g_ctx, v, &tin, G ? &toffs : NULL, &tout, G ? &tst : NULL));
    OK(qgmm_synchronize(g_ctx));
    uint8_t *out = qgmm_test_fetch(bout, *len);
    if (G) {
        int32_t *st = qgmm_test_fetch(bst, sizeof(int32_t) * (size_t)G);
        memcpy(starts, st, sizeof(int32_t) * (size_t)G);
        free(st);
    }
    qgmm_buffer_free(bin);
    qgmm_buffer_free(bout);
    qgmm_buffer_free(boffs);
    qgmm_buffer_free(bst);
    return out;
}

/* Runs qgmm_scales_from_blocked into a poisoned plain buffer; returns it. */
static uint8_t *run_from_blocked(qgmm_blocked_variant v, const uint8_t *blocked, size_t len,
                                 int64_t E, int64_t R, int64_t C, const int32_t *offs, int G)
{
    const size_t n = (size_t)(E * R * C);
    qgmm_buffer *bin = qgmm_test_buf_from(blocked, len);
    qgmm_buffer *bout = qgmm_test_buf_poisoned(n, 0x5A);
    qgmm_buffer *boffs = G ? qgmm_test_buf_from(offs, sizeof(int32_t) * (size_t)G) : NULL;
    qgmm_tensor tin = qgmm_test_t1(bin, QGMM_E8M0, (int64_t)len);
    qgmm_tensor tout = (v == QGMM_BLOCKED_3D) ? t3(bout, QGMM_E8M0, E, R, C) : t2(bout, QGMM_E8M0, R, C);
    qgmm_tensor toffs = qgmm_test_t1(boffs, QGMM_I32, G);
    OK(qgmm_scales_from_blocked(g_ctx, v, &tin, G ? &toffs : NULL, &tout));
    OK(qgmm_synchronize(g_ctx));
    uint8_t *out = qgmm_test_fetch(bout, n);
    qgmm_buffer_free(bin);
    qgmm_buffer_free(bout);
    qgmm_buffer_free(boffs);
    return out;
}

static const char *vname(qgmm_blocked_variant v)
{
    static const char *n[4] = {"2D", "3D", "M-groups", "K-groups"};
    return n[v];
}

/* One blocked case: bijection by position codes, bytes vs the reference, group starts,
 * size bound, and the round trip. */
static void blocked_case(qgmm_blocked_variant v, int64_t E, int64_t R, int64_t C, const int32_t *offs, int G)
{
    g_cases++;
    const int64_t n = E * R * C;
    uint8_t *in = malloc((size_t)n);
    int32_t *starts = calloc((size_t)(G ? G : 1), sizeof(int32_t));
    int32_t *want_starts = calloc((size_t)(G ? G : 1), sizeof(int32_t));
    size_t len = 0;

    /* 1. Bijection: three passes, pass k stores digit k (base 255) of the element's
     * linear index, plus 1 so that no element byte is 0 and padding stays visible. */
    CHECK(n < 255LL * 255 * 255, "case too large for position codes");
    uint8_t *code[3];
    for (int k = 0; k < 3; ++k) {
        int64_t div = k == 0 ? 1 : k == 1 ? 255 : 255 * 255;
        for (int64_t i = 0; i < n; ++i) in[i] = (uint8_t)(1 + (i / div) % 255);
        code[k] = run_to_blocked(v, in, E, R, C, offs, G, &len, starts);
    }
    char *seen = calloc((size_t)n, 1);
    int64_t homes = 0, bad_code = 0, twice = 0;
    for (size_t off = 0; off < len; ++off) {
        const int z = (code[0][off] == 0) + (code[1][off] == 0) + (code[2][off] == 0);
        if (z == 3) continue; /* padding: zero in every pass */
        if (z != 0) { bad_code++; continue; }
        const int64_t idx = (code[0][off] - 1) + 255LL * (code[1][off] - 1) + 65025LL * (code[2][off] - 1);
        if (idx >= n) { bad_code++; continue; }
        if (seen[idx]++) twice++;
        homes++;
    }
    int64_t want_homes = 0, missing = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t r = (i / C) % R, c = i % C;
        const int own = owned(v, offs, G, r, c);
        want_homes += own;
        if (own && !seen[i]) missing++;
        if (!own && seen[i]) missing++;
    }
    CHECK(bad_code == 0 && twice == 0 && missing == 0 && homes == want_homes,
          "%s E=%lld R=%lld C=%lld G=%d: not a bijection (bad bytes %lld, duplicated %lld, "
          "missing/extra %lld, homes %lld of %lld)", vname(v), (long long)E, (long long)R,
          (long long)C, G, (long long)bad_code, (long long)twice, (long long)missing,
          (long long)homes, (long long)want_homes);
    for (int k = 0; k < 3; ++k) free(code[k]);
    free(seen);

    /* 2. Random bytes (any value, 0 included) vs the independent construction. */
    for (int64_t i = 0; i < n; ++i) in[i] = (uint8_t)rnd();
    uint8_t *got = run_to_blocked(v, in, E, R, C, offs, G, &len, starts);
    uint8_t *want = malloc(len);
    ref_variant(v, in, E, R, C, offs, G, want, len, want_starts);
    size_t first_diff = len;
    for (size_t i = 0; i < len && first_diff == len; ++i)
        if (got[i] != want[i]) first_diff = i;
    CHECK(first_diff == len, "%s E=%lld R=%lld C=%lld G=%d: byte %zu is 0x%02x, expected 0x%02x",
          vname(v), (long long)E, (long long)R, (long long)C, G, first_diff,
          first_diff < len ? got[first_diff] : 0, first_diff < len ? want[first_diff] : 0);
    if (G) CHECK(memcmp(starts, want_starts, sizeof(int32_t) * (size_t)G) == 0,
                 "%s G=%d: group_starts differ", vname(v), G);

    /* 3. Round trip: from_blocked gives back every owned scale; unowned ones are 0. */
    uint8_t *back = run_from_blocked(v, got, len, E, R, C, offs, G);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t r = (i / C) % R, c = i % C;
        const uint8_t expect = owned(v, offs, G, r, c) ? in[i] : 0;
        if (back[i] != expect) wrong++;
    }
    CHECK(wrong == 0, "%s E=%lld R=%lld C=%lld G=%d: round trip differs in %lld scales", vname(v),
          (long long)E, (long long)R, (long long)C, G, (long long)wrong);
    free(back);
    free(got);
    free(want);
    free(in);
    free(starts);
    free(want_starts);
}

static void blocked_suite(void)
{
    const int64_t shapes2d[][2] = {{1, 1}, {3, 5}, {128, 4}, {129, 5}, {200, 7}, {256, 8},
                                   {33, 1}, {1000, 3}, {64, 160}};
    for (size_t i = 0; i < sizeof shapes2d / sizeof shapes2d[0]; ++i)
        blocked_case(QGMM_BLOCKED_2D, 1, shapes2d[i][0], shapes2d[i][1], NULL, 0);
    const int64_t shapes3d[][3] = {{1, 3, 5}, {3, 130, 6}, {5, 64, 4}, {2, 256, 12}};
    for (size_t i = 0; i < sizeof shapes3d / sizeof shapes3d[0]; ++i)
        blocked_case(QGMM_BLOCKED_3D, shapes3d[i][0], shapes3d[i][1], shapes3d[i][2], NULL, 0);

    int32_t offs[128];
    /* M-groups: (M, C, G) x every offset pattern */
    const int64_t mg[][3] = {{1, 4, 1}, {300, 5, 1}, {300, 8, 4}, {517, 3, 7}, {1000, 4, 128},
                             {64, 16, 128}, {2048, 4, 16}};
    for (size_t i = 0; i < sizeof mg / sizeof mg[0]; ++i)
        for (int pat = 0; pat < 4; ++pat) {
            make_offs(offs, (int)mg[i][2], mg[i][0], 1, pat);
            blocked_case(QGMM_BLOCKED_M_GROUPS, 1, mg[i][0], mg[i][1], offs, (int)mg[i][2]);
        }
    /* K-groups: (R, scale cols C, G); offsets in elements, multiples of 32 */
    const int64_t kg[][3] = {{1, 1, 1}, {130, 9, 1}, {200, 20, 4}, {64, 37, 7}, {128, 300, 128},
                             {300, 64, 16}};
    for (size_t i = 0; i < sizeof kg / sizeof kg[0]; ++i)
        for (int pat = 0; pat < 4; ++pat) {
            make_offs(offs, (int)kg[i][2], kg[i][1] * 32, 32, pat);
            blocked_case(QGMM_BLOCKED_K_GROUPS, 1, kg[i][0], kg[i][1], offs, (int)kg[i][2]);
        }
    /* every group empty */
    memset(offs, 0, sizeof offs);
    blocked_case(QGMM_BLOCKED_M_GROUPS, 1, 50, 4, offs, 5);
    blocked_case(QGMM_BLOCKED_K_GROUPS, 1, 50, 4, offs, 5);
}

/* ------------------------------------------------------------------ hand-derived bytes */

static void expect_bytes(const char *what, const uint8_t *got, size_t len, const int64_t (*pos)[2],
                         size_t npos)
{
    g_cases++;
    uint8_t *want = calloc(len, 1);
    for (size_t i = 0; i < npos; ++i) want[pos[i][0]] = (uint8_t)pos[i][1];
    for (size_t i = 0; i < len; ++i)
        if (got[i] != want[i]) {
            CHECK(0, "%s: byte %zu is 0x%02x, hand-derived 0x%02x", what, i, got[i], want[i]);
            break;
        }
    free(want);
}

static void hand_cases(void)
{
    size_t len;
    int32_t st[4];
    /* 3x5 scales, value 10*r + c + 1. Padded to 128x8: two 128x4 tiles (512 bytes each).
     * Rows < 32 sit at r*16 inside a tile; column c goes to tile c/4, byte c%4. */
    uint8_t a[15];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 5; ++c) a[r * 5 + c] = (uint8_t)(10 * r + c + 1);
    uint8_t *got = run_to_blocked(QGMM_BLOCKED_2D, a, 1, 3, 5, NULL, 0, &len, st);
    CHECK(len == 1024, "3x5 blocked size %zu, expected 1024", len);
    const int64_t p35[][2] = {{0, 1},    {1, 2},    {2, 3},    {3, 4},    {512, 5},
                              {16, 11},  {17, 12},  {18, 13},  {19, 14},  {528, 15},
                              {32, 21},  {33, 22},  {34, 23},  {35, 24},  {544, 25}};
    expect_bytes("3x5 to_blocked", got, len, p35, sizeof p35 / sizeof p35[0]);
    free(got);

    /* 130x1 with value (r % 250) + 1 at rows 0, 32, 64, 96, 127, 128, 129 only (others 0).
     * Row r of tile 0: (r%32)*16 + (r/32)*4; rows 128.. start tile 1 at byte 512. */
    uint8_t b[130];
    memset(b, 0, sizeof b);
    const int rows[] = {0, 32, 64, 96, 127, 128, 129, 33};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) b[rows[i]] = (uint8_t)(rows[i] % 250 + 1);
    got = run_to_blocked(QGMM_BLOCKED_2D, b, 1, 130, 1, NULL, 0, &len, st);
    CHECK(len == 1024, "130x1 blocked size %zu, expected 1024", len);
    const int64_t p130[][2] = {{0, 1}, {4, 33}, {8, 65}, {12, 97}, {508, 128}, {512, 129}, {528, 130}, {20, 34}};
    expect_bytes("130x1 to_blocked", got, len, p130, sizeof p130 / sizeof p130[0]);
    free(got);

    /* M-groups: 5x4 scales, offs {2, 2, 5}: sizes 2, 0, 3; padded starts 0, 128, 128.
     * Group 0 row r at r*16 + c; group 2 local row r at 128*4 + r*16 + c. */
    uint8_t m[20];
    for (int i = 0; i < 20; ++i) m[i] = (uint8_t)(i + 1);
    const int32_t moffs[3] = {2, 2, 5};
    got = run_to_blocked(QGMM_BLOCKED_M_GROUPS, m, 1, 5, 4, moffs, 3, &len, st);
    CHECK(len >= (5 + 3 * 128) * 4, "M-groups size %zu below (M + 128 G) * C'", len);
    CHECK(st[0] == 0 && st[1] == 128 && st[2] == 128, "M-groups starts %d %d %d, expected 0 128 128",
          st[0], st[1], st[2]);
    int64_t pm[20][2];
    for (int r = 0; r < 5; ++r)
        for (int c = 0; c < 4; ++c) {
            pm[r * 4 + c][0] = r < 2 ? r * 16 + c : 512 + (r - 2) * 16 + c;
            pm[r * 4 + c][1] = r * 4 + c + 1;
        }
    expect_bytes("M-groups to_blocked", got, len, (const int64_t(*)[2])pm, 20);
    free(got);

    /* K-groups: 2x3 scales (K = 96), offs {64, 96} elements: scale columns [0,2) and
     * [2,3); starts 0 and 4; R' = 128 so group 1's tile begins at byte 4 * 128 = 512. */
    uint8_t k[6] = {1, 2, 3, 4, 5, 6};
    const int32_t koffs[2] = {64, 96};
    got = run_to_blocked(QGMM_BLOCKED_K_GROUPS, k, 1, 2, 3, koffs, 2, &len, st);
    CHECK(len >= 128 * (3 + 2 * 4), "K-groups size %zu below R' * (C + 4 G)", len);
    CHECK(st[0] == 0 && st[1] == 4, "K-groups starts %d %d, expected 0 4", st[0], st[1]);
    const int64_t pk[][2] = {{0, 1}, {1, 2}, {512, 3}, {16, 4}, {17, 5}, {528, 6}};
    expect_bytes("K-groups to_blocked", got, len, pk, sizeof pk / sizeof pk[0]);
    free(got);

    /* Size functions: exact for 2D; the grouped bounds must hold every group's padding. */
    g_cases++;
    CHECK(qgmm_blocked_scales_bytes(3, 5) == 1024 && qgmm_blocked_scales_bytes(129, 4) == 1024 &&
              qgmm_blocked_scales_bytes(128, 4) == 512,
          "qgmm_blocked_scales_bytes disagrees with 128*ceil(R/128) * 4*ceil(C/4)");
    CHECK(qgmm_blocked_m_groups_bytes(1000, 5, 7) >= (size_t)((1000 + 7 * 128) * 8),
          "qgmm_blocked_m_groups_bytes below (M + 128 G) * C'");
    CHECK(qgmm_blocked_k_groups_bytes(130, 9, 3) >= (size_t)(256 * (9 + 3 * 4)),
          "qgmm_blocked_k_groups_bytes below R' * (C + 4 G)");
}

/* ------------------------------------------------------------------ padding */

static void pad_case(size_t esz, int A, int64_t T, int64_t D, const int32_t *offs, int G)
{
    g_cases++;
    const qgmm_dtype dt = esz == 1 ? QGMM_U8 : esz == 2 ? QGMM_BF16 : QGMM_F32;
    const int64_t P = qgmm_padded_rows_bound(T, G, A);
    CHECK(P == up(T + (int64_t)G * A, A), "padded_rows_bound(%lld, %d, %d) = %lld", (long long)T, G, A,
          (long long)P);
    const size_t row = (size_t)D * esz;
    uint8_t *x = malloc((size_t)T * row);
    for (size_t i = 0; i < (size_t)T * row; ++i) x[i] = (uint8_t)rnd();

    /* expected: group g's rows at its padded start, every other byte zero */
    uint8_t *want = calloc((size_t)P, row);
    int32_t *want_start = malloc(sizeof(int32_t) * (size_t)G), *want_offs = malloc(sizeof(int32_t) * (size_t)G);
    int64_t s = 0, prev = 0;
    for (int g = 0; g < G; ++g) {
        const int64_t size = offs[g] - prev;
        want_start[g] = (int32_t)s;
        memcpy(want + (size_t)s * row, x + (size_t)prev * row, (size_t)size * row);
        s += up(size, A);
        want_offs[g] = (int32_t)s;
        prev = offs[g];
    }

    qgmm_buffer *bx = qgmm_test_buf_from(x, (size_t)T * row);
    qgmm_buffer *boffs = qgmm_test_buf_from(offs, sizeof(int32_t) * (size_t)G);
    qgmm_buffer *bout = qgmm_test_buf_poisoned((size_t)P * row, 0xC3);
    qgmm_buffer *bst = qgmm_test_buf_poisoned(sizeof(int32_t) * (size_t)G, 0xEE);
    qgmm_buffer *bpo = qgmm_test_buf_poisoned(sizeof(int32_t) * (size_t)G, 0xEE);
    qgmm_tensor tx = t2(bx, dt, T, D), toffs = qgmm_test_t1(boffs, QGMM_I32, G), tout = t2(bout, dt, P, D);
    qgmm_tensor tst = qgmm_test_t1(bst, QGMM_I32, G), tpo = qgmm_test_t1(bpo, QGMM_I32, G);
    OK(qgmm_pad_token_groups(g_ctx, A, &tx, &toffs, &tout, &tst, &tpo));
    OK(qgmm_synchronize(g_ctx));
    uint8_t *got = qgmm_test_fetch(bout, (size_t)P * row);
    int32_t *gst = qgmm_test_fetch(bst, sizeof(int32_t) * (size_t)G), *gpo = qgmm_test_fetch(bpo, sizeof(int32_t) * (size_t)G);
    CHECK(memcmp(got, want, (size_t)P * row) == 0, "pad esz=%zu A=%d T=%lld D=%lld G=%d: padded bytes differ",
          esz, A, (long long)T, (long long)D, G);
    CHECK(memcmp(gst, want_start, sizeof(int32_t) * (size_t)G) == 0, "pad A=%d G=%d: padded_start differs", A, G);
    CHECK(memcmp(gpo, want_offs, sizeof(int32_t) * (size_t)G) == 0, "pad A=%d G=%d: padded_offs differs", A, G);
    for (int g = 0; g < G; ++g)
        CHECK(gpo[g] % A == 0 && gst[g] % A == 0, "pad A=%d: group %d start/end not aligned", A, g);

    /* optional outputs absent: the same padded bytes */
    OK(qgmm_buffer_fill(bout, 0, (size_t)P * row, 0x3C));
    OK(qgmm_pad_token_groups(g_ctx, A, &tx, &toffs, &tout, NULL, NULL));
    OK(qgmm_synchronize(g_ctx));
    uint8_t *got2 = qgmm_test_fetch(bout, (size_t)P * row);
    CHECK(memcmp(got2, want, (size_t)P * row) == 0, "pad without optional outputs differs (A=%d G=%d)", A, G);

    /* unpad(pad(x)) == x bit for bit on the rows the groups cover; the rest is zero */
    qgmm_buffer *bback = qgmm_test_buf_poisoned((size_t)T * row, 0x77);
    qgmm_tensor tback = t2(bback, dt, T, D);
    OK(qgmm_unpad_token_groups(g_ctx, A, &tout, &toffs, &tback));
    OK(qgmm_synchronize(g_ctx));
    uint8_t *back = qgmm_test_fetch(bback, (size_t)T * row);
    const int64_t covered = G ? offs[G - 1] : 0;
    CHECK(memcmp(back, x, (size_t)covered * row) == 0, "unpad(pad(x)) != x (esz=%zu A=%d T=%lld G=%d)", esz, A,
          (long long)T, G);
    int tail_zero = 1;
    for (size_t i = (size_t)covered * row; i < (size_t)T * row; ++i) tail_zero &= back[i] == 0;
    CHECK(tail_zero, "unpad: rows past offs[G-1] are not zero");

    /* row ids in the unpadded and the padded space */
    int32_t *want_ids = malloc(sizeof(int32_t) * (size_t)(P > T ? P : T));
    qgmm_buffer *bid = qgmm_test_buf_poisoned(sizeof(int32_t) * (size_t)T, 0x11);
    qgmm_tensor tid = qgmm_test_t1(bid, QGMM_I32, T);
    OK(qgmm_group_row_ids(g_ctx, &toffs, NULL, &tid));
    OK(qgmm_synchronize(g_ctx));
    int32_t *ids = qgmm_test_fetch(bid, sizeof(int32_t) * (size_t)T);
    for (int64_t r = 0; r < T; ++r) {
        want_ids[r] = -1;
        for (int g = 0; g < G; ++g)
            if (r >= (g ? offs[g - 1] : 0) && r < offs[g]) { want_ids[r] = g; break; }
    }
    CHECK(memcmp(ids, want_ids, sizeof(int32_t) * (size_t)T) == 0, "row ids (unpadded) differ, G=%d", G);
    qgmm_buffer *bpid = qgmm_test_buf_poisoned(sizeof(int32_t) * (size_t)P, 0x11);
    qgmm_tensor tpid = qgmm_test_t1(bpid, QGMM_I32, P);
    OK(qgmm_group_row_ids(g_ctx, &toffs, &tpo, &tpid));
    OK(qgmm_synchronize(g_ctx));
    int32_t *pids = qgmm_test_fetch(bpid, sizeof(int32_t) * (size_t)P);
    for (int64_t r = 0; r < P; ++r) {
        want_ids[r] = -1;
        for (int g = 0; g < G; ++g) {
            const int64_t size = offs[g] - (g ? offs[g - 1] : 0);
            if (r >= want_start[g] && r < want_start[g] + size) { want_ids[r] = g; break; }
        }
    }
    CHECK(memcmp(pids, want_ids, sizeof(int32_t) * (size_t)P) == 0, "row ids (padded) differ, A=%d G=%d", A, G);

    free(x); free(want); free(want_start); free(want_offs); free(got); free(got2); free(gst); free(gpo);
    free(back); free(want_ids); free(ids); free(pids);
    qgmm_buffer_free(bx); qgmm_buffer_free(boffs); qgmm_buffer_free(bout); qgmm_buffer_free(bst);
    qgmm_buffer_free(bpo); qgmm_buffer_free(bback); qgmm_buffer_free(bid); qgmm_buffer_free(bpid);
}

static void pad_suite(void)
{
    const size_t sizes[3] = {1, 2, 4};
    const int aligns[3] = {16, 32, 128};
    const int64_t shapes[][3] = {{1, 1, 1}, {100, 3, 4}, {517, 37, 7}, {1000, 8, 128}, {64, 5, 128},
                                 {300, 16, 1}};
    int32_t offs[128];
    for (int si = 0; si < 3; ++si)
        for (int ai = 0; ai < 3; ++ai)
            for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; ++k)
                for (int pat = 0; pat < 4; ++pat) {
                    make_offs(offs, (int)shapes[k][2], shapes[k][0], 1, pat);
                    pad_case(sizes[si], aligns[ai], shapes[k][0], shapes[k][1], offs, (int)shapes[k][2]);
                }
    memset(offs, 0, sizeof offs); /* every group empty: all zeros out */
    pad_case(2, 32, 40, 3, offs, 6);
}

/* ------------------------------------------------------------------ bad offsets */

static void expect_untouched(const char *what, const uint8_t *before, qgmm_buffer *b, size_t len)
{
    uint8_t *after = qgmm_test_fetch(b, len);
    CHECK(memcmp(before, after, len) == 0, "%s: output changed despite bad offsets", what);
    free(after);
}

/* After an op that read bad offsets: synchronize reports it once, then is clean, and
 * the op's output is byte for byte what it was before. */
static void expect_bad_offsets(const char *what, const uint8_t *before, qgmm_buffer *b, size_t len)
{
    g_cases++;
    qgmm_status s = qgmm_synchronize(g_ctx);
    CHECK(s == QGMM_ERR_BAD_OFFSETS, "%s: synchronize returned %s, expected QGMM_ERR_BAD_OFFSETS", what,
          qgmm_status_string(s));
    CHECK(qgmm_synchronize(g_ctx) == QGMM_OK, "%s: status word not cleared by synchronize", what);
    expect_untouched(what, before, b, len);
}

static void bad_offsets_suite(void)
{
    uint8_t sc[64 * 8];
    for (size_t i = 0; i < sizeof sc; ++i) sc[i] = (uint8_t)(i + 1);
    const int32_t bad_m[][3] = {{10, 5, 64}, {10, 20, 65}, {-1, 5, 64}};   /* decreasing, past end, negative */
    const int32_t bad_k[][3] = {{32, 48, 256}, {64, 32, 256}, {32, 64, 288}}; /* not x32, decreasing, past end */
    const size_t mlen = qgmm_blocked_m_groups_bytes(64, 8, 3), klen = qgmm_blocked_k_groups_bytes(64, 8, 3);
    uint8_t *poison = malloc(mlen > klen ? mlen : klen);
    for (int kind = 0; kind < 2; ++kind)
        for (int i = 0; i < 3; ++i) {
            const qgmm_blocked_variant v = kind ? QGMM_BLOCKED_K_GROUPS : QGMM_BLOCKED_M_GROUPS;
            const size_t len = kind ? klen : mlen;
            memset(poison, 0xA5, len);
            qgmm_buffer *bin = qgmm_test_buf_from(sc, sizeof sc), *bout = qgmm_test_buf_poisoned(len, 0xA5);
            qgmm_buffer *boffs = qgmm_test_buf_from(kind ? bad_k[i] : bad_m[i], sizeof(int32_t) * 3);
            qgmm_buffer *bst = qgmm_test_buf_poisoned(12, 0xA5);
            qgmm_tensor tin = t2(bin, QGMM_E8M0, 64, 8), tout = qgmm_test_t1(bout, QGMM_E8M0, (int64_t)len);
            qgmm_tensor toffs = qgmm_test_t1(boffs, QGMM_I32, 3), tst = qgmm_test_t1(bst, QGMM_I32, 3);
            OK(qgmm_scales_to_blocked(g_ctx, v, &tin, &toffs, &tout, &tst));
            expect_bad_offsets(kind ? "to_blocked K-groups" : "to_blocked M-groups", poison, bout, len);
            uint8_t st_poison[12];
            memset(st_poison, 0xA5, 12);
            expect_untouched("to_blocked group_starts", st_poison, bst, 12);
            qgmm_buffer *bplain = qgmm_test_buf_poisoned(sizeof sc, 0xA5);
            qgmm_tensor tplain = t2(bplain, QGMM_E8M0, 64, 8);
            OK(qgmm_scales_from_blocked(g_ctx, v, &tout, &toffs, &tplain));
            memset(poison, 0xA5, sizeof sc);
            expect_bad_offsets("from_blocked", poison, bplain, sizeof sc);
            qgmm_buffer_free(bin); qgmm_buffer_free(bout); qgmm_buffer_free(boffs);
            qgmm_buffer_free(bst); qgmm_buffer_free(bplain);
        }
    free(poison);

    /* padding / row ids with offsets past the end or decreasing */
    const int32_t bad_p[][2] = {{5, 3}, {5, 41}};
    for (int i = 0; i < 2; ++i) {
        const int64_t T = 40, D = 3, P = qgmm_padded_rows_bound(T, 2, 16);
        uint8_t x[40 * 3];
        memset(x, 1, sizeof x);
        qgmm_buffer *bx = qgmm_test_buf_from(x, sizeof x), *boffs = qgmm_test_buf_from(bad_p[i], 8);
        qgmm_buffer *bout = qgmm_test_buf_poisoned((size_t)(P * D), 0xA5), *bst = qgmm_test_buf_poisoned(8, 0xA5);
        qgmm_tensor tx = t2(bx, QGMM_U8, T, D), toffs = qgmm_test_t1(boffs, QGMM_I32, 2);
        qgmm_tensor tout = t2(bout, QGMM_U8, P, D), tst = qgmm_test_t1(bst, QGMM_I32, 2);
        OK(qgmm_pad_token_groups(g_ctx, 16, &tx, &toffs, &tout, &tst, NULL));
        uint8_t *pz = malloc((size_t)(P * D));
        memset(pz, 0xA5, (size_t)(P * D));
        expect_bad_offsets("pad_token_groups", pz, bout, (size_t)(P * D));
        qgmm_buffer *bback = qgmm_test_buf_poisoned(sizeof x, 0xA5);
        qgmm_tensor tback = t2(bback, QGMM_U8, T, D);
        OK(qgmm_unpad_token_groups(g_ctx, 16, &tout, &toffs, &tback));
        expect_bad_offsets("unpad_token_groups", pz, bback, sizeof x);
        qgmm_buffer *bid = qgmm_test_buf_poisoned(4 * 40, 0xA5);
        qgmm_tensor tid = qgmm_test_t1(bid, QGMM_I32, 40);
        OK(qgmm_group_row_ids(g_ctx, &toffs, NULL, &tid));
        expect_bad_offsets("group_row_ids", pz, bid, 4 * 40);
        free(pz);
        qgmm_buffer_free(bx); qgmm_buffer_free(boffs); qgmm_buffer_free(bout); qgmm_buffer_free(bst);
        qgmm_buffer_free(bback); qgmm_buffer_free(bid);
    }
}

int main(int argc, char **argv)
{
    /* argv[1]: the backend to test (default cpu); the same checks run on every backend. */
    const char *backend = (argc > 1 && argv[1][0] != '-') ? argv[1] : "cpu";
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: %s\n  Property tests of the CPU blocked-scale layouts, token padding and row ids.\n"
               "  Prints the case count; exits 1 on any failure.\n", argv[0]);
        return 0;
    }
    if (qgmm_context_create(backend, 0, &g_ctx) != QGMM_OK) {
        if (strcmp(backend, "cpu") != 0) { /* a GPU backend this machine lacks */
            printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
            return 77;
        }
        fprintf(stderr, "cannot create a cpu context: %s\n", qgmm_last_error(NULL));
        return 2;
    }
    hand_cases();
    long c0 = g_cases;
    blocked_suite();
    printf("blocked layout: %ld cases\n", g_cases - c0);
    c0 = g_cases;
    pad_suite();
    printf("padding + row ids: %ld cases\n", g_cases - c0);
    c0 = g_cases;
    bad_offsets_suite();
    printf("bad offsets: %ld cases\n", g_cases - c0);
    qgmm_context_destroy(g_ctx);
    printf("test_props_layout: %ld cases, %ld failures\n", g_cases, g_failures);
    return g_failures ? 1 : 0;
}
