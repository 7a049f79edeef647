/*
 * validate.h — argument checks shared by every op entry point. Each returns QGMM_OK or
 * sets ctx's error naming the argument and the value, so an op validates everything
 * before the backend is called and a rejected call changes nothing.
 */
#ifndef QGMM_VALIDATE_H
#define QGMM_VALIDATE_H

#include "qgmm_internal.h"

#define QGMM_TRY(expr) do { qgmm_status s_ = (expr); if (s_ != QGMM_OK) return s_; } while (0)

/* Masks of accepted dtypes. */
#define QGMM_MASK(t) (1u << (unsigned)(t))
#define QGMM_MASK_HP (QGMM_MASK(QGMM_F32) | QGMM_MASK(QGMM_BF16))
#define QGMM_MASK_FP8 (QGMM_MASK(QGMM_F8E4M3FN) | QGMM_MASK(QGMM_F8E4M3FNUZ) | QGMM_MASK(QGMM_F8E5M2))
#define QGMM_MASK_E8M0 (QGMM_MASK(QGMM_E8M0) | QGMM_MASK(QGMM_U8))
#define QGMM_MASK_OUT (QGMM_MASK(QGMM_F32) | QGMM_MASK(QGMM_BF16))
#define QGMM_MASK_I32 QGMM_MASK(QGMM_I32)
#define QGMM_MASK_ANY 0xFFFFFFFFu

/* The first check of every op: empties the messages (qgmm_clear_error), then ctx non-NULL. */
qgmm_status qgmm_check_ctx(qgmm_context *ctx);
/* Well-formed tensor on ctx: buffer of this context, dtype in mask, rank in [rmin, rmax],
 * shape in [0, 2^40], strides >= 1, offset aligned to the dtype, element count and byte span
 * within int64 (checked arithmetic), every element inside the buffer. */
qgmm_status qgmm_check_tensor(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                              uint32_t dtype_mask, int rmin, int rmax);
/* Same, but a NULL pointer or a NULL buffer means "absent" and passes (*present = 0). */
qgmm_status qgmm_check_optional(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                                uint32_t dtype_mask, int rmin, int rmax, int *present);
/* Exact shape (rank and each extent). */
qgmm_status qgmm_check_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t, int rank,
                             int64_t d0, int64_t d1, int64_t d2);
qgmm_status qgmm_check_same_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                                  const char *ref_name, const qgmm_tensor *ref);
qgmm_status qgmm_check_contiguous(qgmm_context *ctx, const char *name, const qgmm_tensor *t);
/* The last dimension has stride 1 (where its extent is > 1). */
qgmm_status qgmm_check_rows_contiguous(qgmm_context *ctx, const char *name, const qgmm_tensor *t);
/* Group offsets: i32, rank 1, contiguous, at least one group. */
qgmm_status qgmm_check_offsets(qgmm_context *ctx, const char *name, const qgmm_tensor *t);
qgmm_status qgmm_unsupported_op(qgmm_context *ctx, const char *op);
/* A rank-1 blocked-scales tensor of exactly the bytes qgmm_blocked_bytes_checked gives. */
qgmm_status qgmm_check_blocked_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                                     qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols);

/* The aliasing rule of every op, in one place: no output may share a byte with any input
 * (offsets and scales included), with another output, or with itself (strides that map
 * two elements to one address). Byte ranges [offset, offset + span) are compared where two
 * tensors can share memory (qgmm_buffer_ranges_overlap); absent tensors are skipped. The
 * error names op (unless NULL) and both arguments. Call it after every tensor passed qgmm_check_tensor. */
typedef struct qgmm_arg {
    const char *name;
    const qgmm_tensor *t;
} qgmm_arg;
#define QGMM_NARGS(a) ((int)(sizeof(a) / sizeof((a)[0])))
qgmm_status qgmm_check_aliasing(qgmm_context *ctx, const char *op, const qgmm_arg *outs, int n_out,
                                const qgmm_arg *ins, int n_in);

/* Whole-op validation: everything an op checks before it enqueues (arguments, aliasing, a
 * backend slot to run it), without enqueuing. Each public op is its validate_ followed by
 * the backend call; the composite runs them all before its first step. */
qgmm_status qgmm_validate_quantize_fp8_rowwise(qgmm_context *ctx, const qgmm_fp8_rowwise_params *p,
                                               const qgmm_tensor *x, const qgmm_tensor *offs,
                                               const qgmm_tensor *q, const qgmm_tensor *scales);
qgmm_status qgmm_validate_quantize_fp8_rowwise_dual(
    qgmm_context *ctx, const qgmm_fp8_rowwise_params *p0, const qgmm_tensor *x0, const qgmm_tensor *q0,
    const qgmm_tensor *scales0, const qgmm_fp8_rowwise_params *p1, const qgmm_tensor *x1,
    const qgmm_tensor *q1, const qgmm_tensor *scales1, const qgmm_tensor *offs);
qgmm_status qgmm_validate_quantize_mxfp8(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                         const qgmm_tensor *x, const qgmm_tensor *q,
                                         const qgmm_tensor *scales);
qgmm_status qgmm_validate_quantize_mxfp8_grouped(qgmm_context *ctx, const qgmm_mxfp8_params *p,
                                                 const qgmm_tensor *x, const qgmm_tensor *offs,
                                                 const qgmm_tensor *q, const qgmm_tensor *scales);
qgmm_status qgmm_validate_quantize_fp8_blockwise(qgmm_context *ctx, const qgmm_fp8_blockwise_params *p,
                                                 const qgmm_tensor *x, const qgmm_tensor *q,
                                                 const qgmm_tensor *scales);
qgmm_status qgmm_validate_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant variant,
                                            const qgmm_tensor *in, const qgmm_tensor *offs,
                                            const qgmm_tensor *out, const qgmm_tensor *group_starts);
qgmm_status qgmm_validate_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                           const qgmm_tensor *offs, const qgmm_tensor *out,
                                           const qgmm_tensor *padded_start,
                                           const qgmm_tensor *padded_offs);
/* ops_pad_cast.c: the composite's wgrad operand of FP8 blockwise (f: 1x128) and MXFP8 (f:
 * block_dim 0, K-groups blocked scales): qgmm_pad_token_groups(128 or 32, x, offs, xp, NULL,
 * padded_offs) then the cast along the tokens of the padded rows into q (P, D) and scales
 * (blockwise: of the transposed views). A backend with the pad_cast slot leaves xp alone. */
qgmm_status qgmm_validate_quantize_tokens_padded(qgmm_context *ctx, const qgmm_quant_format *f, const qgmm_tensor *x,
                                              const qgmm_tensor *offs, const qgmm_tensor *xp,
                                              const qgmm_tensor *padded_offs, const qgmm_tensor *q,
                                              const qgmm_tensor *scales);
qgmm_status qgmm_quantize_tokens_padded(qgmm_context *ctx, const qgmm_quant_format *f, const qgmm_tensor *x,
                                     const qgmm_tensor *offs, const qgmm_tensor *xp, const qgmm_tensor *padded_offs,
                                     const qgmm_tensor *q, const qgmm_tensor *scales);
/* ops_mx_round_trip.c: out (bf16, x's shape) = bf16(dequantize(quantize_mxfp8(x))) with the
 * format fp8, p's block_dim and mode (its scale_layout is not read), through the backend's
 * mx_round_trip slot; x bf16, blocks whole, x and out with stride 1 along the blocks or
 * along the lines. */
qgmm_status qgmm_validate_mx_round_trip(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8,
                                       const qgmm_tensor *x, const qgmm_tensor *out);
qgmm_status qgmm_mx_round_trip(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8, const qgmm_tensor *x,
                               const qgmm_tensor *out);
/* The same of x (T, D) bf16 in 32-token blocks restarting at each group of offs, written as
 * qgmm_pad_token_groups(32, x, offs, out, NULL, padded_offs) would place the rows (out
 * (qgmm_padded_rows_bound(T, G, 32), D), padding zero); p->block_dim 0. */
qgmm_status qgmm_validate_mx_round_trip_padded(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8,
                                              const qgmm_tensor *x, const qgmm_tensor *offs, const qgmm_tensor *out,
                                              const qgmm_tensor *padded_offs);
qgmm_status qgmm_mx_round_trip_padded(qgmm_context *ctx, const qgmm_mxfp8_params *p, qgmm_dtype fp8,
                                      const qgmm_tensor *x, const qgmm_tensor *offs, const qgmm_tensor *out,
                                      const qgmm_tensor *padded_offs);
qgmm_status qgmm_validate_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *p,
                                       const qgmm_tensor *a, const qgmm_tensor *b,
                                       const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                       const qgmm_tensor *offs, const qgmm_tensor *out);

static inline int qgmm_present(const qgmm_tensor *t) { return t && t->buffer; }

#endif /* QGMM_VALIDATE_H */
