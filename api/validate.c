#include "validate.h"

#include <stdio.h>
#include <string.h>

qgmm_status qgmm_check_ctx(qgmm_context *ctx)
{
    if (!ctx) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "ctx is NULL");
    return QGMM_OK;
}

static void shape_str(const qgmm_tensor *t, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "(");
    for (int d = 0; d < t->rank && d < QGMM_MAX_RANK && n < cap; ++d)
        n += (size_t)snprintf(out + n, cap - n, d ? ", %lld" : "%lld", (long long)t->shape[d]);
    if (n < cap) snprintf(out + n, cap - n, ")");
}

static void mask_str(uint32_t mask, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    for (int t = 1; t <= QGMM_U8 && n < cap; ++t)
        if (mask & QGMM_MASK(t))
            n += (size_t)snprintf(out + n, cap - n, n ? "/%s" : "%s", qgmm_dtype_name((qgmm_dtype)t));
}

qgmm_status qgmm_check_tensor(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                              uint32_t dtype_mask, int rmin, int rmax)
{
    if (!t) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s is NULL", name);
    if (!t->buffer) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has no buffer", name);
    if (t->buffer->ctx != ctx)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s's buffer belongs to another context", name);
    const size_t es = qgmm_dtype_size(t->dtype);
    if (es == 0)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has invalid dtype %d", name,
                              (int)t->dtype);
    if (dtype_mask != QGMM_MASK_ANY && !(dtype_mask & QGMM_MASK(t->dtype))) {
        char m[128];
        mask_str(dtype_mask, m, sizeof m);
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has dtype %s; expected %s", name,
                              qgmm_dtype_name(t->dtype), m);
    }
    if (t->rank < rmin || t->rank > rmax)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has rank %d; expected %d..%d",
                              name, t->rank, rmin, rmax);
    for (int d = 0; d < t->rank; ++d) {
        if (t->shape[d] < 0)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s.shape[%d] is %lld; must be >= 0",
                                  name, d, (long long)t->shape[d]);
        if (t->strides[d] < 1 && t->shape[d] > 1)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "%s.strides[%d] is %lld; must be >= 1", name, d,
                                  (long long)t->strides[d]);
        if (t->shape[d] > ((int64_t)1 << 40))
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s.shape[%d] is %lld; too large",
                                  name, d, (long long)t->shape[d]);
    }
    if (t->offset % es)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s.offset is %zu; not a multiple of its %s element size %zu", name,
                              t->offset, qgmm_dtype_name(t->dtype), es);
    const size_t span = qgmm_tensor_span_bytes(t);
    const size_t size = t->buffer->size;
    if (t->offset > size || span > size - t->offset) {
        char s[96];
        shape_str(t, s, sizeof s);
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s %s at offset %zu spans %zu bytes, past its buffer of %zu bytes",
                              name, s, t->offset, span, size);
    }
    return QGMM_OK;
}

qgmm_status qgmm_check_optional(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                                uint32_t dtype_mask, int rmin, int rmax, int *present)
{
    *present = qgmm_present(t);
    if (!*present) return QGMM_OK;
    return qgmm_check_tensor(ctx, name, t, dtype_mask, rmin, rmax);
}

qgmm_status qgmm_check_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t, int rank,
                             int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t want[3] = {d0, d1, d2};
    int ok = t->rank == rank;
    for (int d = 0; ok && d < rank; ++d) ok = t->shape[d] == want[d];
    if (ok) return QGMM_OK;
    char have[96], exp[96];
    shape_str(t, have, sizeof have);
    qgmm_tensor w;
    memset(&w, 0, sizeof w);
    w.rank = rank;
    for (int d = 0; d < rank; ++d) w.shape[d] = want[d];
    shape_str(&w, exp, sizeof exp);
    return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has shape %s; expected %s", name, have,
                          exp);
}

qgmm_status qgmm_check_same_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                                  const char *ref_name, const qgmm_tensor *ref)
{
    int ok = t->rank == ref->rank;
    for (int d = 0; ok && d < t->rank; ++d) ok = t->shape[d] == ref->shape[d];
    if (ok) return QGMM_OK;
    char a[96], b[96];
    shape_str(t, a, sizeof a);
    shape_str(ref, b, sizeof b);
    return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has shape %s; must equal %s's %s", name,
                          a, ref_name, b);
}

qgmm_status qgmm_check_contiguous(qgmm_context *ctx, const char *name, const qgmm_tensor *t)
{
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; --d) {
        if (t->shape[d] > 1 && t->strides[d] != stride)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "%s.strides[%d] is %lld; %s must be contiguous (expected %lld)",
                                  name, d, (long long)t->strides[d], name, (long long)stride);
        stride *= t->shape[d] > 0 ? t->shape[d] : 1;
    }
    return QGMM_OK;
}

qgmm_status qgmm_check_offsets(qgmm_context *ctx, const char *name, const qgmm_tensor *t)
{
    QGMM_TRY(qgmm_check_tensor(ctx, name, t, QGMM_MASK_I32, 1, 1));
    if (t->shape[0] < 1)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has %lld groups; need at least 1",
                              name, (long long)t->shape[0]);
    if (t->shape[0] > 65536)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s has %lld groups; at most 65536",
                              name, (long long)t->shape[0]);
    return qgmm_check_contiguous(ctx, name, t);
}

qgmm_status qgmm_unsupported_op(qgmm_context *ctx, const char *op)
{
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "%s is not implemented by backend %s", op,
                          ctx->backend_name);
}

qgmm_status qgmm_check_no_overlap(qgmm_context *ctx, const char *a_name, const qgmm_tensor *a,
                                  const char *b_name, const qgmm_tensor *b)
{
    if (!qgmm_present(a) || !qgmm_present(b) || a->buffer != b->buffer) return QGMM_OK;
    const size_t a0 = a->offset, a1 = a->offset + qgmm_tensor_span_bytes(a);
    const size_t b0 = b->offset, b1 = b->offset + qgmm_tensor_span_bytes(b);
    if (a0 < b1 && b0 < a1)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s bytes [%zu, %zu) overlap %s bytes [%zu, %zu) in the same buffer",
                              a_name, a0, a1, b_name, b0, b1);
    return QGMM_OK;
}
