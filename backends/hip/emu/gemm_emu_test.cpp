/*
 * gemm_emu_test.cpp — the HIP grouped-GEMM kernel, run on the host under hip_emu.h,
 * against libqgmm's CPU reference (qgmm_grouped_gemm on a "cpu" context) on the SAME
 * tensors: both kinds x all four recipes x fp8 formats x f32/bf16 output, ragged and empty
 * groups, rows past the last group (must stay untouched), contiguous (vector staging) and
 * strided (gather staging) operands, both MFMA paths (native FP8 for e4m3fnuz, BF16 with
 * widening), and bad offsets (status bit raised, nothing written).
 *
 * What it proves and what not: see hip_emu.h (the MFMA lane layouts are a model).
 * Thresholds (ops-spec §7, kernel error vs the reference): relative Frobenius <= 1e-5 for
 * f32 output, <= 1e-2 for bf16; untouched elements byte-identical.
 * Exit 0 pass, 1 fail. --help for usage.
 */
#include "hip_emu.h"

#include "../gemm_mfma.hip"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

struct hg_emu_gemm { const qgmm_hg_problem *p; int fp8; };
static void gemm_body(void *v)
{
    const hg_emu_gemm *g = (const hg_emu_gemm *)v;
    if (g->fp8) qgmm_hg_kernel<true>(*g->p);
    else qgmm_hg_kernel<false>(*g->p);
}
static void emu_launch(const qgmm_hg_problem &p, int fp8, int nblocks)
{
    hg_emu_gemm g = {&p, fp8};
    hg_emu_run(nblocks, gemm_body, &g);
}

/* ---------------------------------------------------------------- cases */
static int checks, failures;
#define CHECK(cond, ...) do { ++checks; if (!(cond)) { ++failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static uint32_t g_seed = 12345;
static float frand(void) /* roughly N(0,1) */
{
    float s = 0;
    for (int i = 0; i < 4; ++i) { g_seed = g_seed * 1664525u + 1013904223u; s += (float)(g_seed >> 8) / 16777216.0f; }
    return (s - 2.0f) * 1.7f;
}

struct host_buf {
    qgmm_buffer *b = NULL;
    uint8_t *p = NULL;
    size_t n = 0;
};
static host_buf make_buf(qgmm_context *ctx, size_t bytes)
{
    host_buf h;
    h.n = bytes ? bytes : 1;
    if (qgmm_buffer_alloc(ctx, h.n, &h.b) != QGMM_OK) { printf("alloc: %s\n", qgmm_last_error(ctx)); exit(1); }
    h.p = (uint8_t *)qgmm_buffer_native(h.b);
    return h;
}

static void fill_operand(const host_buf &h, qgmm_dtype d, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        const float v = frand();
        if (d == QGMM_BF16) ((uint16_t *)h.p)[i] = qgmm_f32_to_bf16(v);
        else h.p[i] = qgmm_f32_to_fp8(v * 8.0f, (int)d);
    }
}

struct gcase {
    const char *name;
    qgmm_gemm_kind kind;
    qgmm_recipe recipe;
    qgmm_dtype in, out;
    std::vector<int> sizes;   /* group sizes */
    int64_t n, k;             /* M_GROUPED: N, K; K_GROUPED: N, K (out (G, N, K)) */
    int64_t extra_rows;       /* M_GROUPED rows past the last group */
    int strided;              /* operands in the layout that takes the gather path */
    int bad_offs;
};

static void run_case(qgmm_context *cpu, const gcase &c)
{
    const int64_t G = (int64_t)c.sizes.size();
    int64_t M = c.extra_rows;
    for (int s : c.sizes) M += s;
    std::vector<int32_t> offs(G);
    int64_t acc = 0;
    for (int64_t g = 0; g < G; ++g) { acc += c.sizes[g]; offs[g] = (int32_t)acc; }
    if (c.bad_offs && G > 1) offs[G - 1] = offs[0] - 1 < 0 ? 0 : offs[0] - 1, offs[0] = offs[0] + 5;
    const int mg = c.kind == QGMM_GEMM_M_GROUPED;
    const int64_t N = c.n, K = c.k;
    const size_t esz = qgmm_dtype_size(c.in), osz = qgmm_dtype_size(c.out);

    host_buf ho = make_buf(cpu, (size_t)G * 4);
    memcpy(ho.p, offs.data(), (size_t)G * 4);
    qgmm_tensor to = qgmm_tensor_make(ho.b, 0, QGMM_I32, 1, &G);

    qgmm_tensor ta, tb, tout, tsa, tsb;
    memset(&tsa, 0, sizeof tsa);
    memset(&tsb, 0, sizeof tsb);
    host_buf ha, hb, hsa, hsb, hr, he;
    if (mg) {
        ha = make_buf(cpu, (size_t)(M * K) * esz);
        hb = make_buf(cpu, (size_t)(G * N * K) * esz);
        fill_operand(ha, c.in, (size_t)(M * K));
        fill_operand(hb, c.in, (size_t)(G * N * K));
        if (c.strided) ta = qgmm_tensor_make_colmajor(ha.b, 0, c.in, M, K);
        else { const int64_t s[2] = {M, K}; ta = qgmm_tensor_make(ha.b, 0, c.in, 2, s); }
        const int64_t sb[3] = {G, N, K};
        tb = qgmm_tensor_make(hb.b, 0, c.in, 3, sb);
        const int64_t so[2] = {M, N};
        hr = make_buf(cpu, (size_t)(M * N) * osz);
        he = make_buf(cpu, (size_t)(M * N) * osz);
        tout = qgmm_tensor_make(hr.b, 0, c.out, 2, so);
    } else {
        ha = make_buf(cpu, (size_t)(M * N) * esz);
        hb = make_buf(cpu, (size_t)(M * K) * esz);
        fill_operand(ha, c.in, (size_t)(M * N));
        fill_operand(hb, c.in, (size_t)(M * K));
        if (c.strided) {
            const int64_t s1[2] = {M, N}, s2[2] = {M, K};
            ta = qgmm_tensor_make(ha.b, 0, c.in, 2, s1);
            tb = qgmm_tensor_make(hb.b, 0, c.in, 2, s2);
        } else {
            ta = qgmm_tensor_make_colmajor(ha.b, 0, c.in, M, N);
            tb = qgmm_tensor_make_colmajor(hb.b, 0, c.in, M, K);
        }
        const int64_t so[3] = {G, N, K};
        hr = make_buf(cpu, (size_t)(G * N * K) * osz);
        he = make_buf(cpu, (size_t)(G * N * K) * osz);
        tout = qgmm_tensor_make(hr.b, 0, c.out, 3, so);
    }
    /* scales (dequant multipliers) */
    auto f32fill = [](host_buf &h, size_t n) {
        for (size_t i = 0; i < n; ++i) ((float *)h.p)[i] = 0.25f + 1.75f * fabsf(frand()) / 3.0f;
    };
    auto e8fill = [](host_buf &h, size_t n) {
        for (size_t i = 0; i < n; ++i) { g_seed = g_seed * 1664525u + 1013904223u; h.p[i] = (uint8_t)(122 + (g_seed >> 24) % 11); }
    };
    if (c.recipe == QGMM_RECIPE_FP8_ROWWISE) {
        if (mg) {
            hsa = make_buf(cpu, (size_t)M * 4); hsb = make_buf(cpu, (size_t)(G * N) * 4);
            f32fill(hsa, (size_t)M); f32fill(hsb, (size_t)(G * N));
            tsa = qgmm_tensor_make(hsa.b, 0, QGMM_F32, 1, &M);
            const int64_t s[2] = {G, N};
            tsb = qgmm_tensor_make(hsb.b, 0, QGMM_F32, 2, s);
        } else {
            hsa = make_buf(cpu, (size_t)(G * N) * 4); hsb = make_buf(cpu, (size_t)(G * K) * 4);
            f32fill(hsa, (size_t)(G * N)); f32fill(hsb, (size_t)(G * K));
            const int64_t s1[2] = {G, N}, s2[2] = {G, K};
            tsa = qgmm_tensor_make(hsa.b, 0, QGMM_F32, 2, s1);
            tsb = qgmm_tensor_make(hsb.b, 0, QGMM_F32, 2, s2);
        }
    } else if (c.recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        if (mg) {
            const int64_t s1[2] = {M, K / 128}, s2[3] = {G, (N + 127) / 128, K / 128};
            hsa = make_buf(cpu, (size_t)(s1[0] * s1[1]) * 4); hsb = make_buf(cpu, (size_t)(s2[0] * s2[1] * s2[2]) * 4);
            f32fill(hsa, hsa.n / 4); f32fill(hsb, hsb.n / 4);
            tsa = qgmm_tensor_make(hsa.b, 0, QGMM_F32, 2, s1);
            tsb = qgmm_tensor_make(hsb.b, 0, QGMM_F32, 3, s2);
        } else {
            const int64_t s1[2] = {N, M / 128}, s2[2] = {K, M / 128};
            hsa = make_buf(cpu, (size_t)(s1[0] * s1[1]) * 4); hsb = make_buf(cpu, (size_t)(s2[0] * s2[1]) * 4);
            f32fill(hsa, hsa.n / 4); f32fill(hsb, hsb.n / 4);
            tsa = qgmm_tensor_make(hsa.b, 0, QGMM_F32, 2, s1);
            tsb = qgmm_tensor_make(hsb.b, 0, QGMM_F32, 2, s2);
        }
    } else if (c.recipe == QGMM_RECIPE_MXFP8) {
        int64_t na, nb;
        if (mg) { na = (int64_t)qgmm_blocked_m_groups_bytes(M, K / 32, G); nb = G * (int64_t)qgmm_blocked_scales_bytes(N, K / 32); }
        else { na = (int64_t)qgmm_blocked_k_groups_bytes(N, M / 32, G); nb = (int64_t)qgmm_blocked_k_groups_bytes(K, M / 32, G); }
        hsa = make_buf(cpu, (size_t)na); hsb = make_buf(cpu, (size_t)nb);
        e8fill(hsa, (size_t)na); e8fill(hsb, (size_t)nb);
        tsa = qgmm_tensor_make(hsa.b, 0, QGMM_E8M0, 1, &na);
        tsb = qgmm_tensor_make(hsb.b, 0, QGMM_E8M0, 1, &nb);
    }
    memset(hr.p, 0x5A, hr.n);
    memset(he.p, 0x5A, he.n);
    const qgmm_grouped_gemm_params prm = {c.kind, c.recipe};
    const qgmm_tensor *psa = tsa.buffer ? &tsa : NULL, *psb = tsb.buffer ? &tsb : NULL;
    qgmm_status st = qgmm_grouped_gemm(cpu, &prm, &ta, &tb, psa, psb, &to, &tout);
    CHECK(st == QGMM_OK, "%s: cpu reference: %s", c.name, qgmm_last_error(cpu));
    if (st != QGMM_OK) return;
    const qgmm_status ref_sync = qgmm_synchronize(cpu);
    CHECK(c.bad_offs ? ref_sync == QGMM_ERR_BAD_OFFSETS : ref_sync == QGMM_OK, "%s: cpu synchronize %s", c.name,
          qgmm_status_string(ref_sync));

    qgmm_tensor te = tout;
    te.buffer = he.b;
    uint32_t status = 0;
    qgmm_gemm_problem d;
    qgmm_gemm_problem_make(&prm, &ta, &tb, psa, psb, &to, &te, &d);
    qgmm_hg_problem p;
    st = qgmm_hip_gemm_build(cpu, &d, &status, &p);
    CHECK(st == QGMM_OK, "%s: build: %s", c.name, qgmm_last_error(cpu));
    if (st != QGMM_OK) return;
    const int fnuz = c.in == QGMM_F8E4M3FNUZ;
    for (int path = 0; path <= fnuz; ++path) {  /* 0: BF16 MFMA (gfx90a path), 1: FP8 MFMA */
        memset(he.p, 0x5A, he.n);
        status = 0;
        emu_launch(p, path, 3);
        const char *pn = path ? "fp8-mfma" : "bf16-mfma";
        if (c.bad_offs) {
            CHECK(status == 1, "%s/%s: bad offsets raise the status bit (got %u)", c.name, pn, status);
            size_t touched = 0;
            for (size_t i = 0; i < he.n; ++i) touched += he.p[i] != 0x5A;
            CHECK(touched == 0, "%s/%s: bad offsets write nothing (%zu bytes changed)", c.name, pn, touched);
            continue;
        }
        CHECK(status == 0, "%s/%s: status %u", c.name, pn, status);
        double num = 0, den = 0;
        size_t untouched_bad = 0, n = hr.n / osz;
        for (size_t i = 0; i < n; ++i) {
            const uint8_t *r = hr.p + i * osz, *e = he.p + i * osz;
            int ref_poison = 1;
            for (size_t b = 0; b < osz; ++b) ref_poison &= r[b] == 0x5A;
            if (ref_poison) { untouched_bad += memcmp(r, e, osz) != 0; continue; }
            const double vr = osz == 4 ? *(const float *)r : qgmm_bf16_to_f32(*(const uint16_t *)r);
            const double ve = osz == 4 ? *(const float *)e : qgmm_bf16_to_f32(*(const uint16_t *)e);
            num += (vr - ve) * (vr - ve);
            den += vr * vr;
        }
        const double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        const double tol = c.out == QGMM_F32 ? 1e-5 : 1e-2;
        CHECK(untouched_bad == 0, "%s/%s: %zu elements the reference leaves untouched were written", c.name, pn,
              untouched_bad);
        CHECK(rel <= tol, "%s/%s: relative Frobenius error %.3g > %.0e", c.name, pn, rel, tol);
        printf("  %-44s %-9s rel err %.2e\n", c.name, pn, rel);
    }
    qgmm_buffer *bufs[] = {ho.b, ha.b, hb.b, hsa.b, hsb.b, hr.b, he.b};
    for (qgmm_buffer *b : bufs) qgmm_buffer_free(b);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: hip_gemm_emu_test\nRuns backends/hip/gemm_mfma.hip on the host (one pthread per work-item, "
               "MFMA modelled lane by lane) against the CPU reference. Exit 0 pass, 1 fail.\n");
        return 0;
    }
    qgmm_context *cpu = NULL;
    if (qgmm_context_create("cpu", 0, &cpu) != QGMM_OK) { printf("cpu context: %s\n", qgmm_last_error(NULL)); return 1; }
    const qgmm_gemm_kind MG = QGMM_GEMM_M_GROUPED, KG = QGMM_GEMM_K_GROUPED;
    const qgmm_dtype FNUZ = QGMM_F8E4M3FNUZ, FN = QGMM_F8E4M3FN, E5 = QGMM_F8E5M2, BF = QGMM_BF16, F32 = QGMM_F32;
    const gcase cases[] = {
        {"M bf16 ragged+empty f32", MG, QGMM_RECIPE_BF16, BF, F32, {37, 0, 70, 9}, 70, 96, 5, 0, 0},
        {"M bf16 colmajor a, bf16 out", MG, QGMM_RECIPE_BF16, BF, BF, {20, 45}, 33, 40, 3, 1, 0},
        {"M rowwise fnuz f32", MG, QGMM_RECIPE_FP8_ROWWISE, FNUZ, F32, {65, 0, 30}, 72, 64, 4, 0, 0},
        {"M rowwise e4m3fn bf16", MG, QGMM_RECIPE_FP8_ROWWISE, FN, BF, {40, 24}, 64, 48, 0, 0, 0},
        {"M rowwise e5m2 strided f32", MG, QGMM_RECIPE_FP8_ROWWISE, E5, F32, {17, 50}, 40, 24, 2, 1, 0},
        {"M blockwise fnuz f32", MG, QGMM_RECIPE_FP8_BLOCKWISE, FNUZ, F32, {30, 100}, 130, 256, 3, 0, 0},
        {"M blockwise e4m3fn bf16", MG, QGMM_RECIPE_FP8_BLOCKWISE, FN, BF, {64, 1}, 40, 128, 0, 0, 0},
        {"M mxfp8 e4m3fn f32", MG, QGMM_RECIPE_MXFP8, FN, F32, {50, 0, 81}, 70, 96, 6, 0, 0},
        {"M mxfp8 e5m2 bf16", MG, QGMM_RECIPE_MXFP8, E5, BF, {33, 96}, 64, 64, 0, 0, 0},
        {"K bf16 colmajor f32 (empty group)", KG, QGMM_RECIPE_BF16, BF, F32, {40, 0, 75}, 66, 70, 0, 0, 0},
        {"K bf16 rowmajor bf16", KG, QGMM_RECIPE_BF16, BF, BF, {30, 34}, 40, 36, 0, 1, 0},
        {"K rowwise fnuz f32", KG, QGMM_RECIPE_FP8_ROWWISE, FNUZ, F32, {48, 0, 80}, 64, 72, 0, 0, 0},
        {"K rowwise e5m2 rowmajor bf16", KG, QGMM_RECIPE_FP8_ROWWISE, E5, BF, {20, 44}, 36, 40, 0, 1, 0},
        {"K blockwise fnuz f32", KG, QGMM_RECIPE_FP8_BLOCKWISE, FNUZ, F32, {128, 0, 256}, 70, 64, 0, 0, 0},
        {"K mxfp8 e4m3fn f32", KG, QGMM_RECIPE_MXFP8, FN, F32, {64, 0, 96}, 70, 40, 0, 0, 0},
        {"K mxfp8 e5m2 rowmajor f32", KG, QGMM_RECIPE_MXFP8, E5, F32, {32, 128}, 64, 64, 0, 1, 0},
        {"M bad offsets", MG, QGMM_RECIPE_FP8_ROWWISE, FNUZ, F32, {40, 30}, 64, 64, 2, 0, 1},
        {"K bad offsets", KG, QGMM_RECIPE_BF16, BF, F32, {40, 30}, 64, 64, 0, 0, 1},
    };
    for (const gcase &c : cases) run_case(cpu, c);
    qgmm_context_destroy(cpu);
    printf("%d checks, %d failures (host emulation of the HIP kernel; MFMA lane layouts modelled)\n", checks,
           failures);
    return failures ? 1 : 0;
}
