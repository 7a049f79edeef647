/*
 * qgmm_problem.h — each op's problem described once. The API builds the description from
 * the validated tensors (api/problem_gemm.c) and hands it to the backend, which translates
 * it into its kernels' own form and never derives the problem again. Part of the backend
 * contract (qgmm_backend.h includes it), not of the public API.
 *
 * The grouped GEMM has one shape for both kinds. Group g's output tile is
 *   out_g[r][c] = sum over k of A(r, k) * B(c, k), accumulated in f32:
 *   M_GROUPED: r = token row m in [offs[g-1], offs[g]), c = n < N, k < K;
 *              A(r, k) = a[m, k], B(c, k) = b[g, n, k], out[m, n].
 *   K_GROUPED: r = n < N, c = k < K, the contraction runs over the tokens m in
 *              [offs[g-1], offs[g]); A(r, m) = a[m, n], B(c, m) = b[m, k], out[g, n, k].
 * Each operand is where its element 0 lives plus its element strides along r (or c), along
 * the contraction and between groups, so any layout is a choice of strides.
 * The casts (api/problem_cast.c) are described the same way, below the GEMM.
 */
#ifndef QGMM_PROBLEM_H
#define QGMM_PROBLEM_H

#include "qgmm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a tensor's element 0 lives. */
typedef struct qgmm_ref {
    qgmm_buffer *buffer; /* NULL: absent */
    size_t offset;       /* bytes */
    qgmm_dtype dtype;
} qgmm_ref;

typedef struct qgmm_gemm_operand {
    qgmm_ref at;
    int64_t s_row;       /* elements between consecutive r (A) or c (B) */
    int64_t s_k;         /* elements along the contraction */
    int64_t s_grp;       /* elements between groups: M-grouped b only, else 0 */
} qgmm_gemm_operand;

/* The dequant scales of one operand (absent for BF16).
 *   FP8 rowwise and blockwise, f32: the scale of (group g, index i along r or c, block kb
 *   of 128 along the contraction, counted from k = 0; rowwise: kb = 0) is element
 *   g * s_grp + (i / i_div) * s_row + kb * s_k.
 *   MXFP8, e8m0 bytes in a blocked layout (qgmm_layout_maps.h): byte j is element
 *   j * s_byte; rows_pad and cols_pad are the padded extents of one matrix of the layout
 *   (rows along r or c, columns along the 32-blocks of the contraction), 0 where the group
 *   sizes give them instead (qgmm_gemm_problem.mx_group_div). */
typedef struct qgmm_gemm_scales {
    qgmm_ref at;
    int64_t s_grp, s_row, s_k;
    int64_t i_div;       /* 128 for b's 128 x 128 tiles (M-grouped blockwise), else 1 */
    int64_t s_byte;
    int64_t rows_pad, cols_pad;
} qgmm_gemm_scales;

typedef struct qgmm_gemm_problem {
    qgmm_gemm_kind kind;
    qgmm_recipe recipe;  /* also how the scales enter: none (BF16), per r and c in the
                            epilogue (FP8 rowwise), per 128 (FP8 blockwise) or 32 (MXFP8)
                            along the contraction, each block's sum promoted into f32 */
    int64_t groups;      /* G >= 1 */
    int64_t rows;        /* r extent: M (M-grouped) or N (K-grouped) */
    int64_t cols;        /* c extent: N or K */
    int64_t kdim;        /* contraction: K or M */
    int64_t tokens;      /* M, the extent the offsets bound (rows or kdim) */
    qgmm_gemm_operand a, b;
    qgmm_gemm_scales sa, sb;
    qgmm_ref offs;       /* i32 (G), contiguous: cumulative group end offsets, on the device */
    int64_t offs_multiple; /* every group size a multiple of this (1, 32, 128); the device
                              check of the offsets enforces it */
    /* MXFP8: the grouped side of the blocked scales (M-grouped a_scales' rows, K-grouped
     * a_scales' and b_scales' columns) gives group g round_up(size_g / mx_group_div,
     * mx_group_align) of them, after those of the groups before it. 0 for other recipes. */
    int64_t mx_group_div, mx_group_align;
    qgmm_ref out;        /* bf16 or f32 */
    int64_t so_grp, so_row, so_col; /* output element strides: between groups (K-grouped;
                                       M-grouped 0), along r, along c */
} qgmm_gemm_problem;

/* The casts (quantize: x -> q and scales; dequantize: q and scales -> x) share one view:
 * E matrices (the expert dim of rank 3, else E = 1) of O lines of R elements, where r runs
 * along the dim the scales are taken along (rowwise: reduce_dim; MXFP8: block_dim; FP8
 * blockwise: the last dim) and o along the other of the last two. Element (e, o, j) of an
 * operand is element e * s_e + o * s_o + j * s_r of its buffer view. */
typedef struct qgmm_cast_operand {
    qgmm_ref at;
    int64_t s_e, s_o, s_r;
} qgmm_cast_operand;

typedef struct qgmm_cast_problem {
    qgmm_quant_kind kind;
    int dequantize;      /* 0: quantize x into q and scales; 1: dequantize q and scales into x */
    int64_t e, o, r;     /* extents */
    int odim, rdim;      /* the tensors' dims along o and r (e is dim 0 of a rank-3 tensor) */
    qgmm_cast_operand x; /* the high-precision side: bf16 / f16 / f32 input, or the output */
    qgmm_cast_operand q; /* the fp8 side; its dtype is the format */
    /* Segments along r, one scale each: seg elements (32 MXFP8, 128 blockwise, R rowwise) and
     * nseg of them per line; jagged rowwise (groups > 0): seg 0 and nseg G, segment g the group
     * [offs[g-1], offs[g]). Blockwise 128x128: o_div 128 lines share a scale, else 1. */
    int64_t seg, nseg, o_div;
    qgmm_ref offs;       /* i32 (G), contiguous: group end offsets (jagged rowwise along r,
                            MXFP8 grouped layouts along the tokens); absent otherwise */
    int64_t groups;      /* G, 0 without offsets */
    /* The scale of (e, line o, segment g): plain f32 (rowwise, blockwise) or e8m0 (MXFP8
     * PLAIN) element e * ss_e + (o / o_div) * ss_o + g * ss_g; MXFP8 BLOCKED: byte
     * (e * expert_bytes + qgmm_blocked_offset(o, g, cols_pad)) * s_byte; the grouped MXFP8
     * layouts place each group's matrix after the ones before it (docs/layouts.md), bytes
     * s_byte apart. cols_pad = qgmm_blocked_cols(nseg), rows_pad = qgmm_blocked_rows(o). */
    qgmm_ref scales;
    int64_t scales_len;       /* elements of the scales tensor (all of them, padding included) */
    qgmm_scale_layout layout; /* MXFP8 only; QGMM_SCALES_PLAIN for the other kinds */
    int64_t ss_e, ss_o, ss_g;
    int64_t s_byte, cols_pad, rows_pad, expert_bytes;
    /* the scale rule */
    int pow2;            /* rowwise: power_of_2 */
    int recip;           /* rowwise and blockwise: the scales hold 1 / scale (blockwise: always) */
    int rceil;           /* MXFP8: QGMM_MX_RCEIL */
} qgmm_cast_problem;

/* The fused pad of a cast (the pad_cast slot): x's token groups padded to `alignment` as
 * ops-spec §5 pads them. Padded position j of group g (padded_start_g <= j <
 * padded_offs[g]) holds token offs[g-1] + j - padded_start_g while that is below offs[g];
 * every other position (the groups' padding, the tail past padded_offs[G-1]) is zero. */
typedef struct qgmm_pad_gather {
    qgmm_ref offs;        /* i32 (G), contiguous: the tokens' group end offsets */
    int64_t groups;       /* G */
    int64_t tokens;       /* T, the rows of x (the extent offs is checked against) */
    int alignment;        /* 32 (MXFP8) or 128 (FP8 blockwise) */
    qgmm_ref padded_offs; /* i32 (G), contiguous, written: the padded group end offsets */
} qgmm_pad_gather;

#ifdef __cplusplus
}
#endif
#endif /* QGMM_PROBLEM_H */
