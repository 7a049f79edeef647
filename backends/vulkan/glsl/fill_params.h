/* fill_params.h — the parameter blocks of fill.comp (byte fill) and copy.comp (16-byte
 * units), each one struct that C (backends/vulkan/vk_stream.c vk_fill, vk_backend.c
 * vk_buffer_copy) and GLSL (after common.glsl, for the int64 types) both compile. Every
 * member is an int64_t, so C and std430 lay them out alike. Addresses are buffer device
 * addresses. */
#ifndef QGMM_GLSL_FILL_PARAMS_H
#define QGMM_GLSL_FILL_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

struct qg_fill_params {
    int64_t dst;         /* first byte */
    int64_t bytes;
    int64_t value;       /* the byte written */
};

struct qg_copy_params {
    int64_t src, dst;    /* 16-byte aligned */
    int64_t units;       /* 16-byte units */
};

#define COPY_PER_LANE 8  /* copy.comp: units per lane */

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QFillParams { qg_fill_params v; };
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QCopyParams { qg_copy_params v; };
#define FILLP (QFillParams(qpush.params).v)
#define COPYP (QCopyParams(qpush.params).v)
#else
typedef struct qg_fill_params qg_fill_params;
typedef struct qg_copy_params qg_copy_params;
#define QG_FILL_NP ((int)(sizeof(qg_fill_params) / sizeof(int64_t)))
#define QG_COPY_NP ((int)(sizeof(qg_copy_params) / sizeof(int64_t)))
#endif

#endif
