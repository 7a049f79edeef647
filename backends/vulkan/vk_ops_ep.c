/*
 * vk_ops_ep.c — the expert-parallel routing ops (docs/ep.md, "Backend contract") on
 * ep.comp: the plan's descriptor and the op's tensors become one parameter block, one
 * dispatch per mode. The loopback transport moves the wire rows between contexts.
 */
#include "vk_internal.h"
#include "../../kernels/glsl/ep_params.h"
#include "../../kernels/glsl/params.h"
#include "qgmm_layout_maps.h"

#include <string.h>

static void desc_params(vk_ctx *c, const qgmm_ep_desc *d, int mode, int64_t *p)
{
    memset(p, 0, QP_MAX * sizeof *p);
    p[EP_MODE] = mode;
    p[EP_NRANKS] = d->nranks;
    p[EP_TOPK] = d->top_k;
    p[EP_ALIGN] = d->alignment;
    p[EP_E] = d->num_experts;
    p[EP_L] = d->local;
    p[EP_LMAX] = d->local_max;
    p[EP_T] = d->tokens;
    p[EP_CAP] = d->cap;
    p[EP_MAXRECV] = d->max_recv_rows;
    p[EP_ERANK] = (int64_t)vk_tensor_addr(&d->expert_rank);
    p[EP_ELOCAL] = (int64_t)vk_tensor_addr(&d->expert_local);
    p[EP_POS] = (int64_t)vk_tensor_addr(&d->pos);
    p[EP_SRC] = (int64_t)vk_tensor_addr(&d->send_src);
    p[EP_SCNT] = (int64_t)vk_tensor_addr(&d->send_counts);
    p[EP_RCNT] = (int64_t)vk_tensor_addr(&d->recv_counts);
    p[EP_SROWS] = (int64_t)vk_tensor_addr(&d->send_rows);
    p[EP_RROWS] = (int64_t)vk_tensor_addr(&d->recv_rows);
    p[EP_DST] = (int64_t)vk_tensor_addr(&d->recv_dst);
    p[EP_OFFS] = (int64_t)vk_tensor_addr(&d->offs);
    p[EP_STATE] = (int64_t)vk_tensor_addr(&d->state);
    p[EP_STATUS] = (int64_t)c->status.addr;
    p[EP_SCRATCH] = (int64_t)c->scratch.addr;
}

static int64_t groups_of(int64_t lanes) { return lanes > 0 ? (lanes + 255) / 256 : 1; }

qgmm_status vk_ep_route(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *ids)
{
    vk_ctx *c = vk_of(ctx);
    if ((uint64_t)d->nranks * (uint64_t)(d->local_max + 1) * 4u > VK_SCRATCH_BYTES)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "ep_route: %d ranks x %lld experts per rank need more than vulkan's %u-byte scratch",
                              d->nranks, (long long)d->local_max, (unsigned)VK_SCRATCH_BYTES);
    int64_t p[QP_MAX];
    desc_params(c, d, EP_MODE_ROUTE, p);
    p[EP_IDS] = (int64_t)vk_tensor_addr(ids);
    p[EP_IDS0] = ids->strides[0];
    p[EP_IDS1] = ids->strides[1];
    return vk_dispatch(c, VKP_EP, p, QP_MAX, 1);
}

qgmm_status vk_ep_layout(qgmm_context *ctx, const qgmm_ep_desc *d)
{
    vk_ctx *c = vk_of(ctx);
    int64_t p[QP_MAX];
    desc_params(c, d, EP_MODE_LAYOUT, p);
    return vk_dispatch(c, VKP_EP, p, QP_MAX, 1);
}

/* The scales beside x or out: address, row stride, element size and columns. */
static void scales_params(int64_t *p, const qgmm_tensor *s, int64_t cols)
{
    if (!s->buffer) return;
    p[EP_S] = (int64_t)vk_tensor_addr(s);
    p[EP_SS0] = s->rank == 2 ? s->strides[0] : s->strides[0] * cols;
    p[EP_SES] = (int64_t)qgmm_dtype_size(s->dtype);
    p[EP_SCOLS] = cols;
}

qgmm_status vk_ep_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                       const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *wire, int64_t row_bytes)
{
    vk_ctx *c = vk_of(ctx);
    int64_t p[QP_MAX];
    desc_params(c, d, EP_MODE_PACK, p);
    p[EP_DIR] = dir;
    p[EP_X] = (int64_t)vk_tensor_addr(x);
    p[EP_XS0] = x->strides[0];
    p[EP_XES] = (int64_t)qgmm_dtype_size(x->dtype);
    p[EP_XDT] = x->dtype;
    p[EP_D] = x->shape[1];
    p[EP_XROWS] = x->shape[0];
    scales_params(p, xs, xs->buffer && xs->rank == 2 ? xs->shape[1] : 1);
    if (w->buffer) {
        p[EP_W] = (int64_t)vk_tensor_addr(w);
        p[EP_W0] = w->strides[0];
        p[EP_W1] = w->strides[1];
        p[EP_WDT] = w->dtype;
    }
    p[EP_WIRE] = (int64_t)vk_tensor_addr(wire);
    p[EP_ROWB] = row_bytes;
    p[EP_N] = d->nranks * d->cap * row_bytes;
    return vk_dispatch(c, VKP_EP, p, QP_MAX, groups_of(p[EP_N]));
}

qgmm_status vk_ep_unpack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *wire,
                         int64_t row_bytes, const qgmm_tensor *w, const qgmm_tensor *out, const qgmm_tensor *os,
                         int scales_blocked, const qgmm_tensor *offs_out)
{
    vk_ctx *c = vk_of(ctx);
    int64_t p[QP_MAX];
    desc_params(c, d, dir == QGMM_EP_DISPATCH ? EP_MODE_ZERO : EP_MODE_COMBINE, p);
    p[EP_WIRE] = (int64_t)vk_tensor_addr(wire);
    p[EP_ROWB] = row_bytes;
    p[EP_OUT] = (int64_t)vk_tensor_addr(out);
    p[EP_O0] = out->strides[0];
    p[EP_O1] = out->strides[1];
    p[EP_OES] = (int64_t)qgmm_dtype_size(out->dtype);
    p[EP_ODT] = out->dtype;
    p[EP_OROWS] = out->shape[0];
    p[EP_D] = out->shape[1];
    if (dir == QGMM_EP_COMBINE) {
        p[EP_XDT] = wire->dtype;
        if (w->buffer) {
            p[EP_W] = (int64_t)vk_tensor_addr(w);
            p[EP_W0] = w->strides[0];
            p[EP_W1] = w->strides[1];
            p[EP_WDT] = w->dtype;
        }
        return vk_dispatch(c, VKP_EP, p, QP_MAX, groups_of(d->tokens * out->shape[1]));
    }
    const int64_t cols = !os->buffer ? 0 : scales_blocked ? out->shape[1] / 32 : os->rank == 2 ? os->shape[1] : 1;
    scales_params(p, os, cols);
    p[EP_OSBLK] = scales_blocked;
    p[EP_OSBYTES] = scales_blocked ? os->shape[0] : 0;
    p[EP_OFFSOUT] = (int64_t)vk_tensor_addr(offs_out);
    int64_t lanes = out->shape[0] * out->shape[1] * p[EP_OES];
    const int64_t sbytes = scales_blocked ? p[EP_OSBYTES] : out->shape[0] * cols * p[EP_SES];
    if (sbytes > lanes) lanes = sbytes;
    qgmm_status st = vk_dispatch(c, VKP_EP, p, QP_MAX, groups_of(lanes));
    if (st != QGMM_OK) return st;
    p[EP_MODE] = EP_MODE_SCATTER;
    lanes = d->nranks * d->cap * row_bytes;
    if (d->local > lanes) lanes = d->local;
    return vk_dispatch(c, VKP_EP, p, QP_MAX, groups_of(lanes));
}
