/* Tensor views and the host-side size formulas of the layouts (no device access). */
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
        stride *= shape[d] > 0 ? shape[d] : 1;
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

int64_t qgmm_tensor_numel(const qgmm_tensor *t)
{
    if (!t || t->rank < 1 || t->rank > QGMM_MAX_RANK) return 0;
    int64_t n = 1;
    for (int d = 0; d < t->rank; ++d) n *= t->shape[d];
    return n;
}

size_t qgmm_tensor_span_bytes(const qgmm_tensor *t)
{
    if (qgmm_tensor_numel(t) <= 0) return 0;
    int64_t last = 0;
    for (int d = 0; d < t->rank; ++d) last += (t->shape[d] - 1) * t->strides[d];
    return (size_t)(last + 1) * qgmm_dtype_size(t->dtype);
}

size_t qgmm_blocked_scales_bytes(int64_t rows, int64_t cols)
{
    if (rows <= 0 || cols <= 0) return 0;
    return (size_t)(qgmm_blocked_rows(rows) * qgmm_blocked_cols(cols));
}

size_t qgmm_blocked_m_groups_bytes(int64_t rows, int64_t cols, int64_t groups)
{
    if (rows < 0 || cols <= 0 || groups <= 0) return 0;
    return (size_t)(qgmm_round_up_i64(rows + 128 * groups, 128) * qgmm_blocked_cols(cols));
}

size_t qgmm_blocked_k_groups_bytes(int64_t rows, int64_t cols, int64_t groups)
{
    if (rows <= 0 || cols < 0 || groups <= 0) return 0;
    return (size_t)(qgmm_blocked_rows(rows) * qgmm_round_up_i64(cols + 4 * groups, 4));
}

int64_t qgmm_padded_rows_bound(int64_t tokens, int64_t groups, int alignment)
{
    if (tokens < 0 || groups < 0 || alignment <= 0) return 0;
    return qgmm_padded_bound(tokens, groups, alignment);
}

qgmm_status qgmm_blockwise_scales_view(qgmm_block_shape block, qgmm_blockwise_layout layout,
                                       int rank, const int64_t *data_shape, qgmm_buffer *buf,
                                       size_t offset, qgmm_tensor *out_view, size_t *bytes)
{
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
        per_expert = ld * kb;
    } else {
        t.strides[d0] = kb;
        t.strides[d1] = 1;
        per_expert = rows * kb;
    }
    if (rank == 3) {
        t.shape[0] = E;
        t.strides[0] = per_expert > 0 ? per_expert : 1;
    }
    *out_view = t;
    if (bytes) *bytes = (size_t)(E * per_expert) * sizeof(float);
    return QGMM_OK;
}
