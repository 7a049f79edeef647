/*
 * layout_pad.cu — per-group token padding / unpadding and DeepGEMM row ids on CUDA
 * (ops-spec §5). One launch each; padded offsets are computed on the device by every
 * block (a block-wide scan in shared memory) and written by block 0, so no host sync.
 * Rows move as 16-byte units when both tensors are row-contiguous and 16-byte aligned.
 */
#include "cuda_internal.h"
#include "qgmm_kernels_layout.cuh"

static qgmm_status pad_setup(qgmm_context *ctx, int alignment, const qgmm_tensor *src, const qgmm_tensor *dst,
                             const qgmm_tensor *offs, qgmm_kpad *p)
{
    __builtin_memset(p, 0, sizeof *p);
    const int64_t esz = (int64_t)qgmm_dtype_size(src->dtype);
    p->src = (const uint8_t *)qgmm_tensor_data(src);
    p->dst = (uint8_t *)qgmm_tensor_data(dst);
    p->esz = esz;
    p->cols = src->shape[1];
    p->src_rs = src->strides[0] * esz;
    p->dst_rs = dst->strides[0] * esz;
    p->src_cs = src->strides[1] * esz;
    p->dst_cs = dst->strides[1] * esz;
    p->src_rows = src->shape[0];
    p->dst_rows = dst->shape[0];
    p->vec = (src->strides[1] == 1 || p->cols <= 1) && (dst->strides[1] == 1 || p->cols <= 1) &&
             (p->cols * esz) % 16 == 0 && p->src_rs % 16 == 0 && p->dst_rs % 16 == 0 &&
             ((uintptr_t)p->src % 16) == 0 && ((uintptr_t)p->dst % 16) == 0;
    p->offs = (const int32_t *)qgmm_tensor_data(offs);
    p->offs_stride = offs->strides[0];
    p->G = offs->shape[0];
    p->align = alignment;
    p->status = qgmm_cuda_ctx_of(ctx)->status_dev;
    if (p->G > QGMM_KL_MAX_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "pad/unpad token groups on cuda: offs has %lld groups; at most %d (the kernel keeps "
                              "the group starts in shared memory)", (long long)p->G, QGMM_KL_MAX_GROUPS);
    return QGMM_OK;
}

static unsigned pad_grid(qgmm_context *ctx, const qgmm_kpad *p, int64_t rows)
{
    (void)p;
    return qgmm_cuda_grid(ctx, (rows + 7) / 8, 256, 8); /* one warp per row */
}

extern "C" qgmm_status qgmm_cuda_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                                  const qgmm_tensor *offs, const qgmm_tensor *out,
                                                  const qgmm_tensor *padded_start,
                                                  const qgmm_tensor *padded_offs)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_kpad p;
    if ((st = pad_setup(ctx, alignment, x, out, offs, &p)) != QGMM_OK) return st;
    if (padded_start && padded_start->buffer) {
        p.padded_start = (int32_t *)qgmm_tensor_data(padded_start);
        p.ps_stride = padded_start->strides[0];
    }
    if (padded_offs && padded_offs->buffer) {
        p.padded_offs = (int32_t *)qgmm_tensor_data(padded_offs);
        p.po_stride = padded_offs->strides[0];
    }
    qgmm_kp_pad<<<pad_grid(ctx, &p, p.dst_rows), 256, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(p);
    return qgmm_cuda_launch_check(ctx, "qgmm_kp_pad");
}

extern "C" qgmm_status qgmm_cuda_pad_gather_plan(qgmm_context *ctx, const qgmm_pad_gather *g, int32_t *map,
                                                 int64_t nblk)
{
    if (g->groups > QGMM_KL_MAX_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "cuda pad_cast: %lld groups; at most %d",
                              (long long)g->groups, QGMM_KL_MAX_GROUPS);
    qgmm_kpad p;
    __builtin_memset(&p, 0, sizeof p);
    p.offs = (const int32_t *)qgmm_ref_data(&g->offs);
    p.offs_stride = 1;
    p.G = g->groups;
    p.align = g->alignment;
    p.src_rows = g->tokens;
    p.padded_offs = (int32_t *)qgmm_ref_data(&g->padded_offs);
    p.po_stride = 1;
    p.status = qgmm_cuda_ctx_of(ctx)->status_dev;
    qgmm_kp_gather_plan<<<1, 256, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(p, map, nblk);
    return qgmm_cuda_launch_check(ctx, "qgmm_kp_gather_plan");
}

extern "C" qgmm_status qgmm_cuda_unpad_token_groups(qgmm_context *ctx, int alignment,
                                                    const qgmm_tensor *x_padded, const qgmm_tensor *offs,
                                                    const qgmm_tensor *out)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_kpad p;
    if ((st = pad_setup(ctx, alignment, x_padded, out, offs, &p)) != QGMM_OK) return st;
    qgmm_kp_unpad<<<pad_grid(ctx, &p, p.dst_rows), 256, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(p);
    return qgmm_cuda_launch_check(ctx, "qgmm_kp_unpad");
}

extern "C" qgmm_status qgmm_cuda_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs,
                                               const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    qgmm_krowids k;
    __builtin_memset(&k, 0, sizeof k);
    k.offs = (const int32_t *)qgmm_tensor_data(offs);
    k.offs_stride = offs->strides[0];
    k.G = offs->shape[0];
    if (padded_offs && padded_offs->buffer) {
        k.poffs = (const int32_t *)qgmm_tensor_data(padded_offs);
        k.po_stride = padded_offs->strides[0];
        k.PG = padded_offs->shape[0];
    }
    k.ids = (int32_t *)qgmm_tensor_data(row_ids);
    k.ids_stride = row_ids->strides[0];
    k.rows = row_ids->shape[0];
    k.status = qgmm_cuda_ctx_of(ctx)->status_dev;
    const unsigned grid = qgmm_cuda_grid(ctx, (k.rows + 255) / 256, 256, 8);
    qgmm_kr_row_ids<<<grid, 256, 0, qgmm_cuda_ctx_of(ctx)->stream>>>(k);
    return qgmm_cuda_launch_check(ctx, "qgmm_kr_row_ids");
}
