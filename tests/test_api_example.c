/*
 * The worked example of docs/api.md, compiled and run as a test so the documentation
 * cannot rot: an FP8-rowwise MoE forward, out = A . W_g^T per expert group.
 * Backend: argv[1] or "cpu".
 */
#include "qgmm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TRY(call) do { qgmm_status s_ = (call); if (s_ != QGMM_OK) { \
    fprintf(stderr, "%s failed: %s: %s\n", #call, qgmm_status_string(s_), qgmm_last_error(ctx)); \
    return 1; } } while (0)

static uint16_t to_bf16(float f)   /* host helper: f32 -> bf16, round to nearest even */
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h) { union { uint32_t u; float f; } v = {(uint32_t)h << 16}; return v.f; }

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu";
    enum { M = 256, K = 512, N = 192, E = 4 };
    const int32_t offs_host[E] = {64, 64, 200, 256}; /* group 1 is empty */
    qgmm_context *ctx = NULL;

    /* 1. a context on the chosen backend */
    if (qgmm_context_create(backend, 0, &ctx) != QGMM_OK) {
        fprintf(stderr, "no %s backend: %s\n", backend, qgmm_last_error(NULL));
        return 77;
    }
    printf("running on: %s\n", qgmm_context_describe(ctx));

    /* 2. buffers: bf16 activations A (M,K), bf16 expert weights W (E,N,K), offsets */
    uint16_t *a_host = malloc(sizeof(uint16_t) * M * K), *w_host = malloc(sizeof(uint16_t) * E * N * K);
    srand(1);
    for (int i = 0; i < M * K; ++i) a_host[i] = to_bf16((float)rand() / RAND_MAX * 2.0f - 1.0f);
    for (int i = 0; i < E * N * K; ++i) w_host[i] = to_bf16(((float)rand() / RAND_MAX * 2.0f - 1.0f) * 0.05f);
    qgmm_buffer *a, *w, *offs, *aq, *wq, *sa, *sw, *out;
    TRY(qgmm_buffer_alloc(ctx, sizeof(uint16_t) * M * K, &a));
    TRY(qgmm_buffer_alloc(ctx, sizeof(uint16_t) * E * N * K, &w));
    TRY(qgmm_buffer_alloc(ctx, sizeof offs_host, &offs));
    TRY(qgmm_buffer_alloc(ctx, (size_t)M * K, &aq));
    TRY(qgmm_buffer_alloc(ctx, (size_t)E * N * K, &wq));
    TRY(qgmm_buffer_alloc(ctx, sizeof(float) * M, &sa));
    TRY(qgmm_buffer_alloc(ctx, sizeof(float) * E * N, &sw));
    TRY(qgmm_buffer_alloc(ctx, sizeof(uint16_t) * M * N, &out));
    TRY(qgmm_buffer_upload(a, 0, a_host, sizeof(uint16_t) * M * K));
    TRY(qgmm_buffer_upload(w, 0, w_host, sizeof(uint16_t) * E * N * K));
    TRY(qgmm_buffer_upload(offs, 0, offs_host, sizeof offs_host));

    /* 3. tensor views */
    const int64_t sh_a[2] = {M, K}, sh_w[3] = {E, N, K}, sh_g[1] = {E}, sh_sa[1] = {M},
                  sh_sw[2] = {E, N}, sh_out[2] = {M, N};
    qgmm_tensor ta = qgmm_tensor_make(a, 0, QGMM_BF16, 2, sh_a);
    qgmm_tensor tw = qgmm_tensor_make(w, 0, QGMM_BF16, 3, sh_w);
    qgmm_tensor toffs = qgmm_tensor_make(offs, 0, QGMM_I32, 1, sh_g);
    qgmm_tensor taq = qgmm_tensor_make(aq, 0, QGMM_F8E4M3FN, 2, sh_a);
    qgmm_tensor twq = qgmm_tensor_make(wq, 0, QGMM_F8E4M3FN, 3, sh_w);
    qgmm_tensor tsa = qgmm_tensor_make(sa, 0, QGMM_F32, 1, sh_sa);
    qgmm_tensor tsw = qgmm_tensor_make(sw, 0, QGMM_F32, 2, sh_sw);
    qgmm_tensor tout = qgmm_tensor_make(out, 0, QGMM_BF16, 2, sh_out);

    /* 4. the recipe's casts: A per row, W per (expert, output column); the GEMM takes the
     *    dequant multipliers, so ask for reciprocal scales */
    qgmm_fp8_rowwise_params per_row = {.reduce_dim = 1, .power_of_2 = 0, .scale_kind = QGMM_SCALE_RECIPROCAL};
    qgmm_fp8_rowwise_params per_en = {.reduce_dim = 2, .power_of_2 = 0, .scale_kind = QGMM_SCALE_RECIPROCAL};
    TRY(qgmm_quantize_fp8_rowwise(ctx, &per_row, &ta, NULL, &taq, &tsa));
    TRY(qgmm_quantize_fp8_rowwise(ctx, &per_en, &tw, NULL, &twq, &tsw));

    /* 5. the grouped GEMM over device-side offsets, then one synchronize for everything */
    qgmm_grouped_gemm_params gp = {.kind = QGMM_GEMM_M_GROUPED, .recipe = QGMM_RECIPE_FP8_ROWWISE};
    TRY(qgmm_grouped_gemm(ctx, &gp, &taq, &twq, &tsa, &tsw, &toffs, &tout));
    TRY(qgmm_synchronize(ctx));

    /* 6. check the recipe against a float64 GEMM of the bf16 operands: SQNR in dB */
    uint16_t *o_host = malloc(sizeof(uint16_t) * M * N);
    TRY(qgmm_buffer_download(out, 0, o_host, sizeof(uint16_t) * M * N));
    double sig = 0, err = 0;
    for (int g = 0, r0 = 0; g < E; r0 = offs_host[g++])
        for (int r = r0; r < offs_host[g]; ++r)
            for (int n = 0; n < N; ++n) {
                double ref = 0;
                for (int k = 0; k < K; ++k)
                    ref += (double)from_bf16(a_host[r * K + k]) * from_bf16(w_host[((size_t)g * N + n) * K + k]);
                const double d = from_bf16(o_host[r * N + n]) - ref;
                sig += ref * ref;
                err += d * d;
            }
    const double sqnr = 10.0 * log10(sig / err);
    printf("FP8 rowwise forward SQNR vs bf16 float64 reference: %.2f dB (floor 27 dB)\n", sqnr);

    qgmm_buffer *all[] = {a, w, offs, aq, wq, sa, sw, out};
    for (int i = 0; i < 8; ++i) qgmm_buffer_free(all[i]);
    qgmm_context_destroy(ctx);
    free(a_host); free(w_host); free(o_host);
    printf("%d passed, %d failed\n", sqnr >= 27.0, sqnr < 27.0);
    return sqnr >= 27.0 ? 0 : 1;
}
