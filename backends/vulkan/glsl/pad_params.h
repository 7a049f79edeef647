/* pad_params.h — the parameter block of pad.comp (token-group pad / unpad, group row ids)
 * as one struct that C (backends/vulkan/vk_ops_layout.c fills it) and GLSL (after
 * common.glsl, for the int64 types) both compile. Every member is an int64_t, so C and
 * std430 lay it out alike. Strides are in elements, addresses are buffer device addresses. */
#ifndef QGMM_GLSL_PAD_PARAMS_H
#define QGMM_GLSL_PAD_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

struct qg_pad_params {
    int64_t mode;        /* 0 pad, 1 unpad, 2 row ids */
    int64_t x;           /* source rows: address (pad / unpad) */
    int64_t xs0, xs1;    /* source strides along rows, columns */
    int64_t y;           /* output: address */
    int64_t ys0, ys1;    /* output strides */
    int64_t rows;        /* output rows */
    int64_t d;           /* columns */
    int64_t esize;       /* bytes per element */
    int64_t g;           /* groups */
    int64_t table;       /* the group table (offs_prep.comp) */
    int64_t padded;      /* row ids: table fields 2/3 come from padded_offs */
    int64_t vec;         /* >0: rows move as this many 16-byte units (host-checked alignment) */
    int64_t span;        /* vector path: 16-byte units per workgroup (rows touched <= 256) */
};

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QPadParams { qg_pad_params v; };
#define PDP (QPadParams(qpush.params).v)
#else
typedef struct qg_pad_params qg_pad_params;
#define QG_PAD_NP ((int)(sizeof(qg_pad_params) / sizeof(int64_t))) /* int64 words of the block */
#endif

#endif
