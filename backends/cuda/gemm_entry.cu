/*
 * gemm_entry.cu — qgmm_cuda_grouped_gemm, the vtable slot: turns the validated API tensors
 * into a qg_problem (raw pointers + element strides) and picks a kernel path.
 *
 * Path choice: QGMM_CUDA_GEMM_PATH=portable|hopper|auto (default auto), read once when the
 * context is created. auto takes the Hopper wgmma/TMA kernels where they apply (sm_90,
 * TMA-compatible operands, the recipes gemm_hopper.cu lists) and the portable mma.sync
 * kernel otherwise; "hopper" fails with UNSUPPORTED where the Hopper kernels do not apply,
 * so a test can tell which ran.
 */
#include "cuda_internal.h"
#include "gemm_problem.cuh"

#include <stdlib.h>
#include <string.h>

namespace {

int qg_elem_of(qgmm_dtype d)
{
    switch (d) {
    case QGMM_BF16: return QG_ELEM_BF16;
    case QGMM_F8E4M3FN: return QG_ELEM_E4M3;
    case QGMM_F8E5M2: return QG_ELEM_E5M2;
    default: return -1;
    }
}

} // namespace

extern "C" int qgmm_cuda_gemm_path_env(void)
{
    const char *e = getenv("QGMM_CUDA_GEMM_PATH");
    if (!e || !*e || !strcmp(e, "auto")) return QG_PATH_AUTO;
    if (!strcmp(e, "portable")) return QG_PATH_PORTABLE;
    if (!strcmp(e, "hopper")) return QG_PATH_HOPPER;
    return -1;
}

extern "C" void qgmm_cuda_gemm_relayout_bf16(qgmm_context *ctx, qg_problem *p); /* gemm_relayout.cu */

extern "C" qgmm_status qgmm_cuda_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *prm,
                                              const qgmm_tensor *a, const qgmm_tensor *b,
                                              const qgmm_tensor *a_scales, const qgmm_tensor *b_scales,
                                              const qgmm_tensor *offs, const qgmm_tensor *out)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int path = c->gemm_path;
    if (path < 0)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "grouped_gemm on cuda: QGMM_CUDA_GEMM_PATH (read when the context was created) "
                              "is none of portable, hopper, auto");
    const int ea = qg_elem_of(a->dtype), eb = qg_elem_of(b->dtype);
    if (ea < 0 || eb < 0)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: operand dtypes %s x %s are not supported "
                              "(bf16, f8e4m3fn, f8e5m2; f8e4m3fnuz has no NVIDIA tensor-core form)",
                              qgmm_dtype_name(a->dtype), qgmm_dtype_name(b->dtype));
    if (ea != eb)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: mixed operand dtypes %s x %s are not supported",
                              qgmm_dtype_name(a->dtype), qgmm_dtype_name(b->dtype));
    if (out->dtype != QGMM_BF16 && out->dtype != QGMM_F32)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: out dtype %s is not supported (bf16, f32)",
                              qgmm_dtype_name(out->dtype));
    const int64_t G = offs->shape[0];
    if (G > 4096)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: %lld groups; at most 4096 are supported",
                              (long long)G);
    if (G > 1 && offs->strides[0] != 1)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: offs must be contiguous (stride %lld)",
                              (long long)offs->strides[0]);

    qg_problem p;
    memset(&p, 0, sizeof p);
    p.kind = prm->kind == QGMM_GEMM_M_GROUPED ? QG_M_GROUPED : QG_K_GROUPED;
    p.elem = ea;
    p.out_f32 = out->dtype == QGMM_F32;
    p.groups = (int)G;
    p.offs = (const int32_t *)qgmm_tensor_data(offs);
    p.out = qgmm_tensor_data(out);
    p.status = c->status_dev;
    p.offs_multiple = 1;
    p.a.ptr = (const uint8_t *)qgmm_tensor_data(a);
    p.b.ptr = (const uint8_t *)qgmm_tensor_data(b);
    switch (prm->recipe) {
    case QGMM_RECIPE_BF16: p.scale_mode = QG_SC_NONE; break;
    case QGMM_RECIPE_FP8_ROWWISE: p.scale_mode = QG_SC_ROW; break;
    case QGMM_RECIPE_FP8_BLOCKWISE: p.scale_mode = QG_SC_BLOCK128; break;
    default: p.scale_mode = QG_SC_MX32; break;
    }
    if (p.scale_mode != QG_SC_NONE) {
        p.sa.ptr = qgmm_tensor_data(a_scales);
        p.sb.ptr = qgmm_tensor_data(b_scales);
    }
    p.sa.i_div = p.sb.i_div = 1;

    if (p.kind == QG_M_GROUPED) {
        /* a (M, K), b (E, N, K), out (M, N) */
        p.rows = a->shape[0];
        p.cols = b->shape[1];
        p.kdim = a->shape[1];
        p.a.s_row = a->strides[0]; p.a.s_k = a->strides[1]; p.a.s_grp = 0;
        p.b.s_grp = b->strides[0]; p.b.s_row = b->strides[1]; p.b.s_k = b->strides[2];
        p.so_g = 0; p.so_r = out->strides[0]; p.so_c = out->strides[1];
        if (p.scale_mode == QG_SC_ROW) {        /* a (M), b (E, N) */
            p.sa.s_row = a_scales->strides[0];
            p.sb.s_grp = b_scales->strides[0]; p.sb.s_row = b_scales->strides[1];
        } else if (p.scale_mode == QG_SC_BLOCK128) { /* a (M, K/128), b (E, N/128, K/128) */
            p.sa.s_row = a_scales->strides[0]; p.sa.s_k = a_scales->strides[1];
            p.sb.s_grp = b_scales->strides[0]; p.sb.s_row = b_scales->strides[1];
            p.sb.s_k = b_scales->strides[2]; p.sb.i_div = 128;
        }
    } else {
        /* a (M, N), b (M, K), out (G, N, K): r = n, c = k, contraction over tokens m */
        p.rows = a->shape[1];
        p.cols = b->shape[1];
        p.kdim = a->shape[0];
        p.a.s_row = a->strides[1]; p.a.s_k = a->strides[0]; p.a.s_grp = 0;
        p.b.s_row = b->strides[1]; p.b.s_k = b->strides[0]; p.b.s_grp = 0;
        p.so_g = out->strides[0]; p.so_r = out->strides[1]; p.so_c = out->strides[2];
        if (p.scale_mode == QG_SC_ROW) {        /* a (G, N), b (G, K) */
            p.sa.s_grp = a_scales->strides[0]; p.sa.s_row = a_scales->strides[1];
            p.sb.s_grp = b_scales->strides[0]; p.sb.s_row = b_scales->strides[1];
        } else if (p.scale_mode == QG_SC_BLOCK128) { /* a (N, M/128), b (K, M/128) */
            p.sa.s_row = a_scales->strides[0]; p.sa.s_k = a_scales->strides[1];
            p.sb.s_row = b_scales->strides[0]; p.sb.s_k = b_scales->strides[1];
            p.offs_multiple = 128;
        } else if (p.scale_mode == QG_SC_MX32) {
            p.offs_multiple = 32;
        }
    }
    {
        const qgmm_status st = qgmm_cuda_enter(ctx);
        if (st != QGMM_OK) return st;
    }
    /* BF16 operands that are not K-contiguous get a K-contiguous copy so the Hopper kernel
     * can take them (the portable path, when forced, keeps reading them strided). */
    if (path != QG_PATH_PORTABLE) qgmm_cuda_gemm_relayout_bf16(ctx, &p);
    const char *why = "", *used = "";
    const int rc = qgmm_cuda_gemm_run(&p, path, c->stream, &why, &used);
    if (rc == 1) return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on cuda: %s", why);
    if (rc != 0) {
        const qgmm_status st = qgmm_cuda_launch_check(ctx, "grouped_gemm");
        return st != QGMM_OK ? st : qgmm_set_error(ctx, QGMM_ERR_DEVICE, "grouped_gemm on cuda: %s", why);
    }
    return QGMM_OK;
}
