/* gemm_params.h — the parameter block of the grouped GEMM shaders (gemm.comp,
 * gemm_coopmat.comp, gemm_zero.comp) as one struct that C (backends/vulkan/vk_ops_gemm.c
 * fills it from the problem description) and GLSL (after common.glsl, for the int64 types)
 * both compile. Every member is an int64_t, so C and std430 lay it out alike.
 * Indices i, j run along the output rows (r) and columns (c), c along the contraction
 * (qgmm_problem.h); strides are in elements, addresses are buffer device addresses. */
#ifndef QGMM_GLSL_GEMM_PARAMS_H
#define QGMM_GLSL_GEMM_PARAMS_H

#ifndef VULKAN
#include <stdint.h>
#endif

struct qg_gemm_params {
    int64_t kind;        /* 0 M-grouped, 1 K-grouped */
    int64_t recipe;      /* qgmm_recipe */
    int64_t a_addr, a_i, a_c, a_dt;          /* A: address, strides along i and c, dtype */
    int64_t b_addr, b_g, b_j, b_c, b_dt;     /* B: address, strides between groups, along j and c */
    int64_t o_addr, o_g, o_i, o_j, o_dt;   /* out: address, strides, dtype */
    int64_t sa_addr, sa_g, sa_i, sa_c;       /* f32 scales of A: address and strides */
    int64_t sb_addr, sb_g, sb_j, sb_c;
    int64_t sb_jdiv;     /* j / sb_jdiv is the row of b's scales (128: 128 x 128 tiles) */
    int64_t rows;        /* i extent: M (M-grouped) or N (K-grouped, every group's) */
    int64_t cols;        /* j extent */
    int64_t depth;       /* c extent of M-grouped problems: K */
    int64_t groups;
    int64_t table;       /* the group table (offs_prep.comp) */
    int64_t ntj;         /* column tiles */
    int64_t nti;         /* row tiles per group (K-grouped) */
    int64_t a_cols_pad, a_rows_pad, b_cols_pad, b_rows_pad; /* MXFP8 blocked-scale geometry */
    int64_t b_per_exp;   /* MXFP8: bytes of one expert's blocked b scales (M-grouped) */
    int64_t sa_stride, sb_stride; /* MXFP8: element stride of the blocked scale bytes */
    int64_t a_icontig, b_jcontig; /* A unit-stride along i (not c), B along j (not c) */
    int64_t nwg;         /* workgroups with a tile; the rest exit */
    int64_t skip_lean;   /* gemm_coopmat.comp BF16 / FP8 rowwise builds: 1 = leave the lean
                            tiles (see there) to the workgroup-scope build */
    int64_t zchunks;     /* gemm_zero.comp: workgroups per group (GZ_CHUNK outputs each) */
};

#define GZ_CHUNK 8192

#ifdef VULKAN
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer QGemmParams { qg_gemm_params v; };
#define GP (QGemmParams(qpush.params).v)
#else
typedef struct qg_gemm_params qg_gemm_params;
#endif

#endif
