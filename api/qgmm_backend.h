/*
 * qgmm_backend.h — the contract between libqgmm and a backend (built-in cpu or a
 * dlopen'ed plugin). Not part of the public API; backends include it.
 *
 * The API layer validates every argument (dtypes, shapes, strides, alignment, extents
 * inside buffers, parameter values) BEFORE calling a backend, so a backend op only sees
 * well-formed tensors. What it must still do itself:
 *  - read group offsets on the device, check them (monotonic, 0 <= offs, offs[G-1] <=
 *    the extent, plus any per-op multiple-of rule), and if they are bad write nothing
 *    and raise QGMM_DEVICE_STATUS_BAD_OFFSETS in its context status word;
 *  - report an unsupported combination with QGMM_ERR_UNSUPPORTED and a message
 *    (qgmm_set_error) — a NULL vtable slot means "unsupported" for the whole op.
 *
 * A plugin exports one symbol, QGMM_PLUGIN_ENTRY_SYMBOL, of type qgmm_plugin_entry_fn.
 * It must not abort if its vendor runtime is missing: it returns NULL with a reason.
 */
#ifndef QGMM_BACKEND_H
#define QGMM_BACKEND_H

#include "qgmm.h"
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QGMM_BACKEND_ABI_VERSION 1u
#define QGMM_PLUGIN_ENTRY_SYMBOL "qgmm_plugin_entry"

/* What context_create receives when the caller adopts the NULL stream (a valid
 * cudaStream_t / hipStream_t: the default stream) — NULL itself means "no stream given".
 * Numerically CUDA's cudaStreamLegacy handle. */
#define QGMM_NATIVE_STREAM_DEFAULT ((void *)(uintptr_t)1)

/* Bits of the per-context device status word. */
#define QGMM_DEVICE_STATUS_BAD_OFFSETS 0x1u

typedef struct qgmm_backend_vtable qgmm_backend_vtable;

/* Opaque per-backend state hung off the public handles. */
typedef void qgmm_backend_ctx;
typedef void qgmm_backend_buf;
typedef void qgmm_backend_event;

struct qgmm_backend_vtable {
    uint32_t abi_version;  /* QGMM_BACKEND_ABI_VERSION */
    const char *name;      /* "cpu", "cuda", ... */

    /* ---- devices and contexts */
    int (*device_count)(void);
    /* native_stream NULL: the backend creates (or uses) a queue of its own;
     * QGMM_NATIVE_STREAM_DEFAULT: adopt the runtime's NULL (default) stream, which the
     * caller passed as NULL to qgmm_context_create_with_stream; else the stream to adopt. */
    qgmm_status (*context_create)(qgmm_context *ctx, int device, void *native_stream,
                                  qgmm_backend_ctx **out);
    void (*context_destroy)(qgmm_backend_ctx *bctx);
    /* Fills `out` (cap bytes) with one descriptive line. */
    void (*context_describe)(qgmm_backend_ctx *bctx, char *out, size_t cap);
    /* Waits for queued work; returns the status word bits raised since the last call
     * (and clears them) in *device_status. */
    qgmm_status (*synchronize)(qgmm_context *ctx, uint32_t *device_status);

    /* ---- buffers; offsets/sizes are checked by the API */
    qgmm_status (*buffer_alloc)(qgmm_context *ctx, size_t bytes, qgmm_backend_buf **out,
                                void **native);
    qgmm_status (*buffer_wrap)(qgmm_context *ctx, void *native, size_t bytes,
                               qgmm_backend_buf **out);
    void (*buffer_free)(qgmm_context *ctx, qgmm_backend_buf *b, int owned);
    qgmm_status (*buffer_upload)(qgmm_context *ctx, qgmm_backend_buf *b, size_t off,
                                 const void *src, size_t bytes);
    qgmm_status (*buffer_download)(qgmm_context *ctx, qgmm_backend_buf *b, size_t off,
                                   void *dst, size_t bytes);
    qgmm_status (*buffer_fill)(qgmm_context *ctx, qgmm_backend_buf *b, size_t off,
                               size_t bytes, uint8_t byte);
    qgmm_status (*buffer_copy)(qgmm_context *ctx, qgmm_backend_buf *dst, size_t dst_off,
                               qgmm_backend_buf *src, size_t src_off, size_t bytes);

    /* ---- timing */
    qgmm_status (*event_create)(qgmm_context *ctx, qgmm_backend_event **out);
    qgmm_status (*event_record)(qgmm_context *ctx, qgmm_backend_event *ev);
    qgmm_status (*event_elapsed_ms)(qgmm_context *ctx, qgmm_backend_event *start,
                                    qgmm_backend_event *end, double *ms);
    void (*event_destroy)(qgmm_context *ctx, qgmm_backend_event *ev);

    /* ---- ops (arguments already validated; absent optional tensors have buffer NULL) */
    qgmm_status (*quantize_fp8_rowwise)(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                        const qgmm_tensor *x, const qgmm_tensor *offs,
                                        const qgmm_tensor *q, const qgmm_tensor *scales);
    /* Optional: when NULL the API runs two quantize_fp8_rowwise calls. */
    qgmm_status (*quantize_fp8_rowwise_dual)(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p0,
                                             const qgmm_tensor *x0, const qgmm_tensor *q0,
                                             const qgmm_tensor *s0,
                                             const qgmm_fp8_rowwise_params *p1,
                                             const qgmm_tensor *x1, const qgmm_tensor *q1,
                                             const qgmm_tensor *s1, const qgmm_tensor *offs);
    qgmm_status (*quantize_mxfp8)(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                  const qgmm_tensor *x, const qgmm_tensor *q,
                                  const qgmm_tensor *scales);
    qgmm_status (*quantize_fp8_blockwise)(qgmm_context *ctx, const qgmm_fp8_blockwise_params *p,
                                          const qgmm_tensor *x, const qgmm_tensor *q,
                                          const qgmm_tensor *scales);
    qgmm_status (*dequantize)(qgmm_context *ctx, const qgmm_quant_format *f,
                              const qgmm_tensor *q, const qgmm_tensor *scales,
                              const qgmm_tensor *offs, const qgmm_tensor *out);
    qgmm_status (*scales_to_blocked)(qgmm_context *ctx, qgmm_blocked_variant v,
                                     const qgmm_tensor *in, const qgmm_tensor *offs,
                                     const qgmm_tensor *out, const qgmm_tensor *group_starts);
    qgmm_status (*scales_from_blocked)(qgmm_context *ctx, qgmm_blocked_variant v,
                                       const qgmm_tensor *in, const qgmm_tensor *offs,
                                       const qgmm_tensor *out);
    qgmm_status (*pad_token_groups)(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                    const qgmm_tensor *offs, const qgmm_tensor *out,
                                    const qgmm_tensor *padded_start,
                                    const qgmm_tensor *padded_offs);
    qgmm_status (*unpad_token_groups)(qgmm_context *ctx, int alignment,
                                      const qgmm_tensor *x_padded, const qgmm_tensor *offs,
                                      const qgmm_tensor *out);
    qgmm_status (*group_row_ids)(qgmm_context *ctx, const qgmm_tensor *offs,
                                 const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids);
    qgmm_status (*grouped_gemm)(qgmm_context *ctx, const qgmm_grouped_gemm_params *p,
                                const qgmm_tensor *a, const qgmm_tensor *b,
                                const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                const qgmm_tensor *offs, const qgmm_tensor *out);
};

/* A plugin's entry: returns its vtable, or NULL and a reason (e.g. "libcuda.so.1 not
 * found") when it cannot run on this machine. Called once per process. */
typedef const qgmm_backend_vtable *(*qgmm_plugin_entry_fn)(uint32_t abi_version, char *reason,
                                                            size_t reason_cap);

/* ---- services libqgmm gives backends (exported from libqgmm) */

/* Sets ctx's last error (printf-style) and returns `s` for `return qgmm_set_error(...)`. */
QGMM_API qgmm_status qgmm_set_error(const qgmm_context *ctx, qgmm_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The backend state of a context / buffer. */
QGMM_API qgmm_backend_ctx *qgmm_context_impl(const qgmm_context *ctx);
QGMM_API qgmm_backend_buf *qgmm_buffer_impl(const qgmm_buffer *buf);
/* The data pointer of a tensor's first element for backends whose native buffer handle is
 * a pointer (cpu, cuda, hip): native + offset. */
QGMM_API void *qgmm_tensor_data(const qgmm_tensor *t);

#ifdef __cplusplus
}
#endif
#endif /* QGMM_BACKEND_H */
