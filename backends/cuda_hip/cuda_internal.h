/*
 * cuda_internal.h — what every file of the CUDA plugin shares: the per-context state,
 * the buffer handle, error/launch helpers, and the op entry points the vtable points at.
 *
 * STABLE: the grouped-GEMM files (gemm_*.cu) build against this header. Add, don't change.
 *
 * Rules every op follows (api/qgmm_backend.h has the contract):
 *  - arguments arrive validated by libqgmm; an op only enqueues work on ctx->stream and
 *    never reads device memory on the host (no cudaStreamSynchronize, no D2H copies);
 *  - group offsets are checked ON THE DEVICE, by every block that uses them; bad offsets
 *    make the whole launch write nothing and raise QGMM_DEVICE_STATUS_BAD_OFFSETS in
 *    ctx->status_dev, which synchronize() reports and clears.
 */
#ifndef QGMM_CUDA_INTERNAL_H
#define QGMM_CUDA_INTERNAL_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "qgmm_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-context state (the qgmm_backend_ctx of a "cuda" context). */
typedef struct qgmm_cuda_ctx {
    int device;                  /* CUDA device ordinal */
    cudaStream_t stream;         /* every op enqueues here */
    int owns_stream;             /* 0 when adopted from qgmm_context_create_with_stream */
    uint32_t *status_dev;        /* device status word (QGMM_DEVICE_STATUS_* bits) */
    uint32_t *status_host;       /* pinned mirror, read only in synchronize() */

    /* device properties read once at context creation */
    int sm_count;
    int cc_major, cc_minor;
    size_t l2_bytes;
    size_t smem_per_block_optin; /* max dynamic smem after cudaFuncSetAttribute */
    size_t smem_per_sm;
    int max_threads_per_sm;
    char device_name[256];
    int gemm_path;               /* grouped-GEMM kernel path, qgmm_cuda_gemm_path_env() */

    /* stream-ordered scratch (cudaMallocAsync), grown on demand, freed at destroy */
    void *scratch;
    size_t scratch_bytes;

    /* CUDA plugin only: the pinned staging of large uploads and downloads (cuda_backend.cu),
     * allocated on first use */
    struct qgmm_cuda_staging *staging;
    int staging_failed;          /* none could be had: copies go straight from pageable memory */
} qgmm_cuda_ctx;

/* The qgmm_backend_buf of a "cuda" buffer. */
typedef struct qgmm_cuda_buf {
    void *ptr;
    size_t bytes;
    int owned;
} qgmm_cuda_buf;

static inline qgmm_cuda_ctx *qgmm_cuda_ctx_of(const qgmm_context *ctx)
{
    return (qgmm_cuda_ctx *)qgmm_context_impl(ctx);
}

/* Maps a CUDA error to QGMM_ERR_DEVICE (or OUT_OF_MEMORY) with a message naming `what`;
 * QGMM_OK for cudaSuccess. */
qgmm_status qgmm_cuda_check(const qgmm_context *ctx, cudaError_t e, const char *what);

/* Call right after a kernel launch: reports a launch error (bad config, no kernel image
 * for this GPU) as QGMM_ERR_DEVICE naming `kernel`. Does not synchronize. */
qgmm_status qgmm_cuda_launch_check(const qgmm_context *ctx, const char *kernel);

/* Makes ctx's device current for the calling thread (cheap when it already is). */
qgmm_status qgmm_cuda_enter(const qgmm_context *ctx);

/* A device scratch area of at least `bytes`, stream-ordered on ctx->stream (valid for
 * work enqueued after this call, until the next qgmm_cuda_scratch call on ctx). Contents
 * unspecified. NULL (error set) on failure. */
void *qgmm_cuda_scratch(qgmm_context *ctx, size_t bytes);

/* A grid size for grid-stride kernels: enough blocks of `threads` to fill every SM
 * `blocks_per_sm` times, but no more than `work_blocks`. */
unsigned qgmm_cuda_grid(const qgmm_context *ctx, int64_t work_blocks, int threads, int blocks_per_sm);

/* ---- op entry points (vtable slots); arguments validated by libqgmm */
/* Every cast, from its description (cast_entry.cu). */
qgmm_status qgmm_cuda_cast(qgmm_context *ctx, const qgmm_cast_problem *p);
qgmm_status qgmm_cuda_quantize_fp8_rowwise_dual(qgmm_context *ctx,
                                                const qgmm_fp8_rowwise_params *p0,
                                                const qgmm_tensor *x0, const qgmm_tensor *q0,
                                                const qgmm_tensor *s0,
                                                const qgmm_fp8_rowwise_params *p1,
                                                const qgmm_tensor *x1, const qgmm_tensor *q1,
                                                const qgmm_tensor *s1, const qgmm_tensor *offs);
qgmm_status qgmm_cuda_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                        const qgmm_tensor *in, const qgmm_tensor *offs,
                                        const qgmm_tensor *out, const qgmm_tensor *group_starts);
qgmm_status qgmm_cuda_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                          const qgmm_tensor *in, const qgmm_tensor *offs,
                                          const qgmm_tensor *out);
qgmm_status qgmm_cuda_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                       const qgmm_tensor *offs, const qgmm_tensor *out,
                                       const qgmm_tensor *padded_start,
                                       const qgmm_tensor *padded_offs);
/* The fused pad and cast of the composite's wgrad operands (cast_pad.cu). */
qgmm_status qgmm_cuda_pad_cast(qgmm_context *ctx, const qgmm_cast_problem *p, const qgmm_pad_gather *g);
/* The MXFP8 round trip of the composite's operands, padded or not (cast_round_trip.cu). */
qgmm_status qgmm_cuda_mx_round_trip(qgmm_context *ctx, const qgmm_cast_problem *p, const qgmm_cast_operand *out,
                                    const qgmm_pad_gather *g);
/* The fused pad's plan (qgmm_kp_gather_plan: g's offsets checked, its padded offsets
 * written, map filled for nblk 32-row blocks; layout_pad.cu); QGMM_ERR_UNSUPPORTED, nothing
 * enqueued, past QGMM_KL_MAX_GROUPS groups. */
qgmm_status qgmm_cuda_pad_gather_plan(qgmm_context *ctx, const qgmm_pad_gather *g, int32_t *map, int64_t nblk);
qgmm_status qgmm_cuda_unpad_token_groups(qgmm_context *ctx, int alignment,
                                         const qgmm_tensor *x_padded, const qgmm_tensor *offs,
                                         const qgmm_tensor *out);
qgmm_status qgmm_cuda_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs,
                                    const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids);

/* Fills the vtable slots of the entry points above (cast_ops_table.cu; shared with the HIP
 * plugin and its emulation, which compile the same launcher files). */
void qgmm_cuda_fill_cast_ops(qgmm_backend_vtable *v);

/* Implemented by the GEMM files (backends/cuda/gemm_entry.cu and the gemm_*.cu it calls).
 * Must return QGMM_ERR_UNSUPPORTED (with qgmm_set_error) for combinations it lacks. */
qgmm_status qgmm_cuda_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *p);
/* QGMM_CUDA_GEMM_PATH (portable | hopper | auto, unset = auto) as a qg_path, -1 when it is
 * none of these; read once at context creation into qgmm_cuda_ctx.gemm_path (gemm_entry.cu). */
int qgmm_cuda_gemm_path_env(void);

#ifdef __cplusplus
}
#endif

#endif /* QGMM_CUDA_INTERNAL_H */
