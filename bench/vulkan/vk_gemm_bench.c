/*
 * vk_gemm_bench.c — device time of the Vulkan backend's grouped GEMMs on the tiled and the
 * cooperative-matrix paths, side by side: M-grouped BF16, FP8 rowwise, FP8 blockwise, MXFP8
 * (e4m3fn operands, weights (E, N, K), bf16 out) and the K-grouped BF16 and FP8 rowwise wgrad
 * (a (M, N), b (M, K), out (E, N, K); rowwise scales (E, N) and (E, K)). Each GEMM is bracketed by qgmm_event timestamps;
 * the median of --iters runs after a warm-up (a second of back-to-back runs) is reported.
 * The path is chosen per context through QGMM_VULKAN_GEMM_PATH. The two paths' outputs are compared (relative Frobenius
 * difference), a sanity check on large shapes only: the conformance suite is the numerics
 * proof.
 *
 * usage: vk_gemm_bench [--iters N] [--shape M,N,K,G]... [--only RECIPE]  (default: the MoE
 *        shapes 16384,1536,5120,16 and 32768,2048,7168,8)
 */
#include "qgmm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RNG_SEED 0x9E3779B97F4A7C15ull
#include "vk_bench_util.h"

typedef struct shape { int64_t M, N, K, G; } shape;

/* Host data of one problem (shared by both paths). */
typedef struct host {
    uint8_t *a, *b, *sa_mx, *sb_mx;
    uint16_t *a16, *b16; /* bf16 operands: M-grouped a (M, K), b (E, N, K); K-grouped a (M, N), b (M, K) */
    float *sa_row, *sb_row, *sa_blk, *sb_blk, *sa_kg, *sb_kg; /* kg: K-grouped rowwise (E, N), (E, K) */
    int32_t *offs;
    size_t sa_mx_bytes, sb_mx_bytes;
} host;

static uint8_t fp8_byte(void)
{
    uint8_t v = (uint8_t)rnd();
    if ((v & 0x78) > 0x40) v = (uint8_t)((v & 0x87) | 0x40); /* exponent <= 1: |x| < 4, no NaN */
    return v;
}

static qgmm_buffer *upload(qgmm_context *ctx, const void *src, size_t bytes)
{
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(ctx, bytes, &b));
    OK(qgmm_buffer_upload(b, 0, src, bytes));
    return b;
}

static float bf16f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Times one recipe (kg: the K-grouped wgrad, BF16 or FP8 rowwise); returns the median ms per GEMM and
 * leaves the output in *out_host. */
static double run(qgmm_context *ctx, const shape *s, const host *h, int recipe, int kg, int iters, uint16_t *out_host)
{
    const int64_t M = s->M, N = s->N, K = s->K, E = s->G;
    const int bf = recipe == QGMM_RECIPE_BF16;
    const size_t es = bf ? 2 : 1;
    const int64_t a_elems = kg ? M * N : M * K, b_elems = kg ? M * K : E * N * K, o_elems = kg ? E * N * K : M * N;
    qgmm_buffer *ba = upload(ctx, bf ? (const void *)h->a16 : h->a, es * (size_t)a_elems);
    qgmm_buffer *bb = upload(ctx, bf ? (const void *)h->b16 : h->b, es * (size_t)b_elems);
    qgmm_buffer *bo = upload(ctx, h->offs, sizeof(int32_t) * (size_t)E);
    qgmm_buffer *bsa = NULL, *bsb = NULL, *bout;
    qgmm_tensor ta, tb, tsa = {0}, tsb = {0}, toffs, tout;
    const qgmm_dtype dt = bf ? QGMM_BF16 : QGMM_F8E4M3FN;
    int64_t sh[3];
    if (kg) {
        sh[0] = M; sh[1] = N;
        ta = qgmm_tensor_make(ba, 0, dt, 2, sh);
        sh[0] = M; sh[1] = K;
        tb = qgmm_tensor_make(bb, 0, dt, 2, sh);
    } else {
        sh[0] = M; sh[1] = K;
        ta = qgmm_tensor_make(ba, 0, dt, 2, sh);
        sh[0] = E; sh[1] = N; sh[2] = K;
        tb = qgmm_tensor_make(bb, 0, dt, 3, sh);
    }
    sh[0] = E;
    toffs = qgmm_tensor_make(bo, 0, QGMM_I32, 1, sh);
    if (bf) {
    } else if (recipe == QGMM_RECIPE_FP8_ROWWISE && kg) {
        bsa = upload(ctx, h->sa_kg, sizeof(float) * (size_t)(E * N));
        bsb = upload(ctx, h->sb_kg, sizeof(float) * (size_t)(E * K));
        sh[0] = E; sh[1] = N;
        tsa = qgmm_tensor_make(bsa, 0, QGMM_F32, 2, sh);
        sh[1] = K;
        tsb = qgmm_tensor_make(bsb, 0, QGMM_F32, 2, sh);
    } else if (recipe == QGMM_RECIPE_FP8_ROWWISE) {
        bsa = upload(ctx, h->sa_row, sizeof(float) * (size_t)M);
        bsb = upload(ctx, h->sb_row, sizeof(float) * (size_t)(E * N));
        sh[0] = M;
        tsa = qgmm_tensor_make(bsa, 0, QGMM_F32, 1, sh);
        sh[0] = E; sh[1] = N;
        tsb = qgmm_tensor_make(bsb, 0, QGMM_F32, 2, sh);
    } else if (recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        bsa = upload(ctx, h->sa_blk, sizeof(float) * (size_t)(M * (K / 128)));
        bsb = upload(ctx, h->sb_blk, sizeof(float) * (size_t)(E * ((N + 127) / 128) * (K / 128)));
        sh[0] = M; sh[1] = K / 128;
        tsa = qgmm_tensor_make(bsa, 0, QGMM_F32, 2, sh);
        sh[0] = E; sh[1] = (N + 127) / 128; sh[2] = K / 128;
        tsb = qgmm_tensor_make(bsb, 0, QGMM_F32, 3, sh);
    } else {
        bsa = upload(ctx, h->sa_mx, h->sa_mx_bytes);
        bsb = upload(ctx, h->sb_mx, h->sb_mx_bytes);
        sh[0] = (int64_t)h->sa_mx_bytes;
        tsa = qgmm_tensor_make(bsa, 0, QGMM_E8M0, 1, sh);
        sh[0] = (int64_t)h->sb_mx_bytes;
        tsb = qgmm_tensor_make(bsb, 0, QGMM_E8M0, 1, sh);
    }
    OK(qgmm_buffer_alloc(ctx, sizeof(uint16_t) * (size_t)o_elems, &bout));
    OK(qgmm_buffer_fill(bout, 0, sizeof(uint16_t) * (size_t)o_elems, 0xFF)); /* poison: NaN */
    if (getenv("VK_GEMM_BENCH_POISON7F")) OK(qgmm_buffer_fill(bout, 0, sizeof(uint16_t) * (size_t)o_elems, 0x7F));
    if (kg) { sh[0] = E; sh[1] = N; sh[2] = K; } else { sh[0] = M; sh[1] = N; }
    tout = qgmm_tensor_make(bout, 0, QGMM_BF16, kg ? 3 : 2, sh);
    qgmm_grouped_gemm_params p = {kg ? QGMM_GEMM_K_GROUPED : QGMM_GEMM_M_GROUPED, (qgmm_recipe)recipe};
    const qgmm_tensor *psa = bf ? NULL : &tsa, *psb = bf ? NULL : &tsb;
    OK(qgmm_grouped_gemm(ctx, &p, &ta, &tb, psa, psb, &toffs, &tout)); /* warm-up */
    OK(qgmm_synchronize(ctx));
    { /* lift the clocks first: a second of back-to-back GEMMs. An idle H100 sits at a fraction
       * of its clock, and after a pipeline compile (a pause of seconds) a short case timed
       * 4x slow (docs/backends-vulkan.md), as vk_cast_bench saw for the casts */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        do {
            for (int r = 0; r < 4; ++r) OK(qgmm_grouped_gemm(ctx, &p, &ta, &tb, psa, psb, &toffs, &tout));
            OK(qgmm_synchronize(ctx));
            clock_gettime(CLOCK_MONOTONIC, &t1);
        } while ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) < 1.0);
    }
    qgmm_event *ev[65];
    if (iters > 64) iters = 64;
    for (int i = 0; i <= iters; ++i) OK(qgmm_event_create(ctx, &ev[i]));
    OK(qgmm_event_record(ev[0]));
    for (int i = 0; i < iters; ++i) {
        OK(qgmm_grouped_gemm(ctx, &p, &ta, &tb, psa, psb, &toffs, &tout));
        OK(qgmm_event_record(ev[i + 1]));
    }
    OK(qgmm_synchronize(ctx));
    double ms[64];
    for (int i = 0; i < iters; ++i) OK(qgmm_event_elapsed_ms(ev[i], ev[i + 1], &ms[i]));
    qsort(ms, (size_t)iters, sizeof ms[0], cmp_double);
    OK(qgmm_buffer_download(bout, 0, out_host, sizeof(uint16_t) * (size_t)o_elems));
    for (int i = 0; i <= iters; ++i) qgmm_event_destroy(ev[i]);
    qgmm_buffer *all[] = {ba, bb, bo, bsa, bsb, bout};
    for (int i = 0; i < 6; ++i)
        if (all[i]) qgmm_buffer_free(all[i]);
    return ms[iters / 2];
}

static uint16_t bf16_rand(void)
{
    /* N(0,1)-ish: sum of uniforms, rounded to bf16 by truncation (never zero data) */
    float x = ((float)(rnd() % 2001) + (float)(rnd() % 2001) + (float)(rnd() % 2001) - 3000.0f) / 1000.0f;
    if (x == 0.0f) x = 0.001f;
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)(u >> 16);
}

int main(int argc, char **argv)
{
    shape shapes[8] = {{16384, 1536, 5120, 16}, {32768, 2048, 7168, 8}};
    int nshapes = 2, custom = 0, iters = 10, only = -1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: vk_gemm_bench [--iters N] [--shape M,N,K,G]... [--only bf16|bf16_kgrouped|fp8_rowwise|fp8_rowwise_kgrouped|fp8_blockwise|mxfp8]\n"
                   "Times the Vulkan backend's grouped GEMMs (M-grouped BF16 / FP8 rowwise / FP8 blockwise /\n"
                   "MXFP8 with weights (E,N,K), and the K-grouped BF16 / FP8 rowwise wgrad; e4m3fn, bf16 out, jagged groups\n"
                   "of multiples of 16) on QGMM_VULKAN_GEMM_PATH=tiled and =coopmat: median of N event-timed\n"
                   "runs after a warm-up; prints ms, TFLOP/s and the relative Frobenius difference between\n"
                   "the two paths' outputs.\n");
            return 0;
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
            if (iters < 1) iters = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            static const char *nm[6] = {"bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8", "bf16_kgrouped", "fp8_rowwise_kgrouped"};
            ++i;
            for (int r = 0; r < 6; ++r)
                if (!strcmp(argv[i], nm[r])) only = r;
            if (only < 0) { fprintf(stderr, "--only: unknown recipe %s\n", argv[i]); return 1; }
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc && nshapes < 8) {
            if (!custom) nshapes = 0;
            custom = 1;
            shape *s = &shapes[nshapes++];
            if (sscanf(argv[++i], "%ld,%ld,%ld,%ld", &s->M, &s->N, &s->K, &s->G) != 4) {
                fprintf(stderr, "--shape wants M,N,K,G\n");
                return 1;
            }
        } else {
            fprintf(stderr, "unknown argument %s (try --help)\n", argv[i]);
            return 1;
        }
    }
    static const char *paths[2] = {"tiled", "coopmat"};
    static const char *rname[6] = {"bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8", "bf16_kgrouped", "fp8_rowwise_kgrouped"};
    printf("| shape (M,N,K,G) | recipe | tiled ms | tiled TFLOP/s | coopmat ms | coopmat TFLOP/s | speedup | rel diff |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int si = 0; si < nshapes; ++si) {
        const shape *s = &shapes[si];
        const int64_t M = s->M, N = s->N, K = s->K, E = s->G;
        host h;
        memset(&h, 0, sizeof h);
        const int64_t nb = E * N * K > M * K ? E * N * K : M * K, na = M * (N > K ? N : K);
        h.a = malloc((size_t)na);
        h.b = malloc((size_t)nb);
        h.a16 = malloc(2 * (size_t)na);
        h.b16 = malloc(2 * (size_t)nb);
        for (int64_t i = 0; i < na; ++i) { h.a[i] = fp8_byte(); h.a16[i] = bf16_rand(); }
        for (int64_t i = 0; i < nb; ++i) { h.b[i] = fp8_byte(); h.b16[i] = bf16_rand(); }
        h.offs = malloc(sizeof(int32_t) * (size_t)E);
        { /* jagged split of M into E groups, sizes multiples of 16 */
            int64_t units = M / 16, left = units;
            for (int64_t g = 0; g < E; ++g) {
                int64_t take = g == E - 1 ? left : (int64_t)(rnd() % (uint64_t)(2 * units / E + 1));
                if (take > left) take = left;
                left -= take;
                h.offs[g] = (int32_t)((units - left) * 16);
            }
        }
        h.sa_row = malloc(sizeof(float) * (size_t)M);
        h.sb_row = malloc(sizeof(float) * (size_t)(E * N));
        h.sa_blk = malloc(sizeof(float) * (size_t)(M * (K / 128)));
        h.sb_blk = malloc(sizeof(float) * (size_t)(E * ((N + 127) / 128) * (K / 128)));
        h.sa_kg = malloc(sizeof(float) * (size_t)(E * N));
        h.sb_kg = malloc(sizeof(float) * (size_t)(E * K));
        for (int64_t i = 0; i < E * N; ++i) h.sa_kg[i] = 0.5f + (float)(rnd() % 1000) / 1000.0f;
        for (int64_t i = 0; i < E * K; ++i) h.sb_kg[i] = 0.5f + (float)(rnd() % 1000) / 1000.0f;
        for (int64_t i = 0; i < M; ++i) h.sa_row[i] = 0.5f + (float)(rnd() % 1000) / 1000.0f;
        for (int64_t i = 0; i < E * N; ++i) h.sb_row[i] = 0.5f + (float)(rnd() % 1000) / 1000.0f;
        for (int64_t i = 0; i < M * (K / 128); ++i) h.sa_blk[i] = 0.5f + (float)(rnd() % 1000) / 1000.0f;
        for (int64_t i = 0; i < E * ((N + 127) / 128) * (K / 128); ++i)
            h.sb_blk[i] = 0.5f + (float)(rnd() % 1000) / 1000.0f;
        h.sa_mx_bytes = qgmm_blocked_m_groups_bytes(M, K / 32, E);
        h.sb_mx_bytes = (size_t)E * qgmm_blocked_scales_bytes(N, K / 32);
        h.sa_mx = malloc(h.sa_mx_bytes);
        h.sb_mx = malloc(h.sb_mx_bytes);
        for (size_t i = 0; i < h.sa_mx_bytes; ++i) h.sa_mx[i] = (uint8_t)(124 + rnd() % 7);
        for (size_t i = 0; i < h.sb_mx_bytes; ++i) h.sb_mx[i] = (uint8_t)(124 + rnd() % 7);
        const int64_t omax = E * N * K > M * N ? E * N * K : M * N;
        uint16_t *out[2];
        out[0] = malloc(sizeof(uint16_t) * (size_t)omax);
        out[1] = malloc(sizeof(uint16_t) * (size_t)omax);
        for (int r = 0; r <= 5; ++r) {
            if (only >= 0 && r != only) continue;
            const int kg = r >= 4, recipe = r == 4 ? QGMM_RECIPE_BF16 : r == 5 ? QGMM_RECIPE_FP8_ROWWISE : r;
            double ms[2];
            for (int pi = 0; pi < 2; ++pi) {
                setenv("QGMM_VULKAN_GEMM_PATH", paths[pi], 1);
                qgmm_context *ctx;
                OK(qgmm_context_create("vulkan", 0, &ctx));
                if (si == 0 && r == (only >= 0 ? only : 0)) fprintf(stderr, "[%s] %s\n", paths[pi], qgmm_context_describe(ctx));
                ms[pi] = run(ctx, s, &h, recipe, kg, iters, out[pi]);
                qgmm_context_destroy(ctx);
            }
            /* compare the rows the groups cover (M-grouped: up to offs[E-1]; K-grouped: all) */
            const int64_t n = kg ? E * N * K : (int64_t)h.offs[E - 1] * N;
            double num = 0, den = 0;
            for (int pi = 0; pi < 2; ++pi) { /* NaN = an output the GEMM did not write (poison) */
                int64_t nan = 0, first = -1;
                for (int64_t i = 0; i < n; ++i)
                    if (isnan(bf16f(out[pi][i]))) { nan++; if (first < 0) first = i; }
                if (nan) {
                    fprintf(stderr, "%s %s: %lld NaN outputs, first at element %lld (row %lld, col %lld)\n",
                            paths[pi], rname[r], (long long)nan, (long long)first,
                            (long long)(first / (kg ? K : N)), (long long)(first % (kg ? K : N)));
                    if (kg)
                        for (int64_t g = 0; g < E; ++g) {
                            int64_t ng = 0;
                            for (int64_t i = g * N * K; i < (g + 1) * N * K; ++i) ng += isnan(bf16f(out[pi][i]));
                            fprintf(stderr, "  group %lld: tokens [%d, %d), %lld NaN\n", (long long)g,
                                    g ? h.offs[g - 1] : 0, h.offs[g], (long long)ng);
                            if (g == 0 && N <= 512 && K <= 512) /* map of 16x16 blocks: '#' has a NaN */
                                for (int64_t bi = 0; bi < N / 16; ++bi) {
                                    char line[40];
                                    int64_t nb2 = K / 16 < 39 ? K / 16 : 39;
                                    for (int64_t bj = 0; bj < nb2; ++bj) {
                                        int any = 0;
                                        for (int64_t ii = 0; ii < 16 && !any; ++ii)
                                            for (int64_t jj = 0; jj < 16 && !any; ++jj)
                                                any = isnan(bf16f(out[pi][(bi * 16 + ii) * K + bj * 16 + jj]));
                                        line[bj] = any ? '#' : '.';
                                    }
                                    line[nb2] = 0;
                                    fprintf(stderr, "    %s\n", line);
                                }
                        }
                }
            }
            for (int64_t i = 0; i < n; ++i) {
                const double x = bf16f(out[0][i]), y = bf16f(out[1][i]);
                num += (x - y) * (x - y);
                den += x * x;
            }
            const double flop = 2.0 * (double)h.offs[E - 1] * (double)N * (double)K;
            printf("| %ld,%ld,%ld,%ld | %s | %.3f | %.1f | %.3f | %.1f | %.2fx | %.2e |\n", (long)M, (long)N,
                   (long)K, (long)E, rname[r], ms[0], flop / ms[0] / 1e9, ms[1], flop / ms[1] / 1e9,
                   ms[0] / ms[1], den > 0 ? sqrt(num / den) : 0.0);
            fflush(stdout);
        }
        free(h.a); free(h.b); free(h.a16); free(h.b16); free(h.offs); free(h.sa_row); free(h.sb_row);
        free(h.sa_blk); free(h.sb_blk); free(h.sa_mx); free(h.sb_mx); free(h.sa_kg); free(h.sb_kg);
        free(out[0]); free(out[1]);
    }
    return 0;
}
