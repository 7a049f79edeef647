/* dequant_params.h — the parameter block of dequant.comp as one struct that C
 * (backends/vulkan/vk_ops_cast.c dequantize fills it) and GLSL (after common.glsl, for
 * the int64 types) both compile. Every member is an int64_t, so C and std430 lay it out
 * alike. q is seen as (E, O, R) with R cut into segments, as the casts see x
 * (cast_params.h); strides are in elements, addresses are buffer device addresses. */
#ifndef QGMM_GLSL_DEQUANT_PARAMS_H
#define QGMM_GLSL_DEQUANT_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

struct qg_dequant_params {
    int64_t q, fmt;      /* q: address, fp8 dtype */
    int64_t s;           /* scales: address */
    int64_t skind;       /* 0 f32 strided, 1 byte strided, 2 byte blocked */
    int64_t mode;        /* 0 divide by scale, 1 multiply by scale, 2 e8m0 */
    int64_t x, xdt;      /* the output x: address, dtype (f32 or bf16) */
    int64_t qe, qo, qr;  /* q strides along E, O, R */
    int64_t xe, xo, xr;  /* x strides */
    int64_t se, so, sg;  /* scale strides along E, O and the segments (g) */
    int64_t e, o, r;     /* extents */
    int64_t l;           /* segment length (0: whole R, or groups when table != 0) */
    int64_t nseg;        /* jagged: groups */
    int64_t odiv;        /* scale row index = o / odiv (128 for 128x128 tiles) */
    int64_t colspad;     /* skind 2: blocked-scale columns (padded) */
    int64_t expbytes;    /* skind 2: bytes of one expert's blocked scales */
    int64_t table;       /* jagged: the group table of the offsets (offs_prep.comp), 0 = none */
    int64_t n;           /* elements in all */
};

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QDequantParams { qg_dequant_params v; };
#define DQP (QDequantParams(qpush.params).v)
#else
typedef struct qg_dequant_params qg_dequant_params;
#define QG_DEQUANT_NP ((int)(sizeof(qg_dequant_params) / sizeof(int64_t))) /* int64 words of the block */
#endif

#endif
