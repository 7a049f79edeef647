/*
 * vk_ops_ep.c — the expert-parallel routing ops (docs/ep.md, "Backend contract") on
 * ep.comp: the plan's descriptor and the op's tensors become one parameter block, one
 * dispatch per mode. The loopback transport moves the wire rows between contexts.
 */
#include "vk_internal.h"
#include "glsl/ep_params.h"
#include "qgmm_layout_maps.h"

#include <string.h>

static void desc_params(vk_ctx *c, const qgmm_ep_desc *d, int mode, qg_ep_params *p)
{
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->nranks = d->nranks;
    p->topk = d->top_k;
    p->align = d->alignment;
    p->e = d->num_experts;
    p->l = d->local;
    p->lmax = d->local_max;
    p->t = d->tokens;
    p->cap = d->cap;
    p->maxrecv = d->max_recv_rows;
    p->erank = (int64_t)vk_tensor_addr(&d->expert_rank);
    p->elocal = (int64_t)vk_tensor_addr(&d->expert_local);
    p->pos = (int64_t)vk_tensor_addr(&d->pos);
    p->src = (int64_t)vk_tensor_addr(&d->send_src);
    p->scnt = (int64_t)vk_tensor_addr(&d->send_counts);
    p->rcnt = (int64_t)vk_tensor_addr(&d->recv_counts);
    p->srows = (int64_t)vk_tensor_addr(&d->send_rows);
    p->rrows = (int64_t)vk_tensor_addr(&d->recv_rows);
    p->dst = (int64_t)vk_tensor_addr(&d->recv_dst);
    p->offs = (int64_t)vk_tensor_addr(&d->offs);
    p->state = (int64_t)vk_tensor_addr(&d->state);
    p->status = (int64_t)c->status.addr;
    p->scratch = (int64_t)c->scratch.addr;
}

static int64_t groups_of(int64_t lanes) { return lanes > 0 ? (lanes + 255) / 256 : 1; }

qgmm_status vk_ep_route(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *ids)
{
    vk_ctx *c = vk_of(ctx);
    if ((uint64_t)d->nranks * (uint64_t)(d->local_max + 1) * 4u > VK_SCRATCH_BYTES)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "ep_route: %d ranks x %lld experts per rank need more than vulkan's %u-byte scratch",
                              d->nranks, (long long)d->local_max, (unsigned)VK_SCRATCH_BYTES);
    qg_ep_params ep, *p = &ep;
    desc_params(c, d, EP_MODE_ROUTE, p);
    p->ids = (int64_t)vk_tensor_addr(ids);
    p->ids0 = ids->strides[0];
    p->ids1 = ids->strides[1];
    return vk_dispatch(c, VKP_EP, (const int64_t *)p, QG_EP_NP, 1);
}

qgmm_status vk_ep_layout(qgmm_context *ctx, const qgmm_ep_desc *d)
{
    vk_ctx *c = vk_of(ctx);
    qg_ep_params ep, *p = &ep;
    desc_params(c, d, EP_MODE_LAYOUT, p);
    return vk_dispatch(c, VKP_EP, (const int64_t *)p, QG_EP_NP, 1);
}

/* The scales beside x or out: address, row stride, element size and columns. */
static void scales_params(qg_ep_params *p, const qgmm_tensor *s, int64_t cols)
{
    if (!s->buffer) return;
    p->s = (int64_t)vk_tensor_addr(s);
    p->ss0 = s->rank == 2 ? s->strides[0] : s->strides[0] * cols;
    p->ses = (int64_t)qgmm_dtype_size(s->dtype);
    p->scols = cols;
}

qgmm_status vk_ep_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                       const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *wire, int64_t row_bytes)
{
    vk_ctx *c = vk_of(ctx);
    qg_ep_params ep, *p = &ep;
    desc_params(c, d, EP_MODE_PACK, p);
    p->dir = dir;
    p->x = (int64_t)vk_tensor_addr(x);
    p->xs0 = x->strides[0];
    p->xes = (int64_t)qgmm_dtype_size(x->dtype);
    p->xdt = x->dtype;
    p->d = x->shape[1];
    p->xrows = x->shape[0];
    scales_params(p, xs, xs->buffer && xs->rank == 2 ? xs->shape[1] : 1);
    if (w->buffer) {
        p->w = (int64_t)vk_tensor_addr(w);
        p->w0 = w->strides[0];
        p->w1 = w->strides[1];
        p->wdt = w->dtype;
    }
    p->wire = (int64_t)vk_tensor_addr(wire);
    p->rowb = row_bytes;
    p->n = d->nranks * d->cap * row_bytes;
    return vk_dispatch(c, VKP_EP, (const int64_t *)p, QG_EP_NP, groups_of(p->n));
}

qgmm_status vk_ep_unpack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *wire,
                         int64_t row_bytes, const qgmm_tensor *w, const qgmm_tensor *out, const qgmm_tensor *os,
                         int scales_blocked, const qgmm_tensor *offs_out)
{
    vk_ctx *c = vk_of(ctx);
    qg_ep_params ep, *p = &ep;
    desc_params(c, d, dir == QGMM_EP_DISPATCH ? EP_MODE_ZERO : EP_MODE_COMBINE, p);
    p->wire = (int64_t)vk_tensor_addr(wire);
    p->rowb = row_bytes;
    p->o = (int64_t)vk_tensor_addr(out);
    p->o0 = out->strides[0];
    p->o1 = out->strides[1];
    p->oes = (int64_t)qgmm_dtype_size(out->dtype);
    p->odt = out->dtype;
    p->orows = out->shape[0];
    p->d = out->shape[1];
    if (dir == QGMM_EP_COMBINE) {
        p->xdt = wire->dtype;
        if (w->buffer) {
            p->w = (int64_t)vk_tensor_addr(w);
            p->w0 = w->strides[0];
            p->w1 = w->strides[1];
            p->wdt = w->dtype;
        }
        return vk_dispatch(c, VKP_EP, (const int64_t *)p, QG_EP_NP, groups_of(d->tokens * out->shape[1]));
    }
    const int64_t cols = !os->buffer ? 0 : scales_blocked ? out->shape[1] / 32 : os->rank == 2 ? os->shape[1] : 1;
    scales_params(p, os, cols);
    p->osblk = scales_blocked;
    p->osbytes = scales_blocked ? os->shape[0] : 0;
    p->offsout = (int64_t)vk_tensor_addr(offs_out);
    int64_t lanes = out->shape[0] * out->shape[1] * p->oes;
    const int64_t sbytes = scales_blocked ? p->osbytes : out->shape[0] * cols * p->ses;
    if (sbytes > lanes) lanes = sbytes;
    qgmm_status st = vk_dispatch(c, VKP_EP, (const int64_t *)p, QG_EP_NP, groups_of(lanes));
    if (st != QGMM_OK) return st;
    p->mode = EP_MODE_SCATTER;
    lanes = d->nranks * d->cap * row_bytes;
    if (d->local > lanes) lanes = d->local;
    return vk_dispatch(c, VKP_EP, (const int64_t *)p, QG_EP_NP, groups_of(lanes));
}
