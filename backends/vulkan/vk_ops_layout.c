/*
 * vk_ops_layout.c — scales to/from the blocked layout, token-group pad/unpad and group
 * row ids: offsets are checked and turned into a group table on the device
 * (offs_prep.comp), then blocked.comp / pad.comp write every output element.
 */
#include "vk_internal.h"
#include "../../kernels/glsl/params.h"
#include "qgmm_layout_maps.h"

#include <stdint.h>
#include <string.h>

static int contiguous1(const qgmm_tensor *t) { return !t || !t->buffer || t->shape[0] <= 1 || t->strides[0] == 1; }

static qgmm_status blocked_common(qgmm_context *ctx, int dir, qgmm_blocked_variant v, const qgmm_tensor *plain,
                                  const qgmm_tensor *blk, const qgmm_tensor *offs, const qgmm_tensor *starts)
{
    vk_ctx *c = vk_of(ctx);
    int64_t p[QP_MAX];
    memset(p, 0, sizeof p);
    const int r3 = v == QGMM_BLOCKED_3D;
    const int64_t E = r3 ? plain->shape[0] : 1, R = plain->shape[r3], C = plain->shape[r3 + 1];
    p[BL_DIR] = dir;
    p[BL_VAR] = v;
    p[BL_PLAIN] = (int64_t)vk_tensor_addr(plain);
    p[BL_PE] = r3 ? plain->strides[0] : 0;
    p[BL_PR] = plain->strides[r3];
    p[BL_PC] = plain->strides[r3 + 1];
    p[BL_BLK] = (int64_t)vk_tensor_addr(blk);
    p[BL_BSTRIDE] = blk->strides[0];
    p[BL_BLEN] = blk->shape[0];
    p[BL_E] = E;
    p[BL_R] = R;
    p[BL_C] = C;
    p[BL_COLSPAD] = qgmm_blocked_cols(C);
    p[BL_ROWSPAD] = qgmm_blocked_rows(R);
    p[BL_PEREXP] = p[BL_COLSPAD] * p[BL_ROWSPAD];
    if (v == QGMM_BLOCKED_M_GROUPS || v == QGMM_BLOCKED_K_GROUPS) {
        if (!contiguous1(starts) || !contiguous1(offs))
            return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "offs/group_starts: vulkan needs contiguous i32 vectors");
        p[BL_G] = offs->shape[0];
        const uint64_t out0 = dir == 0 ? vk_tensor_addr(starts) : 0;
        qgmm_status st = v == QGMM_BLOCKED_M_GROUPS ? vk_offs_prep(c, offs, R, 1, 128, 0, 1, out0, 0, 0, -1)
                                                    : vk_offs_prep(c, offs, C * 32, 32, 4, 0, 32, out0, 0, 0, -1);
        if (st != QGMM_OK) return st;
        p[BL_TABLE] = (int64_t)c->scratch.addr;
    }
    /* to-blocked: one lane per 4 blocked bytes; from-blocked: one per plain scale */
    p[BL_N] = dir == 0 ? (p[BL_BLEN] + 3) / 4 : E * R * C;
    p[BL_WORDS] = (p[BL_BSTRIDE] == 1 || p[BL_BLEN] <= 1) && p[BL_BLK] % 4 == 0;
    return vk_dispatch(c, VKP_BLOCKED, p, QP_MAX, (p[BL_N] + 255) / 256);
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

static void pad_params(int64_t *p, int mode, const qgmm_tensor *x, const qgmm_tensor *out, int64_t rows,
                       int64_t d, int64_t esize, int64_t G, uint64_t table)
{
    memset(p, 0, QP_MAX * sizeof *p);
    p[PD_MODE] = mode;
    if (x) {
        p[PD_X] = (int64_t)vk_tensor_addr(x);
        p[PD_XS0] = x->strides[0];
        p[PD_XS1] = x->rank > 1 ? x->strides[1] : 1;
    }
    p[PD_OUT] = (int64_t)vk_tensor_addr(out);
    p[PD_OS0] = out->strides[0];
    p[PD_OS1] = out->rank > 1 ? out->strides[1] : 1;
    p[PD_ROWS] = rows;
    p[PD_D] = d;
    p[PD_ESIZE] = esize;
    p[PD_G] = G;
    p[PD_TABLE] = (int64_t)table;
    /* 16-byte units when rows are contiguous and every row start is 16-byte aligned */
    if (x && mode != 2 && p[PD_XS1] == 1 && p[PD_OS1] == 1 && (d * esize) % 16 == 0 && (p[PD_XS0] * esize) % 16 == 0 &&
        (p[PD_OS0] * esize) % 16 == 0 && p[PD_X] % 16 == 0 && p[PD_OUT] % 16 == 0 && d * esize < ((int64_t)1 << 31))
        p[PD_VEC] = d * esize / 16;
    /* 2048 units (8 per lane) per workgroup, fewer when rows are so short that a
     * workgroup would touch more than the 256 rows whose sources it looks up */
    if (p[PD_VEC] > 0) p[PD_SPAN] = p[PD_VEC] * 255 < 2048 ? p[PD_VEC] * 255 : 2048;
}

static int64_t pad_groups(const int64_t *p)
{
    if (p[PD_VEC] > 0) return (p[PD_ROWS] * p[PD_VEC] + p[PD_SPAN] - 1) / p[PD_SPAN];
    return (p[PD_ROWS] * p[PD_D] + 255) / 256;
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
    int64_t p[QP_MAX];
    pad_params(p, 0, x, out, out->shape[0], x->shape[1], (int64_t)qgmm_dtype_size(x->dtype), offs->shape[0],
               c->scratch.addr);
    return vk_dispatch(c, VKP_PAD, p, QP_MAX, pad_groups(p));
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
    int64_t p[QP_MAX];
    pad_params(p, 1, x_padded, out, out->shape[0], out->shape[1], (int64_t)qgmm_dtype_size(out->dtype),
               offs->shape[0], c->scratch.addr);
    return vk_dispatch(c, VKP_PAD, p, QP_MAX, pad_groups(p));
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
        int64_t p[QP_MAX];
        memset(p, 0, sizeof p);
        p[OP_OFFS] = (int64_t)vk_tensor_addr(offs);
        p[OP_G] = 1;
        p[OP_EXTENT] = -1; /* any offset fails: raises the status word, writes nothing */
        p[OP_TABLE] = (int64_t)c->scratch.addr;
        p[OP_STATUS] = (int64_t)c->status.addr;
        return vk_dispatch(c, VKP_OFFS_PREP, p, QP_MAX, 1);
    }
    /* padded space: padded_offs monotonic and within the row count */
    qgmm_status st = vk_offs_prep(c, offs, padded ? INT32_MAX : row_ids->shape[0], 1, 1, 0, 1, 0, 0,
                                  padded ? vk_tensor_addr(padded_offs) : 0, padded ? row_ids->shape[0] : -1);
    if (st != QGMM_OK) return st;
    int64_t q[QP_MAX];
    pad_params(q, 2, NULL, row_ids, row_ids->shape[0], 1, 4, offs->shape[0], c->scratch.addr);
    q[PD_PADDED] = padded;
    return vk_dispatch(c, VKP_PAD, q, QP_MAX, (row_ids->shape[0] + 255) / 256);
}
