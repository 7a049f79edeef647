/*
 * qgmm_internal.h — the structs behind the public handles and the helpers shared by the
 * files of api/. Never included by backends (they see qgmm_backend.h only).
 */
#ifndef QGMM_INTERNAL_H
#define QGMM_INTERNAL_H

#include "qgmm_backend.h"

#define QGMM_ERROR_CAP 1024
/* The largest extent of any tensor dimension the API accepts. */
#define QGMM_MAX_EXTENT ((int64_t)1 << 40)
/* The largest buffer: byte offsets and spans are int64 on every backend. */
#define QGMM_MAX_BUFFER_BYTES ((size_t)INT64_MAX)
#define QGMM_DESCRIBE_CAP 2048 /* the Vulkan line names its cast and GEMM paths: on the H100 it was cut at 512 */

struct qgmm_context {
    const qgmm_backend_vtable *vt;
    qgmm_backend_ctx *impl;
    char backend_name[16];
    char describe[QGMM_DESCRIBE_CAP];
    char last_error[QGMM_ERROR_CAP];
};

struct qgmm_buffer {
    qgmm_context *ctx;
    qgmm_backend_buf *impl;
    void *native;
    size_t size;
    int owned;
    int native_is_address; /* native is a pointer into the context's one address space */
};

struct qgmm_event {
    qgmm_context *ctx;
    qgmm_backend_event *impl;
    int recorded;
};

/* tensor.c: exact sizes, 0 when they do not fit in int64 (or the tensor is malformed:
 * bad rank, a negative extent, a negative stride on a dimension of extent > 1). */
int qgmm_numel_checked(const qgmm_tensor *t, int64_t *n);
int qgmm_span_checked(const qgmm_tensor *t, size_t *bytes);
/* Bytes of a blocked scale layout (ops-spec §4) of a (rows, cols) scale matrix: n is the
 * expert count for QGMM_BLOCKED_3D, the group count for the M-/K-groups variants. */
int qgmm_blocked_bytes_checked(qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols,
                               int64_t *bytes);

/* buffer.c: 1 when [a_off, a_off + a_len) of a and [b_off, b_off + b_len) of b can share a
 * byte: the same buffer, two wraps of one native handle, or intersecting address ranges
 * where the native handles are pointers. Empty ranges share nothing. */
int qgmm_buffer_ranges_overlap(const qgmm_buffer *a, size_t a_off, size_t a_len, const qgmm_buffer *b,
                               size_t b_off, size_t b_len);

/* status.c: puts "prefix" (printf-style) before ctx's last error and returns s. */
qgmm_status qgmm_error_prefix(qgmm_context *ctx, qgmm_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* registry.c */
const qgmm_backend_vtable *qgmm_registry_find(const char *name, char *reason, size_t cap);
const qgmm_backend_vtable *qgmm_cpu_backend_vtable(void);

#endif /* QGMM_INTERNAL_H */
