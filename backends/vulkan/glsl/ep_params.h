/* ep_params.h — ep.comp's parameter block (expert parallelism, docs/ep.md) as one struct
 * that C (backends/vulkan/vk_ops_ep.c fills it) and GLSL (after common.glsl, for the int64
 * types) both compile, and its modes. Every member is an int64_t, so C and std430 lay it
 * out alike. Strides are in elements, addresses are buffer device addresses. */
#ifndef QGMM_GLSL_EP_PARAMS_H
#define QGMM_GLSL_EP_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

#define EP_MODE_ROUTE 0   /* one lane: the stable counting sort of cpu_ep.c */
#define EP_MODE_LAYOUT 1  /* one lane: receive rows, padded offsets, destinations */
#define EP_MODE_PACK 2    /* one lane per wire byte */
#define EP_MODE_ZERO 3    /* dispatch's unpack, first: zero out and out_scales */
#define EP_MODE_SCATTER 4 /* then one lane per wire byte into the receive layout */
#define EP_MODE_COMBINE 5 /* one lane per (token, column) */

struct qg_ep_params {
    int64_t mode;        /* EP_MODE_* */
    int64_t dir;         /* pack: 0 dispatch, 1 combine */
    int64_t nranks, topk, align;
    int64_t e, l, lmax;  /* experts in all, local experts, the most on any rank */
    int64_t t, cap, maxrecv; /* tokens, wire rows per peer, receive rows */
    int64_t erank, elocal, pos, src, scnt, rcnt, srows, rrows, dst, offs, state;
                         /* the plan's tables (qgmm_ep_desc): addresses */
    int64_t status;      /* the context's status word */
    int64_t scratch;     /* route: (nranks, lmax + 1) i32 cursors */
    int64_t ids, ids0, ids1; /* route: expert ids and their strides */
    int64_t x, xs0, xes, xdt, d, xrows; /* pack: rows read (x or y): address, row stride,
                                           element size, dtype, cols, rows */
    int64_t s, ss0, ses, scols; /* scales travelling with x / written beside out: address,
                                   row stride, element size, columns (0 = none) */
    int64_t w, w0, w1, wdt;  /* weights (T, k): address, strides, dtype (0 = none) */
    int64_t wire, rowb;  /* wire rows: address, bytes per row */
    int64_t o, o0, o1, oes, odt, orows; /* out: address, strides, element size, dtype, rows */
    int64_t osblk, osbytes; /* out_scales in the M-groups blocked layout, and its bytes */
    int64_t offsout;     /* the receive layout's group offsets: address (0 = none) */
    int64_t n;           /* lanes */
};

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QEpParams { qg_ep_params v; };
#define EPP (QEpParams(qpush.params).v)
#else
typedef struct qg_ep_params qg_ep_params;
#define QG_EP_NP ((int)(sizeof(qg_ep_params) / sizeof(int64_t))) /* int64 words of the block */
#endif

#endif
