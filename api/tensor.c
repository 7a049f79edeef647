/* Tensor views and the host-side size formulas of the layouts (no device access). */
#include "checked.h"
#include "qgmm_internal.h"
#include "qgmm_layout_maps.h"

#include <string.h>

qgmm_tensor qgmm_tensor_make(qgmm_buffer *buf, size_t offset, qgmm_dtype dtype, int rank,
                             const int64_t *shape)
{
    qgmm_tensor t;
    memset(&t, 0, sizeof t);
    t.buffer = buf;
    t.offset = offset;
    t.dtype = dtype;
    t.rank = rank;
    if (rank < 1 || rank > QGMM_MAX_RANK || !shape) return t;
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        if (!qgmm_mul_i64(stride, shape[d] > 0 ? shape[d] : 1, &stride)) stride = INT64_MAX; /* refused later */
    }
    return t;
}

qgmm_tensor qgmm_tensor_make_colmajor(qgmm_buffer *buf, size_t offset, qgmm_dtype dtype,
                                      int64_t rows, int64_t cols)
{
    const int64_t shape[2] = {rows, cols};
    qgmm_tensor t = qgmm_tensor_make(buf, offset, dtype, 2, shape);
    t.strides[0] = 1;
    t.strides[1] = rows > 0 ? rows : 1;
    return t;
}

int qgmm_numel_checked(const qgmm_tensor *t, int64_t *n)
{
    if (!t || t->rank < 1 || t->rank > QGMM_MAX_RANK) return 0;
    int64_t p = 1;
    for (int d = 0; d < t->rank; ++d)
        if (t->shape[d] < 0 || !qgmm_mul_i64(p, t->shape[d], &p)) return 0;
    *n = p;
    return 1;
}

int64_t qgmm_tensor_numel(const qgmm_tensor *t)
{
    if (!t || t->rank < 1 || t->rank > QGMM_MAX_RANK) return 0;
    int64_t n;
    return qgmm_numel_checked(t, &n) ? n : -1;
}

int qgmm_span_checked(const qgmm_tensor *t, size_t *bytes)
{
    int64_t n;
    if (!qgmm_numel_checked(t, &n)) return 0;
    const size_t es = qgmm_dtype_size(t->dtype);
    if (n == 0 || es == 0) {
        *bytes = 0;
        return 1;
    }
    /* offset of the last element, in elements; dims of extent 1 add nothing */
    int64_t last = 0, step;
    for (int d = 0; d < t->rank; ++d) {
        if (t->shape[d] == 1) continue;
        if (t->strides[d] < 0 || !qgmm_mul_i64(t->shape[d] - 1, t->strides[d], &step) ||
            !qgmm_add_i64(last, step, &last))
            return 0;
    }
    size_t b;
    if (!qgmm_add_i64(last, 1, &last) || !qgmm_mul_size((size_t)last, es, &b) || b > (size_t)INT64_MAX)
        return 0;
    *bytes = b;
    return 1;
}

size_t qgmm_tensor_span_bytes(const qgmm_tensor *t)
{
    size_t b;
    return qgmm_span_checked(t, &b) ? b : SIZE_MAX;
}

int qgmm_blocked_bytes_checked(qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols,
                               int64_t *bytes)
{
    /* the layout maps' round-ups are safe below this */
    const int64_t lim = INT64_MAX - 128;
    int64_t r, c, t;
    if (n < 0 || rows < 0 || cols < 0 || rows > lim || cols > lim) return 0;
    switch (v) {
    case QGMM_BLOCKED_2D: r = qgmm_blocked_rows(rows); c = qgmm_blocked_cols(cols); break;
    case QGMM_BLOCKED_3D:
        c = qgmm_blocked_cols(cols);
        if (!qgmm_mul_i64(qgmm_blocked_rows(rows), n, &r)) return 0;
        break;
    case QGMM_BLOCKED_M_GROUPS: /* every group may start a new 128-row tile */
        if (!qgmm_mul_i64(n, 128, &t) || !qgmm_add_i64(rows, t, &t) || t > lim) return 0;
        r = qgmm_blocked_rows(t);
        c = qgmm_blocked_cols(cols);
        break;
    case QGMM_BLOCKED_K_GROUPS: /* every group may start a new 4-column tile */
        if (!qgmm_mul_i64(n, 4, &t) || !qgmm_add_i64(cols, t, &t) || t > lim) return 0;
        r = qgmm_blocked_rows(rows);
        c = qgmm_blocked_cols(t);
        break;
    default: return 0;
    }
    return qgmm_mul_i64(r, c, bytes);
}

static size_t blocked_public(qgmm_blocked_variant v, int64_t n, int64_t rows, int64_t cols)
{
    int64_t b;
    return qgmm_blocked_bytes_checked(v, n, rows, cols, &b) ? (size_t)b : SIZE_MAX;
}

size_t qgmm_blocked_scales_bytes(int64_t rows, int64_t cols)
{
    if (rows <= 0 || cols <= 0) return 0;
    return blocked_public(QGMM_BLOCKED_2D, 1, rows, cols);
}

size_t qgmm_blocked_m_groups_bytes(int64_t rows, int64_t cols, int64_t groups)
{
    if (rows < 0 || cols <= 0 || groups <= 0) return 0;
    return blocked_public(QGMM_BLOCKED_M_GROUPS, groups, rows, cols);
}

size_t qgmm_blocked_k_groups_bytes(int64_t rows, int64_t cols, int64_t groups)
{
    if (rows <= 0 || cols < 0 || groups <= 0) return 0;
    return blocked_public(QGMM_BLOCKED_K_GROUPS, groups, rows, cols);
}

int64_t qgmm_padded_rows_bound(int64_t tokens, int64_t groups, int alignment)
{
    if (tokens < 0 || groups < 0 || alignment <= 0) return 0;
    int64_t t; /* qgmm_padded_bound is exact when T + (G + 1) A fits */
    if (!qgmm_add_i64(groups, 1, &t) || !qgmm_mul_i64(t, alignment, &t) || !qgmm_add_i64(tokens, t, &t))
        return INT64_MAX;
    return qgmm_padded_bound(tokens, groups, alignment);
}

qgmm_status qgmm_blockwise_scales_view(qgmm_block_shape block, qgmm_blockwise_layout layout,
                                       int rank, const int64_t *data_shape, qgmm_buffer *buf,
                                       size_t offset, qgmm_tensor *out_view, size_t *bytes)
{
    qgmm_clear_error(NULL);
    if (!data_shape || !out_view)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s is NULL",
                              !data_shape ? "data_shape" : "out_view");
    if (rank != 2 && rank != 3)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "rank is %d; must be 2 or 3", rank);
    if (block != QGMM_BLOCK_1X128 && block != QGMM_BLOCK_128X128)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "block is %d; not a qgmm_block_shape",
                              (int)block);
    if (layout < QGMM_BLOCKWISE_ROW_MAJOR || layout > QGMM_BLOCKWISE_DEEPGEMM)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                              "layout is %d; not a qgmm_blockwise_layout", (int)layout);
    const int64_t E = rank == 3 ? data_shape[0] : 1;
    const int64_t R = data_shape[rank - 2], K = data_shape[rank - 1];
    if (E < 0 || R < 0 || K <= 0 || K % 128)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                              "data_shape K=%lld must be a positive multiple of 128 (rows %lld)",
                              (long long)K, (long long)R);
    if (E > QGMM_MAX_EXTENT || R > QGMM_MAX_EXTENT || K > QGMM_MAX_EXTENT)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                              "data_shape (%lld, %lld, %lld) has an extent above 2^40", (long long)E,
                              (long long)R, (long long)K);
    const int64_t rows = block == QGMM_BLOCK_1X128 ? R : qgmm_ceil_div_i64(R, 128);
    const int64_t kb = K / 128;
    qgmm_tensor t;
    memset(&t, 0, sizeof t);
    t.buffer = buf;
    t.offset = offset;
    t.dtype = QGMM_F32;
    t.rank = rank;
    int64_t per_expert;
    const int d0 = rank - 2, d1 = rank - 1;
    t.shape[d0] = rows;
    t.shape[d1] = kb;
    if (block == QGMM_BLOCK_1X128 && layout != QGMM_BLOCKWISE_ROW_MAJOR) {
        const int64_t ld = layout == QGMM_BLOCKWISE_DEEPGEMM ? qgmm_round_up_i64(rows, 4) : rows;
        t.strides[d0] = 1;
        t.strides[d1] = ld > 0 ? ld : 1;
        per_expert = ld;
    } else {
        t.strides[d0] = kb;
        t.strides[d1] = 1;
        per_expert = rows;
    }
    int64_t total;
    if (!qgmm_mul_i64(per_expert, kb, &per_expert) || !qgmm_mul_i64(per_expert, E, &total) ||
        !qgmm_mul_i64(total, (int64_t)sizeof(float), &total))
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                              "the scales of data_shape (%lld, %lld, %lld) span more than 2^63 bytes",
                              (long long)E, (long long)R, (long long)K);
    if (rank == 3) {
        t.shape[0] = E;
        t.strides[0] = per_expert > 0 ? per_expert : 1;
    }
    *out_view = t;
    if (bytes) *bytes = (size_t)total;
    return QGMM_OK;
}

qgmm_tensor qgmm_tensor_swap_dims(const qgmm_tensor *t, int a, int b)
{
    qgmm_tensor r = *t;
    r.shape[a] = t->shape[b];
    r.shape[b] = t->shape[a];
    r.strides[a] = t->strides[b];
    r.strides[b] = t->strides[a];
    return r;
}
