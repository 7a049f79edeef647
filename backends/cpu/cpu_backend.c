/*
 * The CPU reference backend: host memory buffers, synchronous ops, host-clock events,
 * and a status word with the same deferred semantics as a GPU's (bad offsets are reported
 * at qgmm_synchronize), so every backend behaves alike under the conformance suite.
 */
#define _POSIX_C_SOURCE 200809L
#include "checked.h"
#include "cpu_ep.h"
#include "cpu_ops.h"
#include "qgmm_fp8_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct cpu_ctx {
    uint32_t status;
} cpu_ctx;

typedef struct cpu_event {
    double t_ms;
} cpu_event;

void qgmm_cpu_raise_status(qgmm_context *ctx, uint32_t bits)
{
    cpu_ctx *c = qgmm_context_impl(ctx);
#ifdef _OPENMP
#pragma omp atomic
#endif
    c->status |= bits;
}

float qgmm_cpu_load_at(const void *data, qgmm_dtype dtype, int64_t i)
{
    const char *base = (const char *)data;
    switch (dtype) {
    case QGMM_F32: return ((const float *)base)[i];
    case QGMM_BF16: return qgmm_bf16_to_f32(((const uint16_t *)base)[i]);
    case QGMM_F8E4M3FN: case QGMM_F8E4M3FNUZ: case QGMM_F8E5M2:
        return qgmm_fp8_to_f32(((const uint8_t *)base)[i], (int)dtype);
    default: return 0.0f;
    }
}

void qgmm_cpu_store_at(void *data, qgmm_dtype dtype, int64_t i, float v)
{
    char *base = (char *)data;
    switch (dtype) {
    case QGMM_F32: ((float *)base)[i] = v; break;
    case QGMM_BF16: ((uint16_t *)base)[i] = qgmm_f32_to_bf16(v); break;
    default: break;
    }
}

float qgmm_cpu_load_f32(const qgmm_tensor *t, int64_t i) { return qgmm_cpu_load_at(qgmm_tensor_data(t), t->dtype, i); }

void qgmm_cpu_store_f32(const qgmm_tensor *t, int64_t i, float v) { qgmm_cpu_store_at(qgmm_tensor_data(t), t->dtype, i, v); }

static int cpu_device_count(void) { return 1; }

static qgmm_status cpu_context_create(qgmm_context *ctx, int device, void *stream,
                                      qgmm_backend_ctx **out)
{
    (void)device;
    if (stream)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "the cpu backend has no streams to adopt");
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a cpu context");
    *out = c;
    return QGMM_OK;
}

static void cpu_context_destroy(qgmm_backend_ctx *b) { free(b); }

static void cpu_context_describe(qgmm_backend_ctx *b, char *out, size_t cap)
{
    (void)b;
    int threads = 1;
#ifdef _OPENMP
    extern int omp_get_max_threads(void);
    threads = omp_get_max_threads();
#endif
    snprintf(out, cap, "cpu reference (C11, %d thread%s%s)", threads, threads == 1 ? "" : "s",
#ifdef _OPENMP
             ", OpenMP"
#else
             ""
#endif
    );
}

static qgmm_status cpu_synchronize(qgmm_context *ctx, uint32_t *st)
{
    cpu_ctx *c = qgmm_context_impl(ctx);
    *st = c->status;
    c->status = 0;
    return QGMM_OK;
}

static qgmm_status cpu_buffer_alloc(qgmm_context *ctx, size_t bytes, qgmm_backend_buf **out,
                                    void **native)
{
    /* 256-byte alignment, as documented; at least one byte so the pointer is unique. */
    size_t n = 0;
    void *p = qgmm_round_up_size(bytes ? bytes : 1, 256, &n) ? aligned_alloc(256, n) : NULL;
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "could not allocate %zu host bytes", bytes);
    *out = p;
    *native = p;
    return QGMM_OK;
}

static qgmm_status cpu_buffer_wrap(qgmm_context *ctx, void *native, size_t bytes,
                                   qgmm_backend_buf **out)
{
    (void)ctx;
    (void)bytes;
    *out = native;
    return QGMM_OK;
}

static void cpu_buffer_free(qgmm_context *ctx, qgmm_backend_buf *b, int owned)
{
    (void)ctx;
    if (owned) free(b);
}

static qgmm_status cpu_upload(qgmm_context *ctx, qgmm_backend_buf *b, size_t off, const void *src,
                              size_t bytes)
{
    (void)ctx;
    memcpy((char *)b + off, src, bytes);
    return QGMM_OK;
}

static qgmm_status cpu_download(qgmm_context *ctx, qgmm_backend_buf *b, size_t off, void *dst,
                                size_t bytes)
{
    (void)ctx;
    memcpy(dst, (const char *)b + off, bytes);
    return QGMM_OK;
}

static qgmm_status cpu_fill(qgmm_context *ctx, qgmm_backend_buf *b, size_t off, size_t bytes,
                            uint8_t byte)
{
    (void)ctx;
    memset((char *)b + off, byte, bytes);
    return QGMM_OK;
}

static qgmm_status cpu_copy(qgmm_context *ctx, qgmm_backend_buf *dst, size_t doff,
                            qgmm_backend_buf *src, size_t soff, size_t bytes)
{
    (void)ctx;
    memcpy((char *)dst + doff, (const char *)src + soff, bytes);
    return QGMM_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static qgmm_status cpu_event_create(qgmm_context *ctx, qgmm_backend_event **out)
{
    cpu_event *e = calloc(1, sizeof *e);
    if (!e) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for an event");
    *out = e;
    return QGMM_OK;
}

static qgmm_status cpu_event_record(qgmm_context *ctx, qgmm_backend_event *ev)
{
    (void)ctx;
    ((cpu_event *)ev)->t_ms = now_ms();
    return QGMM_OK;
}

static qgmm_status cpu_event_elapsed(qgmm_context *ctx, qgmm_backend_event *a, qgmm_backend_event *b,
                                     double *ms)
{
    (void)ctx;
    *ms = ((cpu_event *)b)->t_ms - ((cpu_event *)a)->t_ms;
    return QGMM_OK;
}

static void cpu_event_destroy(qgmm_context *ctx, qgmm_backend_event *ev)
{
    (void)ctx;
    free(ev);
}

static const qgmm_backend_vtable cpu_vtable = {
    .abi_version = QGMM_BACKEND_ABI_VERSION,
    .name = "cpu",
    .device_count = cpu_device_count,
    .context_create = cpu_context_create,
    .context_destroy = cpu_context_destroy,
    .context_describe = cpu_context_describe,
    .synchronize = cpu_synchronize,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_wrap = cpu_buffer_wrap,
    .buffer_free = cpu_buffer_free,
    .buffer_upload = cpu_upload,
    .buffer_download = cpu_download,
    .buffer_fill = cpu_fill,
    .buffer_copy = cpu_copy,
    .event_create = cpu_event_create,
    .event_record = cpu_event_record,
    .event_elapsed_ms = cpu_event_elapsed,
    .event_destroy = cpu_event_destroy,
    .ep_route = qgmm_cpu_ep_route,
    .ep_layout = qgmm_cpu_ep_layout,
    .ep_pack = qgmm_cpu_ep_pack,
    .ep_unpack = qgmm_cpu_ep_unpack,
    .cast = qgmm_cpu_cast,
    .scales_to_blocked = qgmm_cpu_scales_to_blocked,
    .scales_from_blocked = qgmm_cpu_scales_from_blocked,
    .pad_token_groups = qgmm_cpu_pad_token_groups,
    .unpad_token_groups = qgmm_cpu_unpad_token_groups,
    .group_row_ids = qgmm_cpu_group_row_ids,
    .grouped_gemm = qgmm_cpu_grouped_gemm,
};

const qgmm_backend_vtable *qgmm_cpu_backend_vtable(void) { return &cpu_vtable; }
