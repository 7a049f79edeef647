/*
 * vk_gemm_bench.c — device time of the Vulkan backend's M-grouped FP8 grouped GEMMs
 * (rowwise, blockwise, MXFP8; e4m3fn operands, bf16 out) on the tiled and the
 * cooperative-matrix paths, side by side, with qgmm_event timestamps. The path is chosen
 * per context through QGMM_VULKAN_GEMM_PATH. Besides timing, the two paths' outputs are
 * compared (relative Frobenius difference), a sanity check on large shapes only: the
 * conformance suite is the numerics proof.
 *
 * usage: vk_gemm_bench [--iters N] [--shape M,N,K,G]...   (default: the two MoE shapes
 *        16384,1536,5120,16 and 32768,2048,7168,8)
 */
#include "qgmm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OK(call)                                                                          \
    do {                                                                                  \
        qgmm_status s_ = (call);                                                          \
        if (s_ != QGMM_OK) {                                                              \
            fprintf(stderr, "FATAL %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call,     \
                    qgmm_status_string(s_), qgmm_last_error(NULL));                       \
            exit(2);                                                                      \
        }                                                                                 \
    } while (0)

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

typedef struct shape { int64_t M, N, K, G; } shape;

/* Host data of one problem (shared by both paths). */
typedef struct host {
    uint8_t *a, *b, *sa_mx, *sb_mx;
    float *sa_row, *sb_row, *sa_blk, *sb_blk;
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

/* Times one recipe; returns ms per GEMM and leaves the output in *out_host. */
static double run(qgmm_context *ctx, const shape *s, const host *h, int recipe, int iters, uint16_t *out_host)
{
    const int64_t M = s->M, N = s->N, K = s->K, E = s->G;
    qgmm_buffer *ba = upload(ctx, h->a, (size_t)(M * K));
    qgmm_buffer *bb = upload(ctx, h->b, (size_t)(E * N * K));
    qgmm_buffer *bo = upload(ctx, h->offs, sizeof(int32_t) * (size_t)E);
    qgmm_buffer *bsa, *bsb, *bout;
    qgmm_tensor ta, tb, tsa, tsb, toffs, tout;
    int64_t sh[3];
    sh[0] = M; sh[1] = K;
    ta = qgmm_tensor_make(ba, 0, QGMM_F8E4M3FN, 2, sh);
    sh[0] = E; sh[1] = N; sh[2] = K;
    tb = qgmm_tensor_make(bb, 0, QGMM_F8E4M3FN, 3, sh);
    sh[0] = E;
    toffs = qgmm_tensor_make(bo, 0, QGMM_I32, 1, sh);
    if (recipe == QGMM_RECIPE_FP8_ROWWISE) {
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
    OK(qgmm_buffer_alloc(ctx, sizeof(uint16_t) * (size_t)(M * N), &bout));
    sh[0] = M; sh[1] = N;
    tout = qgmm_tensor_make(bout, 0, QGMM_BF16, 2, sh);
    qgmm_grouped_gemm_params p = {QGMM_GEMM_M_GROUPED, (qgmm_recipe)recipe};
    OK(qgmm_grouped_gemm(ctx, &p, &ta, &tb, &tsa, &tsb, &toffs, &tout)); /* warm-up */
    OK(qgmm_synchronize(ctx));
    qgmm_event *e0, *e1;
    OK(qgmm_event_create(ctx, &e0));
    OK(qgmm_event_create(ctx, &e1));
    OK(qgmm_event_record(e0));
    for (int i = 0; i < iters; ++i) OK(qgmm_grouped_gemm(ctx, &p, &ta, &tb, &tsa, &tsb, &toffs, &tout));
    OK(qgmm_event_record(e1));
    double ms = 0;
    OK(qgmm_event_elapsed_ms(e0, e1, &ms));
    OK(qgmm_synchronize(ctx));
    OK(qgmm_buffer_download(bout, 0, out_host, sizeof(uint16_t) * (size_t)(M * N)));
    qgmm_event_destroy(e0);
    qgmm_event_destroy(e1);
    qgmm_buffer *all[] = {ba, bb, bo, bsa, bsb, bout};
    for (int i = 0; i < 6; ++i) qgmm_buffer_free(all[i]);
    return ms / iters;
}

int main(int argc, char **argv)
{
    shape shapes[8] = {{16384, 1536, 5120, 16}, {32768, 2048, 7168, 8}};
    int nshapes = 2, custom = 0, iters = 5;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: vk_gemm_bench [--iters N] [--shape M,N,K,G]...\n"
                   "Times the Vulkan backend's M-grouped FP8 rowwise / blockwise / MXFP8 grouped GEMMs\n"
                   "(e4m3fn, bf16 out, jagged groups of multiples of 16) on QGMM_VULKAN_GEMM_PATH=tiled\n"
                   "and =coopmat with qgmm_event timestamps; prints ms, TFLOP/s and the relative\n"
                   "Frobenius difference between the two paths' outputs.\n");
            return 0;
        } else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            iters = atoi(argv[++i]);
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
    static const char *rname[4] = {"bf16", "fp8_rowwise", "fp8_blockwise", "mxfp8"};
    printf("| shape (M,N,K,G) | recipe | tiled ms | tiled TFLOP/s | coopmat ms | coopmat TFLOP/s | speedup | rel diff |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int si = 0; si < nshapes; ++si) {
        const shape *s = &shapes[si];
        const int64_t M = s->M, N = s->N, K = s->K, E = s->G;
        host h;
        memset(&h, 0, sizeof h);
        h.a = malloc((size_t)(M * K));
        h.b = malloc((size_t)(E * N * K));
        for (int64_t i = 0; i < M * K; ++i) h.a[i] = fp8_byte();
        for (int64_t i = 0; i < E * N * K; ++i) h.b[i] = fp8_byte();
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
        uint16_t *out[2];
        out[0] = malloc(sizeof(uint16_t) * (size_t)(M * N));
        out[1] = malloc(sizeof(uint16_t) * (size_t)(M * N));
        for (int r = 1; r <= 3; ++r) {
            double ms[2];
            for (int pi = 0; pi < 2; ++pi) {
                setenv("QGMM_VULKAN_GEMM_PATH", paths[pi], 1);
                qgmm_context *ctx;
                OK(qgmm_context_create("vulkan", 0, &ctx));
                if (si == 0 && r == 1) fprintf(stderr, "[%s] %s\n", paths[pi], qgmm_context_describe(ctx));
                /* rows past offs[E-1] are untouched: zero them so the comparison sees 0 */
                memset(out[pi], 0, sizeof(uint16_t) * (size_t)(M * N));
                ms[pi] = run(ctx, s, &h, r, iters, out[pi]);
                qgmm_context_destroy(ctx);
            }
            double num = 0, den = 0;
            for (int64_t i = 0; i < (int64_t)h.offs[E - 1] * N; ++i) {
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
        free(h.a); free(h.b); free(h.offs); free(h.sa_row); free(h.sb_row); free(h.sa_blk);
        free(h.sb_blk); free(h.sa_mx); free(h.sb_mx); free(out[0]); free(out[1]);
    }
    return 0;
}
