#include "validate.h"
#include "checked.h"

#include <stdio.h>
#include <string.h>

qgmm_status qgmm_check_ctx(qgmm_context *ctx)
{
    qgmm_clear_error(ctx);
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

static void strides_str(const qgmm_tensor *t, char *out, size_t cap)
{
    qgmm_tensor v = *t;
    for (int d = 0; d < QGMM_MAX_RANK; ++d) v.shape[d] = t->strides[d];
    shape_str(&v, out, cap);
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
        if (t->shape[d] > QGMM_MAX_EXTENT)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s.shape[%d] is %lld; too large",
                                  name, d, (long long)t->shape[d]);
    }
    if (t->offset % es)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s.offset is %zu; not a multiple of its %s element size %zu", name,
                              t->offset, qgmm_dtype_name(t->dtype), es);
    /* Element counts and byte spans must fit in int64, the index type of every backend. */
    int64_t numel, numel_bytes;
    size_t span;
    char s[96], st[96];
    if (!qgmm_numel_checked(t, &numel) || !qgmm_mul_i64(numel, (int64_t)es, &numel_bytes)) {
        shape_str(t, s, sizeof s);
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s has shape %s; its element count overflows int64", name, s);
    }
    if (!qgmm_span_checked(t, &span)) {
        shape_str(t, s, sizeof s);
        strides_str(t, st, sizeof st);
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s of shape %s with strides %s spans more than 2^63 bytes", name, s, st);
    }
    const size_t size = t->buffer->size;
    if (t->offset > size || span > size - t->offset) {
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
        if (!qgmm_mul_i64(stride, t->shape[d] > 0 ? t->shape[d] : 1, &stride)) stride = INT64_MAX;
    }
    return QGMM_OK;
}

qgmm_status qgmm_check_rows_contiguous(qgmm_context *ctx, const char *name, const qgmm_tensor *t)
{
    if (t->shape[t->rank - 1] > 1 && t->strides[t->rank - 1] != 1)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s.strides[%d] is %lld; %s rows must be contiguous (stride 1)", name,
                              t->rank - 1, (long long)t->strides[t->rank - 1], name);
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

qgmm_status qgmm_check_blocked_shape(qgmm_context *ctx, const char *name, const qgmm_tensor *t,
                                     qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols)
{
    int64_t bytes;
    if (!qgmm_blocked_bytes_checked(v, n, rows, cols, &bytes))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: the blocked layout of (%lld, %lld) scales (x%lld) overflows int64",
                              name, (long long)rows, (long long)cols, (long long)n);
    return qgmm_check_shape(ctx, name, t, 1, bytes, 0, 0);
}

/* 1 when two elements of t share a byte. Sufficient test: with the dims of extent > 1
 * sorted by stride, each stride reaches past everything the smaller-stride dims address.
 * It refuses a few exotic interleavings that would not overlap; no common layout is one. */
static int self_overlaps(const qgmm_tensor *t)
{
    for (int d = 0; d < t->rank; ++d)
        if (t->shape[d] == 0) return 0; /* no element; the other extents are unbounded */
    int dims[QGMM_MAX_RANK], n = 0;
    for (int d = 0; d < t->rank; ++d)
        if (t->shape[d] > 1) dims[n++] = d;
    for (int i = 1; i < n; ++i) /* insertion sort by stride */
        for (int j = i; j > 0 && t->strides[dims[j]] < t->strides[dims[j - 1]]; --j) {
            const int k = dims[j];
            dims[j] = dims[j - 1];
            dims[j - 1] = k;
        }
    int64_t reach = 1; /* elements addressed by the dims already visited, from 0; fits: span checked */
    for (int i = 0; i < n; ++i) {
        const int d = dims[i];
        if (t->strides[d] < reach) return 1;
        reach += (t->shape[d] - 1) * t->strides[d];
    }
    return 0;
}

static qgmm_status overlap_error(qgmm_context *ctx, const char *op, const qgmm_arg *o, const char *kind,
                                 const qgmm_arg *other)
{
    const size_t a0 = o->t->offset, a1 = a0 + qgmm_tensor_span_bytes(o->t);
    const size_t b0 = other->t->offset, b1 = b0 + qgmm_tensor_span_bytes(other->t);
    return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                          "%s%soutput %s (bytes [%zu, %zu) of its buffer) overlaps %s %s (bytes [%zu, "
                          "%zu) of its buffer); outputs may share no byte with any input or output",
                          op ? op : "", op ? ": " : "", o->name, a0, a1, kind, other->name, b0, b1);
}

static int args_overlap(const qgmm_arg *a, const qgmm_arg *b)
{
    return qgmm_buffer_ranges_overlap(a->t->buffer, a->t->offset, qgmm_tensor_span_bytes(a->t),
                                      b->t->buffer, b->t->offset, qgmm_tensor_span_bytes(b->t));
}

qgmm_status qgmm_check_aliasing(qgmm_context *ctx, const char *op, const qgmm_arg *outs, int n_out,
                                const qgmm_arg *ins, int n_in)
{
    for (int i = 0; i < n_out; ++i) {
        const qgmm_arg *o = &outs[i];
        if (!qgmm_present(o->t)) continue;
        if (self_overlaps(o->t)) {
            char s[96], st[96];
            shape_str(o->t, s, sizeof s);
            strides_str(o->t, st, sizeof st);
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "%s%soutput %s of shape %s has strides %s, which write some bytes "
                                  "twice", op ? op : "", op ? ": " : "", o->name, s, st);
        }
        for (int j = 0; j < i; ++j)
            if (qgmm_present(outs[j].t) && args_overlap(o, &outs[j]))
                return overlap_error(ctx, op, o, "output", &outs[j]);
        for (int j = 0; j < n_in; ++j)
            if (qgmm_present(ins[j].t) && args_overlap(o, &ins[j]))
                return overlap_error(ctx, op, o, "input", &ins[j]);
    }
    return QGMM_OK;
}
