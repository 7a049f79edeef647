/*
 * cuda_backend.cu — the CUDA plugin's entry point and its non-op vtable slots: device
 * discovery, contexts (own or adopted stream), buffers, events, synchronize with the
 * device status word. The ops live in cast_*.cu / layout_*.cu / gemm_*.cu.
 *
 * cudart is linked statically and loads libcuda.so.1 itself on first use, so the plugin
 * loads anywhere; qgmm_plugin_entry returns NULL with the runtime's reason when there is
 * no driver or no device.
 */
#include "cuda_internal.h"
#include "cuda_ep.h"
#include "gemm_problem.cuh"
#include "qgmm_host_copy.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ helpers */

extern "C" qgmm_status qgmm_cuda_check(const qgmm_context *ctx, cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return QGMM_OK;
    const qgmm_status s = (e == cudaErrorMemoryAllocation) ? QGMM_ERR_OUT_OF_MEMORY : QGMM_ERR_DEVICE;
    return qgmm_set_error(ctx, s, "cuda: %s failed: %s (%s)", what, cudaGetErrorString(e),
                          cudaGetErrorName(e));
}

extern "C" qgmm_status qgmm_cuda_launch_check(const qgmm_context *ctx, const char *kernel)
{
    return qgmm_cuda_check(ctx, cudaGetLastError(), kernel);
}

extern "C" qgmm_status qgmm_cuda_enter(const qgmm_context *ctx)
{
    const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == c->device) return QGMM_OK;
    return qgmm_cuda_check(ctx, cudaSetDevice(c->device), "cudaSetDevice");
}

extern "C" void *qgmm_cuda_scratch(qgmm_context *ctx, size_t bytes)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    if (bytes == 0) bytes = 256;
    if (c->scratch && c->scratch_bytes >= bytes) return c->scratch;
    /* stream-ordered: the old area is freed after the work already queued that uses it */
    if (c->scratch) cudaFreeAsync(c->scratch, c->stream);
    c->scratch = NULL;
    c->scratch_bytes = 0;
    size_t want = bytes + bytes / 4;
    void *p = NULL;
    cudaError_t e = cudaMallocAsync(&p, want, c->stream);
    if (e != cudaSuccess) {
        qgmm_cuda_check(ctx, e, "cudaMallocAsync(scratch)");
        return NULL;
    }
    c->scratch = p;
    c->scratch_bytes = want;
    return p;
}

extern "C" unsigned qgmm_cuda_grid(const qgmm_context *ctx, int64_t work_blocks, int threads,
                                   int blocks_per_sm)
{
    const qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    int64_t cap = (int64_t)c->sm_count * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    (void)threads;
    if (work_blocks < 1) work_blocks = 1;
    if (work_blocks > cap) work_blocks = cap;
    if (work_blocks > 0x7FFFFFFF) work_blocks = 0x7FFFFFFF;
    return (unsigned)work_blocks;
}

/* ------------------------------------------------------------------ devices, contexts */

static void stage_free(qgmm_cuda_ctx *c); /* buffers, below */

static int cu_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}

static qgmm_status cu_context_create(qgmm_context *ctx, int device, void *native_stream,
                                     qgmm_backend_ctx **out)
{
    const int n = cu_device_count();
    if (device < 0 || device >= n)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "cuda: device = %d, but %d CUDA device(s) are present", device, n);
    qgmm_cuda_ctx *c = (qgmm_cuda_ctx *)calloc(1, sizeof *c);
    if (!c) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cuda: context allocation");
    c->device = device;
    qgmm_status st = qgmm_cuda_check(ctx, cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp prop;
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    if (st == QGMM_OK) {
        c->sm_count = prop.multiProcessorCount;
        c->cc_major = prop.major;
        c->cc_minor = prop.minor;
        c->l2_bytes = (size_t)prop.l2CacheSize;
        c->smem_per_block_optin = prop.sharedMemPerBlockOptin;
        c->smem_per_sm = prop.sharedMemPerMultiprocessor;
        c->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
        snprintf(c->device_name, sizeof c->device_name, "%s", prop.name);
        c->gemm_path = qgmm_cuda_gemm_path_env();
        if (c->gemm_path < 0)
            st = qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                "cuda: QGMM_CUDA_GEMM_PATH=\"%s\": expected auto, portable or hopper",
                                getenv("QGMM_CUDA_GEMM_PATH"));
    }
    if (st == QGMM_OK) {
        if (native_stream) {
            /* QGMM_NATIVE_STREAM_DEFAULT: the caller's NULL stream, adopted as NULL */
            c->stream = native_stream == QGMM_NATIVE_STREAM_DEFAULT ? (cudaStream_t)0
                                                                    : (cudaStream_t)native_stream;
            c->owns_stream = 0;
        } else {
            st = qgmm_cuda_check(ctx, cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking),
                                 "cudaStreamCreate");
            c->owns_stream = st == QGMM_OK;
        }
    }
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, cudaMalloc((void **)&c->status_dev, sizeof(uint32_t)), "cudaMalloc(status)");
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, cudaMemset(c->status_dev, 0, sizeof(uint32_t)), "cudaMemset(status)");
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, cudaMallocHost((void **)&c->status_host, sizeof(uint32_t)),
                             "cudaMallocHost(status)");
    if (st != QGMM_OK) {
        if (c->status_dev) cudaFree(c->status_dev);
        if (c->owns_stream) cudaStreamDestroy(c->stream);
        free(c);
        return st;
    }
    *out = c;
    return QGMM_OK;
}

static void cu_context_destroy(qgmm_backend_ctx *bctx)
{
    qgmm_cuda_ctx *c = (qgmm_cuda_ctx *)bctx;
    if (!c) return;
    cudaSetDevice(c->device);
    cudaStreamSynchronize(c->stream);
    if (c->scratch) cudaFreeAsync(c->scratch, c->stream);
    cudaStreamSynchronize(c->stream);
    if (c->status_dev) cudaFree(c->status_dev);
    if (c->status_host) cudaFreeHost(c->status_host);
    stage_free(c);
    if (c->owns_stream) cudaStreamDestroy(c->stream);
    free(c);
}

static void cu_context_describe(qgmm_backend_ctx *bctx, char *out, size_t cap)
{
    const qgmm_cuda_ctx *c = (const qgmm_cuda_ctx *)bctx;
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    snprintf(out, cap,
             "cuda device %d: %s, sm_%d%d, %d SMs, L2 %zu KiB, driver %d.%d, runtime %d.%d, "
             "%s stream; casts: vectorised single-pass (MX/blockwise/rowwise), colwise in one read "
             "through a cluster where that measured faster (bf16), else two passes; "
             "tuning: QGMM_CUDA_GEMM_PATH=%s",
             c->device, c->device_name, c->cc_major, c->cc_minor, c->sm_count, c->l2_bytes / 1024,
             drv / 1000, (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10,
             c->owns_stream ? "own" : "adopted",
             c->gemm_path == QG_PATH_PORTABLE ? "portable" : c->gemm_path == QG_PATH_HOPPER ? "hopper" : "auto");
}

static qgmm_status cu_synchronize(qgmm_context *ctx, uint32_t *device_status)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    *device_status = 0;
    st = qgmm_cuda_check(ctx, cudaMemcpyAsync(c->status_host, c->status_dev, sizeof(uint32_t),
                                              cudaMemcpyDeviceToHost, c->stream),
                         "cudaMemcpyAsync(status)");
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, cudaMemsetAsync(c->status_dev, 0, sizeof(uint32_t), c->stream),
                             "cudaMemsetAsync(status)");
    const cudaError_t e = cudaStreamSynchronize(c->stream);
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, e, "cudaStreamSynchronize");
    if (st == QGMM_OK) *device_status = *c->status_host;
    return st;
}

/* ------------------------------------------------------------------ buffers */

static qgmm_status cu_buffer_alloc(qgmm_context *ctx, size_t bytes, qgmm_backend_buf **out, void **native)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cuda: buffer handle allocation");
    if (bytes > 0) {
        const cudaError_t e = cudaMalloc(&b->ptr, bytes);
        if (e != cudaSuccess) {
            free(b);
            cudaGetLastError();
            return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cuda: cudaMalloc(%zu bytes) failed: %s",
                                  bytes, cudaGetErrorString(e));
        }
    }
    b->bytes = bytes;
    b->owned = 1;
    *out = b;
    *native = b->ptr;
    return QGMM_OK;
}

static qgmm_status cu_buffer_wrap(qgmm_context *ctx, void *native, size_t bytes, qgmm_backend_buf **out)
{
    cudaPointerAttributes attr;
    if (native && cudaPointerGetAttributes(&attr, native) == cudaSuccess &&
        attr.type == cudaMemoryTypeHost) {
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "cuda: buffer_wrap native = %p is pinned host memory, not a device pointer",
                              native);
    }
    cudaGetLastError();
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)calloc(1, sizeof *b);
    if (!b) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "cuda: buffer handle allocation");
    b->ptr = native;
    b->bytes = bytes;
    b->owned = 0;
    *out = b;
    return QGMM_OK;
}

static void cu_buffer_free(qgmm_context *ctx, qgmm_backend_buf *bb, int owned)
{
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)bb;
    if (!b) return;
    if (owned && b->owned && b->ptr) {
        qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
        cudaSetDevice(c->device);
        cudaStreamSynchronize(c->stream);
        cudaFree(b->ptr);
    }
    free(b);
}

/* Large uploads and downloads go through two pinned staging chunks: the DMA engine moves
 * one chunk while the host copies the other between it and the caller's pageable memory on
 * several threads (qgmm_host_copy). cudaMemcpy from pageable memory stages through the
 * driver's own buffers with one thread's memcpy, and was most of the host time of
 * `qgmm-bench run` on the H100 (each exact case's outputs are downloaded twice). Small
 * copies, a context that cannot have pinned memory, and a transfer while another thread's
 * holds the chunks (threads may share a context) copy directly. Same bytes either way. */
#define QG_STAGE_BYTES ((size_t)32 << 20)
#define QG_STAGE_MIN ((size_t)4 << 20)

struct qgmm_cuda_staging {
    void *chunk[2];
    cudaEvent_t done[2];  /* the last copy into or out of each chunk */
    pthread_mutex_t busy; /* held by the transfer using the chunks */
};

static void staging_free(qgmm_cuda_staging *g)
{
    if (!g) return;
    for (int i = 0; i < 2; ++i) {
        if (g->chunk[i]) cudaFreeHost(g->chunk[i]);
        if (g->done[i]) cudaEventDestroy(g->done[i]);
    }
    pthread_mutex_destroy(&g->busy);
    free(g);
}

static void stage_free(qgmm_cuda_ctx *c)
{
    staging_free(c->staging);
    c->staging = NULL;
}

/* The staging chunks, locked for this transfer (allocated on the context's first large
 * transfer), or NULL to copy directly. The caller unlocks g->busy when done. */
static pthread_mutex_t g_staging_alloc = PTHREAD_MUTEX_INITIALIZER;
static qgmm_cuda_staging *stage_take(qgmm_cuda_ctx *c, size_t bytes)
{
    if (bytes < QG_STAGE_MIN) return NULL;
    pthread_mutex_lock(&g_staging_alloc);
    if (!c->staging && !c->staging_failed) {
        qgmm_cuda_staging *g = (qgmm_cuda_staging *)calloc(1, sizeof *g);
        int ok = g && pthread_mutex_init(&g->busy, NULL) == 0;
        if (!ok) {
            free(g);
            g = NULL;
        }
        for (int i = 0; i < 2 && ok; ++i)
            ok = cudaMallocHost(&g->chunk[i], QG_STAGE_BYTES) == cudaSuccess &&
                 cudaEventCreateWithFlags(&g->done[i], cudaEventDisableTiming) == cudaSuccess;
        if (ok) {
            c->staging = g;
        } else {
            cudaGetLastError();
            if (g) staging_free(g);
            c->staging_failed = 1;
        }
    }
    qgmm_cuda_staging *g = c->staging;
    pthread_mutex_unlock(&g_staging_alloc);
    return g && pthread_mutex_trylock(&g->busy) == 0 ? g : NULL;
}

/* Bytes of chunk j of a staged transfer of `bytes`. */
static size_t stage_len(size_t bytes, size_t j)
{
    const size_t at = j * QG_STAGE_BYTES;
    return bytes - at < QG_STAGE_BYTES ? bytes - at : QG_STAGE_BYTES;
}

static qgmm_status cu_buffer_upload(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off,
                                    const void *src, size_t bytes)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)bb;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK || bytes == 0) return st;
    qgmm_cuda_staging *g = stage_take(c, bytes);
    if (!g) {
        st = qgmm_cuda_check(ctx, cudaMemcpyAsync((char *)b->ptr + off, src, bytes,
                                                  cudaMemcpyHostToDevice, c->stream), "upload");
    } else {
        /* chunk i: wait for the DMA that last read its staging chunk (chunk i-2), fill it, send it */
        for (size_t done = 0, i = 0; st == QGMM_OK && done < bytes; ++i) {
            const size_t n = stage_len(bytes, i);
            const int s = (int)(i & 1);
            if (i >= 2) st = qgmm_cuda_check(ctx, cudaEventSynchronize(g->done[s]), "upload staging wait");
            if (st != QGMM_OK) break;
            qgmm_host_copy(g->chunk[s], (const char *)src + done, n);
            st = qgmm_cuda_check(ctx, cudaMemcpyAsync((char *)b->ptr + off + done, g->chunk[s], n,
                                                      cudaMemcpyHostToDevice, c->stream), "upload");
            if (st == QGMM_OK)
                st = qgmm_cuda_check(ctx, cudaEventRecord(g->done[s], c->stream), "upload staging event");
            done += n;
        }
    }
    /* returns once src may be reused (and the staging chunks are free) */
    const cudaError_t e = cudaStreamSynchronize(c->stream);
    if (g) pthread_mutex_unlock(&g->busy);
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, e, "upload sync");
    return st;
}

/* Enqueues chunk j of a staged download into its staging chunk and marks its arrival. */
static qgmm_status download_chunk(qgmm_context *ctx, qgmm_cuda_staging *g, const char *from, size_t bytes,
                                  size_t j)
{
    cudaStream_t s = qgmm_cuda_ctx_of(ctx)->stream;
    const int k = (int)(j & 1);
    qgmm_status st = qgmm_cuda_check(ctx, cudaMemcpyAsync(g->chunk[k], from + j * QG_STAGE_BYTES, stage_len(bytes, j),
                                                          cudaMemcpyDeviceToHost, s), "download");
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, cudaEventRecord(g->done[k], s), "download staging event");
    return st;
}

static qgmm_status cu_buffer_download(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, void *dst,
                                      size_t bytes)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)bb;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    const char *from = (const char *)b->ptr + off;
    qgmm_cuda_staging *g = stage_take(c, bytes);
    if (bytes > 0 && !g) {
        st = qgmm_cuda_check(ctx, cudaMemcpyAsync(dst, from, bytes, cudaMemcpyDeviceToHost, c->stream), "download");
    } else if (g) {
        /* chunk i+1 goes into the other staging chunk (whose chunk i-1 the host has copied
         * out) while the host copies chunk i out of this one */
        const size_t nch = (bytes + QG_STAGE_BYTES - 1) / QG_STAGE_BYTES;
        st = download_chunk(ctx, g, from, bytes, 0);
        for (size_t i = 0; st == QGMM_OK && i < nch; ++i) {
            if (i + 1 < nch) st = download_chunk(ctx, g, from, bytes, i + 1);
            if (st == QGMM_OK)
                st = qgmm_cuda_check(ctx, cudaEventSynchronize(g->done[i & 1]), "download staging wait");
            if (st == QGMM_OK) qgmm_host_copy((char *)dst + i * QG_STAGE_BYTES, g->chunk[i & 1], stage_len(bytes, i));
        }
    }
    const cudaError_t e = cudaStreamSynchronize(c->stream);
    if (g) pthread_mutex_unlock(&g->busy);
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, e, "download sync");
    return st;
}

static qgmm_status cu_buffer_fill(qgmm_context *ctx, qgmm_backend_buf *bb, size_t off, size_t bytes,
                                  uint8_t byte)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_cuda_buf *b = (qgmm_cuda_buf *)bb;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK || bytes == 0) return st;
    return qgmm_cuda_check(ctx, cudaMemsetAsync((char *)b->ptr + off, byte, bytes, c->stream), "fill");
}

static qgmm_status cu_buffer_copy(qgmm_context *ctx, qgmm_backend_buf *dst, size_t dst_off,
                                  qgmm_backend_buf *src, size_t src_off, size_t bytes)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK || bytes == 0) return st;
    return qgmm_cuda_check(ctx, cudaMemcpyAsync((char *)((qgmm_cuda_buf *)dst)->ptr + dst_off,
                                                (const char *)((qgmm_cuda_buf *)src)->ptr + src_off,
                                                bytes, cudaMemcpyDeviceToDevice, c->stream),
                           "buffer copy");
}

/* ------------------------------------------------------------------ events */

static qgmm_status cu_event_create(qgmm_context *ctx, qgmm_backend_event **out)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    cudaEvent_t ev;
    st = qgmm_cuda_check(ctx, cudaEventCreate(&ev), "cudaEventCreate");
    if (st == QGMM_OK) *out = (qgmm_backend_event *)ev;
    return st;
}

static qgmm_status cu_event_record(qgmm_context *ctx, qgmm_backend_event *ev)
{
    return qgmm_cuda_check(ctx, cudaEventRecord((cudaEvent_t)ev, qgmm_cuda_ctx_of(ctx)->stream),
                           "cudaEventRecord");
}

static qgmm_status cu_event_elapsed_ms(qgmm_context *ctx, qgmm_backend_event *start,
                                       qgmm_backend_event *end, double *ms)
{
    qgmm_status st = qgmm_cuda_check(ctx, cudaEventSynchronize((cudaEvent_t)end), "cudaEventSynchronize");
    float f = 0.0f;
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, cudaEventElapsedTime(&f, (cudaEvent_t)start, (cudaEvent_t)end),
                             "cudaEventElapsedTime");
    if (st == QGMM_OK) *ms = (double)f;
    return st;
}

static void cu_event_destroy(qgmm_context *ctx, qgmm_backend_event *ev)
{
    (void)ctx;
    if (ev) cudaEventDestroy((cudaEvent_t)ev);
}

/* ------------------------------------------------------------------ vtable, entry */

static qgmm_backend_vtable g_cuda_vtable;

extern "C" __attribute__((visibility("default"))) const qgmm_backend_vtable *
qgmm_plugin_entry(uint32_t abi_version, char *reason, size_t reason_cap)
{
    if (abi_version != QGMM_BACKEND_ABI_VERSION) {
        if (reason && reason_cap)
            snprintf(reason, reason_cap, "libqgmm-cuda built for backend ABI %u, libqgmm asks for %u",
                     QGMM_BACKEND_ABI_VERSION, abi_version);
        return NULL;
    }
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        if (reason && reason_cap) {
            if (e == cudaErrorInsufficientDriver)
                snprintf(reason, reason_cap, "no usable NVIDIA driver (libcuda.so.1 missing or too old): %s",
                         cudaGetErrorString(e));
            else if (e != cudaSuccess)
                snprintf(reason, reason_cap, "CUDA runtime: %s (%s)", cudaGetErrorString(e),
                         cudaGetErrorName(e));
            else
                snprintf(reason, reason_cap, "no CUDA device present");
        }
        return NULL;
    }
    qgmm_backend_vtable *v = &g_cuda_vtable;
    memset(v, 0, sizeof *v);
    v->abi_version = QGMM_BACKEND_ABI_VERSION;
    v->name = "cuda";
    v->device_count = cu_device_count;
    v->context_create = cu_context_create;
    v->context_destroy = cu_context_destroy;
    v->context_describe = cu_context_describe;
    v->synchronize = cu_synchronize;
    v->buffer_alloc = cu_buffer_alloc;
    v->buffer_wrap = cu_buffer_wrap;
    v->buffer_free = cu_buffer_free;
    v->buffer_upload = cu_buffer_upload;
    v->buffer_download = cu_buffer_download;
    v->buffer_fill = cu_buffer_fill;
    v->buffer_copy = cu_buffer_copy;
    v->event_create = cu_event_create;
    v->event_record = cu_event_record;
    v->event_elapsed_ms = cu_event_elapsed_ms;
    v->event_destroy = cu_event_destroy;
    qgmm_cuda_fill_cast_ops(v);
    qgmm_cuda_fill_ep_ops(v);
    v->grouped_gemm = qgmm_cuda_grouped_gemm;
    return v;
}
