/*
 * hip_gemm.h — the HIP plugin's grouped GEMM: the problem the MFMA kernels see (raw
 * pointers, element strides, recipe) and the host functions around it.
 *
 * One shape covers both kinds. A tile of group g is out_g[r][c] = sum_k A(r,k) * B(c,k):
 *   M_GROUPED: r = token row m in [offs[g-1], offs[g]), c = n < N, k < K:
 *              A(r,k) = a[m,k], B(c,k) = b[g,n,k], out[m,n].
 *   K_GROUPED: r = n < N, c = k < K, contraction over tokens m in [offs[g-1], offs[g]):
 *              A(r,m) = a[m,n], B(c,m) = b[m,k], out[g,n,k].
 * Scales are the DEQUANT multipliers of api/qgmm.h (qgmm_grouped_gemm).
 */
#ifndef QGMM_HIP_GEMM_H
#define QGMM_HIP_GEMM_H

#include <stdint.h>

#include "qgmm_backend.h"

#ifndef QGMM_HIP_ARCHS_STRING
#define QGMM_HIP_ARCHS_STRING "gfx90a"
#endif

/* How scales enter: none (BF16), per row/column in the epilogue (FP8 rowwise), per 128
 * along the contraction promoted into the f32 accumulator (FP8 blockwise), per 32 along
 * it (MXFP8, e8m0 bytes in the blocked layout). */
enum { QGMM_HG_SC_NONE = 0, QGMM_HG_SC_ROW = 1, QGMM_HG_SC_BLOCK128 = 2, QGMM_HG_SC_MX32 = 3 };
enum { QGMM_HG_M_GROUPED = 0, QGMM_HG_K_GROUPED = 1 };

typedef struct qgmm_hg_operand {
    const uint8_t *ptr;     /* element (0, 0[, 0]) */
    int64_t s_row, s_k;     /* elements along r (A) / c (B), and along the contraction */
    int64_t s_grp;          /* elements between experts (M_GROUPED b), else 0 */
    int dtype;              /* qgmm_dtype value: QGMM_BF16 or an fp8 format */
} qgmm_hg_operand;

typedef struct qgmm_hg_scales {
    const void *ptr;
    int64_t s_grp, s_row, s_k;
    int i_div;              /* 128 for 128x128 weight tiles (ceil(N/128) rows), else 1 */
} qgmm_hg_scales;

typedef struct qgmm_hg_problem {
    int kind, scale_mode, out_f32;
    int64_t groups;
    int64_t rows, cols, kdim;  /* r extent (M or N), c extent (N or K), contraction (K or M) */
    int64_t offs_multiple;     /* every group size a multiple of this (1, 32, 128) */
    qgmm_hg_operand a, b;
    qgmm_hg_scales sa, sb;
    const int32_t *offs;
    int64_t offs_stride;
    void *out;
    int64_t so_g, so_r, so_c;
    uint32_t *status;          /* QGMM_DEVICE_STATUS_BAD_OFFSETS is OR'ed in */
} qgmm_hg_problem;

/* Groups one launch handles (the group prefix lives in LDS). */
#define QGMM_HG_MAX_GROUPS 1024

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when this build holds a code object for the gfx arch code (0x90a, 0x942, ...). */
int qgmm_hip_arch_built(int arch);
/* The GEMM path used on `arch`, for qgmm_context_describe. */
const char *qgmm_hip_gemm_path_name(int arch);

/* Enqueues the MFMA kernel. fp8_mfma: 1 = native FP8 MFMA (gfx94x, both operands
 * e4m3fnuz), 0 = BF16 MFMA with operands widened to bf16 in LDS. Returns the runtime's
 * launch status (0 = hipSuccess). */
int qgmm_hip_gemm_launch(const qgmm_hg_problem *p, int fp8_mfma, unsigned grid, void *stream);

/* Checks what the kernel handles (QGMM_ERR_UNSUPPORTED with a message otherwise) and
 * fills *p from the problem's description; `status` is the device status word. */
qgmm_status qgmm_hip_gemm_build(const qgmm_context *ctx, const qgmm_gemm_problem *d, uint32_t *status,
                                qgmm_hg_problem *p);

/* The vtable slot. */
qgmm_status qgmm_hip_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *d);

#ifdef __cplusplus
}
#endif
#endif /* QGMM_HIP_GEMM_H */
