/* Buffers (device memory or wrapped native memory) and device-timestamp events. */
#include "checked.h"
#include "qgmm_internal.h"

#include <stdlib.h>
#include <string.h>

#define NEED(cond, ctx, ...) \
    do { if (!(cond)) return qgmm_set_error((ctx), QGMM_ERR_INVALID_ARGUMENT, __VA_ARGS__); } while (0)

/* The in-tree backends whose native handle is a pointer (host memory for cpu, a device
 * pointer in the unified address space for cuda and hip): two buffers of such a context
 * alias exactly when their address ranges intersect. Other handles (a VkBuffer, a
 * plugin's) are compared by identity only. */
static int native_is_address(const qgmm_context *ctx)
{
    const char *n = ctx->vt->name ? ctx->vt->name : "";
    return !strcmp(n, "cpu") || !strcmp(n, "cuda") || !strcmp(n, "hip");
}

static qgmm_status make_buffer(qgmm_context *ctx, size_t bytes, void *native, int owned,
                               qgmm_buffer **out)
{
    qgmm_buffer *b = calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a buffer handle");
    qgmm_status s;
    if (owned) s = ctx->vt->buffer_alloc(ctx, bytes, &b->impl, &b->native);
    else {
        s = ctx->vt->buffer_wrap(ctx, native, bytes, &b->impl);
        b->native = native;
    }
    if (s != QGMM_OK) { free(b); return s; }
    b->ctx = ctx;
    b->size = bytes;
    b->owned = owned;
    b->native_is_address = native_is_address(ctx);
    *out = b;
    return QGMM_OK;
}

qgmm_status qgmm_buffer_alloc(qgmm_context *ctx, size_t bytes, qgmm_buffer **out)
{
    qgmm_clear_error(ctx);
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "ctx is NULL");
    NEED(out, ctx, "out is NULL");
    if (bytes > QGMM_MAX_BUFFER_BYTES)
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY,
                              "bytes is %zu; no buffer can exceed 2^63 - 1 bytes", bytes);
    return make_buffer(ctx, bytes, NULL, 1, out);
}

qgmm_status qgmm_buffer_wrap(qgmm_context *ctx, void *native, size_t bytes, qgmm_buffer **out)
{
    qgmm_clear_error(ctx);
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "ctx is NULL");
    NEED(out, ctx, "out is NULL");
    NEED(native || bytes == 0, ctx, "native is NULL for a %zu-byte buffer", bytes);
    NEED(bytes <= QGMM_MAX_BUFFER_BYTES, ctx, "bytes is %zu; no buffer can exceed 2^63 - 1 bytes", bytes);
    if (!ctx->vt->buffer_wrap)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "backend %s cannot wrap native memory",
                              ctx->backend_name);
    return make_buffer(ctx, bytes, native, 0, out);
}

static qgmm_status check_range(const qgmm_buffer *b, size_t off, size_t bytes, const char *what)
{
    if (!b) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s is NULL", what);
    if (off > b->size || bytes > b->size - off)
        return qgmm_set_error(b->ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s range [%zu, %zu) exceeds the buffer's %zu bytes", what, off,
                              off + bytes, b->size);
    return QGMM_OK;
}

qgmm_status qgmm_buffer_upload(qgmm_buffer *buf, size_t offset, const void *src, size_t bytes)
{
    qgmm_clear_error(buf ? buf->ctx : NULL);
    qgmm_status s = check_range(buf, offset, bytes, "buf");
    if (s) return s;
    NEED(src || bytes == 0, buf->ctx, "src is NULL");
    if (bytes == 0) return QGMM_OK;
    return buf->ctx->vt->buffer_upload(buf->ctx, buf->impl, offset, src, bytes);
}

qgmm_status qgmm_buffer_download(qgmm_buffer *buf, size_t offset, void *dst, size_t bytes)
{
    qgmm_clear_error(buf ? buf->ctx : NULL);
    qgmm_status s = check_range(buf, offset, bytes, "buf");
    if (s) return s;
    NEED(dst || bytes == 0, buf->ctx, "dst is NULL");
    if (bytes == 0) return QGMM_OK;
    return buf->ctx->vt->buffer_download(buf->ctx, buf->impl, offset, dst, bytes);
}

qgmm_status qgmm_buffer_fill(qgmm_buffer *buf, size_t offset, size_t bytes, uint8_t byte)
{
    qgmm_clear_error(buf ? buf->ctx : NULL);
    qgmm_status s = check_range(buf, offset, bytes, "buf");
    if (s) return s;
    if (bytes == 0) return QGMM_OK;
    return buf->ctx->vt->buffer_fill(buf->ctx, buf->impl, offset, bytes, byte);
}

qgmm_status qgmm_buffer_copy(qgmm_buffer *dst, size_t dst_offset, const qgmm_buffer *src,
                             size_t src_offset, size_t bytes)
{
    qgmm_clear_error(dst ? dst->ctx : NULL);
    qgmm_status s = check_range(dst, dst_offset, bytes, "dst");
    if (s) return s;
    s = check_range(src, src_offset, bytes, "src");
    if (s) return s;
    NEED(dst->ctx == src->ctx, dst->ctx, "dst and src belong to different contexts");
    if (qgmm_buffer_ranges_overlap(dst, dst_offset, bytes, src, src_offset, bytes))
        return qgmm_set_error(dst->ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "dst [%zu, %zu) overlaps src [%zu, %zu) in the same memory",
                              dst_offset, dst_offset + bytes, src_offset, src_offset + bytes);
    if (bytes == 0) return QGMM_OK;
    return dst->ctx->vt->buffer_copy(dst->ctx, dst->impl, dst_offset, src->impl, src_offset, bytes);
}

int qgmm_buffer_ranges_overlap(const qgmm_buffer *a, size_t a_off, size_t a_len, const qgmm_buffer *b,
                               size_t b_off, size_t b_len)
{
    if (!a || !b || a_len == 0 || b_len == 0) return 0;
    uint64_t a0 = a_off, b0 = b_off;
    if (a != b && a->native != b->native) {
        if (!a->native_is_address || !b->native_is_address || a->ctx != b->ctx) return 0;
        a0 += (uintptr_t)a->native;
        b0 += (uintptr_t)b->native;
    }
    /* offsets and lengths are below 2^63 and addresses far below: the ends do not wrap */
    return a0 < b0 + b_len && b0 < a0 + a_len;
}

size_t qgmm_buffer_size(const qgmm_buffer *buf) { return buf ? buf->size : 0; }
void *qgmm_buffer_native(const qgmm_buffer *buf) { return buf ? buf->native : NULL; }
qgmm_backend_buf *qgmm_buffer_impl(const qgmm_buffer *buf) { return buf ? buf->impl : NULL; }

void qgmm_buffer_free(qgmm_buffer *buf)
{
    if (!buf) return;
    /* The backend waits for pending work on the buffer (cuda synchronizes its stream,
     * vulkan waits for its queue; cpu ops are synchronous) without consuming the status
     * word, which stays for qgmm_synchronize. */
    buf->ctx->vt->buffer_free(buf->ctx, buf->impl, buf->owned);
    free(buf);
}

void *qgmm_tensor_data(const qgmm_tensor *t)
{
    if (!t || !t->buffer || !t->buffer->native) return NULL;
    return (char *)t->buffer->native + t->offset;
}

void *qgmm_ref_data(const qgmm_ref *r)
{
    if (!r || !r->buffer || !r->buffer->native) return NULL;
    return (char *)r->buffer->native + r->offset;
}

qgmm_ref qgmm_ref_of(const qgmm_tensor *t)
{
    qgmm_ref r = {NULL, 0, QGMM_DTYPE_INVALID};
    if (t && t->buffer) {
        r.buffer = t->buffer;
        r.offset = t->offset;
        r.dtype = t->dtype;
    }
    return r;
}

/* ---------------------------------------------------------------- events */
qgmm_status qgmm_event_create(qgmm_context *ctx, qgmm_event **out)
{
    qgmm_clear_error(ctx);
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "ctx is NULL");
    NEED(out, ctx, "out is NULL");
    qgmm_event *e = calloc(1, sizeof *e);
    if (!e) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for an event");
    qgmm_status s = ctx->vt->event_create(ctx, &e->impl);
    if (s) { free(e); return s; }
    e->ctx = ctx;
    *out = e;
    return QGMM_OK;
}

qgmm_status qgmm_event_record(qgmm_event *ev)
{
    qgmm_clear_error(ev ? ev->ctx : NULL);
    if (!ev) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "ev is NULL");
    qgmm_status s = ev->ctx->vt->event_record(ev->ctx, ev->impl);
    if (s == QGMM_OK) ev->recorded = 1;
    return s;
}

qgmm_status qgmm_event_elapsed_ms(qgmm_event *start, qgmm_event *end, double *ms)
{
    qgmm_clear_error(start ? start->ctx : NULL);
    if (!start || !end) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s is NULL",
                                              !start ? "start" : "end");
    NEED(ms, start->ctx, "ms is NULL");
    NEED(start->ctx == end->ctx, start->ctx, "start and end belong to different contexts");
    NEED(start->recorded && end->recorded, start->ctx, "%s was never recorded",
         !start->recorded ? "start" : "end");
    return start->ctx->vt->event_elapsed_ms(start->ctx, start->impl, end->impl, ms);
}

void qgmm_event_destroy(qgmm_event *ev)
{
    if (!ev) return;
    ev->ctx->vt->event_destroy(ev->ctx, ev->impl);
    free(ev);
}
