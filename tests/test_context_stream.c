/*
 * qgmm_context_create_with_stream and the NULL native stream. NULL is a valid
 * cudaStream_t / hipStream_t (the runtime's default stream, the one PyTorch's default
 * stream is): a GPU backend adopts it, runs ops on it with the same bytes as the cpu
 * reference, and qgmm_context_create keeps creating a stream of its own. Backends
 * without streams refuse with QGMM_ERR_UNSUPPORTED. Backend: argv[1] or "cpu".
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_fail, g_pass;

static void check(int ok, const char *what, const qgmm_context *ctx)
{
    if (ok) { ++g_pass; return; }
    ++g_fail;
    fprintf(stderr, "FAIL: %s (last error: %s)\n", what, qgmm_last_error(ctx));
}

enum { R = 64, C = 96 };

/* Rowwise FP8 quantize of a fixed (R, C) f32 matrix on ctx: q bytes and scale bytes. */
static qgmm_status quantize_on(qgmm_context *ctx, const float *x, unsigned char *out)
{
    qgmm_buffer *bx = NULL, *bq = NULL, *bs = NULL;
    const int64_t sh[2] = {R, C}, shs[1] = {R};
    const qgmm_fp8_rowwise_params p = {.reduce_dim = 1, .power_of_2 = 0,
                                       .scale_kind = QGMM_SCALE_RECIPROCAL};
    qgmm_status s = qgmm_buffer_alloc(ctx, sizeof(float) * R * C, &bx);
    if (!s) s = qgmm_buffer_alloc(ctx, (size_t)R * C, &bq);
    if (!s) s = qgmm_buffer_alloc(ctx, sizeof(float) * R, &bs);
    if (!s) s = qgmm_buffer_upload(bx, 0, x, sizeof(float) * R * C);
    if (!s) {
        const qgmm_tensor tx = qgmm_tensor_make(bx, 0, QGMM_F32, 2, sh);
        const qgmm_tensor tq = qgmm_tensor_make(bq, 0, QGMM_F8E4M3FN, 2, sh);
        const qgmm_tensor ts = qgmm_tensor_make(bs, 0, QGMM_F32, 1, shs);
        s = qgmm_quantize_fp8_rowwise(ctx, &p, &tx, NULL, &tq, &ts);
    }
    if (!s) s = qgmm_synchronize(ctx);
    if (!s) s = qgmm_buffer_download(bq, 0, out, (size_t)R * C);
    if (!s) s = qgmm_buffer_download(bs, 0, out + R * C, sizeof(float) * R);
    qgmm_buffer_free(bx);
    qgmm_buffer_free(bq);
    qgmm_buffer_free(bs);
    return s;
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu";
    qgmm_context *ctx = NULL;

    if (strcmp(backend, "cpu") == 0 || strcmp(backend, "vulkan") == 0) {
        const qgmm_status s = qgmm_context_create_with_stream(backend, 0, NULL, &ctx);
        check(s == QGMM_ERR_UNSUPPORTED && ctx == NULL, "a backend without streams refuses NULL", NULL);
        check(strstr(qgmm_last_error(NULL), "stream") != NULL, "the refusal names streams", NULL);
        printf("%d passed, %d failed\n", g_pass, g_fail);
        return g_fail ? 1 : 0;
    }

    if (qgmm_context_create(backend, 0, &ctx) != QGMM_OK) {
        fprintf(stderr, "no %s backend: %s\n", backend, qgmm_last_error(NULL));
        return 77;
    }
    /* out == NULL is still refused, and the argument is named */
    check(qgmm_context_create_with_stream(backend, 0, NULL, NULL) == QGMM_ERR_INVALID_ARGUMENT &&
              strstr(qgmm_last_error(NULL), "out"),
          "out = NULL is refused", NULL);
    check(strstr(qgmm_context_describe(ctx), "adopted") == NULL,
          "qgmm_context_create still uses a stream of its own", ctx);
    qgmm_context_destroy(ctx);
    ctx = NULL;

    /* NULL: the runtime's default stream */
    const qgmm_status s = qgmm_context_create_with_stream(backend, 0, NULL, &ctx);
    check(s == QGMM_OK && ctx != NULL, "the NULL (default) stream is adopted", NULL);
    if (s != QGMM_OK) {
        printf("%d passed, %d failed\n", g_pass, g_fail);
        return 1;
    }
    printf("adopted: %s\n", qgmm_context_describe(ctx));

    float *x = malloc(sizeof(float) * R * C);
    unsigned char *got = malloc((size_t)R * C + sizeof(float) * R);
    unsigned char *want = malloc((size_t)R * C + sizeof(float) * R);
    srand(7);
    for (int i = 0; i < R * C; ++i) x[i] = ((float)rand() / RAND_MAX - 0.5f) * (float)(1 + i % 37);

    qgmm_context *cpu = NULL;
    check(qgmm_context_create("cpu", 0, &cpu) == QGMM_OK, "a cpu context", NULL);
    check(quantize_on(cpu, x, want) == QGMM_OK, "cpu reference quantize", cpu);
    check(quantize_on(ctx, x, got) == QGMM_OK, "quantize on the default stream", ctx);
    check(memcmp(got, want, (size_t)R * C + sizeof(float) * R) == 0,
          "default-stream bytes equal the cpu reference", ctx);
    /* a second adopting context on the same stream works independently */
    qgmm_context *ctx2 = NULL;
    check(qgmm_context_create_with_stream(backend, 0, NULL, &ctx2) == QGMM_OK,
          "a second context on the default stream", NULL);
    if (ctx2) {
        memset(got, 0, (size_t)R * C + sizeof(float) * R);
        check(quantize_on(ctx2, x, got) == QGMM_OK &&
                  memcmp(got, want, (size_t)R * C + sizeof(float) * R) == 0,
              "second context's bytes equal the cpu reference", ctx2);
    }
    /* destroying an adopting context leaves the default stream usable */
    qgmm_context_destroy(ctx2);
    memset(got, 0, (size_t)R * C + sizeof(float) * R);
    check(quantize_on(ctx, x, got) == QGMM_OK &&
              memcmp(got, want, (size_t)R * C + sizeof(float) * R) == 0,
          "the default stream still works after another context is destroyed", ctx);

    qgmm_context_destroy(ctx);
    qgmm_context_destroy(cpu);
    free(x);
    free(got);
    free(want);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
