/*
 * test_tuning.c — each GPU backend reads its tuning from the environment once, at context
 * creation: the context description shows it, a value outside a knob's set fails creation
 * with a sentence naming the variable and the value, and a context keeps what it read when
 * the environment changes later. Runs on vulkan and cuda where present; SKIP (77) when
 * neither is.
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_fail;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                          \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            g_fail = 1;                                                                   \
        }                                                                                 \
    } while (0)

/* Creates a context on backend with `var` set to `value` (NULL: unset); returns it (NULL on
 * failure, the status in *st). */
static qgmm_context *create_with(const char *backend, const char *var, const char *value, qgmm_status *st)
{
    if (value) setenv(var, value, 1);
    else unsetenv(var);
    qgmm_context *ctx = NULL;
    *st = qgmm_context_create(backend, 0, &ctx);
    return *st == QGMM_OK ? ctx : NULL;
}

/* The checks on one backend; `var`/`good`/`bad` a knob, an accepted and a refused value,
 * `shown` how the description names the accepted one. */
static void check_backend(const char *backend, const char *var, const char *good, const char *shown,
                          const char *bad, const char *defaults)
{
    qgmm_status st;
    qgmm_context *ctx = create_with(backend, var, NULL, &st);
    CHECK(ctx != NULL, "%s: context with no tuning set: %s", backend, qgmm_last_error(NULL));
    if (ctx) {
        CHECK(strstr(qgmm_context_describe(ctx), defaults) != NULL, "%s: description lacks \"%s\": %s", backend,
              defaults, qgmm_context_describe(ctx));
        qgmm_context_destroy(ctx);
    }

    ctx = create_with(backend, var, good, &st);
    CHECK(ctx != NULL, "%s: %s=%s refused: %s", backend, var, good, qgmm_last_error(NULL));
    if (ctx) {
        const char *d = qgmm_context_describe(ctx);
        CHECK(strstr(d, shown) != NULL, "%s: description lacks \"%s\": %s", backend, shown, d);
        unsetenv(var); /* read once: the context keeps what it read */
        CHECK(strstr(qgmm_context_describe(ctx), shown) != NULL, "%s: description changed with the environment",
              backend);
        qgmm_context_destroy(ctx);
    }

    ctx = create_with(backend, var, bad, &st);
    CHECK(ctx == NULL && st == QGMM_ERR_INVALID_ARGUMENT, "%s: %s=%s accepted (status %d)", backend, var, bad,
          (int)st);
    char want[128];
    snprintf(want, sizeof want, "%s=\"%s\"", var, bad);
    CHECK(strstr(qgmm_last_error(NULL), want) != NULL, "%s: error does not name %s: %s", backend, want,
          qgmm_last_error(NULL));
    if (ctx) qgmm_context_destroy(ctx);
    unsetenv(var);
    printf("%s: tuning read at creation, shown, refused when invalid\n", backend);
}

static int available(const char *backend)
{
    const int n = qgmm_backend_count();
    for (int i = 0; i < n; ++i) {
        qgmm_backend_info info;
        if (qgmm_backend_get_info(i, &info) == QGMM_OK && !strcmp(info.name, backend))
            return info.available && info.device_count > 0;
    }
    return 0;
}

int main(void)
{
    int ran = 0;
    if (available("vulkan")) {
        check_backend("vulkan", "QGMM_VULKAN_CAST_LANES", "generic", "tuning: QGMM_VULKAN_CAST_LANES=generic",
                      "wide", "tuning: defaults");
        check_backend("vulkan", "QGMM_VULKAN_CAST_COLS_LC", "4", "QGMM_VULKAN_CAST_COLS_LC=4", "3",
                      "tuning: defaults");
        ran = 1;
    }
    if (available("cuda")) {
        check_backend("cuda", "QGMM_CUDA_GEMM_PATH", "portable", "QGMM_CUDA_GEMM_PATH=portable", "fast",
                      "QGMM_CUDA_GEMM_PATH=auto");
        ran = 1;
    }
    if (!ran) {
        printf("SKIP: neither vulkan nor cuda is available\n");
        return 77;
    }
    printf(g_fail ? "FAILED\n" : "PASSED\n");
    return g_fail;
}
