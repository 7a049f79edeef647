/*
 * gemm_problem.cuh — the grouped GEMM as the CUDA kernels see it: raw device pointers,
 * element strides and recipe enums, with no qgmm handle in sight. gemm_entry.cu copies one
 * from the API's problem description (api/qgmm_problem.h); bench/cuda_gemm builds one from
 * PyTorch tensors. Both launch
 * through qgmm_cuda_gemm_run().
 *
 * One shape covers both kinds. A tile of group g is out_g[r][c] = sum_k A(r,k) * B(c,k):
 *   M_GROUPED: r = global token row m in [offs[g-1], offs[g]), c = n < N, k < K.
 *              A(r,k) = a[m, k]; B(c,k) = b[g, n, k]; out[m, n].
 *   K_GROUPED: r = n < N, c = k < K, the contraction runs over tokens m in
 *              [offs[g-1], offs[g]). A(r,m) = a[m, n]; B(c,m) = b[m, k]; out[g, n, k].
 * Each operand is (ptr, stride along r or c, stride along the contraction, stride between
 * experts), so any layout is a stride choice; contraction-contiguous, 16-byte aligned rows
 * take the cp.async / TMA fast paths, anything else a slower gather that gives the same bits.
 */
#ifndef QGMM_CUDA_GEMM_PROBLEM_CUH
#define QGMM_CUDA_GEMM_PROBLEM_CUH

#include <cuda_runtime.h>
#include <stdint.h>

enum qg_elem { QG_ELEM_BF16 = 0, QG_ELEM_E4M3 = 1, QG_ELEM_E5M2 = 2 };
/* How scales enter: none (BF16), per row/col in the epilogue (FP8 rowwise), per 128 along
 * the contraction promoted into f32 (FP8 blockwise), per 32 along it (MXFP8). */
enum qg_scale_mode { QG_SC_NONE = 0, QG_SC_ROW = 1, QG_SC_BLOCK128 = 2, QG_SC_MX32 = 3 };
enum qg_kind { QG_M_GROUPED = 0, QG_K_GROUPED = 1 };

struct qg_operand {
    const uint8_t *ptr;   /* element (0, 0[, 0]) */
    int64_t s_row;        /* elements between consecutive r (A) or c (B) */
    int64_t s_k;          /* elements along the contraction */
    int64_t s_grp;        /* elements between experts (M_GROUPED b only; else 0) */
};

/* f32 scales (ROW, BLOCK128): value(g, i, kb) = ptr[g*s_grp + (i/i_div)*s_row + kb*s_k].
 * MX32 scales are e8m0 bytes in the blocked layout; their addressing lives in the kernel. */
struct qg_scales {
    const void *ptr;
    int64_t s_grp, s_row, s_k;
    int i_div;            /* 128 for the weights' 128x128 tiles (ceil(N/128) rows), else 1 */
};

struct qg_problem {
    int kind;             /* qg_kind */
    int elem;             /* qg_elem of both operands */
    int scale_mode;       /* qg_scale_mode */
    int out_f32;          /* 1: f32 out, 0: bf16 out */
    int groups;           /* G >= 1 */
    int64_t rows;         /* r extent: M (M_GROUPED, also the offs bound) or N (K_GROUPED) */
    int64_t cols;         /* c extent: N or K */
    int64_t kdim;         /* contraction: K (M_GROUPED) or total tokens M (K_GROUPED) */
    int offs_multiple;    /* every group size must be a multiple of this (1, 32, 128) */
    qg_operand a, b;
    qg_scales sa, sb;
    const int32_t *offs;
    void *out;
    int64_t so_g, so_r, so_c; /* output strides (elements) */
    uint32_t *status;     /* device status word: QGMM_DEVICE_STATUS_BAD_OFFSETS is OR'ed in */
    int variant;          /* 0 (the ops): the Hopper kernel's default configuration; the
                             benchmark may name another (gemm_hopper.cu, QG_*_CONFS) */
    void *ws;             /* device workspace of ws_bytes, stream-ordered (MXFP8 on Hopper:
                             the bf16 operands); null / too small: that path is not taken */
    int64_t ws_bytes;
};

/* Kernel path choice. AUTO: Hopper where it applies, else portable. */
enum qg_path { QG_PATH_AUTO = 0, QG_PATH_PORTABLE = 1, QG_PATH_HOPPER = 2 };

/* Launches the grouped GEMM on `stream`. Returns 0 on success; otherwise non-zero with a
 * static sentence in *why: 1 = unsupported here, 2 = CUDA launch error. Never syncs. */
int qgmm_cuda_gemm_run(const qg_problem *p, int path, cudaStream_t stream, const char **why,
                       const char **path_used);

/* Each path's launcher (gemm_portable.cu, gemm_hopper.cu). */
int qgmm_cuda_gemm_portable(const qg_problem *p, cudaStream_t stream, const char **why);
/* Returns 1 (with *why) when the problem is not one the Hopper kernel handles. */
int qgmm_cuda_gemm_hopper(const qg_problem *p, cudaStream_t stream, const char **why);
/* Workspace bytes qgmm_cuda_gemm_run wants in p->ws for p on the current device (0: none):
 * MXFP8 on Hopper dequantizes both operands to bf16 there (2 bytes per operand element).
 * Without it that problem takes the portable kernel. */
size_t qgmm_cuda_gemm_ws_bytes(const qg_problem *p);

#endif /* QGMM_CUDA_GEMM_PROBLEM_CUH */
