/*
 * qgmm_internal.h — the structs behind the public handles and the helpers shared by the
 * files of api/. Never included by backends (they see qgmm_backend.h only).
 */
#ifndef QGMM_INTERNAL_H
#define QGMM_INTERNAL_H

#include "qgmm_backend.h"

/* Where t's element 0 lives (buffer NULL when t is absent): the problems' qgmm_ref. */
qgmm_ref qgmm_ref_of(const qgmm_tensor *t);
/* tensor.c: the view of t with dims a and b exchanged (shape and strides; no copy). */
qgmm_tensor qgmm_tensor_swap_dims(const qgmm_tensor *t, int a, int b);

#define QGMM_ERROR_CAP 1024
/* The largest extent of any tensor dimension the API accepts. */
#define QGMM_MAX_EXTENT ((int64_t)1 << 40)
/* The largest buffer: byte offsets and spans are int64 on every backend. */
#define QGMM_MAX_BUFFER_BYTES ((size_t)INT64_MAX)
#define QGMM_DESCRIBE_CAP 2048 /* room for the Vulkan line, which names its cast and GEMM paths */

/* An op that read device-side group offsets, as qgmm_synchronize names it when the status
 * word says some offsets were bad: the op, its offsets argument, and the op's own rule
 * beyond monotonic and in range (NULL when none). The strings are static. */
typedef struct qgmm_offsets_use {
    const char *op;
    const char *arg;
    const char *rule;
    const char *what; /* NULL: group offsets; else what the device check found (expert ids) */
} qgmm_offsets_use;

/* Distinct uses remembered between two synchronizes: one slot for each (op, argument,
 * rule) the entry points record (16), so none is dropped. */
#define QGMM_OFFSETS_LOG_CAP 16

struct qgmm_context {
    const qgmm_backend_vtable *vt;
    qgmm_backend_ctx *impl;
    char backend_name[16];
    char describe[QGMM_DESCRIBE_CAP];
    char last_error[QGMM_ERROR_CAP];
    /* the ops with device offsets enqueued since the last synchronize (host-side record) */
    qgmm_offsets_use offsets_log[QGMM_OFFSETS_LOG_CAP];
    int offsets_log_len;
    int offsets_log_dropped;      /* distinct uses past the cap */
    /* while a composite runs, the offsets use its steps are recorded as */
    const char *offsets_owner, *offsets_owner_arg;
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
/* status.c: adds text (printf-style) after ctx's last error and returns s. */
qgmm_status qgmm_error_append(qgmm_context *ctx, qgmm_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* status.c: empties ctx's message (when ctx is not NULL) and the calling thread's. Every
 * public call that returns a status does this first, so a call that returns QGMM_OK
 * leaves "" behind. */
void qgmm_clear_error(const qgmm_context *ctx);

/* context.c: records, host-side and without touching the device, that `op` was enqueued
 * reading device offsets `arg` (with its extra `rule`, or NULL); qgmm_synchronize names
 * the recorded ops when the status word reports bad offsets. Returns s, so an entry point
 * ends with `return qgmm_offsets_enqueued(ctx, backend_call(...), op, arg, rule)`: only an
 * op that was enqueued (s == QGMM_OK) is recorded. */
qgmm_status qgmm_offsets_enqueued(qgmm_context *ctx, qgmm_status s, const char *op, const char *arg,
                                  const char *rule);
/* context.c: the same record for a device check of something other than group offsets:
 * `what` says what the check finds ("an expert id outside [0, num_experts)"), and the
 * BAD_OFFSETS message reads "op: arg holds <what> (device check)". */
qgmm_status qgmm_device_check_enqueued(qgmm_context *ctx, qgmm_status s, const char *op, const char *arg,
                                       const char *what);
/* context.c: while a composite runs, an op with offsets that it enqueues is recorded as a
 * use of the composite's own offsets argument: (op, arg) before its first step, (NULL,
 * NULL) after its last. */
void qgmm_offsets_owner(qgmm_context *ctx, const char *op, const char *arg);

/* registry.c */
const qgmm_backend_vtable *qgmm_registry_find(const char *name, char *reason, size_t cap);
const qgmm_backend_vtable *qgmm_cpu_backend_vtable(void);

#endif /* QGMM_INTERNAL_H */
