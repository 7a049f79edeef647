/* offs_params.h — the parameter block of offs_prep.comp (check group offsets, write the
 * group table of params.h) as one struct that C (backends/vulkan/vk_stream.c vk_offs_prep
 * fills it) and GLSL (after common.glsl, for the int64 types) both compile. Every member is
 * an int64_t, so C and std430 lay it out alike. Addresses are buffer device addresses. */
#ifndef QGMM_GLSL_OFFS_PARAMS_H
#define QGMM_GLSL_OFFS_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

struct qg_offs_params {
    int64_t offs;        /* i32 (G): the group end offsets */
    int64_t g;           /* groups */
    int64_t extent;      /* the offsets' bound (the grouped dim's extent) */
    int64_t multiple;    /* every group size a multiple of this (1 = any) */
    int64_t align;       /* padded size = align * ceil(size / align) */
    int64_t tile;        /* tiles before g count ceil(size / tile) (0 = unused) */
    int64_t table;       /* the group table: scratch address */
    int64_t status;      /* the context status word: address */
    int64_t out0;        /* optional i32 (G): padded start (0 = absent) */
    int64_t out1;        /* optional i32 (G): padded end offsets (0 = absent) */
    int64_t padoffs;     /* optional i32 (G) input: padded offsets to validate (row ids) */
    int64_t div;         /* group bounds are divided by this before padding (K-groups: 32) */
    int64_t padcap;      /* cap + 1 (0 = none): the padded total must not exceed cap (unpad: rows
                            of x_padded); with padoffs: padded offsets must stay within it */
};

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QOffsParams { qg_offs_params v; };
#define OPP (QOffsParams(qpush.params).v)
#else
typedef struct qg_offs_params qg_offs_params;
#define QG_OFFS_NP ((int)(sizeof(qg_offs_params) / sizeof(int64_t))) /* int64 words of the block */
#endif

#endif
