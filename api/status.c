/* Status strings, dtype facts, and the per-context / per-thread error message. */
#include "qgmm_internal.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char tls_error[QGMM_ERROR_CAP];

const char *qgmm_status_string(qgmm_status s)
{
    switch (s) {
    case QGMM_OK: return "QGMM_OK";
    case QGMM_ERR_INVALID_ARGUMENT: return "QGMM_ERR_INVALID_ARGUMENT";
    case QGMM_ERR_UNSUPPORTED: return "QGMM_ERR_UNSUPPORTED";
    case QGMM_ERR_BACKEND_UNAVAILABLE: return "QGMM_ERR_BACKEND_UNAVAILABLE";
    case QGMM_ERR_OUT_OF_MEMORY: return "QGMM_ERR_OUT_OF_MEMORY";
    case QGMM_ERR_DEVICE: return "QGMM_ERR_DEVICE";
    case QGMM_ERR_BAD_OFFSETS: return "QGMM_ERR_BAD_OFFSETS";
    case QGMM_ERR_INTERNAL: return "QGMM_ERR_INTERNAL";
    }
    return "QGMM_ERR_UNKNOWN";
}

size_t qgmm_dtype_size(qgmm_dtype t)
{
    switch (t) {
    case QGMM_F32: case QGMM_I32: return 4;
    case QGMM_BF16: case QGMM_F16: return 2;
    case QGMM_F8E4M3FN: case QGMM_F8E4M3FNUZ: case QGMM_F8E5M2: case QGMM_E8M0: case QGMM_U8:
        return 1;
    default: return 0;
    }
}

const char *qgmm_dtype_name(qgmm_dtype t)
{
    switch (t) {
    case QGMM_F32: return "f32";
    case QGMM_BF16: return "bf16";
    case QGMM_F16: return "f16";
    case QGMM_F8E4M3FN: return "f8e4m3fn";
    case QGMM_F8E4M3FNUZ: return "f8e4m3fnuz";
    case QGMM_F8E5M2: return "f8e5m2";
    case QGMM_E8M0: return "e8m0";
    case QGMM_I32: return "i32";
    case QGMM_U8: return "u8";
    default: return "invalid";
    }
}

int qgmm_dtype_is_fp8(qgmm_dtype t)
{
    return t == QGMM_F8E4M3FN || t == QGMM_F8E4M3FNUZ || t == QGMM_F8E5M2;
}

/* Every message is written to the calling thread's copy first, then mirrored into the
 * context: the thread's copy is its own even when threads share a context. The API treats
 * the context as the owner of its error text even through a const pointer. */
static qgmm_status mirror(const qgmm_context *cctx, qgmm_status s)
{
    qgmm_context *ctx = (qgmm_context *)cctx;
    if (ctx) memcpy(ctx->last_error, tls_error, strlen(tls_error) + 1);
    return s;
}

qgmm_status qgmm_set_error(const qgmm_context *ctx, qgmm_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error, sizeof tls_error, fmt, ap);
    va_end(ap);
    return mirror(ctx, s);
}

const char *qgmm_last_error(const qgmm_context *ctx)
{
    return ctx ? ctx->last_error : tls_error;
}

void qgmm_clear_error(const qgmm_context *ctx)
{
    tls_error[0] = 0;
    mirror(ctx, QGMM_OK);
}

qgmm_status qgmm_error_append(qgmm_context *ctx, qgmm_status s, const char *fmt, ...)
{
    const size_t n = strlen(tls_error);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_error + n, sizeof tls_error - n, fmt, ap);
    va_end(ap);
    return mirror(ctx, s);
}

qgmm_status qgmm_error_prefix(qgmm_context *ctx, qgmm_status s, const char *fmt, ...)
{
    char msg[QGMM_ERROR_CAP];
    snprintf(msg, sizeof msg, "%s", tls_error);
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(tls_error, sizeof tls_error, fmt, ap);
    va_end(ap);
    if (n >= 0 && n < QGMM_ERROR_CAP) snprintf(tls_error + n, (size_t)(QGMM_ERROR_CAP - n), "%s", msg);
    return mirror(ctx, s);
}
