/*
 * qgmm_test_plugin.h — a backend plugin's own vtable, for the tests that call an optional
 * slot directly (test_pad_cast, test_mx_round_trip): libqgmm-NAME.so from the first folder
 * of QGMM_PLUGIN_PATH that holds it (default "."), entered as libqgmm enters it. NULL when
 * no such plugin loads here.
 */
#ifndef QGMM_TEST_PLUGIN_H
#define QGMM_TEST_PLUGIN_H

#include "qgmm.h"
#include "qgmm_backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline const qgmm_backend_vtable *qgmm_test_plugin_vtable(const char *name)
{
    const char *dirs = getenv("QGMM_PLUGIN_PATH");
    char buf[2048], path[2300];
    snprintf(buf, sizeof buf, "%s", dirs ? dirs : ".");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, sizeof path, "%s/libqgmm-%s.so", d, name);
        if (access(path, R_OK) != 0) continue;
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        qgmm_plugin_entry_fn entry = h ? (qgmm_plugin_entry_fn)dlsym(h, QGMM_PLUGIN_ENTRY_SYMBOL) : NULL;
        return entry ? entry(QGMM_BACKEND_ABI_VERSION, NULL, 0) : NULL;
    }
    return NULL;
}

/* A context on backend `name` in *ctx and its plugin's vtable; NULL (the reason printed,
 * nothing left open) where either is missing here or has(vt) says the slot named `slot`
 * is absent: the test skips that backend. */
static inline const qgmm_backend_vtable *qgmm_test_plugin_open(const char *name, const char *slot,
                                                              int (*has)(const qgmm_backend_vtable *vt),
                                                              qgmm_context **ctx)
{
    if (qgmm_context_create(name, 0, ctx) != QGMM_OK) {
        printf("%s: no context here (%s)\n", name, qgmm_last_error(NULL));
        return NULL;
    }
    const qgmm_backend_vtable *vt = qgmm_test_plugin_vtable(name);
    if (!vt || !has(vt)) {
        printf("%s: plugin without the %s slot\n", name, slot);
        qgmm_context_destroy(*ctx);
        *ctx = NULL;
        return NULL;
    }
    return vt;
}

/* The fused pad's gather for a slot call: groups of i32 offsets in `offs` over `tokens` rows,
 * padded to `alignment`, the padded offsets written to `padded_offs`. */
static inline qgmm_pad_gather qgmm_test_pad_gather(qgmm_buffer *offs, int64_t groups, int64_t tokens, int alignment,
                                                  qgmm_buffer *padded_offs)
{
    qgmm_pad_gather g;
    memset(&g, 0, sizeof g);
    g.offs.buffer = offs;
    g.offs.dtype = QGMM_I32;
    g.groups = groups;
    g.tokens = tokens;
    g.alignment = alignment;
    g.padded_offs.buffer = padded_offs;
    g.padded_offs.dtype = QGMM_I32;
    return g;
}

#endif /* QGMM_TEST_PLUGIN_H */
