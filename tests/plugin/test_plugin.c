/*
 * libqgmm-testplugin.so: a backend plugin used only by test_plugins to exercise the
 * registry's dlopen path. Its behaviour is picked by QGMM_TESTPLUGIN_MODE:
 *   ok (default)  host-memory buffers, events, and one op (group_row_ids); every other
 *                 op slot is NULL so the API must report QGMM_ERR_UNSUPPORTED
 *   decline       the entry returns NULL with a reason (as a plugin without its runtime)
 *   badabi        returns a vtable of a different ABI version
 *   nodevice      loads but reports zero devices
 */
#define _POSIX_C_SOURCE 200809L
#include "qgmm_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tp_ctx { uint32_t status; } tp_ctx;

static int tp_count(void)
{
    const char *m = getenv("QGMM_TESTPLUGIN_MODE");
    return (m && strcmp(m, "nodevice") == 0) ? 0 : 2;
}

static qgmm_status tp_ctx_create(qgmm_context *ctx, int dev, void *stream, qgmm_backend_ctx **out)
{
    (void)dev;
    (void)stream;
    tp_ctx *c = calloc(1, sizeof *c);
    if (!c) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "oom");
    *out = c;
    return QGMM_OK;
}
static void tp_ctx_destroy(qgmm_backend_ctx *c) { free(c); }
static void tp_describe(qgmm_backend_ctx *c, char *out, size_t cap) { (void)c; snprintf(out, cap, "testplugin (host memory)"); }
static qgmm_status tp_sync(qgmm_context *ctx, uint32_t *st)
{
    tp_ctx *c = qgmm_context_impl(ctx);
    *st = c->status;
    c->status = 0;
    return QGMM_OK;
}
static qgmm_status tp_alloc(qgmm_context *ctx, size_t n, qgmm_backend_buf **out, void **native)
{
    void *p = malloc(n ? n : 1);
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "oom");
    *out = p;
    *native = p;
    return QGMM_OK;
}
static void tp_free(qgmm_context *ctx, qgmm_backend_buf *b, int owned) { (void)ctx; if (owned) free(b); }
static qgmm_status tp_up(qgmm_context *c, qgmm_backend_buf *b, size_t o, const void *s, size_t n) { (void)c; memcpy((char *)b + o, s, n); return QGMM_OK; }
static qgmm_status tp_down(qgmm_context *c, qgmm_backend_buf *b, size_t o, void *d, size_t n) { (void)c; memcpy(d, (char *)b + o, n); return QGMM_OK; }
static qgmm_status tp_fill(qgmm_context *c, qgmm_backend_buf *b, size_t o, size_t n, uint8_t v) { (void)c; memset((char *)b + o, v, n); return QGMM_OK; }
static qgmm_status tp_copy(qgmm_context *c, qgmm_backend_buf *d, size_t doff, qgmm_backend_buf *s, size_t soff, size_t n)
{
    (void)c;
    memcpy((char *)d + doff, (char *)s + soff, n);
    return QGMM_OK;
}
static qgmm_status tp_ev_create(qgmm_context *c, qgmm_backend_event **out)
{
    double *t = calloc(1, sizeof *t);
    if (!t) return qgmm_set_error(c, QGMM_ERR_OUT_OF_MEMORY, "oom");
    *out = t;
    return QGMM_OK;
}
static qgmm_status tp_ev_record(qgmm_context *c, qgmm_backend_event *e)
{
    (void)c;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)e = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
    return QGMM_OK;
}
static qgmm_status tp_ev_elapsed(qgmm_context *c, qgmm_backend_event *a, qgmm_backend_event *b, double *ms)
{
    (void)c;
    *ms = *(double *)b - *(double *)a;
    return QGMM_OK;
}
static void tp_ev_destroy(qgmm_context *c, qgmm_backend_event *e) { (void)c; free(e); }

/* The one op: row r belongs to the group whose [start, end) holds it, -1 past the end. */
static qgmm_status tp_row_ids(qgmm_context *ctx, const qgmm_tensor *offs, const qgmm_tensor *padded,
                              const qgmm_tensor *ids)
{
    if (padded && padded->buffer)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "testplugin: padded_offs not supported");
    const int32_t *o = qgmm_tensor_data(offs);
    int32_t *r = qgmm_tensor_data(ids);
    const int64_t G = offs->shape[0], R = ids->shape[0];
    int32_t prev = 0;
    for (int64_t g = 0; g < G; ++g) {
        if (o[g] < prev || o[g] > R) {
            ((tp_ctx *)qgmm_context_impl(ctx))->status |= QGMM_DEVICE_STATUS_BAD_OFFSETS;
            return QGMM_OK;
        }
        prev = o[g];
    }
    int64_t g = 0;
    for (int64_t i = 0; i < R; ++i) {
        while (g < G && i >= o[g]) ++g;
        r[i] = g < G ? (int32_t)g : -1;
    }
    return QGMM_OK;
}

static qgmm_backend_vtable tp_vtable = {
    .abi_version = QGMM_BACKEND_ABI_VERSION,
    .name = "testplugin",
    .device_count = tp_count,
    .context_create = tp_ctx_create,
    .context_destroy = tp_ctx_destroy,
    .context_describe = tp_describe,
    .synchronize = tp_sync,
    .buffer_alloc = tp_alloc,
    .buffer_wrap = NULL,
    .buffer_free = tp_free,
    .buffer_upload = tp_up,
    .buffer_download = tp_down,
    .buffer_fill = tp_fill,
    .buffer_copy = tp_copy,
    .event_create = tp_ev_create,
    .event_record = tp_ev_record,
    .event_elapsed_ms = tp_ev_elapsed,
    .event_destroy = tp_ev_destroy,
    .group_row_ids = tp_row_ids,
};

__attribute__((visibility("default"))) const qgmm_backend_vtable *
qgmm_plugin_entry(uint32_t abi, char *reason, size_t cap)
{
    const char *m = getenv("QGMM_TESTPLUGIN_MODE");
    if (m && strcmp(m, "decline") == 0) {
        snprintf(reason, cap, "testplugin: libfake-runtime.so.1 not found");
        return NULL;
    }
    if (abi != QGMM_BACKEND_ABI_VERSION) {
        snprintf(reason, cap, "testplugin built for ABI %u", QGMM_BACKEND_ABI_VERSION);
        return NULL;
    }
    if (m && strcmp(m, "badabi") == 0) tp_vtable.abi_version = QGMM_BACKEND_ABI_VERSION + 100;
    return &tp_vtable;
}
