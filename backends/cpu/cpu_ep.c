/*
 * The expert-parallel routing ops of the CPU reference (docs/ep.md, "Backend contract"):
 * route (a stable counting sort of the (token, slot) rows by peer and local expert), the
 * receive layout, and the pack / unpack of wire rows. Sequential and plain: the oracle the
 * GPU kernels must match row for row.
 */
#include "cpu_ep.h"
#include "cpu_ops.h"
#include "qgmm_fp8_codec.h"
#include "qgmm_layout_maps.h"

#include <stdlib.h>
#include <string.h>

static int32_t *i32(const qgmm_tensor *t) { return (int32_t *)qgmm_tensor_data(t); }
static uint8_t *bytes_of(const qgmm_tensor *t) { return (uint8_t *)qgmm_tensor_data(t); }
static int refused(const qgmm_ep_desc *d) { return i32(&d->state)[0] != 0; }

/* Every count zero and every status entry `status`: the step sends nothing. */
static void send_nothing(const qgmm_ep_desc *d, int32_t status)
{
    const int64_t S = d->local_max + 1;
    int32_t *cnt = i32(&d->send_counts);
    for (int64_t p = 0; p < d->nranks; ++p) {
        for (int64_t l = 0; l < S - 1; ++l) cnt[p * S + l] = 0;
        cnt[p * S + S - 1] = status;
        i32(&d->send_rows)[p] = 0;
    }
}

qgmm_status qgmm_cpu_ep_route(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *ids)
{
    const int64_t T = d->tokens, k = d->top_k, P = d->nranks, S = d->local_max + 1;
    const int32_t *rank_of = i32(&d->expert_rank), *local_of = i32(&d->expert_local);
    const int32_t *id = i32(ids);
    int64_t *count = calloc((size_t)(P * S), sizeof *count);
    if (!count) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "ep_route: out of host memory");
    int bad = 0;
    for (int64_t t = 0; t < T && !bad; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = id[qgmm_cpu_elem_index(ids, t, j, 0)];
            if (e < 0 || e >= d->num_experts) {
                bad = 1;
                break;
            }
            count[rank_of[e] * S + local_of[e]]++;
        }
    for (int64_t p = 0; p < P && !bad; ++p) {
        int64_t rows = 0;
        for (int64_t l = 0; l < S - 1; ++l) rows += count[p * S + l];
        if (rows > d->cap) bad = 1;
    }
    int32_t *pos = i32(&d->pos), *src = i32(&d->send_src), *cnt = i32(&d->send_counts);
    if (bad) {
        free(count);
        send_nothing(d, 1);
        for (int64_t i = 0; i < T * k; ++i) pos[i] = -1;
        i32(&d->state)[0] = 1;
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    /* cursor[p, l]: the next wire row of peer p's local expert l (stable: token, then slot) */
    for (int64_t p = 0; p < P; ++p) {
        int64_t at = 0;
        for (int64_t l = 0; l < S - 1; ++l) {
            const int64_t c = count[p * S + l];
            cnt[p * S + l] = (int32_t)c;
            count[p * S + l] = at;
            at += c;
        }
        cnt[p * S + S - 1] = 0;
        i32(&d->send_rows)[p] = (int32_t)at;
    }
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < k; ++j) {
            const int64_t e = id[qgmm_cpu_elem_index(ids, t, j, 0)];
            const int64_t p = rank_of[e], i = count[p * S + local_of[e]]++;
            pos[t * k + j] = (int32_t)(p * d->cap + i);
            src[p * d->cap + i] = (int32_t)(t * k + j);
        }
    i32(&d->state)[0] = 0;
    free(count);
    return QGMM_OK;
}

qgmm_status qgmm_cpu_ep_layout(qgmm_context *ctx, const qgmm_ep_desc *d)
{
    const int64_t P = d->nranks, S = d->local_max + 1, L = d->local, A = d->alignment;
    const int32_t *rc = i32(&d->recv_counts);
    int32_t *recv_rows = i32(&d->recv_rows), *dst = i32(&d->recv_dst), *offs = i32(&d->offs);
    int peer_bad = 0;
    for (int64_t r = 0; r < P; ++r) {
        int64_t rows = 0;
        for (int64_t l = 0; l < S - 1; ++l) rows += rc[r * S + l];
        if (rc[r * S + S - 1] != 0 || rows > d->cap) peer_bad = 1;
    }
    if (peer_bad) { /* some rank refused the step: nobody sends anything */
        for (int64_t r = 0; r < P; ++r) i32(&d->send_rows)[r] = recv_rows[r] = 0;
        i32(&d->state)[0] = 1;
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    for (int64_t r = 0; r < P; ++r) {
        int64_t rows = 0;
        for (int64_t l = 0; l < L; ++l) rows += rc[r * S + l];
        recv_rows[r] = (int32_t)rows;
    }
    int64_t total = 0;
    for (int64_t l = 0; l < L; ++l) {
        int64_t n = 0;
        for (int64_t r = 0; r < P; ++r) n += rc[r * S + l];
        total += qgmm_padded_size(n, A);
    }
    if (total > d->max_recv_rows) {
        i32(&d->state)[0] = 1;
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    /* local expert l's block: rank 0's rows, then rank 1's, ...; padded to A */
    int64_t start = 0;
    for (int64_t l = 0; l < L; ++l) {
        int64_t at = start;
        for (int64_t r = 0; r < P; ++r) {
            int64_t i0 = 0;
            for (int64_t m = 0; m < l; ++m) i0 += rc[r * S + m];
            for (int64_t i = 0; i < rc[r * S + l]; ++i) dst[r * d->cap + i0 + i] = (int32_t)(at + i);
            at += rc[r * S + l];
        }
        start += qgmm_padded_size(at - start, A);
        offs[l] = (int32_t)start;
    }
    return QGMM_OK;
}

/* One payload row into a wire row: bytes, or x * w rounded to x's dtype. */
static void put_row(uint8_t *wire, const qgmm_tensor *x, int64_t row, const qgmm_tensor *w, int64_t widx)
{
    const int64_t D = x->shape[1];
    const size_t es = qgmm_dtype_size(x->dtype);
    const uint8_t *src = bytes_of(x) + (size_t)(row * x->strides[0]) * es;
    if (!w->buffer) {
        memcpy(wire, src, (size_t)D * es);
        return;
    }
    const float wt = qgmm_cpu_load_f32(w, qgmm_cpu_elem_index(w, widx / w->shape[1], widx % w->shape[1], 0));
    for (int64_t c = 0; c < D; ++c) {
        const float v = qgmm_cpu_load_f32(x, row * x->strides[0] + c) * wt;
        if (x->dtype == QGMM_F32) memcpy(wire + c * 4, &v, 4);
        else {
            const uint16_t h = qgmm_f32_to_bf16(v);
            memcpy(wire + c * 2, &h, 2);
        }
    }
}

qgmm_status qgmm_cpu_ep_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                             const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *wire,
                             int64_t row_bytes)
{
    if (refused(d)) return QGMM_OK;
    const int64_t P = d->nranks, D = x->shape[1];
    const size_t es = qgmm_dtype_size(x->dtype);
    const int32_t *rows = i32(dir == QGMM_EP_DISPATCH ? &d->send_rows : &d->recv_rows);
    const int32_t *index = i32(dir == QGMM_EP_DISPATCH ? &d->send_src : &d->recv_dst);
    if (dir == QGMM_EP_COMBINE && d->local > 0 && i32(&d->offs)[d->local - 1] > x->shape[0]) {
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    const size_t sbytes = !xs->buffer ? 0 : (size_t)(xs->rank == 1 ? 1 : xs->shape[1]) * qgmm_dtype_size(xs->dtype);
    for (int64_t p = 0; p < P; ++p)
        for (int64_t i = 0; i < rows[p]; ++i) {
            uint8_t *row = bytes_of(wire) + (size_t)((p * d->cap + i) * row_bytes);
            const int64_t s = index[p * d->cap + i];
            const int64_t t = dir == QGMM_EP_DISPATCH ? s / d->top_k : s;
            put_row(row, x, t, w, s);
            size_t used = (size_t)D * es;
            if (sbytes) {
                const size_t at = (size_t)(t * xs->strides[0]) *
                                  qgmm_dtype_size(xs->dtype);
                memcpy(row + used, bytes_of(xs) + at, sbytes);
                used += sbytes;
            }
            memset(row + used, 0, (size_t)row_bytes - used);
        }
    return QGMM_OK;
}

static qgmm_status unpack_dispatch(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *wire,
                                   int64_t row_bytes, const qgmm_tensor *out, const qgmm_tensor *os,
                                   int blocked, const qgmm_tensor *offs_out)
{
    const int64_t L = d->local, R = out->shape[0], D = out->shape[1];
    const int32_t *offs = i32(&d->offs), *rows = i32(&d->recv_rows), *dst = i32(&d->recv_dst);
    if (L > 0 && offs[L - 1] > R) {
        qgmm_cpu_raise_status(ctx, QGMM_DEVICE_STATUS_BAD_OFFSETS);
        return QGMM_OK;
    }
    const size_t es = qgmm_dtype_size(out->dtype), row = (size_t)D * es;
    const size_t ses = os->buffer ? qgmm_dtype_size(os->dtype) : 0;
    const int64_t scols = !os->buffer ? 0 : blocked ? D / 32 : os->rank == 1 ? 1 : os->shape[1];
    int64_t *mx_start = NULL, cols_pad = qgmm_blocked_cols(scols);
    if (blocked) {
        mx_start = malloc((size_t)(L > 0 ? L : 1) * sizeof *mx_start);
        if (!mx_start) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "ep_unpack: out of host memory");
        for (int64_t g = 0, s = 0; g < L; ++g) {
            mx_start[g] = s;
            s += qgmm_blocked_rows(offs[g] - (g ? offs[g - 1] : 0));
        }
    }
    for (int64_t r = 0; r < R; ++r) memset(bytes_of(out) + (size_t)(r * out->strides[0]) * es, 0, row);
    if (os->buffer) {
        const size_t n = blocked ? (size_t)os->shape[0] : (size_t)(R * scols);
        if (blocked || os->rank == 1) memset(bytes_of(os), 0, n * ses);
        else for (int64_t r = 0; r < R; ++r) memset(bytes_of(os) + (size_t)(r * os->strides[0]) * ses, 0, (size_t)scols * ses);
    }
    for (int64_t p = 0; p < d->nranks; ++p)
        for (int64_t i = 0; i < rows[p]; ++i) {
            const uint8_t *w = bytes_of(wire) + (size_t)((p * d->cap + i) * row_bytes);
            const int64_t to = dst[p * d->cap + i];
            memcpy(bytes_of(out) + (size_t)(to * out->strides[0]) * es, w, row);
            if (!os->buffer) continue;
            if (!blocked) {
                memcpy(bytes_of(os) + (size_t)(to * os->strides[0]) * ses, w + row, (size_t)scols * ses);
                continue;
            }
            const int64_t g = qgmm_group_of(offs, L, to), r0 = g ? offs[g - 1] : 0;
            for (int64_t c = 0; c < scols; ++c)
                bytes_of(os)[mx_start[g] * cols_pad + qgmm_blocked_offset(to - r0, c, cols_pad)] = w[row + c];
        }
    free(mx_start);
    if (offs_out->buffer) memcpy(i32(offs_out), offs, (size_t)L * sizeof(int32_t));
    return QGMM_OK;
}

/* The wire rows hold elements of wire's dtype (y's: bf16 or f32). */
static qgmm_status unpack_combine(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *wire,
                                  int64_t row_bytes, const qgmm_tensor *w, const qgmm_tensor *out)
{
    const int64_t T = d->tokens, k = d->top_k, H = out->shape[1];
    const int32_t *pos = i32(&d->pos);
    float *acc = malloc((size_t)(H > 0 ? H : 1) * sizeof *acc);
    if (!acc) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "ep_unpack: out of host memory");
    for (int64_t t = 0; t < T; ++t) {
        for (int64_t h = 0; h < H; ++h) acc[h] = 0.0f;
        for (int64_t j = 0; j < k; ++j) {
            const uint8_t *src = bytes_of(wire) + (size_t)(pos[t * k + j] * row_bytes);
            const float wt = w->buffer ? qgmm_cpu_load_f32(w, qgmm_cpu_elem_index(w, t, j, 0)) : 1.0f;
            for (int64_t h = 0; h < H; ++h) {
                float v;
                if (wire->dtype == QGMM_F32) memcpy(&v, src + h * 4, 4);
                else {
                    uint16_t b;
                    memcpy(&b, src + h * 2, 2);
                    v = qgmm_bf16_to_f32(b);
                }
                const float prod = wt * v;
                acc[h] = acc[h] + prod;
            }
        }
        for (int64_t h = 0; h < H; ++h) qgmm_cpu_store_f32(out, qgmm_cpu_elem_index(out, t, h, 0), acc[h]);
    }
    free(acc);
    return QGMM_OK;
}

qgmm_status qgmm_cpu_ep_unpack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *wire,
                               int64_t row_bytes, const qgmm_tensor *w, const qgmm_tensor *out,
                               const qgmm_tensor *out_scales, int scales_blocked, const qgmm_tensor *offs_out)
{
    if (refused(d)) return QGMM_OK;
    if (dir == QGMM_EP_DISPATCH)
        return unpack_dispatch(ctx, d, wire, row_bytes, out, out_scales, scales_blocked, offs_out);
    return unpack_combine(ctx, d, wire, row_bytes, w, out);
}
