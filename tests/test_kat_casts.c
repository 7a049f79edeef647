/*
 * test_kat_casts.c — known-answer tests of every cast (ops-spec §0-§3).
 *
 * Part 1 checks the scalar codecs of kernels/ directly: every fp8 byte of each format
 * decodes and re-encodes to itself, and a dense sweep of f32 inputs encodes exactly as
 * an independent slow reference written here in double arithmetic (nearest value from
 * a table of all finite fp8 values, ties to the even code, saturation). bf16 and E8M0
 * and the two MX scale rules get the same treatment.
 *
 * Part 2 runs the ops through the public API on the "cpu" backend and compares with
 * bytes derived by hand; each expected byte has its derivation next to it. e4m3fn
 * codes: sign | exp(4, bias 7) | man(3): 1.75*2^k -> ((k+7)<<3)|6, 2^k -> (k+7)<<3,
 * 448 = 0x7E, NaN 0x7F. e4m3fnuz: bias 8, 240 = 0x7F, NaN 0x80. e5m2: exp(5, bias
 * 15) | man(2), 57344 = 0x7B, inf 0x7C.
 *
 * Where arithmetic itself makes a NaN (x * NaN scale, inf * 0) the sign of that NaN is
 * what the host FPU makes it (x86 gives the "default NaN" 0xFFC00000 for inf*0), so
 * those bytes are checked as "a NaN of the format" (docs/casts.md, NaN signs).
 *
 * Prints case counts per section; exits 1 on any failure.
 */
#include "qgmm.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long g_cases, g_fail;
#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        g_cases++;                                                                    \
        if (!(cond)) {                                                                \
            if (++g_fail <= 60) {                                                     \
                fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                  \
                fprintf(stderr, __VA_ARGS__);                                         \
                fputc('\n', stderr);                                                  \
            }                                                                         \
        }                                                                             \
    } while (0)

static void section_done(const char *name, long c0, long f0)
{
    printf("%-44s %8ld cases  %ld failed\n", name, g_cases - c0, g_fail - f0);
}

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static const int FMTS[3] = {QGMM_FMT_E4M3FN, QGMM_FMT_E4M3FNUZ, QGMM_FMT_E5M2};
static const char *fmt_name(int f) { return f == 4 ? "e4m3fn" : f == 5 ? "e4m3fnuz" : "e5m2"; }

/* ================================================================ part 1: codecs */

/* The formats described independently of kernels/: exponent/mantissa bits, bias,
 * the largest finite magnitude code, inf / fnuz flavour. */
typedef struct { int ebits, mbits, bias, maxcode, has_inf, fnuz; } ref_fmt;
static ref_fmt ref_of(int fmt)
{
    if (fmt == QGMM_FMT_E5M2) return (ref_fmt){5, 2, 15, 0x7B, 1, 0};
    if (fmt == QGMM_FMT_E4M3FNUZ) return (ref_fmt){4, 3, 8, 0x7F, 0, 1};
    return (ref_fmt){4, 3, 7, 0x7E, 0, 0};
}

/* Magnitude of code c (0 <= c <= maxcode) as a double, from the definition. */
static double ref_mag(ref_fmt f, int c)
{
    const int e = c >> f.mbits, m = c & ((1 << f.mbits) - 1);
    if (e == 0) return ldexp((double)m, 1 - f.bias - f.mbits);
    return ldexp(1.0 + (double)m / (double)(1 << f.mbits), e - f.bias);
}

static int ref_is_nan_code(ref_fmt f, uint8_t b)
{
    if (f.fnuz) return b == 0x80;
    if (f.has_inf) return (b & 0x7F) > 0x7C;
    return (b & 0x7F) == 0x7F;
}

/* The slow reference encoder: nearest finite value by search, ties to even code. */
static uint8_t ref_encode(float x, int fmt)
{
    const ref_fmt f = ref_of(fmt);
    const int neg = signbit(x) != 0;
    if (isnan(x)) return f.fnuz ? 0x80 : (uint8_t)((neg << 7) | 0x7F);
    int code;
    if (isinf(x)) {
        code = f.has_inf ? 0x7C : f.maxcode;
    } else {
        const double a = fabs((double)x);
        if (a >= ref_mag(f, f.maxcode)) {
            code = f.maxcode;                   /* satfinite */
        } else {
            int lo = 0, hi = f.maxcode;         /* mag(lo) <= a < mag(hi) */
            while (hi - lo > 1) {
                const int mid = (lo + hi) / 2;
                if (ref_mag(f, mid) <= a) lo = mid; else hi = mid;
            }
            const double dl = a - ref_mag(f, lo), dh = ref_mag(f, hi) - a;
            code = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
        }
    }
    if (code == 0 && f.fnuz) return 0;
    return (uint8_t)((neg << 7) | code);
}

static void test_fp8_roundtrip(void)
{
    const long c0 = g_cases, f0 = g_fail;
    for (int k = 0; k < 3; ++k) {
        const int fmt = FMTS[k];
        const ref_fmt f = ref_of(fmt);
        for (int b = 0; b < 256; ++b) {
            const float v = qgmm_fp8_to_f32((uint8_t)b, fmt);
            const uint8_t back = qgmm_f32_to_fp8(v, fmt);
            if (ref_is_nan_code(f, (uint8_t)b)) {
                CHECK(isnan(v), "%s byte 0x%02X should decode to NaN", fmt_name(fmt), b);
                /* NaN codes re-encode to the canonical NaN of the format */
                const uint8_t canon = f.fnuz ? 0x80 : (uint8_t)((b & 0x80) | 0x7F);
                CHECK(back == canon, "%s NaN byte 0x%02X re-encodes to 0x%02X", fmt_name(fmt), b, back);
                continue;
            }
            const int neg = (b & 0x80) != 0, mag = b & 0x7F;
            double want;
            if (f.has_inf && mag == 0x7C) want = INFINITY;
            else want = ref_mag(f, mag);
            if (neg) want = -want;
            CHECK(fbits(v) == fbits((float)want), "%s byte 0x%02X decodes to %a, want %a",
                  fmt_name(fmt), b, (double)v, want);
            CHECK(back == (uint8_t)b, "%s byte 0x%02X re-encodes to 0x%02X", fmt_name(fmt), b, back);
        }
    }
    section_done("codec: every fp8 byte decode/re-encode", c0, f0);
}

static void sweep_one(uint32_t u, long *n)
{
    const float x = bitsf(u);
    for (int k = 0; k < 3; ++k) {
        const uint8_t got = qgmm_f32_to_fp8(x, FMTS[k]), want = ref_encode(x, FMTS[k]);
        ++*n;
        if (got != want) CHECK(0, "%s encode(%a = 0x%08X) = 0x%02X, reference 0x%02X",
                               fmt_name(FMTS[k]), (double)x, u, got, want);
    }
}

static void test_fp8_sweep(void)
{
    const long c0 = g_cases, f0 = g_fail;
    long n = 0;
    /* (a) every f32 bit pattern on a prime stride: all classes, both signs */
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 4099) sweep_one((uint32_t)u, &n);
    /* (b) densely where fp8 lives (biased exponents 100..145 span half the smallest
     *     e5m2 subnormal to beyond 57344): every top-12 mantissa bit pattern with the
     *     low 11 bits at the values that decide rounding (exact, just above/below a tie) */
    static const uint32_t low[] = {0, 1, 0x3FF, 0x400, 0x401, 0x7FF};
    for (uint32_t s = 0; s < 2; ++s)
        for (uint32_t e = 100; e <= 145; ++e)
            for (uint32_t hi = 0; hi < 4096; ++hi)
                for (unsigned l = 0; l < sizeof low / sizeof low[0]; ++l)
                    sweep_one((s << 31) | (e << 23) | (hi << 11) | low[l], &n);
    /* (c) the special values themselves */
    static const uint32_t sp[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                                  0xFFC00000u, 0x7F800001u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu};
    for (unsigned i = 0; i < sizeof sp / sizeof sp[0]; ++i) sweep_one(sp[i], &n);
    g_cases += n - (g_cases - c0); /* one case per (input, format) */
    section_done("codec: f32->fp8 sweep vs double reference", c0, f0);
}

/* Hand-derived scalar encodes (the reference above must agree, and so must the codec). */
static void test_fp8_hand(void)
{
    const long c0 = g_cases, f0 = g_fail;
    struct { float x; int fmt; uint8_t want; const char *why; } t[] = {
        {0.0f, 4, 0x00, "+0"},
        {-0.0f, 4, 0x80, "-0 keeps its sign in e4m3fn"},
        {-0.0f, 5, 0x00, "fnuz has no -0"},
        {-0.0f, 6, 0x80, "-0 in e5m2"},
        {INFINITY, 4, 0x7E, "+inf saturates to 448"},
        {-INFINITY, 4, 0xFE, "-inf saturates to -448"},
        {INFINITY, 5, 0x7F, "+inf saturates to 240 (fnuz max code 0x7F)"},
        {-INFINITY, 5, 0xFF, "-inf -> -240"},
        {INFINITY, 6, 0x7C, "e5m2 keeps inf"},
        {-INFINITY, 6, 0xFC, "e5m2 -inf"},
        {NAN, 4, 0x7F, "+NaN"},
        {-NAN, 4, 0xFF, "-NaN keeps sign"},
        {NAN, 5, 0x80, "fnuz single NaN"},
        {-NAN, 5, 0x80, "fnuz single NaN"},
        {NAN, 6, 0x7F, "e5m2 NaN"},
        {448.0f, 4, 0x7E, "max = 1.75*2^8: e=15 m=6"},
        {-448.0f, 4, 0xFE, "-max"},
        {464.0f, 4, 0x7E, "448+16: tie toward 480 (not finite) saturates"},
        {470.0f, 4, 0x7E, "just above max saturates"},
        {1e30f, 4, 0x7E, "far above max saturates"},
        {240.0f, 5, 0x7F, "fnuz max = 1.875*2^7: e=15 m=7"},
        {248.0f, 5, 0x7F, "fnuz just above max saturates"},
        {57344.0f, 6, 0x7B, "e5m2 max = 1.75*2^15: e=30 m=3"},
        {61440.0f, 6, 0x7B, "tie between max and 65536 saturates (satfinite)"},
        {1.0f, 4, 0x38, "1 = 2^0: e=7"},
        {1.0f, 5, 0x40, "fnuz 1: e=8"},
        {1.0f, 6, 0x3C, "e5m2 1: e=15"},
        {1.0625f, 4, 0x38, "tie 1 / 1.125 -> even mantissa 0"},
        {1.1875f, 4, 0x3A, "tie 1.125 / 1.25 -> even mantissa 2"},
        {-1.0625f, 4, 0xB8, "negative tie"},
        {1.125f, 6, 0x3C, "e5m2 tie 1 / 1.25 -> even"},
        {1.375f, 6, 0x3E, "e5m2 tie 1.25 / 1.5 -> even (m=2)"},
        {0x1p-9f, 4, 0x01, "smallest e4m3fn subnormal 2^-9"},
        {0x1p-10f, 4, 0x00, "half the smallest subnormal: tie to even 0"},
        {0x1.8p-9f, 4, 0x02, "1.5*2^-9 = tie 2^-9 / 2^-8 -> even 0x02"},
        {0x1.4p-9f, 4, 0x01, "1.25*2^-9 rounds down"},
        {0x1p-7f, 4, 0x04, "2^-7 = subnormal m=4"},
        {0x1p-6f, 4, 0x08, "smallest normal 2^-6: e=1 m=0"},
        {0x1.ep-7f, 4, 0x08, "largest value rounding up into the first normal"},
        {0x1p-10f, 5, 0x01, "smallest fnuz subnormal 2^-10"},
        {0x1p-16f, 6, 0x01, "smallest e5m2 subnormal 2^-16"},
        {0x1p-17f, 6, 0x00, "e5m2 half-subnormal tie -> 0"},
        {-0x1p-17f, 6, 0x80, "negative underflow gives -0"},
        {-0x1p-11f, 5, 0x00, "fnuz negative underflow gives +0"},
        {1e-40f, 4, 0x00, "f32 subnormal input -> 0"},
    };
    for (unsigned i = 0; i < sizeof t / sizeof t[0]; ++i) {
        const uint8_t got = qgmm_f32_to_fp8(t[i].x, t[i].fmt);
        CHECK(got == t[i].want, "%s(%a): got 0x%02X want 0x%02X (%s)", fmt_name(t[i].fmt),
              (double)t[i].x, got, t[i].want, t[i].why);
        CHECK(ref_encode(t[i].x, t[i].fmt) == t[i].want, "reference disagrees with hand value (%s)", t[i].why);
    }
    section_done("codec: hand-derived fp8 encodes", c0, f0);
}

/* bf16: RNE reference from the definition (scale to an integer, rint, scale back). */
static uint16_t ref_bf16(float x)
{
    const uint32_t u = fbits(x);
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x40);
    if (isinf(x) || x == 0.0f) return (uint16_t)(u >> 16);
    int e;
    frexp((double)x, &e);                 /* |x| in [2^(e-1), 2^e) */
    int q = e - 8;                        /* ulp exponent for 8 significant bits */
    if (q < -133) q = -133;               /* bf16 subnormal ulp 2^-133 */
    const double r = ldexp(nearbyint(ldexp((double)x, -q)), q);
    if (fabs(r) >= 0x1p128) return (uint16_t)((u >> 16 & 0x8000) | 0x7F80);
    return (uint16_t)(fbits((float)r) >> 16);
}

static void test_bf16_e8m0(void)
{
    const long c0 = g_cases, f0 = g_fail;
    for (uint32_t h = 0; h < 65536; ++h) {
        const float v = qgmm_bf16_to_f32((uint16_t)h);
        CHECK(fbits(v) == h << 16, "bf16 0x%04X decode", h);
        const uint16_t back = qgmm_f32_to_bf16(v);
        if (isnan(v)) CHECK(back == (uint16_t)(h | 0x40), "bf16 NaN 0x%04X re-encodes quiet", h);
        else CHECK(back == h, "bf16 0x%04X re-encodes to 0x%04X", h, back);
    }
    long bad = 0, n = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65521) {
        const float x = bitsf((uint32_t)u);
        ++n;
        if (qgmm_f32_to_bf16(x) != ref_bf16(x)) {
            if (++bad < 5) fprintf(stderr, "bf16(0x%08X) = 0x%04X ref 0x%04X\n", (uint32_t)u,
                                   qgmm_f32_to_bf16(x), ref_bf16(x));
        }
    }
    /* ties: 1 + 2^-8 is halfway between bf16 1.0 and 1+2^-7 -> even (1.0) */
    CHECK(qgmm_f32_to_bf16(0x1.01p0f) == 0x3F80, "bf16 tie to even down");
    CHECK(qgmm_f32_to_bf16(0x1.03p0f) == 0x3F82, "bf16 tie to even up");
    g_cases += n; if (bad) { g_fail++; fprintf(stderr, "FAIL bf16 sweep: %ld mismatches\n", bad); }
    for (int b = 0; b < 256; ++b) {
        const float v = qgmm_e8m0_to_f32((uint8_t)b), r = qgmm_e8m0_reciprocal((uint8_t)b);
        if (b == 255) {
            CHECK(isnan(v) && isnan(r), "e8m0 255 is NaN");
        } else {
            CHECK(v == (float)ldexp(1.0, b - 127), "e8m0 %d -> 2^%d", b, b - 127);
            CHECK(r == (float)ldexp(1.0, 127 - b), "e8m0 reciprocal %d -> 2^%d", b, 127 - b);
        }
    }
    section_done("codec: bf16 exhaustive + sweep, e8m0", c0, f0);
}

/* MX scale rules vs their definitions. FLOOR: floor(log2 amax) - emax, clamped.
 * RCEIL: the smallest b with 2^(b-127) >= d, d = amax * f32(1/fp8max). */
static uint8_t ref_floor(float amax, int fmt)
{
    if (isnan(amax) || isinf(amax)) return 255;
    const int emax = fmt == 6 ? 15 : fmt == 5 ? 7 : 8;
    int e = -127;
    if (amax >= 0x1p-126f) { int ex; frexp((double)amax, &ex); e = ex - 1; }
    int u = e - emax;
    if (u < -127) u = -127;
    if (u > 128) u = 128;
    return (uint8_t)(u + 127);
}
static uint8_t ref_rceil(float amax, int fmt)
{
    const float inv = fmt == 6 ? 1.0f / 57344.0f : fmt == 5 ? 1.0f / 240.0f : 1.0f / 448.0f;
    const float d = fabsf(amax * inv);
    if (isnan(d) || isinf(d)) return 255;
    if (d == 0.0f) return 0;
    for (int b = 0; b <= 254; ++b)
        if (ldexp(1.0, b - 127) >= (double)d) return (uint8_t)b;
    return 255;
}

static void test_mx_rules(void)
{
    const long c0 = g_cases, f0 = g_fail;
    long n = 0, bad = 0;
    for (uint64_t u = 0; u <= 0x7FFFFFFFull; u += 1021) {
        const float a = bitsf((uint32_t)u);
        for (int k = 0; k < 3; ++k) {
            n += 2;
            if (qgmm_mx_scale_floor(a, FMTS[k]) != ref_floor(a, FMTS[k])) {
                if (++bad < 5) fprintf(stderr, "FLOOR(0x%08X,%s) = %d ref %d\n", (uint32_t)u,
                                       fmt_name(FMTS[k]), qgmm_mx_scale_floor(a, FMTS[k]), ref_floor(a, FMTS[k]));
            }
            if (qgmm_mx_scale_rceil(a, FMTS[k]) != ref_rceil(a, FMTS[k])) {
                if (++bad < 5) fprintf(stderr, "RCEIL(0x%08X,%s) = %d ref %d\n", (uint32_t)u,
                                       fmt_name(FMTS[k]), qgmm_mx_scale_rceil(a, FMTS[k]), ref_rceil(a, FMTS[k]));
            }
        }
    }
    g_cases += n; if (bad) { g_fail++; fprintf(stderr, "FAIL mx rule sweep: %ld mismatches\n", bad); }
    /* hand values (e4m3fn, emax 8): amax 1 -> 2^0: FLOOR 0-8 -> 119; RCEIL d=1/448 in
     * (2^-9, 2^-8] -> 119. amax 500: FLOOR 8-8 -> 127; RCEIL d=1.116 -> 2^1 -> 128.
     * amax 240: FLOOR 7-8 -> 126; RCEIL d=0.536 -> 2^0 -> 127. amax 0: FLOOR -127 clamps
     * -> 0; RCEIL d=0 -> 0. amax 1.875*2^-119: FLOOR -119-8 -> clamp -> 0; RCEIL d is the
     * subnormal 0x00449249 (> 2^-127) -> 1. */
    CHECK(qgmm_mx_scale_floor(1.0f, 4) == 119 && qgmm_mx_scale_rceil(1.0f, 4) == 119, "mx amax 1");
    CHECK(qgmm_mx_scale_floor(500.0f, 4) == 127 && qgmm_mx_scale_rceil(500.0f, 4) == 128, "mx amax 500");
    CHECK(qgmm_mx_scale_floor(240.0f, 4) == 126 && qgmm_mx_scale_rceil(240.0f, 4) == 127, "mx amax 240");
    CHECK(qgmm_mx_scale_floor(0.0f, 4) == 0 && qgmm_mx_scale_rceil(0.0f, 4) == 0, "mx amax 0");
    CHECK(qgmm_mx_scale_floor(0x1.ep-119f, 4) == 0 && qgmm_mx_scale_rceil(0x1.ep-119f, 4) == 1,
          "mx subnormal-d amax");
    CHECK(qgmm_mx_scale_floor(INFINITY, 4) == 255 && qgmm_mx_scale_rceil(INFINITY, 4) == 255, "mx inf");
    CHECK(qgmm_mx_scale_floor(NAN, 4) == 255 && qgmm_mx_scale_rceil(NAN, 4) == 255, "mx NaN");
    CHECK(qgmm_mx_scale_floor(1.0f, 6) == 112 && qgmm_mx_scale_floor(1.0f, 5) == 120, "mx emax e5m2/fnuz");
    section_done("scale rules: MX FLOOR/RCEIL sweep + hand", c0, f0);
}

/* ================================================================ part 2: ops */

static qgmm_context *g_ctx;

static qgmm_buffer *mkbuf(const void *src, size_t n, uint8_t poison)
{
    qgmm_buffer *b = NULL;
    if (qgmm_buffer_alloc(g_ctx, n ? n : 1, &b) != QGMM_OK) {
        fprintf(stderr, "buffer_alloc(%zu) failed: %s\n", n, qgmm_last_error(g_ctx));
        exit(1);
    }
    uint8_t *tmp = malloc(n ? n : 1);
    if (src) memcpy(tmp, src, n); else memset(tmp, poison, n);
    qgmm_buffer_upload(b, 0, tmp, n);
    free(tmp);
    return b;
}

static qgmm_tensor tv(qgmm_buffer *b, qgmm_dtype dt, int rank, int64_t d0, int64_t d1, int64_t d2,
                      const int64_t *strides)
{
    const int64_t shape[3] = {d0, d1, d2};
    qgmm_tensor t = qgmm_tensor_make(b, 0, dt, rank, shape);
    if (strides) for (int i = 0; i < rank; ++i) t.strides[i] = strides[i];
    return t;
}

#define ANYNAN 0x100 /* in a uint16_t expected-byte list: "a NaN code of the format" */

static int is_nan_code(int fmt, uint8_t b)
{
    if (fmt == QGMM_FMT_E4M3FNUZ) return b == 0x80;
    if (fmt == QGMM_FMT_E5M2) return (b & 0x7F) > 0x7C;
    return (b & 0x7F) == 0x7F;
}

static void expect_q(const char *what, qgmm_buffer *b, size_t n, const uint16_t *want, int fmt)
{
    uint8_t *got = malloc(n);
    qgmm_buffer_download(b, 0, got, n);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; ++i)
        if (want[i] == ANYNAN ? !is_nan_code(fmt, got[i]) : got[i] != want[i]) bad = i;
    CHECK(bad == n, "%s: byte %zu is 0x%02X, want 0x%02X", what, bad, bad < n ? got[bad] : 0,
          bad < n ? want[bad] : 0);
    free(got);
}

#define ANYNAN32 0x7FFFFFFFu /* in an expected-bits list: "any f32 NaN" */
static void expect_f32(const char *what, qgmm_buffer *b, size_t n, const uint32_t *want)
{
    uint32_t *got = malloc(n * 4);
    qgmm_buffer_download(b, 0, got, n * 4);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; ++i)
        if (want[i] == ANYNAN32 ? !isnan(bitsf(got[i])) : got[i] != want[i]) bad = i;
    CHECK(bad == n, "%s: element %zu is 0x%08X, want 0x%08X", what, bad, bad < n ? got[bad] : 0,
          bad < n ? want[bad] : 0);
    free(got);
}

static void expect_status(const char *what, qgmm_status s, qgmm_status want)
{
    CHECK(s == want, "%s: status %s (%s), want %s", what, qgmm_status_string(s), qgmm_last_error(g_ctx),
          qgmm_status_string(want));
}

/* f32(448/1e-12): the scale of an all-zero slice (amax clamps to 1e-12), and its
 * reciprocal; f32(240/1e-12), f32(57344/1e-12). */
#define S0 0x57CBBA10u
#define S0_RECIP 0x2720D7C5u
#define S0_FNUZ 0x575A475Bu
#define S0_E5M2 0x5B4BBA10u
/* f32 bits of the scales used below and of their f32 reciprocals */
#define F_1 0x3F800000u
#define F_56 0x42600000u
#define F_64 0x42800000u
#define F_112 0x42E00000u
#define F_224 0x43600000u
#define F_448 0x43E00000u
#define F_896 0x44600000u
#define R_1 0x3F800000u
#define R_56 0x3C924925u   /* f32(1/56) */
#define R_112 0x3C124925u  /* f32(1/112) */
#define R_448 0x3B124925u  /* f32(1/448) */

static qgmm_status rowwise(int rd, int pow2, qgmm_scale_kind kind, const qgmm_tensor *x,
                           const qgmm_tensor *offs, const qgmm_tensor *q, const qgmm_tensor *s)
{
    const qgmm_fp8_rowwise_params p = {rd, pow2, kind};
    const qgmm_status st = qgmm_quantize_fp8_rowwise(g_ctx, &p, x, offs, q, s);
    if (st != QGMM_OK) return st;
    return qgmm_synchronize(g_ctx);
}

/* (2,4): row0 [1,-2,4,0.5] amax 4 -> scale 448/4 = 112 -> q = 112 (1.75*2^6: 0x6E),
 * -224 (1.75*2^7: 0xF6), 448 (0x7E), 56 (1.75*2^5: 0x66). row1 [0,-0,0,0]: amax 0
 * clamps to 1e-12 -> S0; q 0, -0 (0x80), 0, 0. */
static const float X_BASIC[8] = {1, -2, 4, 0.5f, 0, -0.0f, 0, 0};

static void test_rowwise_basic(void)
{
    const long c0 = g_cases, f0 = g_fail;
    qgmm_buffer *bx = mkbuf(X_BASIC, sizeof X_BASIC, 0), *bq = mkbuf(NULL, 8, 0xAA),
                *bs = mkbuf(NULL, 8, 0xAA);
    qgmm_tensor x = tv(bx, QGMM_F32, 2, 2, 4, 0, NULL), s = tv(bs, QGMM_F32, 1, 2, 0, 0, NULL);
    qgmm_tensor q = tv(bq, QGMM_F8E4M3FN, 2, 2, 4, 0, NULL);

    expect_status("rowwise basic", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &x, NULL, &q, &s), QGMM_OK);
    static const uint16_t q_e4[8] = {0x6E, 0xF6, 0x7E, 0x66, 0x00, 0x80, 0x00, 0x00};
    expect_q("rowwise e4m3fn q", bq, 8, q_e4, 4);
    expect_f32("rowwise multiplier scales", bs, 2, (const uint32_t[]){F_112, S0});

    expect_status("rowwise recip", rowwise(1, 0, QGMM_SCALE_RECIPROCAL, &x, NULL, &q, &s), QGMM_OK);
    expect_q("rowwise recip q (unchanged)", bq, 8, q_e4, 4);
    expect_f32("rowwise reciprocal scales", bs, 2, (const uint32_t[]){R_112, S0_RECIP});

    /* power of 2: 112 -> 64 (mantissa cleared), S0 = 0x57CBBA10 -> 0x57800000; q = 64
     * (2^6: 0x68), -128 (2^7: 0xF0), 256 (2^8: 0x78), 32 (2^5: 0x60). */
    expect_status("rowwise pow2", rowwise(1, 1, QGMM_SCALE_MULTIPLIER, &x, NULL, &q, &s), QGMM_OK);
    expect_q("rowwise pow2 q", bq, 8, (const uint16_t[]){0x68, 0xF0, 0x78, 0x60, 0, 0x80, 0, 0}, 4);
    expect_f32("rowwise pow2 scales", bs, 2, (const uint32_t[]){F_64, 0x57800000u});
    expect_status("rowwise pow2 recip", rowwise(1, 1, QGMM_SCALE_RECIPROCAL, &x, NULL, &q, &s), QGMM_OK);
    expect_f32("rowwise pow2 recip scales", bs, 2, (const uint32_t[]){0x3C800000u, 0x27800000u});

    /* e4m3fnuz: 240/4 = 60: q = 60 (1.875*2^5, e=5+8: 0x6F), -120 (0xF7), 240 (0x7F),
     * 30 (0x67); -0 -> 0x00 (no -0). */
    qgmm_tensor qn = tv(bq, QGMM_F8E4M3FNUZ, 2, 2, 4, 0, NULL);
    expect_status("rowwise fnuz", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &x, NULL, &qn, &s), QGMM_OK);
    expect_q("rowwise e4m3fnuz q", bq, 8, (const uint16_t[]){0x6F, 0xF7, 0x7F, 0x67, 0, 0, 0, 0}, 5);
    expect_f32("rowwise fnuz scales", bs, 2, (const uint32_t[]){0x42700000u, S0_FNUZ});

    /* e5m2: 57344/4 = 14336: q = 14336 (1.75*2^13, e=28: 0x73), -28672 (0xF7), 57344
     * (0x7B), 7168 (0x6F). */
    qgmm_tensor q5 = tv(bq, QGMM_F8E5M2, 2, 2, 4, 0, NULL);
    expect_status("rowwise e5m2", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &x, NULL, &q5, &s), QGMM_OK);
    expect_q("rowwise e5m2 q", bq, 8, (const uint16_t[]){0x73, 0xF7, 0x7B, 0x6F, 0, 0x80, 0, 0}, 6);
    expect_f32("rowwise e5m2 scales", bs, 2, (const uint32_t[]){0x46600000u, S0_E5M2});

    /* bf16 input holding the same (exact) values gives the same bytes */
    uint16_t xb[8];
    for (int i = 0; i < 8; ++i) xb[i] = qgmm_f32_to_bf16(X_BASIC[i]);
    qgmm_buffer *bxb = mkbuf(xb, sizeof xb, 0);
    qgmm_tensor xbt = tv(bxb, QGMM_BF16, 2, 2, 4, 0, NULL);
    expect_status("rowwise bf16", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &xbt, NULL, &q, &s), QGMM_OK);
    expect_q("rowwise bf16 q", bq, 8, q_e4, 4);
    expect_f32("rowwise bf16 scales", bs, 2, (const uint32_t[]){F_112, S0});

    qgmm_buffer_free(bx); qgmm_buffer_free(bxb); qgmm_buffer_free(bq); qgmm_buffer_free(bs);
    section_done("op: rowwise basic (kinds, pow2, 3 fp8, bf16)", c0, f0);
}

static void test_rowwise_special(void)
{
    const long c0 = g_cases, f0 = g_fail;
    const float X[7 * 4] = {
        448, 0x1p-7f, 0x1p-10f, 0x1.8p-9f,  /* scale 1: 0x7E, sub m=4 0x04, tie->0 0x00, tie->0x02 */
        448, 1.0625f, 1.1875f, -1.0625f,     /* scale 1: 0x7E, ties to even 0x38 0x3A 0xB8 */
        3, 3, 3, 3,                          /* all equal: scale f32(448/3) = 0x43155555; 3*s
                                                rounds to exactly 448 -> 0x7E x4 */
        NAN, 1, 2, 3,                        /* amax NaN -> scale NaN -> every q NaN */
        INFINITY, -1, 0.5f, 0,               /* amax inf -> scale 448/inf = 0: inf*0 NaN,
                                                -1*0 = -0 (0x80), 0, 0 */
        1e-40f, 0, 0, 0,                     /* subnormal amax clamps to 1e-12 -> S0; 1e-40*S0
                                                = 4.5e-26 -> 0x00 */
        -INFINITY, 1, 0, 0,                  /* same as the inf row: NaN, 0, 0, 0 */
    };
    qgmm_buffer *bx = mkbuf(X, sizeof X, 0), *bq = mkbuf(NULL, 28, 0xAA), *bs = mkbuf(NULL, 28, 0xAA);
    qgmm_tensor x = tv(bx, QGMM_F32, 2, 7, 4, 0, NULL), q = tv(bq, QGMM_F8E4M3FN, 2, 7, 4, 0, NULL),
                s = tv(bs, QGMM_F32, 1, 7, 0, 0, NULL);
    expect_status("rowwise special", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &x, NULL, &q, &s), QGMM_OK);
    const uint16_t wq[28] = {0x7E, 0x04, 0x00, 0x02, 0x7E, 0x38, 0x3A, 0xB8, 0x7E, 0x7E, 0x7E, 0x7E,
                             ANYNAN, ANYNAN, ANYNAN, ANYNAN, ANYNAN, 0x80, 0x00, 0x00,
                             0x00, 0x00, 0x00, 0x00, ANYNAN, 0x00, 0x00, 0x00};
    expect_q("rowwise special q", bq, 28, wq, 4);
    expect_f32("rowwise special scales", bs, 7,
               (const uint32_t[]){F_1, F_1, 0x43155555u, ANYNAN32, 0x00000000u, S0, 0x00000000u});
    /* reciprocal of 0 is +inf; of NaN, NaN */
    expect_status("rowwise special r", rowwise(1, 0, QGMM_SCALE_RECIPROCAL, &x, NULL, &q, &s), QGMM_OK);
    expect_f32("rowwise special recip scales", bs, 7,
               (const uint32_t[]){R_1, R_1, fbits(1.0f / bitsf(0x43155555u)), ANYNAN32, 0x7F800000u,
                                  S0_RECIP, 0x7F800000u});
    qgmm_buffer_free(bx); qgmm_buffer_free(bq); qgmm_buffer_free(bs);
    section_done("op: rowwise edge values", c0, f0);
}

static void test_rowwise_layouts(void)
{
    const long c0 = g_cases, f0 = g_fail;
    /* colwise: x (3,2) = [[1,-8],[2,0.5],[4,0]]; col0 amax 4 -> 112: 112 0x6E, 224 0x76,
     * 448 0x7E; col1 amax 8 -> 56: -448 0xFE, 28 (1.75*2^4: 0x5E), 0. */
    const float XC[6] = {1, -8, 2, 0.5f, 4, 0};
    qgmm_buffer *bx = mkbuf(XC, sizeof XC, 0), *bq = mkbuf(NULL, 6, 0xAA), *bs = mkbuf(NULL, 8, 0xAA);
    qgmm_tensor x = tv(bx, QGMM_F32, 2, 3, 2, 0, NULL), s = tv(bs, QGMM_F32, 1, 2, 0, 0, NULL);
    qgmm_tensor qcm = qgmm_tensor_make_colmajor(bq, 0, QGMM_F8E4M3FN, 3, 2);
    expect_status("colwise cm", rowwise(0, 0, QGMM_SCALE_MULTIPLIER, &x, NULL, &qcm, &s), QGMM_OK);
    expect_q("colwise column-major q", bq, 6, (const uint16_t[]){0x6E, 0x76, 0x7E, 0xFE, 0x5E, 0x00}, 4);
    expect_f32("colwise scales", bs, 2, (const uint32_t[]){F_112, F_56});
    qgmm_tensor qrm = tv(bq, QGMM_F8E4M3FN, 2, 3, 2, 0, NULL);
    expect_status("colwise rm", rowwise(0, 0, QGMM_SCALE_MULTIPLIER, &x, NULL, &qrm, &s), QGMM_OK);
    expect_q("colwise row-major q", bq, 6, (const uint16_t[]){0x6E, 0xFE, 0x76, 0x5E, 0x7E, 0x00}, 4);
    /* x read column-major too: the same logical x stored transposed gives the same bytes */
    const float XCT[6] = {1, 2, 4, -8, 0.5f, 0};
    qgmm_buffer *bxt = mkbuf(XCT, sizeof XCT, 0);
    qgmm_tensor xt = qgmm_tensor_make_colmajor(bxt, 0, QGMM_F32, 3, 2);
    expect_status("colwise cm in", rowwise(0, 0, QGMM_SCALE_MULTIPLIER, &xt, NULL, &qcm, &s), QGMM_OK);
    expect_q("colwise cm in, cm out", bq, 6, (const uint16_t[]){0x6E, 0x76, 0x7E, 0xFE, 0x5E, 0x00}, 4);
    qgmm_buffer_free(bx); qgmm_buffer_free(bxt); qgmm_buffer_free(bq); qgmm_buffer_free(bs);

    /* 3D: W (E=2, N=2, K=3) row-major: e0 = [[1,2,-4],[2,1,8]], e1 = [[0.5,0,0],[0,0,0]].
     * reduce_dim 1 (over N, per (e,k): torchao's 3D transpose rhs), q strides (6,1,2),
     * i.e. each expert's (K,N) row-major:
     *   e0 k0 [1,2] amax 2 -> 224: 224 0x76, 448 0x7E; k1 [2,1] -> 224: 0x7E, 0x76;
     *      k2 [-4,8] amax 8 -> 56: -224 0xF6, 448 0x7E
     *   e1 k0 [0.5,0] amax 0.5 -> 896: 448 0x7E, 0; k1, k2 all zero -> S0, zeros. */
    const float W[12] = {1, 2, -4, 2, 1, 8, 0.5f, 0, 0, 0, 0, 0};
    qgmm_buffer *bw = mkbuf(W, sizeof W, 0), *bq3 = mkbuf(NULL, 12, 0xAA), *bs3 = mkbuf(NULL, 24, 0xAA);
    qgmm_tensor w = tv(bw, QGMM_F32, 3, 2, 2, 3, NULL);
    qgmm_tensor qt = tv(bq3, QGMM_F8E4M3FN, 3, 2, 2, 3, (const int64_t[]){6, 1, 2});
    qgmm_tensor s3 = tv(bs3, QGMM_F32, 2, 2, 3, 0, NULL);
    expect_status("3d transpose", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &w, NULL, &qt, &s3), QGMM_OK);
    expect_q("3d transpose rhs q", bq3, 12,
             (const uint16_t[]){0x76, 0x7E, 0x7E, 0x76, 0xF6, 0x7E, 0x7E, 0, 0, 0, 0, 0}, 4);
    expect_f32("3d transpose scales (E,K)", bs3, 6, (const uint32_t[]){F_224, F_224, F_56, F_896, S0, S0});
    /* reduce_dim 2 (per (e,n)), q row-major: e0 n0 [1,2,-4] -> 112: 0x6E 0x76 0xFE;
     * n1 [2,1,8] -> 56: 112 0x6E, 56 0x66, 448 0x7E; e1 n0 -> 896: 0x7E 0 0; n1 zeros. */
    const uint16_t w_rd2[12] = {0x6E, 0x76, 0xFE, 0x6E, 0x66, 0x7E, 0x7E, 0, 0, 0, 0, 0};
    qgmm_tensor q3 = tv(bq3, QGMM_F8E4M3FN, 3, 2, 2, 3, NULL);
    qgmm_tensor s3n = tv(bs3, QGMM_F32, 2, 2, 2, 0, NULL);
    expect_status("3d per (e,n)", rowwise(2, 0, QGMM_SCALE_MULTIPLIER, &w, NULL, &q3, &s3n), QGMM_OK);
    expect_q("3d per (e,n) q", bq3, 12, w_rd2, 4);
    expect_f32("3d per (e,n) scales", bs3, 4, (const uint32_t[]){F_112, F_56, F_896, S0});
    /* torchao triton_fp8_colwise_3d_scale_and_cast: B_t = W^T per expert, (E,K,N) with
     * strides (6,1,3), amax over K (reduce_dim 1), output B_t-shaped column-major
     * (strides (6,1,3)): physically the same bytes as the per-(e,n) case. */
    qgmm_tensor bt = tv(bw, QGMM_F32, 3, 2, 3, 2, (const int64_t[]){6, 1, 3});
    qgmm_tensor qbt = tv(bq3, QGMM_F8E4M3FN, 3, 2, 3, 2, (const int64_t[]){6, 1, 3});
    expect_status("colwise 3d", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &bt, NULL, &qbt, &s3n), QGMM_OK);
    expect_q("colwise_3d_scale_and_cast q", bq3, 12, w_rd2, 4);
    expect_f32("colwise_3d scales (E,N)", bs3, 4, (const uint32_t[]){F_112, F_56, F_896, S0});
    qgmm_buffer_free(bw); qgmm_buffer_free(bq3); qgmm_buffer_free(bs3);
    section_done("op: rowwise layouts (colwise, 3D, strides)", c0, f0);
}

static void test_rowwise_jagged(void)
{
    const long c0 = g_cases, f0 = g_fail;
    /* per-group rowwise: x (2,5), offs over columns [2,2,4] (group 1 empty, column 4
     * past the last group: never written).
     *   g0 row0 [1,2] -> 224: 0x76 0x7E; row1 [-1,0.25] -> 448: 0xFE, 112 0x6E
     *   g1 empty -> S0 for both rows
     *   g2 row0 [4,8] -> 56: 224 0x76, 448 0x7E; row1 [7,0] -> 64: 448 0x7E, 0
     * scales (G, M) group-major. */
    const float X[10] = {1, 2, 4, 8, 99, -1, 0.25f, 7, 0, -99};
    const int32_t offs[3] = {2, 2, 4};
    qgmm_buffer *bx = mkbuf(X, sizeof X, 0), *bo = mkbuf(offs, sizeof offs, 0),
                *bq = mkbuf(NULL, 10, 0xAA), *bs = mkbuf(NULL, 24, 0xAA);
    qgmm_tensor x = tv(bx, QGMM_F32, 2, 2, 5, 0, NULL), o = tv(bo, QGMM_I32, 1, 3, 0, 0, NULL);
    qgmm_tensor q = tv(bq, QGMM_F8E4M3FN, 2, 2, 5, 0, NULL), s = tv(bs, QGMM_F32, 2, 3, 2, 0, NULL);
    expect_status("jagged rowwise", rowwise(1, 0, QGMM_SCALE_MULTIPLIER, &x, &o, &q, &s), QGMM_OK);
    expect_q("jagged rowwise q", bq, 10,
             (const uint16_t[]){0x76, 0x7E, 0x76, 0x7E, 0xAA, 0xFE, 0x6E, 0x7E, 0x00, 0xAA}, 4);
    expect_f32("jagged rowwise scales", bs, 6, (const uint32_t[]){F_224, F_448, S0, S0, F_56, F_64});

    /* dequantize it back (multiplier: q / s): exact here; column 4 untouched */
    qgmm_buffer *bd = mkbuf(NULL, 40, 0xAA);
    qgmm_tensor d = tv(bd, QGMM_F32, 2, 2, 5, 0, NULL);
    qgmm_quant_format fm = {0};
    fm.kind = QGMM_QUANT_FP8_ROWWISE; fm.rowwise = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_MULTIPLIER};
    expect_status("jagged dequant", qgmm_dequantize(g_ctx, &fm, &q, &s, &o, &d), QGMM_OK);
    expect_status("jagged dequant sync", qgmm_synchronize(g_ctx), QGMM_OK);
    expect_f32("jagged dequant out", bd, 10,
               (const uint32_t[]){fbits(1), fbits(2), fbits(4), fbits(8), 0xAAAAAAAAu, fbits(-1),
                                  fbits(0.25f), fbits(7), 0, 0xAAAAAAAAu});

    /* per-group colwise: x (5,2), offs over rows [0,3,5] (group 0 empty), output
     * column-major.  g1 col0 [1,2,4] -> 112: 0x6E 0x76 0x7E; col1 [0.5,0.25,-1] -> 448:
     * 224 0x76, 112 0x6E, -448 0xFE.  g2 col0 [16,0] -> 28: 448 0x7E, 0; col1 [0,-0] ->
     * S0: 0x00, 0x80. */
    const float XC[10] = {1, 0.5f, 2, 0.25f, 4, -1, 16, 0, 0, -0.0f};
    const int32_t offc[3] = {0, 3, 5};
    qgmm_buffer *bxc = mkbuf(XC, sizeof XC, 0), *boc = mkbuf(offc, sizeof offc, 0),
                *bqc = mkbuf(NULL, 10, 0xAA), *bsc = mkbuf(NULL, 24, 0xAA);
    qgmm_tensor xc = tv(bxc, QGMM_F32, 2, 5, 2, 0, NULL), oc = tv(boc, QGMM_I32, 1, 3, 0, 0, NULL);
    qgmm_tensor qc = qgmm_tensor_make_colmajor(bqc, 0, QGMM_F8E4M3FN, 5, 2);
    qgmm_tensor sc = tv(bsc, QGMM_F32, 2, 3, 2, 0, NULL);
    expect_status("jagged colwise", rowwise(0, 0, QGMM_SCALE_MULTIPLIER, &xc, &oc, &qc, &sc), QGMM_OK);
    const uint16_t wqc[10] = {0x6E, 0x76, 0x7E, 0x7E, 0x00, 0x76, 0x6E, 0xFE, 0x00, 0x80};
    expect_q("jagged colwise q", bqc, 10, wqc, 4);
    expect_f32("jagged colwise scales", bsc, 6, (const uint32_t[]){S0, S0, F_112, F_448, 0x41E00000u, S0});

    /* bad offsets: decreasing, or past the extent -> nothing written, BAD_OFFSETS at
     * synchronize, and the status is cleared afterwards */
    const int32_t bad1[3] = {3, 2, 5}, bad2[3] = {1, 2, 6};
    qgmm_buffer *bq2 = mkbuf(NULL, 10, 0x5C), *bs2 = mkbuf(NULL, 24, 0x5C);
    qgmm_tensor q2 = qgmm_tensor_make_colmajor(bq2, 0, QGMM_F8E4M3FN, 5, 2);
    qgmm_tensor s2 = tv(bs2, QGMM_F32, 2, 3, 2, 0, NULL);
    const int32_t *bads[2] = {bad1, bad2};
    for (int k = 0; k < 2; ++k) {
        qgmm_buffer_upload(boc, 0, bads[k], sizeof bad1);
        expect_status("bad offs", rowwise(0, 0, QGMM_SCALE_MULTIPLIER, &xc, &oc, &q2, &s2),
                      QGMM_ERR_BAD_OFFSETS);
        uint8_t got[24];
        int untouched = 1;
        qgmm_buffer_download(bq2, 0, got, 10);
        for (int i = 0; i < 10; ++i) untouched &= got[i] == 0x5C;
        qgmm_buffer_download(bs2, 0, got, 24);
        for (int i = 0; i < 24; ++i) untouched &= got[i] == 0x5C;
        CHECK(untouched, "bad offsets case %d wrote output", k);
        qgmm_fp8_rowwise_params pr = {0, 0, QGMM_SCALE_MULTIPLIER};
        qgmm_quant_format fr = {0};
        fr.kind = QGMM_QUANT_FP8_ROWWISE; fr.rowwise = pr;
        qgmm_buffer *bd2 = mkbuf(NULL, 40, 0x5C);
        qgmm_tensor d2 = tv(bd2, QGMM_F32, 2, 5, 2, 0, NULL);
        qgmm_dequantize(g_ctx, &fr, &qc, &sc, &oc, &d2);
        expect_status("bad offs dequant", qgmm_synchronize(g_ctx), QGMM_ERR_BAD_OFFSETS);
        uint8_t gd[40];
        qgmm_buffer_download(bd2, 0, gd, 40);
        untouched = 1;
        for (int i = 0; i < 40; ++i) untouched &= gd[i] == 0x5C;
        CHECK(untouched, "bad offsets dequantize case %d wrote output", k);
        qgmm_buffer_free(bd2);
    }
    expect_status("status cleared", qgmm_synchronize(g_ctx), QGMM_OK);
    qgmm_buffer_upload(boc, 0, offc, sizeof offc);
    expect_status("after bad", rowwise(0, 0, QGMM_SCALE_MULTIPLIER, &xc, &oc, &qc, &sc), QGMM_OK);
    expect_q("jagged colwise again", bqc, 10, wqc, 4);

    qgmm_buffer_free(bx); qgmm_buffer_free(bo); qgmm_buffer_free(bq); qgmm_buffer_free(bs);
    qgmm_buffer_free(bd); qgmm_buffer_free(bxc); qgmm_buffer_free(boc); qgmm_buffer_free(bqc);
    qgmm_buffer_free(bsc); qgmm_buffer_free(bq2); qgmm_buffer_free(bs2);
    section_done("op: jagged rowwise/colwise, empty group, bad offs", c0, f0);
}

/* ---------------------------------------------------------------- MXFP8 */
/* A (2,128) = 4 blocks per row. e4m3fn (emax 8); FLOOR / RCEIL scale bytes:
 *  r0 b0 [1, .5, -.25, 2^-12, 3*2^-17, 2^-18, 3*2^-18, 0..]: amax 1 -> 119 / 119;
 *        x*2^8: 256 0x78, 128 0x70, -64 0xE8, 2^-4 0x18, 3*2^-9 (sub m=3) 0x03,
 *        2^-10 (tie) 0x00, 3*2^-10 (tie) 0x02
 *  r0 b1 [500,-500,448,1,240,0..]: FLOOR 127 (x*1): 0x7E (500 saturates), 0xFE, 0x7E,
 *        0x38, 240 = 1.875*2^7 0x77;  RCEIL 128 (x/2): 250 -> 256 0x78, 0xF8, 224 0x76,
 *        0.5 0x30, 120 0x6F
 *  r0 b2 [-0, 0..]: amax 0 -> 0 / 0; q 0x80, 0..
 *  r0 b3 [inf, 1, 0..]: 255 / 255; q NaN x32
 *  r1 b0 [3 x32] (all equal): amax 3 -> 2^1: FLOOR 120, RCEIL d=3/448 -> 120; 3*2^7 =
 *        384 = 1.5*2^8 -> 0x7C x32
 *  r1 b1 [NaN, 1, 0..]: 255 / 255, NaN x32
 *  r1 b2 [a=1.875*2^-119, -a/2, 0..]: FLOOR 0 (x*2^127): 480 -> 0x7E, -240 0xF7;
 *        RCEIL 1 (x*2^126): 240 0x77, -120 0xEF
 *  r1 b3 [2^-127, 0..] (f32 subnormal): 0 / 0; x*2^127 = 1 -> 0x38 */
static float MXA[256];
static uint16_t MXQ_FLOOR[256], MXQ_RCEIL[256];
static const uint8_t MXS_FLOOR[8] = {119, 127, 0, 255, 120, 255, 0, 0};
static const uint8_t MXS_RCEIL[8] = {119, 128, 0, 255, 120, 255, 1, 0};

static void mx_build(void)
{
    memset(MXA, 0, sizeof MXA);
    memset(MXQ_FLOOR, 0, sizeof MXQ_FLOOR);
    const float b0[7] = {1, 0.5f, -0.25f, 0x1p-12f, 0x1.8p-16f, 0x1p-18f, 0x1.8p-17f};
    const uint8_t q0[7] = {0x78, 0x70, 0xE8, 0x18, 0x03, 0x00, 0x02};
    for (int i = 0; i < 7; ++i) { MXA[i] = b0[i]; MXQ_FLOOR[i] = q0[i]; }
    const float b1[5] = {500, -500, 448, 1, 240};
    const uint8_t q1f[5] = {0x7E, 0xFE, 0x7E, 0x38, 0x77}, q1r[5] = {0x78, 0xF8, 0x76, 0x30, 0x6F};
    for (int i = 0; i < 5; ++i) { MXA[32 + i] = b1[i]; MXQ_FLOOR[32 + i] = q1f[i]; }
    MXA[64] = -0.0f; MXQ_FLOOR[64] = 0x80;
    MXA[96] = INFINITY; MXA[97] = 1;
    for (int i = 96; i < 128; ++i) MXQ_FLOOR[i] = ANYNAN;
    for (int i = 128; i < 160; ++i) { MXA[i] = 3; MXQ_FLOOR[i] = 0x7C; }
    MXA[160] = NAN; MXA[161] = 1;
    for (int i = 160; i < 192; ++i) MXQ_FLOOR[i] = ANYNAN;
    MXA[192] = 0x1.ep-119f; MXA[193] = -0x1.ep-120f; MXQ_FLOOR[192] = 0x7E; MXQ_FLOOR[193] = 0xF7;
    MXA[224] = 0x1p-127f; MXQ_FLOOR[224] = 0x38;
    memcpy(MXQ_RCEIL, MXQ_FLOOR, sizeof MXQ_FLOOR);
    for (int i = 0; i < 5; ++i) MXQ_RCEIL[32 + i] = q1r[i];
    MXQ_RCEIL[192] = 0x77; MXQ_RCEIL[193] = 0xEF;
}

static qgmm_status mx(int bd, qgmm_mx_mode mode, qgmm_scale_layout lay, const qgmm_tensor *x,
                      const qgmm_tensor *q, const qgmm_tensor *s)
{
    const qgmm_mxfp8_params p = {bd, mode, lay};
    const qgmm_status st = qgmm_quantize_mxfp8(g_ctx, &p, x, q, s);
    return st != QGMM_OK ? st : qgmm_synchronize(g_ctx);
}

static void expect_u8(const char *what, qgmm_buffer *b, size_t n, const uint8_t *want)
{
    uint16_t w[1024];
    for (size_t i = 0; i < n; ++i) w[i] = want[i];
    expect_q(what, b, n, w, 4);
}

static void test_mx(void)
{
    const long c0 = g_cases, f0 = g_fail;
    mx_build();
    /* the transpose, for the dim1 (32x1) variants: AT (128,2), AT[r][c] = A[c][r] */
    float AT[256];
    for (int r = 0; r < 128; ++r) for (int c = 0; c < 2; ++c) AT[r * 2 + c] = MXA[c * 128 + r];
    qgmm_buffer *ba = mkbuf(MXA, sizeof MXA, 0), *bat = mkbuf(AT, sizeof AT, 0);
    qgmm_buffer *bq = mkbuf(NULL, 256, 0xAA), *bs = mkbuf(NULL, 1024, 0xAA);
    const qgmm_mx_mode modes[2] = {QGMM_MX_FLOOR, QGMM_MX_RCEIL};
    for (int mi = 0; mi < 2; ++mi) {
        const uint16_t *wq = mi ? MXQ_RCEIL : MXQ_FLOOR;
        const uint8_t *ws = mi ? MXS_RCEIL : MXS_FLOOR;
        char what[96];
        const char *mn = mi ? "RCEIL" : "FLOOR";
        /* dim0 (1x32), rank 2, plain scales (2,4) */
        qgmm_tensor x = tv(ba, QGMM_F32, 2, 2, 128, 0, NULL), q = tv(bq, QGMM_F8E4M3FN, 2, 2, 128, 0, NULL);
        qgmm_tensor s = tv(bs, QGMM_E8M0, 2, 2, 4, 0, NULL);
        snprintf(what, sizeof what, "mx dim0 %s", mn);
        expect_status(what, mx(1, modes[mi], QGMM_SCALES_PLAIN, &x, &q, &s), QGMM_OK);
        expect_q(what, bq, 256, wq, 4);
        expect_u8(what, bs, 8, ws);
        /* dim1 (32x1): x = AT (128,2), blocks along rows; q strides (1,128) gives
         * torchao's (2,128) row-major transpose = the same bytes; scales (C=2, 4) */
        qgmm_tensor xt = tv(bat, QGMM_F32, 2, 128, 2, 0, NULL);
        qgmm_tensor qt = qgmm_tensor_make_colmajor(bq, 0, QGMM_F8E4M3FN, 128, 2);
        qgmm_buffer_fill(bq, 0, 256, 0xAA);
        snprintf(what, sizeof what, "mx dim1 %s", mn);
        expect_status(what, mx(0, modes[mi], QGMM_SCALES_PLAIN, &xt, &qt, &s), QGMM_OK);
        expect_q(what, bq, 256, wq, 4);
        expect_u8(what, bs, 8, ws);
        /* 3D, blocks along the last dim: x (2,1,128) = one row per expert; scales (2,1,4) */
        qgmm_tensor x3 = tv(ba, QGMM_F32, 3, 2, 1, 128, NULL), q3 = tv(bq, QGMM_F8E4M3FN, 3, 2, 1, 128, NULL);
        qgmm_tensor s3 = tv(bs, QGMM_E8M0, 3, 2, 1, 4, NULL);
        qgmm_buffer_fill(bq, 0, 256, 0xAA);
        snprintf(what, sizeof what, "mx 3d last %s", mn);
        expect_status(what, mx(2, modes[mi], QGMM_SCALES_PLAIN, &x3, &q3, &s3), QGMM_OK);
        expect_q(what, bq, 256, wq, 4);
        expect_u8(what, bs, 8, ws);
        /* 3D, blocks along dim 1: x (2,128,1); scales (E, C=1, R/32=4) */
        qgmm_tensor x31 = tv(ba, QGMM_F32, 3, 2, 128, 1, NULL), q31 = tv(bq, QGMM_F8E4M3FN, 3, 2, 128, 1, NULL);
        qgmm_buffer_fill(bq, 0, 256, 0xAA);
        snprintf(what, sizeof what, "mx 3d dim1 %s", mn);
        expect_status(what, mx(1, modes[mi], QGMM_SCALES_PLAIN, &x31, &q31, &s3), QGMM_OK);
        expect_q(what, bq, 256, wq, 4);
        expect_u8(what, bs, 8, ws);

        /* BLOCKED: one 128x4 tile (512 bytes); (r,c) -> r*16 + c for r < 32; every
         * other byte 0 (written, over the 0xAA poison) */
        uint8_t wb[1024];
        memset(wb, 0, sizeof wb);
        for (int c = 0; c < 4; ++c) { wb[c] = ws[c]; wb[16 + c] = ws[4 + c]; }
        qgmm_tensor sb = tv(bs, QGMM_E8M0, 1, 512, 0, 0, NULL);
        qgmm_buffer_fill(bs, 0, 1024, 0xAA);
        snprintf(what, sizeof what, "mx dim0 blocked %s", mn);
        expect_status(what, mx(1, modes[mi], QGMM_SCALES_BLOCKED, &x, &q, &sb), QGMM_OK);
        expect_u8(what, bs, 512, wb);
        qgmm_buffer_fill(bs, 0, 1024, 0xAA);
        snprintf(what, sizeof what, "mx dim1 blocked %s", mn);
        expect_status(what, mx(0, modes[mi], QGMM_SCALES_BLOCKED, &xt, &qt, &sb), QGMM_OK);
        expect_u8(what, bs, 512, wb);
        /* 3D blocked: two experts of (1,4) scales, 512 bytes each: e at e*512 + c */
        memset(wb, 0, sizeof wb);
        for (int c = 0; c < 4; ++c) { wb[c] = ws[c]; wb[512 + c] = ws[4 + c]; }
        qgmm_tensor sb3 = tv(bs, QGMM_E8M0, 1, 1024, 0, 0, NULL);
        qgmm_buffer_fill(bs, 0, 1024, 0xAA);
        snprintf(what, sizeof what, "mx 3d blocked %s", mn);
        expect_status(what, mx(2, modes[mi], QGMM_SCALES_BLOCKED, &x3, &q3, &sb3), QGMM_OK);
        expect_u8(what, bs, 1024, wb);

        /* dequantize (dim0 plain): out = f32(q) * 2^(b-127) */
        qgmm_buffer *bd = mkbuf(NULL, 1024, 0xAA);
        qgmm_tensor d = tv(bd, QGMM_F32, 2, 2, 128, 0, NULL);
        qgmm_tensor sp = tv(bs, QGMM_E8M0, 2, 2, 4, 0, NULL);
        expect_status("mx requant", mx(1, modes[mi], QGMM_SCALES_PLAIN, &x, &q, &sp), QGMM_OK);
        qgmm_quant_format f = {0};
        f.kind = QGMM_QUANT_MXFP8; f.mx = (qgmm_mxfp8_params){1, modes[mi], QGMM_SCALES_PLAIN};
        expect_status("mx dequant", qgmm_dequantize(g_ctx, &f, &q, &sp, NULL, &d), QGMM_OK);
        qgmm_synchronize(g_ctx);
        uint32_t wd[256];
        for (int i = 0; i < 256; ++i) wd[i] = 0;
        /* FLOOR: r0b0 scale 2^-8 restores the inputs exactly except the two ties:
         * 2^-18 -> 0, 3*2^-18 -> 0x02 (2^-8) * 2^-8 = 2^-16 */
        const float d0[7] = {1, 0.5f, -0.25f, 0x1p-12f, 0x1.8p-16f, 0, 0x1p-16f};
        for (int i = 0; i < 7; ++i) wd[i] = fbits(d0[i]);
        if (!mi) { /* b=127: 448, -448, 448, 1, 240 */
            const float d1[5] = {448, -448, 448, 1, 240};
            for (int i = 0; i < 5; ++i) wd[32 + i] = fbits(d1[i]);
            wd[192] = fbits(0x1.cp-119f);  /* 448 * 2^-127 */
            wd[193] = fbits(-0x1.ep-120f); /* -240 * 2^-127 */
        } else {   /* b=128: 256*2, -512, 448, 1, 240 */
            const float d1[5] = {512, -512, 448, 1, 240};
            for (int i = 0; i < 5; ++i) wd[32 + i] = fbits(d1[i]);
            wd[192] = fbits(0x1.ep-119f);  /* 240 * 2^-126 */
            wd[193] = fbits(-0x1.ep-120f); /* -120 * 2^-126 */
        }
        wd[64] = 0x80000000u;                          /* -0 * 2^-127 */
        for (int i = 96; i < 128; ++i) wd[i] = ANYNAN32; /* b = 255 */
        for (int i = 128; i < 160; ++i) wd[i] = fbits(3);
        for (int i = 160; i < 192; ++i) wd[i] = ANYNAN32;
        wd[224] = 0x00400000u;                         /* 1 * 2^-127, an f32 subnormal */
        snprintf(what, sizeof what, "mx dequant %s", mn);
        expect_f32(what, bd, 256, wd);
        qgmm_buffer_free(bd);
    }
    /* the other formats: [1, 0.5, 0..] (1,32). e5m2 emax 15: b = 0-15+127 = 112, x*2^15:
     * 32768 (e=30: 0x78), 16384 (0x74). fnuz emax 7: b = 120, x*2^7: 128 (e=15: 0x78),
     * 64 (0x70). */
    float small[32] = {1, 0.5f};
    qgmm_buffer *bsm = mkbuf(small, sizeof small, 0);
    qgmm_tensor xs = tv(bsm, QGMM_F32, 2, 1, 32, 0, NULL), ss = tv(bs, QGMM_U8, 2, 1, 1, 0, NULL);
    qgmm_tensor q5 = tv(bq, QGMM_F8E5M2, 2, 1, 32, 0, NULL), qn = tv(bq, QGMM_F8E4M3FNUZ, 2, 1, 32, 0, NULL);
    uint16_t w[32] = {0x78, 0x74};
    expect_status("mx e5m2", mx(1, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN, &xs, &q5, &ss), QGMM_OK);
    expect_q("mx e5m2 q", bq, 32, w, 6);
    expect_u8("mx e5m2 scale", bs, 1, (const uint8_t[]){112});
    w[1] = 0x70;
    expect_status("mx fnuz", mx(1, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN, &xs, &qn, &ss), QGMM_OK);
    expect_q("mx fnuz q", bq, 32, w, 5);
    expect_u8("mx fnuz scale", bs, 1, (const uint8_t[]){120});
    qgmm_buffer_free(ba); qgmm_buffer_free(bat); qgmm_buffer_free(bq); qgmm_buffer_free(bs);
    qgmm_buffer_free(bsm);
    section_done("op: mxfp8 dim0/dim1/3D plain+blocked, dequant", c0, f0);
}

/* ---------------------------------------------------------------- blockwise */
static qgmm_status bw(qgmm_block_shape blk, const qgmm_tensor *x, const qgmm_tensor *q,
                      const qgmm_tensor *s)
{
    const qgmm_fp8_blockwise_params p = {blk};
    const qgmm_status st = qgmm_quantize_fp8_blockwise(g_ctx, &p, x, q, s);
    return st != QGMM_OK ? st : qgmm_synchronize(g_ctx);
}

static void test_blockwise(void)
{
    const long c0 = g_cases, f0 = g_fail;
    /* 1x128 on x (2,256): r0 t0 [1,2,4,0..] -> 112: 0x6E 0x76 0x7E; r0 t1 zeros -> S0;
     * r1 t0 [448,-448,2^-7] -> 1: 0x7E 0xFE 0x04; r1 t1 [-8,1] -> 56: -448 0xFE, 56 0x66.
     * Stored: reciprocals 1/112, 1/S0, 1, 1/56. */
    static float X[512];
    memset(X, 0, sizeof X);
    X[0] = 1; X[1] = 2; X[2] = 4;
    X[256] = 448; X[257] = -448; X[258] = 0x1p-7f; X[384] = -8; X[385] = 1;
    static uint16_t WQ[512];
    memset(WQ, 0, sizeof WQ);
    WQ[0] = 0x6E; WQ[1] = 0x76; WQ[2] = 0x7E; WQ[256] = 0x7E; WQ[257] = 0xFE; WQ[258] = 0x04;
    WQ[384] = 0xFE; WQ[385] = 0x66;
    const uint32_t s00 = R_112, s01 = S0_RECIP, s10 = R_1, s11 = R_56;
    qgmm_buffer *bx = mkbuf(X, sizeof X, 0), *bq = mkbuf(NULL, 512, 0xAA), *bs = mkbuf(NULL, 64, 0xAA);
    qgmm_tensor x = tv(bx, QGMM_F32, 2, 2, 256, 0, NULL), q = tv(bq, QGMM_F8E4M3FN, 2, 2, 256, 0, NULL);
    struct { const char *name; qgmm_blockwise_layout lay; int64_t st[2]; uint32_t want[8]; int n; } L[3] = {
        {"row-major", QGMM_BLOCKWISE_ROW_MAJOR, {2, 1}, {s00, s01, s10, s11}, 4},
        {"torchao (col-major)", QGMM_BLOCKWISE_TORCHAO, {1, 2}, {s00, s10, s01, s11}, 4},
        /* DeepGEMM: MN-major, M padded to 4: (m,k) at m + 4k; padding untouched */
        {"deepgemm (M padded to 4)", QGMM_BLOCKWISE_DEEPGEMM, {1, 4},
         {s00, s10, 0xAAAAAAAAu, 0xAAAAAAAAu, s01, s11, 0xAAAAAAAAu, 0xAAAAAAAAu}, 8},
    };
    for (int k = 0; k < 3; ++k) {
        qgmm_buffer_fill(bs, 0, 64, 0xAA);
        qgmm_tensor s = tv(bs, QGMM_F32, 2, 2, 2, 0, L[k].st);
        /* the API's view builder must produce the same strides */
        qgmm_tensor v;
        size_t bytes = 0;
        const int64_t shape[2] = {2, 256};
        const qgmm_status vs = qgmm_blockwise_scales_view(QGMM_BLOCK_1X128, L[k].lay, 2, shape, bs, 0, &v, &bytes);
        CHECK(vs == QGMM_OK && v.strides[0] == L[k].st[0] && v.strides[1] == L[k].st[1] &&
                  v.shape[0] == 2 && v.shape[1] == 2,
              "blockwise_scales_view %s: status %d strides (%lld,%lld)", L[k].name, (int)vs,
              (long long)v.strides[0], (long long)v.strides[1]);
        char what[80];
        snprintf(what, sizeof what, "1x128 %s", L[k].name);
        expect_status(what, bw(QGMM_BLOCK_1X128, &x, &q, &s), QGMM_OK);
        expect_q(what, bq, 512, WQ, 4);
        expect_f32(what, bs, (size_t)L[k].n, L[k].want);
    }
    /* dequantize 1x128 (row-major scales): q * recip: 112*f32(1/112) = 1 exactly (and
     * the power-of-two multiples 224, 448 give 2, 4); 448*1 etc.; -448*f32(1/56) = -8,
     * 56*f32(1/56) = 1. bf16 out rounds the same values exactly. */
    {
        qgmm_tensor s = tv(bs, QGMM_F32, 2, 2, 2, 0, NULL);
        expect_status("1x128 rm", bw(QGMM_BLOCK_1X128, &x, &q, &s), QGMM_OK);
        qgmm_buffer *bd = mkbuf(NULL, 2048, 0xAA);
        qgmm_tensor d = tv(bd, QGMM_F32, 2, 2, 256, 0, NULL);
        qgmm_quant_format f = {0};
        f.kind = QGMM_QUANT_FP8_BLOCKWISE; f.blockwise.block = QGMM_BLOCK_1X128;
        expect_status("bw dequant", qgmm_dequantize(g_ctx, &f, &q, &s, NULL, &d), QGMM_OK);
        qgmm_synchronize(g_ctx);
        static uint32_t wd[512];
        for (int i = 0; i < 512; ++i) wd[i] = fbits(X[i]);
        expect_f32("blockwise dequant f32", bd, 512, wd);
        qgmm_tensor db = tv(bd, QGMM_BF16, 2, 2, 256, 0, NULL);
        expect_status("bw dequant bf16", qgmm_dequantize(g_ctx, &f, &q, &s, NULL, &db), QGMM_OK);
        qgmm_synchronize(g_ctx);
        uint16_t gb[512];
        qgmm_buffer_download(bd, 0, gb, sizeof gb);
        int ok = 1;
        for (int i = 0; i < 512; ++i) ok &= gb[i] == (uint16_t)(fbits(X[i]) >> 16);
        CHECK(ok, "blockwise dequant bf16 bytes");
        qgmm_buffer_free(bd);
    }
    qgmm_buffer_free(bx); qgmm_buffer_free(bq);

    /* 128x128 on x (130,128), ragged: tile 0 rows 0..127 [x00=4, x(127,127)=-2] -> 112:
     * 448 0x7E, -224 0xF6; tile 1 rows 128..129 [x(128,5)=0.25, x(129,127)=1] -> 448:
     * 112 0x6E, 448 0x7E. Scales (2,1): 1/112, 1/448. */
    static float W[130 * 128];
    static uint16_t WW[130 * 128];
    memset(W, 0, sizeof W); memset(WW, 0, sizeof WW);
    W[0] = 4; WW[0] = 0x7E; W[127 * 128 + 127] = -2; WW[127 * 128 + 127] = 0xF6;
    W[128 * 128 + 5] = 0.25f; WW[128 * 128 + 5] = 0x6E; W[129 * 128 + 127] = 1; WW[129 * 128 + 127] = 0x7E;
    qgmm_buffer *bw_ = mkbuf(W, sizeof W, 0), *bqw = mkbuf(NULL, sizeof W / 4, 0xAA);
    qgmm_tensor w = tv(bw_, QGMM_F32, 2, 130, 128, 0, NULL), qw = tv(bqw, QGMM_F8E4M3FN, 2, 130, 128, 0, NULL);
    qgmm_tensor sw = tv(bs, QGMM_F32, 2, 2, 1, 0, NULL);
    expect_status("128x128 ragged", bw(QGMM_BLOCK_128X128, &w, &qw, &sw), QGMM_OK);
    expect_q("128x128 ragged q", bqw, 130 * 128, WW, 4);
    expect_f32("128x128 ragged scales", bs, 2, (const uint32_t[]){R_112, R_448});
    qgmm_buffer_free(bw_); qgmm_buffer_free(bqw);

    /* 128x128 rank 3 (2,128,128), DeepGEMM/torchao layout (E, N/128, K/128) row-major:
     * e0 x[0][0][0]=4 -> 112: 0x7E; e1 x[1][64][3]=-8 -> 56: 0xFE. */
    static float W3[2 * 128 * 128];
    static uint16_t WW3[2 * 128 * 128];
    memset(W3, 0, sizeof W3); memset(WW3, 0, sizeof WW3);
    W3[0] = 4; WW3[0] = 0x7E; W3[16384 + 64 * 128 + 3] = -8; WW3[16384 + 64 * 128 + 3] = 0xFE;
    qgmm_buffer *bw3 = mkbuf(W3, sizeof W3, 0), *bq3 = mkbuf(NULL, sizeof W3 / 4, 0xAA);
    qgmm_tensor w3 = tv(bw3, QGMM_F32, 3, 2, 128, 128, NULL), q3 = tv(bq3, QGMM_F8E4M3FN, 3, 2, 128, 128, NULL);
    qgmm_tensor s3;
    size_t bytes = 0;
    const int64_t shape3[3] = {2, 128, 128};
    const qgmm_status vs = qgmm_blockwise_scales_view(QGMM_BLOCK_128X128, QGMM_BLOCKWISE_DEEPGEMM, 3, shape3,
                                                      bs, 0, &s3, &bytes);
    CHECK(vs == QGMM_OK && s3.rank == 3 && s3.shape[0] == 2 && s3.shape[1] == 1 && s3.shape[2] == 1,
          "blockwise_scales_view 128x128 rank 3");
    if (vs == QGMM_OK) {
        expect_status("128x128 3d", bw(QGMM_BLOCK_128X128, &w3, &q3, &s3), QGMM_OK);
        expect_q("128x128 3d q", bq3, 2 * 128 * 128, WW3, 4);
        expect_f32("128x128 3d scales", bs, 2, (const uint32_t[]){R_112, R_56});
    }
    qgmm_buffer_free(bw3); qgmm_buffer_free(bq3); qgmm_buffer_free(bs);
    section_done("op: blockwise 1x128/128x128, layouts, dequant", c0, f0);
}

static void test_rowwise_dequant(void)
{
    const long c0 = g_cases, f0 = g_fail;
    /* q of the basic case (scales 112 and S0): multiplier kind divides (112/112 = 1 ...),
     * reciprocal kind multiplies by f32(1/112) (112*f32(1/112) rounds to exactly 1). */
    const uint8_t q[8] = {0x6E, 0xF6, 0x7E, 0x66, 0x00, 0x80, 0x00, 0x00};
    const uint32_t sm[2] = {F_112, S0}, sr[2] = {R_112, S0_RECIP};
    const uint32_t want[8] = {fbits(1), fbits(-2), fbits(4), fbits(0.5f), 0, 0x80000000u, 0, 0};
    qgmm_buffer *bq = mkbuf(q, 8, 0), *bs = mkbuf(sm, 8, 0), *bd = mkbuf(NULL, 32, 0xAA);
    qgmm_tensor tq = tv(bq, QGMM_F8E4M3FN, 2, 2, 4, 0, NULL), ts = tv(bs, QGMM_F32, 1, 2, 0, 0, NULL);
    qgmm_tensor td = tv(bd, QGMM_F32, 2, 2, 4, 0, NULL);
    qgmm_quant_format f = {0};
    f.kind = QGMM_QUANT_FP8_ROWWISE; f.rowwise = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_MULTIPLIER};
    expect_status("rw dequant mult", qgmm_dequantize(g_ctx, &f, &tq, &ts, NULL, &td), QGMM_OK);
    qgmm_synchronize(g_ctx);
    expect_f32("rowwise dequant (multiplier)", bd, 8, want);
    qgmm_buffer_upload(bs, 0, sr, 8);
    f.rowwise.scale_kind = QGMM_SCALE_RECIPROCAL;
    expect_status("rw dequant recip", qgmm_dequantize(g_ctx, &f, &tq, &ts, NULL, &td), QGMM_OK);
    qgmm_synchronize(g_ctx);
    expect_f32("rowwise dequant (reciprocal)", bd, 8, want);
    /* bf16 out: 1 0x3F80, -2 0xC000, 4 0x4080, 0.5 0x3F00, 0, -0 0x8000 */
    qgmm_tensor tdb = tv(bd, QGMM_BF16, 2, 2, 4, 0, NULL);
    expect_status("rw dequant bf16", qgmm_dequantize(g_ctx, &f, &tq, &ts, NULL, &tdb), QGMM_OK);
    qgmm_synchronize(g_ctx);
    uint16_t gb[8];
    qgmm_buffer_download(bd, 0, gb, 16);
    const uint16_t wb[8] = {0x3F80, 0xC000, 0x4080, 0x3F00, 0, 0x8000, 0, 0};
    CHECK(memcmp(gb, wb, 16) == 0, "rowwise dequant bf16 bytes");
    /* column-major output of a colwise dequant: q (3,2) col-major from the colwise case */
    const uint8_t qc[6] = {0x6E, 0x76, 0x7E, 0xFE, 0x5E, 0x00};
    const uint32_t scc[2] = {F_112, F_56};
    qgmm_buffer *bqc = mkbuf(qc, 6, 0), *bsc = mkbuf(scc, 8, 0), *bdc = mkbuf(NULL, 24, 0xAA);
    qgmm_tensor tqc = qgmm_tensor_make_colmajor(bqc, 0, QGMM_F8E4M3FN, 3, 2);
    qgmm_tensor tsc = tv(bsc, QGMM_F32, 1, 2, 0, 0, NULL), tdc = tv(bdc, QGMM_F32, 2, 3, 2, 0, NULL);
    f.rowwise = (qgmm_fp8_rowwise_params){0, 0, QGMM_SCALE_MULTIPLIER};
    expect_status("colwise dequant", qgmm_dequantize(g_ctx, &f, &tqc, &tsc, NULL, &tdc), QGMM_OK);
    qgmm_synchronize(g_ctx);
    expect_f32("colwise dequant", bdc, 6, (const uint32_t[]){fbits(1), fbits(-8), fbits(2), fbits(0.5f), fbits(4), 0});
    /* bf16 output rounding (round to nearest even), on q = 1.0 (0x38) with the
     * reciprocal kind, so out = 1 * s = s exactly in f32 and the bf16 cast alone decides:
     *   0x3EAAAAAB (f32 1/3): low half 0xAAAB > 0x8000 -> up 0x3EAB (truncation: 0x3EAA)
     *   0x3F808000 (1+2^-8): exact tie, 0x3F80 even -> 0x3F80
     *   0x3F818000: exact tie, 0x3F81 odd -> 0x3F82
     *   0x3F807FFF: just below the tie -> 0x3F80
     *   0x7F7FFFFF (f32 max): rounds up past bf16 max -> inf 0x7F80
     *   0xFFC00001 (NaN): stays NaN with its sign, quiet -> 0xFFC0 */
    {
        const uint8_t q1[6] = {0x38, 0x38, 0x38, 0x38, 0x38, 0x38};
        const uint32_t s6[6] = {0x3EAAAAABu, 0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0x7F7FFFFFu, 0xFFC00001u};
        qgmm_buffer *b1 = mkbuf(q1, 6, 0), *b2 = mkbuf(s6, 24, 0), *b3 = mkbuf(NULL, 12, 0xAA);
        qgmm_tensor t1 = tv(b1, QGMM_F8E4M3FN, 2, 6, 1, 0, NULL), t2 = tv(b2, QGMM_F32, 1, 6, 0, 0, NULL);
        qgmm_tensor t3 = tv(b3, QGMM_BF16, 2, 6, 1, 0, NULL);
        f.rowwise = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_RECIPROCAL};
        expect_status("bf16 rounding", qgmm_dequantize(g_ctx, &f, &t1, &t2, NULL, &t3), QGMM_OK);
        qgmm_synchronize(g_ctx);
        uint16_t g6[6];
        qgmm_buffer_download(b3, 0, g6, 12);
        const uint16_t w6[6] = {0x3EAB, 0x3F80, 0x3F82, 0x3F80, 0x7F80, 0xFFC0};
        for (int i = 0; i < 6; ++i)
            CHECK(g6[i] == w6[i], "dequant bf16 rounding of 0x%08X: got 0x%04X want 0x%04X", s6[i], g6[i], w6[i]);
        /* multiplier kind divides: 1 / 3 = 0x3EAAAAAB -> 0x3EAB */
        const uint32_t three = 0x40400000u;
        qgmm_buffer_upload(b2, 0, &three, 4);
        f.rowwise.scale_kind = QGMM_SCALE_MULTIPLIER;
        qgmm_tensor t1b = tv(b1, QGMM_F8E4M3FN, 2, 1, 1, 0, NULL), t2b = tv(b2, QGMM_F32, 1, 1, 0, 0, NULL);
        qgmm_tensor t3b = tv(b3, QGMM_BF16, 2, 1, 1, 0, NULL);
        expect_status("bf16 1/3", qgmm_dequantize(g_ctx, &f, &t1b, &t2b, NULL, &t3b), QGMM_OK);
        qgmm_synchronize(g_ctx);
        qgmm_buffer_download(b3, 0, g6, 2);
        CHECK(g6[0] == 0x3EAB, "dequant multiplier 1/3 to bf16: got 0x%04X", g6[0]);
        qgmm_buffer_free(b1); qgmm_buffer_free(b2); qgmm_buffer_free(b3);
    }
    qgmm_buffer_free(bq); qgmm_buffer_free(bs); qgmm_buffer_free(bd);
    qgmm_buffer_free(bqc); qgmm_buffer_free(bsc); qgmm_buffer_free(bdc);
    section_done("op: rowwise dequantize (kinds, bf16, col-major)", c0, f0);
}

int main(int argc, char **argv)
{
    /* argv[1]: the backend to test (default cpu); the same checks run on every backend. */
    const char *backend = (argc > 1 && argv[1][0] != '-') ? argv[1] : "cpu";
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: test_kat_casts\n  Known-answer tests of the fp8/bf16/e8m0 codecs and of every cast op\n"
               "  on the cpu backend. Prints case counts per section; exit 1 on failure.\n");
        return 0;
    }
    test_fp8_roundtrip();
    test_fp8_hand();
    test_fp8_sweep();
    test_bf16_e8m0();
    test_mx_rules();
    if (qgmm_context_create(backend, 0, &g_ctx) != QGMM_OK) {
        if (strcmp(backend, "cpu") != 0) { /* a GPU backend this machine lacks */
            printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
            return 77;
        }
        fprintf(stderr, "FAIL: cannot create a cpu context: %s\n", qgmm_last_error(NULL));
        return 1;
    }
    test_rowwise_basic();
    test_rowwise_special();
    test_rowwise_layouts();
    test_rowwise_jagged();
    test_rowwise_dequant();
    test_mx();
    test_blockwise();
    qgmm_context_destroy(g_ctx);
    printf("test_kat_casts: %ld cases, %ld failed\n", g_cases, g_fail);
    return g_fail ? 1 : 0;
}
