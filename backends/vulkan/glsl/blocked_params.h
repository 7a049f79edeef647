/* blocked_params.h — the parameter block of blocked.comp (scales to / from the blocked
 * layout) as one struct that C (backends/vulkan/vk_ops_layout.c, vk_ops_mx_groups.c fill
 * it) and GLSL (after common.glsl, for the int64 types) both compile. Every member is an
 * int64_t, so C and std430 lay it out alike. Strides are in elements, addresses are buffer
 * device addresses. */
#ifndef QGMM_GLSL_BLOCKED_PARAMS_H
#define QGMM_GLSL_BLOCKED_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

struct qg_blocked_params {
    int64_t dir;         /* 0 plain -> blocked (one lane per 4 blocked bytes), 1 blocked -> plain,
                            2 zero the grouped layout's bytes that hold no scale */
    int64_t var;         /* qgmm_blocked_variant */
    int64_t plain;       /* plain scales: address */
    int64_t pe, pr, pc;  /* plain strides along experts, rows, columns */
    int64_t blk;         /* blocked scales: address */
    int64_t bstride;     /* blocked byte stride */
    int64_t blen;        /* blocked bytes */
    int64_t e, r, c;     /* plain extents */
    int64_t colspad;     /* blocked columns (padded to 4) */
    int64_t rowspad;     /* blocked rows (padded to 128) */
    int64_t perexp;      /* bytes of one expert's blocked matrix */
    int64_t g;           /* M-groups / K-groups: groups */
    int64_t table;       /* M-groups / K-groups: the group table (offs_prep.comp) */
    int64_t n;           /* lanes with work */
    int64_t words;       /* to-blocked: 1 = the blocked buffer takes 4-byte stores (unit stride, aligned) */
};

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QBlockedParams { qg_blocked_params v; };
#define BLP (QBlockedParams(qpush.params).v)
#else
typedef struct qg_blocked_params qg_blocked_params;
#define QG_BLOCKED_NP ((int)(sizeof(qg_blocked_params) / sizeof(int64_t))) /* int64 words of the block */
#endif

#endif
