/*
 * emu_backend.cpp — libqgmm-hipemu.so: the HIP plugin's ops with the device replaced by the
 * host emulation (hip_emu.h), so the conformance suite can run them on any machine:
 *   casts/layouts/padding: the shared launchers (backends/cuda_hip/cast_*.cu, layout_*.cu)
 *     and kernels, launches rewritten by emu_launchers.py, 64-wide waves;
 *   grouped GEMM: gemm_build.cpp + the gemm_mfma.hip kernel with the MFMA lane model;
 *     QGMM_HIPEMU_ARCH=gfx90a|gfx942 (default gfx942) picks the path as the real plugin does.
 * Buffers are host memory; every op runs to completion before it returns.
 * A test instrument, not a backend to use: `QGMM_EXTRA_BACKENDS=hipemu`.
 */
#include "cuda_internal.h"
#include "hip_gemm.h"

#include "../gemm_mfma.hip"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the services the shared launchers call (backends/cuda_hip/cuda_internal.h) */
extern "C" qgmm_status qgmm_cuda_check(const qgmm_context *ctx, cudaError_t e, const char *what)
{
    return e == 0 ? QGMM_OK : qgmm_set_error(ctx, QGMM_ERR_DEVICE, "hipemu: %s failed (%d)", what, e);
}
extern "C" qgmm_status qgmm_cuda_launch_check(const qgmm_context *ctx, const char *kernel)
{
    (void)ctx; (void)kernel;
    return QGMM_OK;
}
extern "C" qgmm_status qgmm_cuda_enter(const qgmm_context *ctx)
{
    (void)ctx;
    return QGMM_OK;
}
extern "C" void *qgmm_cuda_scratch(qgmm_context *ctx, size_t bytes)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    if (bytes == 0) bytes = 256;
    if (c->scratch && c->scratch_bytes >= bytes) return c->scratch;
    free(c->scratch); /* launches are synchronous here: nothing still uses it */
    c->scratch = aligned_alloc(256, (bytes + 255) / 256 * 256);
    c->scratch_bytes = c->scratch ? bytes : 0;
    if (!c->scratch) qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hipemu: scratch of %zu bytes", bytes);
    return c->scratch;
}
extern "C" unsigned qgmm_cuda_grid(const qgmm_context *ctx, int64_t work_blocks, int threads, int per_cu)
{
    (void)threads;
    const int64_t cap = (int64_t)qgmm_cuda_ctx_of(ctx)->sm_count * (per_cu > 0 ? per_cu : 1);
    const int64_t n = work_blocks < cap ? work_blocks : cap;
    return (unsigned)(n < 1 ? 1 : n);
}
/* ---- contexts, buffers, events over host memory */
static int emu_device_count(void) { return 1; }
static qgmm_status emu_context_create(qgmm_context *ctx, int device, void *stream, qgmm_backend_ctx **out)
{
    (void)stream;
    if (device != 0) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "hipemu: device = %d, only 0 exists", device);
    /* the emulated arch, read here once: it fixes the GEMM path for the context's life */
    const char *e = getenv("QGMM_HIPEMU_ARCH");
    if (e && e[0] && strcmp(e, "gfx90a") && strcmp(e, "gfx942"))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "hipemu: QGMM_HIPEMU_ARCH=\"%s\": expected gfx90a or gfx942", e);
    const int arch = e && !strcmp(e, "gfx90a") ? 0x90a : 0x942;
    qgmm_cuda_ctx *c = (qgmm_cuda_ctx *)calloc(1, sizeof *c);
    if (!c) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hipemu: context");
    c->sm_count = 2; /* a small grid: the grid-stride loops and the persistent GEMM loop get exercised */
    c->cc_major = arch >> 8;
    c->cc_minor = arch & 0xFF;
    c->status_dev = (uint32_t *)calloc(1, sizeof(uint32_t));
    snprintf(c->device_name, sizeof c->device_name, "host emulation of gfx%x", arch);
    *out = c;
    return QGMM_OK;
}
static void emu_context_destroy(qgmm_backend_ctx *b)
{
    qgmm_cuda_ctx *c = (qgmm_cuda_ctx *)b;
    if (!c) return;
    free(c->scratch);
    free(c->status_dev);
    free(c);
}
static void emu_context_describe(qgmm_backend_ctx *b, char *out, size_t cap)
{
    const qgmm_cuda_ctx *c = (const qgmm_cuda_ctx *)b;
    snprintf(out, cap, "hipemu: %s, 64-wide waves, one pthread per work-item; grouped GEMM: %s", c->device_name,
             qgmm_hip_gemm_path_name((c->cc_major << 8) | c->cc_minor));
}
static qgmm_status emu_synchronize(qgmm_context *ctx, uint32_t *st)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    *st = *c->status_dev;
    *c->status_dev = 0;
    return QGMM_OK;
}
static qgmm_status emu_buffer_alloc(qgmm_context *ctx, size_t bytes, qgmm_backend_buf **out, void **native)
{
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hipemu: buffer handle");
    b->ptr = bytes ? aligned_alloc(256, (bytes + 255) / 256 * 256) : NULL;
    if (bytes && !b->ptr) { free(b); return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hipemu: %zu bytes", bytes); }
    b->bytes = bytes;
    b->owned = 1;
    *out = b;
    *native = b->ptr;
    return QGMM_OK;
}
static qgmm_status emu_buffer_wrap(qgmm_context *ctx, void *native, size_t bytes, qgmm_backend_buf **out)
{
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hipemu: buffer handle");
    b->ptr = native;
    b->bytes = bytes;
    *out = b;
    return QGMM_OK;
}
static void emu_buffer_free(qgmm_context *ctx, qgmm_backend_buf *bb, int owned)
{
    (void)ctx;
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)bb;
    if (b && owned && b->owned) free(b->ptr);
    free(b);
}
static char *emu_at(qgmm_backend_buf *b, size_t off) { return (char *)((qgmm_cuda_buf *)b)->ptr + off; }
static qgmm_status emu_upload(qgmm_context *, qgmm_backend_buf *b, size_t off, const void *src, size_t n)
{
    if (n) memcpy(emu_at(b, off), src, n);
    return QGMM_OK;
}
static qgmm_status emu_download(qgmm_context *, qgmm_backend_buf *b, size_t off, void *dst, size_t n)
{
    if (n) memcpy(dst, emu_at(b, off), n);
    return QGMM_OK;
}
static qgmm_status emu_fill(qgmm_context *, qgmm_backend_buf *b, size_t off, size_t n, uint8_t v)
{
    if (n) memset(emu_at(b, off), v, n);
    return QGMM_OK;
}
static qgmm_status emu_copy(qgmm_context *, qgmm_backend_buf *d, size_t doff, qgmm_backend_buf *s, size_t soff, size_t n)
{
    if (n) memcpy(emu_at(d, doff), emu_at(s, soff), n);
    return QGMM_OK;
}
static qgmm_status emu_event_create(qgmm_context *ctx, qgmm_backend_event **out)
{
    double *t = (double *)calloc(1, sizeof(double));
    if (!t) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hipemu: event");
    *out = t;
    return QGMM_OK;
}
static qgmm_status emu_event_record(qgmm_context *, qgmm_backend_event *ev)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *(double *)ev = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
    return QGMM_OK;
}
static qgmm_status emu_event_elapsed(qgmm_context *, qgmm_backend_event *a, qgmm_backend_event *b, double *ms)
{
    *ms = *(double *)b - *(double *)a;
    return QGMM_OK;
}
static void emu_event_destroy(qgmm_context *, qgmm_backend_event *ev) { free(ev); }

/* ---- the GEMM slot: the real plugin's choice, the kernel under the emulation */
extern "C" int qgmm_hip_arch_built(int arch) { return arch == 0x90a || arch == 0x942; }
extern "C" const char *qgmm_hip_gemm_path_name(int arch)
{
    return arch == 0x942 ? "MFMA (fp8 e4m3fnuz native, others via bf16)" : "MFMA bf16 (fp8 widened in LDS)";
}
struct emu_gemm { const qgmm_hg_problem *p; int fp8; };
static void emu_gemm_body(void *v)
{
    const emu_gemm *g = (const emu_gemm *)v;
    if (g->fp8) qgmm_hg_kernel<true>(*g->p);
    else qgmm_hg_kernel<false>(*g->p);
}
static qgmm_status emu_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *d)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_hg_problem p;
    const qgmm_status st = qgmm_hip_gemm_build(ctx, d, c->status_dev, &p);
    if (st != QGMM_OK) return st;
    emu_gemm g = {&p, c->cc_minor == 0x42 && d->a.at.dtype == QGMM_F8E4M3FNUZ && d->b.at.dtype == QGMM_F8E4M3FNUZ};
    hg_emu_run(3, emu_gemm_body, &g);
    return QGMM_OK;
}

static qgmm_backend_vtable g_vt;

extern "C" __attribute__((visibility("default"))) const qgmm_backend_vtable *
qgmm_plugin_entry(uint32_t abi, char *reason, size_t cap)
{
    if (abi != QGMM_BACKEND_ABI_VERSION) {
        if (reason && cap) snprintf(reason, cap, "libqgmm-hipemu built for backend ABI %u, asked for %u",
                                    QGMM_BACKEND_ABI_VERSION, abi);
        return NULL;
    }
    qgmm_backend_vtable *v = &g_vt;
    memset(v, 0, sizeof *v);
    v->abi_version = QGMM_BACKEND_ABI_VERSION;
    v->name = "hipemu";
    v->device_count = emu_device_count;
    v->context_create = emu_context_create;
    v->context_destroy = emu_context_destroy;
    v->context_describe = emu_context_describe;
    v->synchronize = emu_synchronize;
    v->buffer_alloc = emu_buffer_alloc;
    v->buffer_wrap = emu_buffer_wrap;
    v->buffer_free = emu_buffer_free;
    v->buffer_upload = emu_upload;
    v->buffer_download = emu_download;
    v->buffer_fill = emu_fill;
    v->buffer_copy = emu_copy;
    v->event_create = emu_event_create;
    v->event_record = emu_event_record;
    v->event_elapsed_ms = emu_event_elapsed;
    v->event_destroy = emu_event_destroy;
    qgmm_cuda_fill_cast_ops(v);
    v->grouped_gemm = emu_grouped_gemm;
    return v;
}
