/* Contexts: one backend, one device, one stream/queue. */
#include "qgmm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_status create(const char *backend, int device, void *stream, int adopt,
                          qgmm_context **out)
{
    if (!out) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "out is NULL");
    if (!backend) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "backend is NULL");
    if (device < 0)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "device is %d; must be >= 0", device);
    /* NULL is a valid native stream (the runtime's default stream): the backend is told
     * apart from "create your own" by a distinct value. */
    if (adopt && !stream) stream = QGMM_NATIVE_STREAM_DEFAULT;
    char reason[512];
    const qgmm_backend_vtable *vt = qgmm_registry_find(backend, reason, sizeof reason);
    if (!vt)
        return qgmm_set_error(NULL, QGMM_ERR_BACKEND_UNAVAILABLE, "backend \"%s\" is unavailable: %s",
                              backend, reason);
    int n = vt->device_count();
    if (device >= n)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                              "device is %d but backend \"%s\" has %d device(s)", device, backend, n);
    qgmm_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a context");
    ctx->vt = vt;
    snprintf(ctx->backend_name, sizeof ctx->backend_name, "%s", vt->name);
    qgmm_status s = vt->context_create(ctx, device, stream, &ctx->impl);
    if (s != QGMM_OK) {
        qgmm_set_error(NULL, s, "backend \"%s\" could not create a context on device %d: %s",
                       backend, device, ctx->last_error[0] ? ctx->last_error : qgmm_status_string(s));
        free(ctx);
        return s;
    }
    if (vt->context_describe) vt->context_describe(ctx->impl, ctx->describe, sizeof ctx->describe);
    else snprintf(ctx->describe, sizeof ctx->describe, "%s device %d", vt->name, device);
    *out = ctx;
    return QGMM_OK;
}

qgmm_status qgmm_context_create(const char *backend, int device, qgmm_context **out)
{
    return create(backend, device, NULL, 0, out);
}

qgmm_status qgmm_context_create_with_stream(const char *backend, int device, void *native_stream,
                                            qgmm_context **out)
{
    if (backend && (strcmp(backend, "cpu") == 0 || strcmp(backend, "vulkan") == 0))
        return qgmm_set_error(NULL, QGMM_ERR_UNSUPPORTED,
                              "backend \"%s\" has no native streams to adopt", backend);
    return create(backend, device, native_stream, 1, out);
}

void qgmm_context_destroy(qgmm_context *ctx)
{
    if (!ctx) return;
    uint32_t st = 0;
    ctx->vt->synchronize(ctx, &st);
    ctx->vt->context_destroy(ctx->impl);
    free(ctx);
}

qgmm_status qgmm_synchronize(qgmm_context *ctx)
{
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "ctx is NULL");
    uint32_t st = 0;
    qgmm_status s = ctx->vt->synchronize(ctx, &st);
    if (s != QGMM_OK) return s;
    if (st & QGMM_DEVICE_STATUS_BAD_OFFSETS)
        return qgmm_set_error(ctx, QGMM_ERR_BAD_OFFSETS,
                              "an op since the last synchronize read invalid group offsets "
                              "(decreasing, negative, past the tensor extent, or a group size "
                              "not a multiple the op requires); that op wrote nothing");
    return QGMM_OK;
}

const char *qgmm_context_describe(const qgmm_context *ctx) { return ctx ? ctx->describe : ""; }
const char *qgmm_context_backend_name(const qgmm_context *ctx) { return ctx ? ctx->backend_name : ""; }
qgmm_backend_ctx *qgmm_context_impl(const qgmm_context *ctx) { return ctx ? ctx->impl : NULL; }
