/*
 * qgmm_internal.h — the structs behind the public handles and the helpers shared by the
 * files of api/. Never included by backends (they see qgmm_backend.h only).
 */
#ifndef QGMM_INTERNAL_H
#define QGMM_INTERNAL_H

#include "qgmm_backend.h"

#define QGMM_ERROR_CAP 1024
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
};

struct qgmm_event {
    qgmm_context *ctx;
    qgmm_backend_event *impl;
    int recorded;
};

/* registry.c */
const qgmm_backend_vtable *qgmm_registry_find(const char *name, char *reason, size_t cap);
const qgmm_backend_vtable *qgmm_cpu_backend_vtable(void);

#endif /* QGMM_INTERNAL_H */
