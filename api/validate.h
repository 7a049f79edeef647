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

qgmm_status qgmm_check_ctx(qgmm_context *ctx);
/* Well-formed tensor on ctx: buffer of this context, dtype in mask, rank in [rmin, rmax],
 * shape >= 0, strides >= 1, offset aligned to the dtype, every element inside the buffer. */
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
/* Group offsets: i32, rank 1, contiguous, at least one group. */
qgmm_status qgmm_check_offsets(qgmm_context *ctx, const char *name, const qgmm_tensor *t);
qgmm_status qgmm_unsupported_op(qgmm_context *ctx, const char *op);
/* Outputs must not overlap inputs or each other (same buffer, intersecting byte span). */
qgmm_status qgmm_check_no_overlap(qgmm_context *ctx, const char *a_name, const qgmm_tensor *a,
                                  const char *b_name, const qgmm_tensor *b);

static inline int qgmm_present(const qgmm_tensor *t) { return t && t->buffer; }

#endif /* QGMM_VALIDATE_H */
