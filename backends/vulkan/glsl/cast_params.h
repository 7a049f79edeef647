/* cast_params.h — the parameter block of the cast shaders (cast.comp, cast_rows.comp,
 * cast_2d.comp, cast_cols.comp, cast_jrows.comp) as one struct that C
 * (backends/vulkan/vk_ops_cast.c, vk_ops_mx_groups.c fill it) and GLSL (after common.glsl,
 * for the int64 types) both compile. Every member is an int64_t, so C and std430 lay it
 * out alike. A cast sees x as (E, O, R): experts, the other dim and the reduce dim, cut
 * into nseg segments along R; strides are in elements, addresses are buffer device
 * addresses. */
#ifndef QGMM_GLSL_CAST_PARAMS_H
#define QGMM_GLSL_CAST_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

struct qg_cast_params {
    int64_t x, xdt;      /* x: address, dtype */
    int64_t q, fmt;      /* q: address, fp8 dtype */
    int64_t s;           /* scales: address */
    int64_t skind;       /* 0 f32 strided, 1 byte strided, 2 byte blocked, 3 / 4 byte M-groups /
                            K-groups (cast.comp's generic path only, group table at gtab) */
    int64_t rule;        /* 0 rowwise/blockwise, 1 mx floor, 2 mx rceil */
    int64_t pow2;        /* rowwise: power-of-two scales */
    int64_t recip;       /* rowwise: the scale stored is the reciprocal */
    int64_t xe, xo, xr;  /* x strides along E, O, R */
    int64_t qe, qo, qr;  /* q strides */
    int64_t se, so, sg;  /* scale strides along E, O and the segments (g) */
    int64_t e, o, r;     /* extents */
    int64_t l;           /* segment length (0: whole R, or groups when table != 0) */
    int64_t nseg;        /* segments per (e, o) */
    int64_t to, tr;      /* cast.comp generic path: lanes along O and along R */
    int64_t ot;          /* o indices per workgroup */
    int64_t combine;     /* 128x128 tiles: one scale over 128 o indices */
    int64_t ocontig;     /* lane order: o fastest (1) or r fastest (0) */
    int64_t colspad;     /* skind 2 / 3 / 4: blocked-scale columns (padded) */
    int64_t expbytes;    /* skind 2: bytes of one expert's blocked scales; 3 / 4: padded rows */
    int64_t table;       /* jagged: the group table of the offsets (offs_prep.comp), 0 = none */
    int64_t c_max, c_clamp, c_eps, c_inv; /* codec.glsl FmtConsts, f32 bits (vk_ops_cast.c fmt_consts) */
    int64_t notiles;     /* workgroup tiles along O */
    int64_t vec;         /* 8: each lane takes 8 consecutive reduce elements per step (16-byte loads) */
    int64_t fast;        /* register-resident paths: 0 none, 1 segments, 2 MX dim1 (8 columns per
                            lane), 3 128x128 tiles, 4 MX dim0 chunks of 4 blocks */
    int64_t ls;          /* fast 1: lanes per segment (power of two) */
    int64_t kps;         /* fast 1: 8-element units per lane per segment */
    int64_t nsegt;       /* fast 1: segments in all, e * o * nseg (< 2^30); fast 4: chunks, a quarter of that */
    int64_t otiles;      /* fast 2: 1024-column tiles per block row (cast_2d.comp, cast_cols.comp: theirs) */
    int64_t enc;         /* fast encoder: 1 quantize_fast per element (default), 0 fp8_mag_fast + word-wise signs */
    int64_t amax;        /* cast_cols.comp: scratch address of its per-(e, g, column) amax / multiplier words */
    int64_t nch;         /* cast_cols.comp: row chunks per expert (jagged: a bound; surplus workgroups exit) */
    int64_t chunk;       /* cast_cols.comp: rows of a chunk (vk_ops_cast.c cols_plan) */
    int64_t gtab;        /* skind 3 / 4: the group table of the token offsets (offs_prep.comp) */
    int64_t gg;          /* skind 3 / 4: groups */
};

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QCastParams { qg_cast_params v; };
#define CPR (QCastParams(qpush.params).v)
#else
typedef struct qg_cast_params qg_cast_params;
#define QG_CAST_NP ((int)(sizeof(qg_cast_params) / sizeof(int64_t))) /* int64 words of the block */
#endif

#endif
