/*
 * hip_backend.cpp — the HIP plugin's entry point and its non-op vtable slots (devices,
 * contexts on an own or adopted hipStream_t, buffers, events, synchronize with the device
 * status word), plus the launch services that the shared cast/layout launchers call
 * (backends/cuda_hip/cuda_internal.h: qgmm_cuda_check, _enter, _scratch, _grid ...),
 * implemented here over the HIP runtime. Those launchers are compiled as HIP through
 * backends/hip/shim/cuda_runtime.h; the context they see is a qgmm_cuda_ctx whose
 * `stream` is a hipStream_t.
 *
 * The plugin links libamdhip64. On a machine without ROCm the dynamic loader refuses the
 * plugin and libqgmm lists "hip" as unavailable with the loader's message; with ROCm but
 * no AMD GPU (no /dev/kfd), qgmm_plugin_entry returns NULL with "no HIP device".
 */
#include "cuda_internal.h"
#include "hip_gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ launch services */

extern "C" qgmm_status qgmm_cuda_check(const qgmm_context *ctx, cudaError_t e, const char *what)
{
    if (e == hipSuccess) return QGMM_OK;
    const qgmm_status s = e == hipErrorOutOfMemory ? QGMM_ERR_OUT_OF_MEMORY : QGMM_ERR_DEVICE;
    if (e == hipErrorNoBinaryForGpu || e == hipErrorInvalidDeviceFunction)
        return qgmm_set_error(ctx, s, "hip: %s failed: %s — this libqgmm-hip.so has no code object for "
                              "the device (built for " QGMM_HIP_ARCHS_STRING ")", what, hipGetErrorString(e));
    return qgmm_set_error(ctx, s, "hip: %s failed: %s (%s)", what, hipGetErrorString(e), hipGetErrorName(e));
}

extern "C" qgmm_status qgmm_cuda_launch_check(const qgmm_context *ctx, const char *kernel)
{
    return qgmm_cuda_check(ctx, hipGetLastError(), kernel);
}

extern "C" qgmm_status qgmm_cuda_enter(const qgmm_context *ctx)
{
    const int want = qgmm_cuda_ctx_of(ctx)->device;
    int cur = -1;
    if (hipGetDevice(&cur) == hipSuccess && cur == want) return QGMM_OK;
    return qgmm_cuda_check(ctx, hipSetDevice(want), "hipSetDevice");
}

/* Stream-ordered scratch: the old area is released after the work queued before it. */
extern "C" void *qgmm_cuda_scratch(qgmm_context *ctx, size_t bytes)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const size_t need = bytes ? bytes : 256;
    if (c->scratch && c->scratch_bytes >= need) return c->scratch;
    if (c->scratch) (void)hipFreeAsync(c->scratch, c->stream);
    c->scratch = NULL;
    c->scratch_bytes = 0;
    void *p = NULL;
    const size_t grown = need + need / 4;
    const hipError_t e = hipMallocAsync(&p, grown, c->stream);
    if (e != hipSuccess) {
        qgmm_cuda_check(ctx, e, "hipMallocAsync(scratch)");
        return NULL;
    }
    c->scratch = p;
    c->scratch_bytes = grown;
    return p;
}

/* Grid-stride launches: `per_cu` workgroups per compute unit at most, never more than
 * the work needs. */
extern "C" unsigned qgmm_cuda_grid(const qgmm_context *ctx, int64_t work_blocks, int threads, int per_cu)
{
    (void)threads;
    const int64_t cap = (int64_t)qgmm_cuda_ctx_of(ctx)->sm_count * (per_cu > 0 ? per_cu : 1);
    int64_t n = work_blocks < cap ? work_blocks : cap;
    if (n < 1) n = 1;
    return (unsigned)(n > 0x7FFFFFFF ? 0x7FFFFFFF : n);
}

/* ------------------------------------------------------------------ devices, contexts */

static int hip_device_count(void)
{
    int n = 0;
    return hipGetDeviceCount(&n) == hipSuccess ? n : 0;
}

/* "gfx942:sramecc+:xnack-" -> 0x942; 0 when not a gfx name. */
static int hip_arch_code(const char *gcn)
{
    if (strncmp(gcn, "gfx", 3) != 0) return 0;
    return (int)strtol(gcn + 3, NULL, 16);
}

static qgmm_status hip_context_create(qgmm_context *ctx, int device, void *native_stream,
                                      qgmm_backend_ctx **out)
{
    const int n = hip_device_count();
    if (device < 0 || device >= n)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "hip: device = %d, but %d HIP device(s) are present", device, n);
    hipDeviceProp_t prop;
    qgmm_status st = qgmm_cuda_check(ctx, hipSetDevice(device), "hipSetDevice");
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, hipGetDeviceProperties(&prop, device), "hipGetDeviceProperties");
    if (st != QGMM_OK) return st;
    const int arch = hip_arch_code(prop.gcnArchName);
    if (!qgmm_hip_arch_built(arch))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "hip: device %d is %s (%s); this libqgmm-hip.so holds code for "
                              QGMM_HIP_ARCHS_STRING " only (rebuild with QGMM_HIP_ARCHS)",
                              device, prop.name, prop.gcnArchName);
    qgmm_cuda_ctx *c = (qgmm_cuda_ctx *)calloc(1, sizeof *c);
    if (!c) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hip: context allocation");
    c->device = device;
    c->sm_count = prop.multiProcessorCount;
    c->cc_major = arch >> 8;      /* gfx9.. */
    c->cc_minor = arch & 0xFF;    /* 0x0a (gfx90a), 0x42 (gfx942) */
    c->l2_bytes = (size_t)prop.l2CacheSize;
    c->smem_per_block_optin = prop.sharedMemPerBlock;
    c->smem_per_sm = prop.maxSharedMemoryPerMultiProcessor;
    c->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    snprintf(c->device_name, sizeof c->device_name, "%s [%s]", prop.name, prop.gcnArchName);
    if (native_stream) {
        /* QGMM_NATIVE_STREAM_DEFAULT: the caller's NULL stream, adopted as NULL */
        c->stream = native_stream == QGMM_NATIVE_STREAM_DEFAULT ? (hipStream_t)0
                                                                : (hipStream_t)native_stream;
    } else {
        st = qgmm_cuda_check(ctx, hipStreamCreateWithFlags(&c->stream, hipStreamNonBlocking), "hipStreamCreate");
        c->owns_stream = st == QGMM_OK;
    }
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, hipMalloc((void **)&c->status_dev, 4), "hipMalloc(status)");
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, hipMemset(c->status_dev, 0, 4), "hipMemset(status)");
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, hipHostMalloc((void **)&c->status_host, 4, 0), "hipHostMalloc(status)");
    if (st != QGMM_OK) {
        if (c->status_dev) (void)hipFree(c->status_dev);
        if (c->owns_stream) (void)hipStreamDestroy(c->stream);
        free(c);
        return st;
    }
    *out = c;
    return QGMM_OK;
}

static void hip_context_destroy(qgmm_backend_ctx *bctx)
{
    qgmm_cuda_ctx *c = (qgmm_cuda_ctx *)bctx;
    if (!c) return;
    (void)hipSetDevice(c->device);
    if (c->scratch) (void)hipFreeAsync(c->scratch, c->stream);
    (void)hipStreamSynchronize(c->stream);
    (void)hipFree(c->status_dev);
    (void)hipHostFree(c->status_host);
    if (c->owns_stream) (void)hipStreamDestroy(c->stream);
    free(c);
}

static void hip_context_describe(qgmm_backend_ctx *bctx, char *out, size_t cap)
{
    const qgmm_cuda_ctx *c = (const qgmm_cuda_ctx *)bctx;
    int rt = 0;
    (void)hipRuntimeGetVersion(&rt);
    const int arch = (c->cc_major << 8) | c->cc_minor;
    snprintf(out, cap, "hip device %d: %s, %d CUs, HIP runtime %d, %s stream; casts: shared single-source "
             "kernels (wave64); grouped GEMM: %s",
             c->device, c->device_name, c->sm_count, rt, c->owns_stream ? "own" : "adopted",
             qgmm_hip_gemm_path_name(arch));
}

static qgmm_status hip_synchronize(qgmm_context *ctx, uint32_t *device_status)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_status st = qgmm_cuda_enter(ctx);
    *device_status = 0;
    if (st != QGMM_OK) return st;
    st = qgmm_cuda_check(ctx, hipMemcpyAsync(c->status_host, c->status_dev, 4, hipMemcpyDeviceToHost, c->stream),
                         "hipMemcpyAsync(status)");
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, hipMemsetAsync(c->status_dev, 0, 4, c->stream), "hipMemsetAsync(status)");
    const hipError_t e = hipStreamSynchronize(c->stream);
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, e, "hipStreamSynchronize");
    if (st == QGMM_OK) *device_status = *c->status_host;
    return st;
}

/* ------------------------------------------------------------------ buffers */

static qgmm_status hip_buffer_alloc(qgmm_context *ctx, size_t bytes, qgmm_backend_buf **out, void **native)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hip: buffer handle allocation");
    if (bytes > 0 && hipMalloc(&b->ptr, bytes) != hipSuccess) {
        free(b);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hip: hipMalloc(%zu bytes) failed: %s", bytes,
                              hipGetErrorString(hipGetLastError()));
    }
    b->bytes = bytes;
    b->owned = 1;
    *out = b;
    *native = b->ptr;
    return QGMM_OK;
}

static qgmm_status hip_buffer_wrap(qgmm_context *ctx, void *native, size_t bytes, qgmm_backend_buf **out)
{
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "hip: buffer handle allocation");
    b->ptr = native;
    b->bytes = bytes;
    *out = b;
    return QGMM_OK;
}

static void hip_buffer_free(qgmm_context *ctx, qgmm_backend_buf *bb, int owned)
{
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)bb;
    if (b && owned && b->owned && b->ptr) {
        const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
        (void)hipSetDevice(c->device);
        (void)hipStreamSynchronize(c->stream);
        (void)hipFree(b->ptr);
    }
    free(b);
}

/* Blocking copies: upload returns once src may be reused; download waits for prior work. */
static qgmm_status hip_copy_blocking(qgmm_context *ctx, void *dst, const void *src, size_t bytes,
                                     hipMemcpyKind kind, const char *what)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st == QGMM_OK && bytes > 0)
        st = qgmm_cuda_check(ctx, hipMemcpyAsync(dst, src, bytes, kind, c->stream), what);
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, hipStreamSynchronize(c->stream), what);
    return st;
}

static qgmm_status hip_buffer_upload(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, const void *src,
                                     size_t bytes)
{
    return hip_copy_blocking(ctx, (char *)((qgmm_cuda_buf *)bb)->ptr + off, src, bytes, hipMemcpyHostToDevice,
                             "upload");
}

static qgmm_status hip_buffer_download(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, void *dst,
                                       size_t bytes)
{
    return hip_copy_blocking(ctx, dst, (const char *)((qgmm_cuda_buf *)bb)->ptr + off, bytes,
                             hipMemcpyDeviceToHost, "download");
}

static qgmm_status hip_buffer_fill(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, size_t bytes,
                                   uint8_t byte)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK || bytes == 0) return st;
    return qgmm_cuda_check(ctx, hipMemsetAsync((char *)((qgmm_cuda_buf *)bb)->ptr + off, byte, bytes,
                                               qgmm_cuda_ctx_of(ctx)->stream), "fill");
}

static qgmm_status hip_buffer_copy(qgmm_context *ctx, qgmm_backend_buf *dst, size_t dst_off,
                                   qgmm_backend_buf *src, size_t src_off, size_t bytes)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK || bytes == 0) return st;
    return qgmm_cuda_check(ctx, hipMemcpyAsync((char *)((qgmm_cuda_buf *)dst)->ptr + dst_off,
                                               (const char *)((qgmm_cuda_buf *)src)->ptr + src_off, bytes,
                                               hipMemcpyDeviceToDevice, qgmm_cuda_ctx_of(ctx)->stream),
                           "buffer copy");
}

/* ------------------------------------------------------------------ events */

static qgmm_status hip_event_create(qgmm_context *ctx, qgmm_backend_event **out)
{
    hipEvent_t ev = NULL;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, hipEventCreate(&ev), "hipEventCreate");
    if (st == QGMM_OK) *out = (qgmm_backend_event *)ev;
    return st;
}

static qgmm_status hip_event_record(qgmm_context *ctx, qgmm_backend_event *ev)
{
    return qgmm_cuda_check(ctx, hipEventRecord((hipEvent_t)ev, qgmm_cuda_ctx_of(ctx)->stream), "hipEventRecord");
}

static qgmm_status hip_event_elapsed_ms(qgmm_context *ctx, qgmm_backend_event *start, qgmm_backend_event *end,
                                        double *ms)
{
    float f = 0.0f;
    qgmm_status st = qgmm_cuda_check(ctx, hipEventSynchronize((hipEvent_t)end), "hipEventSynchronize");
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, hipEventElapsedTime(&f, (hipEvent_t)start, (hipEvent_t)end), "hipEventElapsedTime");
    if (st == QGMM_OK) *ms = (double)f;
    return st;
}

static void hip_event_destroy(qgmm_context *ctx, qgmm_backend_event *ev)
{
    (void)ctx;
    if (ev) (void)hipEventDestroy((hipEvent_t)ev);
}

/* ------------------------------------------------------------------ entry */

static qgmm_backend_vtable g_hip_vtable;

extern "C" __attribute__((visibility("default"))) const qgmm_backend_vtable *
qgmm_plugin_entry(uint32_t abi_version, char *reason, size_t reason_cap)
{
    char dummy[8];
    if (!reason || reason_cap == 0) { reason = dummy; reason_cap = sizeof dummy; }
    if (abi_version != QGMM_BACKEND_ABI_VERSION) {
        snprintf(reason, reason_cap, "libqgmm-hip built for backend ABI %u, libqgmm asks for %u",
                 QGMM_BACKEND_ABI_VERSION, abi_version);
        return NULL;
    }
    int n = 0;
    const hipError_t e = hipGetDeviceCount(&n);
    if (e == hipErrorNoDevice || (e == hipSuccess && n == 0)) {
        snprintf(reason, reason_cap, "no HIP device (ROCm runtime present, no AMD GPU visible through /dev/kfd)");
        return NULL;
    }
    if (e != hipSuccess) {
        snprintf(reason, reason_cap, "HIP runtime: %s (%s)", hipGetErrorString(e), hipGetErrorName(e));
        return NULL;
    }
    qgmm_backend_vtable *v = &g_hip_vtable;
    memset(v, 0, sizeof *v);
    v->abi_version = QGMM_BACKEND_ABI_VERSION;
    v->name = "hip";
    v->device_count = hip_device_count;
    v->context_create = hip_context_create;
    v->context_destroy = hip_context_destroy;
    v->context_describe = hip_context_describe;
    v->synchronize = hip_synchronize;
    v->buffer_alloc = hip_buffer_alloc;
    v->buffer_wrap = hip_buffer_wrap;
    v->buffer_free = hip_buffer_free;
    v->buffer_upload = hip_buffer_upload;
    v->buffer_download = hip_buffer_download;
    v->buffer_fill = hip_buffer_fill;
    v->buffer_copy = hip_buffer_copy;
    v->event_create = hip_event_create;
    v->event_record = hip_event_record;
    v->event_elapsed_ms = hip_event_elapsed_ms;
    v->event_destroy = hip_event_destroy;
    qgmm_cuda_fill_cast_ops(v); /* the shared launchers (backends/cuda_hip/cast_*.cu, layout_*.cu) as HIP */
    v->grouped_gemm = qgmm_hip_grouped_gemm;
    return v;
}
