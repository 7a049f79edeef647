/*
 * The expert-parallel MoE layer (docs/ep.md): route -> dispatch -> the composite expert
 * layer on this rank's experts (api/moe.c) -> combine, and the backward over the same plan
 * (dispatch of the weighted dy -> the composite's backward -> combine of dx). Everything it
 * needs between the calls is allocated once, at qgmm_ep_moe_create.
 */
#include "ep_internal.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

struct qgmm_ep_moe {
    qgmm_ep_plan *plan;
    qgmm_moe_params p;
    int64_t N, K;
    qgmm_dtype out_dtype;
    qgmm_buffer *x_recv;  /* (R, K) bf16: the received tokens, kept for the backward */
    qgmm_buffer *y_recv;  /* (R, N) out_dtype; the backward's dy_recv (bf16) reuses it */
    qgmm_buffer *dx_recv; /* (R, K) out_dtype */
    qgmm_buffer *offs;    /* (L) i32: the padded offsets of the receive layout */
    qgmm_buffer *ws;      /* the composite's workspace (NULL when it needs none) */
};

static qgmm_tensor mat(qgmm_buffer *b, qgmm_dtype t, int64_t rows, int64_t cols)
{
    const int64_t s[2] = {rows, cols};
    return qgmm_tensor_make(b, 0, t, 2, s);
}

void qgmm_ep_moe_destroy(qgmm_ep_moe *layer)
{
    if (!layer) return;
    qgmm_buffer *all[] = {layer->x_recv, layer->y_recv, layer->dx_recv, layer->offs, layer->ws};
    for (int i = 0; i < 5; ++i) qgmm_buffer_free(all[i]);
    free(layer);
}

qgmm_status qgmm_ep_moe_create(qgmm_ep_plan *plan, const qgmm_moe_params *p, int64_t N, int64_t K,
                               qgmm_dtype out_dtype, qgmm_ep_moe **out)
{
    static const char op[] = "qgmm_ep_moe_create";
    qgmm_clear_error(NULL);
    if (!plan) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: plan is NULL", op);
    qgmm_context *ctx = plan->comm->ctx;
    qgmm_clear_error(ctx);
    if (!out || !p)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, out ? "p" : "out");
    if (N < 1 || K < 1 || N > QGMM_MAX_EXTENT || K > QGMM_MAX_EXTENT)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: N=%lld K=%lld; both must be in [1, 2^40]", op,
                              (long long)N, (long long)K);
    if (out_dtype != QGMM_BF16 && out_dtype != QGMM_F32)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: out_dtype is %s; must be bf16 or f32", op,
                              qgmm_dtype_name(out_dtype));
    const int64_t need = qgmm_ep_wire_row_bytes(out_dtype, N > K ? N : K, 0);
    if (need == 0 || need > plan->max_row_bytes)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: the plan's max_row_bytes is %lld; rows of %lld %s need %lld", op,
                              (long long)plan->max_row_bytes, (long long)(N > K ? N : K),
                              qgmm_dtype_name(out_dtype), (long long)need);
    const int64_t R = plan->d.max_recv_rows, L = plan->d.local;
    const size_t ws = L > 0 ? qgmm_moe_workspace_bytes(p, R, N, K, L) : 0;
    if (ws == SIZE_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: the expert workspace for %lld rows does not fit",
                              op, (long long)R);
    qgmm_ep_moe *m = calloc(1, sizeof *m);
    if (!m) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "%s: no host memory", op);
    m->plan = plan;
    m->p = *p;
    m->N = N;
    m->K = K;
    m->out_dtype = out_dtype;
    const size_t oes = qgmm_dtype_size(out_dtype);
    qgmm_status st = qgmm_buffer_alloc(ctx, (size_t)(R * K) * 2, &m->x_recv);
    if (st == QGMM_OK) st = qgmm_buffer_alloc(ctx, (size_t)(R * N) * oes, &m->y_recv);
    if (st == QGMM_OK) st = qgmm_buffer_alloc(ctx, (size_t)(R * K) * oes, &m->dx_recv);
    if (st == QGMM_OK) st = qgmm_buffer_alloc(ctx, (size_t)(L > 0 ? L : 1) * sizeof(int32_t), &m->offs);
    if (st == QGMM_OK && ws) st = qgmm_buffer_alloc(ctx, ws, &m->ws);
    if (st != QGMM_OK) {
        qgmm_ep_moe_destroy(m);
        return qgmm_error_prefix(ctx, st, "%s: ", op);
    }
    *out = m;
    return QGMM_OK;
}

static qgmm_tensor offs_of(const qgmm_ep_moe *m)
{
    const int64_t s[1] = {m->plan->d.local};
    return qgmm_tensor_make(m->offs, 0, QGMM_I32, 1, s);
}

/* Presets the offsets to -1 before the dispatch that writes them: a step refused on the
 * device leaves them so, and the expert layer then writes nothing either (dw included). */
static qgmm_status preset_offsets(const qgmm_ep_moe *m)
{
    return qgmm_buffer_fill(m->offs, 0, qgmm_buffer_size(m->offs), 0xFF);
}

/* The local weights: bf16 (L, N, K); absent is fine on a rank without experts. */
static qgmm_status check_w(qgmm_context *ctx, const qgmm_ep_moe *m, const qgmm_tensor *w, const char *name)
{
    int present = 0;
    QGMM_TRY(qgmm_check_optional(ctx, name, w, QGMM_MASK(QGMM_BF16), 3, 3, &present));
    if (!present && m->plan->d.local == 0) return QGMM_OK;
    if (!present) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s is absent; this rank has %lld experts",
                                        name, (long long)m->plan->d.local);
    return qgmm_check_shape(ctx, name, w, 3, m->plan->d.local, m->N, m->K);
}

/* What forward and backward check before their first collective, so that a refusal comes
 * before anything is enqueued (on every rank alike, given alike arguments). */
static qgmm_status check_tokens(qgmm_context *ctx, const qgmm_ep_moe *m, const char *xn, const qgmm_tensor *x,
                                int64_t cols, const qgmm_tensor *weights, const char *on, const qgmm_tensor *out,
                                int64_t out_cols)
{
    QGMM_TRY(qgmm_check_tensor(ctx, xn, x, QGMM_MASK(QGMM_BF16), 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, xn, x, 2, x->shape[0], cols, 0));
    QGMM_TRY(qgmm_check_tensor(ctx, "weights", weights, QGMM_MASK_HP, 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "weights", weights, 2, x->shape[0], m->plan->d.top_k, 0));
    QGMM_TRY(qgmm_check_tensor(ctx, on, out, QGMM_MASK_OUT, 2, 2));
    return qgmm_check_shape(ctx, on, out, 2, x->shape[0], out_cols, 0);
}

qgmm_status qgmm_ep_moe_forward(qgmm_ep_moe *layer, const qgmm_tensor *x, const qgmm_tensor *expert_ids,
                                const qgmm_tensor *weights, const qgmm_tensor *w_local, const qgmm_tensor *y)
{
    static const char op[] = "qgmm_ep_moe_forward";
    qgmm_clear_error(NULL);
    if (!layer) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: layer is NULL", op);
    qgmm_ep_moe *m = layer;
    qgmm_context *ctx = m->plan->comm->ctx;
    qgmm_clear_error(ctx);
    qgmm_status st = check_tokens(ctx, m, "x", x, m->K, weights, "y", y, m->N);
    if (st == QGMM_OK) st = check_w(ctx, m, w_local, "w_local");
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    const int64_t R = m->plan->d.max_recv_rows;
    const qgmm_tensor xr = mat(m->x_recv, QGMM_BF16, R, m->K), yr = mat(m->y_recv, m->out_dtype, R, m->N);
    const qgmm_tensor offs = offs_of(m);
    st = qgmm_ep_route(m->plan, expert_ids);
    if (st == QGMM_OK) st = preset_offsets(m);
    if (st == QGMM_OK) st = qgmm_ep_dispatch(m->plan, x, NULL, NULL, &xr, NULL, m->plan->d.local ? &offs : NULL);
    if (st == QGMM_OK && m->plan->d.local > 0)
        st = qgmm_moe_experts_forward(ctx, &m->p, &xr, w_local, &offs, &yr, m->ws);
    if (st == QGMM_OK) st = qgmm_ep_combine(m->plan, &yr, weights, y);
    return st == QGMM_OK ? st : qgmm_error_prefix(ctx, st, "%s: ", op);
}

qgmm_status qgmm_ep_moe_backward(qgmm_ep_moe *layer, const qgmm_tensor *dy, const qgmm_tensor *weights,
                                 const qgmm_tensor *w_local, const qgmm_tensor *dx, const qgmm_tensor *dw_local)
{
    static const char op[] = "qgmm_ep_moe_backward";
    qgmm_clear_error(NULL);
    if (!layer) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: layer is NULL", op);
    qgmm_ep_moe *m = layer;
    qgmm_context *ctx = m->plan->comm->ctx;
    qgmm_clear_error(ctx);
    qgmm_status st = check_tokens(ctx, m, "dy", dy, m->N, weights, "dx", dx, m->K);
    if (st == QGMM_OK) st = check_w(ctx, m, w_local, "w_local");
    int has_dw = 0;
    if (st == QGMM_OK) st = qgmm_check_optional(ctx, "dw_local", dw_local, QGMM_MASK_OUT, 3, 3, &has_dw);
    if (st == QGMM_OK && m->plan->d.local > 0 && !has_dw)
        st = qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "dw_local is absent; this rank has %lld experts",
                            (long long)m->plan->d.local);
    if (st == QGMM_OK && has_dw) st = qgmm_check_shape(ctx, "dw_local", dw_local, 3, m->plan->d.local, m->N, m->K);
    if (st == QGMM_OK && !m->plan->routed)
        st = qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "the layer has no forward to go back through");
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    const int64_t R = m->plan->d.max_recv_rows;
    const qgmm_tensor xr = mat(m->x_recv, QGMM_BF16, R, m->K), dyr = mat(m->y_recv, QGMM_BF16, R, m->N);
    const qgmm_tensor dxr = mat(m->dx_recv, m->out_dtype, R, m->K), offs = offs_of(m);
    st = preset_offsets(m);
    if (st == QGMM_OK) st = qgmm_ep_dispatch(m->plan, dy, NULL, weights, &dyr, NULL, m->plan->d.local ? &offs : NULL);
    if (st == QGMM_OK && m->plan->d.local > 0)
        st = qgmm_moe_experts_backward(ctx, &m->p, &xr, w_local, &dyr, &offs, &dxr, dw_local, m->ws);
    if (st == QGMM_OK) st = qgmm_ep_combine(m->plan, &dxr, NULL, dx);
    return st == QGMM_OK ? st : qgmm_error_prefix(ctx, st, "%s: ", op);
}
