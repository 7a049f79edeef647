/*
 * vk_ops_layout.c — scales to/from the blocked layout, token-group pad/unpad and group
 * row ids: offsets are checked and turned into a group table on the device
 * (offs_prep.comp), then blocked.comp / pad.comp write every output element.
 */
#include "vk_internal.h"
#include "glsl/params.h"
#include "glsl/blocked_params.h"
#include "glsl/offs_params.h"
#include "glsl/pad_params.h"
#include "qgmm_layout_maps.h"

#include <stdint.h>
#include <string.h>

static int contiguous1(const qgmm_tensor *t) { return !t || !t->buffer || t->shape[0] <= 1 || t->strides[0] == 1; }

static qgmm_status blocked_common(qgmm_context *ctx, int dir, qgmm_blocked_variant v, const qgmm_tensor *plain,
                                  const qgmm_tensor *blk, const qgmm_tensor *offs, const qgmm_tensor *starts)
{
    vk_ctx *c = vk_of(ctx);
    qg_blocked_params bp, *p = &bp;
    memset(p, 0, sizeof *p);
    const int r3 = v == QGMM_BLOCKED_3D;
    const int64_t E = r3 ? plain->shape[0] : 1, R = plain->shape[r3], C = plain->shape[r3 + 1];
    p->dir = dir;
    p->var = v;
    p->plain = (int64_t)vk_tensor_addr(plain);
    p->pe = r3 ? plain->strides[0] : 0;
    p->pr = plain->strides[r3];
    p->pc = plain->strides[r3 + 1];
    p->blk = (int64_t)vk_tensor_addr(blk);
    p->bstride = blk->strides[0];
    p->blen = blk->shape[0];
    p->e = E;
    p->r = R;
    p->c = C;
    p->colspad = qgmm_blocked_cols(C);
    p->rowspad = qgmm_blocked_rows(R);
    p->perexp = p->colspad * p->rowspad;
    if (v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS) {
        if (!contiguous1(starts) || !contiguous1(offs))
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "offs/group_starts: vulkan needs contiguous i32 vectors");
        p->g = offs->shape[0];
        const uint64_t out0 = dir == 0 ? vk_tensor_addr(starts) : 0;
        qgmm_status st = v == QGMM_BLOCKED_M_GROUPS ? vk_offs_prep(c, offs, R, 1, 128, 0, 1, out0, 0, 0, -1)
                                                    : vk_offs_prep(c, offs, C * 32, 32, 4, 0, 32, out0, 0, 0, -1);
        if (st != QGMM_OK) return st;
        p->table = (int64_t)c->scratch.addr;
    }
    /* to-blocked: one lane per 4 blocked bytes; from-blocked: one per plain scale */
    p->n = dir == 0 ? (p->blen + 3) / 4 : E * R * C;
    p->words = (p->bstride == 1 || p->blen <= 1) && p->blk % 4 == 0;
    return vk_dispatch(c, VKP_BLOCKED, (const int64_t *)p, QG_BLOCKED_NP, (p->n + 255) / 256);
}

qgmm_status vk_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant v, const qgmm_tensor *in,
                                 const qgmm_tensor *offs, const qgmm_tensor *out, const qgmm_tensor *group_starts)
{
    return blocked_common(ctx, 0, v, in, out, offs, group_starts);
}

qgmm_status vk_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant v, const qgmm_tensor *in,
                                   const qgmm_tensor *offs, const qgmm_tensor *out)
{
    return blocked_common(ctx, 1, v, out, in, offs, NULL);
}

static void pad_params(qg_pad_params *p, int mode, const qgmm_tensor *x, const qgmm_tensor *out, int64_t rows,
                       int64_t d, int64_t esize, int64_t G, uint64_t table)
{
    memset(p, 0, sizeof *p);
    p->mode = mode;
    if (x) {
        p->x = (int64_t)vk_tensor_addr(x);
        p->xs0 = x->strides[0];
        p->xs1 = x->rank > 1 ? x->strides[1] : 1;
    }
    p->y = (int64_t)vk_tensor_addr(out);
    p->ys0 = out->strides[0];
    p->ys1 = out->rank > 1 ? out->strides[1] : 1;
    p->rows = rows;
    p->d = d;
    p->esize = esize;
    p->g = G;
    p->table = (int64_t)table;
    /* 16-byte units when rows are contiguous and every row start is 16-byte aligned */
    if (x && mode != 2 && p->xs1 == 1 && p->ys1 == 1 && (d * esize) % 16 == 0 && (p->xs0 * esize) % 16 == 0 &&
        (p->ys0 * esize) % 16 == 0 && p->x % 16 == 0 && p->y % 16 == 0 && d * esize < ((int64_t)1 << 31))
        p->vec = d * esize / 16;
    /* 2048 units (8 per lane) per workgroup, fewer when rows are so short that a
     * workgroup would touch more than the 256 rows whose sources it looks up */
    if (p->vec > 0) p->span = p->vec * 255 < 2048 ? p->vec * 255 : 2048;
}

static int64_t pad_groups(const qg_pad_params *p)
{
    if (p->vec > 0) return (p->rows * p->vec + p->span - 1) / p->span;
    return (p->rows * p->d + 255) / 256;
}

qgmm_status vk_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x, const qgmm_tensor *offs,
                                const qgmm_tensor *out, const qgmm_tensor *padded_start,
                                const qgmm_tensor *padded_offs)
{
    vk_ctx *c = vk_of(ctx);
    if (!contiguous1(offs) || !contiguous1(padded_start) || !contiguous1(padded_offs))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "offs/padded_*: vulkan needs contiguous i32 vectors");
    qgmm_status st = vk_offs_prep(c, offs, x->shape[0], 1, alignment, 0, 1, vk_tensor_addr(padded_start),
                                  vk_tensor_addr(padded_offs), 0, -1);
    if (st != QGMM_OK) return st;
    qg_pad_params pp, *p = &pp;
    pad_params(p, 0, x, out, out->shape[0], x->shape[1], (int64_t)qgmm_dtype_size(x->dtype), offs->shape[0],
               c->scratch.addr);
    return vk_dispatch(c, VKP_PAD, (const int64_t *)p, QG_PAD_NP, pad_groups(p));
}

qgmm_status vk_unpad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x_padded,
                                  const qgmm_tensor *offs, const qgmm_tensor *out)
{
    vk_ctx *c = vk_of(ctx);
    if (!contiguous1(offs))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "offs: vulkan needs a contiguous i32 vector");
    /* the padded input must hold every group's padded rows (cap = its row count) */
    qgmm_status st = vk_offs_prep(c, offs, out->shape[0], 1, alignment, 0, 1, 0, 0, 0, x_padded->shape[0]);
    if (st != QGMM_OK) return st;
    qg_pad_params pp, *p = &pp;
    pad_params(p, 1, x_padded, out, out->shape[0], out->shape[1], (int64_t)qgmm_dtype_size(out->dtype),
               offs->shape[0], c->scratch.addr);
    return vk_dispatch(c, VKP_PAD, (const int64_t *)p, QG_PAD_NP, pad_groups(p));
}

qgmm_status vk_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs, const qgmm_tensor *padded_offs,
                             const qgmm_tensor *row_ids)
{
    vk_ctx *c = vk_of(ctx);
    if (!contiguous1(offs) || !contiguous1(padded_offs))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "offs/padded_offs: vulkan needs contiguous i32 vectors");
    const int padded = padded_offs && padded_offs->buffer;
    if (padded && padded_offs->shape[0] != offs->shape[0]) {
        /* the CPU reference treats a length mismatch as bad offsets */
        qg_offs_params p;
        memset(&p, 0, sizeof p);
        p.offs = (int64_t)vk_tensor_addr(offs);
        p.g = 1;
        p.extent = -1; /* any offset fails: raises the status word, writes nothing */
        p.table = (int64_t)c->scratch.addr;
        p.status = (int64_t)c->status.addr;
        return vk_dispatch(c, VKP_OFFS_PREP, (const int64_t *)&p, QG_OFFS_NP, 1);
    }
    /* padded space: padded_offs monotonic and within the row count */
    qgmm_status st = vk_offs_prep(c, offs, padded ? INT32_MAX : row_ids->shape[0], 1, 1, 0, 1, 0, 0,
                                  padded ? vk_tensor_addr(padded_offs) : 0, padded ? row_ids->shape[0] : -1);
    if (st != QGMM_OK) return st;
    qg_pad_params pp, *q = &pp;
    pad_params(q, 2, NULL, row_ids, row_ids->shape[0], 1, 4, offs->shape[0], c->scratch.addr);
    q->padded = padded;
    return vk_dispatch(c, VKP_PAD, (const int64_t *)q, QG_PAD_NP, (row_ids->shape[0] + 255) / 256);
}
