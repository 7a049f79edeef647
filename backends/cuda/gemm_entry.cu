/*
 * gemm_entry.cu — qgmm_cuda_grouped_gemm, the vtable slot: translates the problem's
 * description into a qg_problem (raw pointers + element strides) and picks a kernel path.
 *
 * Path choice: QGMM_CUDA_GEMM_PATH=portable|hopper|auto (default auto), read once when the
 * context is created. auto takes the Hopper wgmma/TMA kernels where they apply (sm_90,
 * TMA-compatible operands, K- or (BF16) MN-major, the recipes gemm_hopper.cu lists) and
 * the portable mma.sync kernel otherwise; "hopper" fails with UNSUPPORTED where the Hopper
 * kernels do not apply, so a test can tell which ran.
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

extern "C" qgmm_status qgmm_cuda_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *d)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    const int path = c->gemm_path; /* valid: context creation refuses a bad QGMM_CUDA_GEMM_PATH */
    const qgmm_dtype da = d->a.at.dtype, db = d->b.at.dtype;
    const int ea = qg_elem_of(da), eb = qg_elem_of(db);
    if (ea < 0 || eb < 0)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: operand dtypes %s x %s are not supported "
                              "(bf16, f8e4m3fn, f8e5m2; f8e4m3fnuz has no NVIDIA tensor-core form)",
                              qgmm_dtype_name(da), qgmm_dtype_name(db));
    if (ea != eb)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: mixed operand dtypes %s x %s are not supported",
                              qgmm_dtype_name(da), qgmm_dtype_name(db));
    if (d->groups > 4096)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "grouped_gemm on cuda: %lld groups; at most 4096 are supported",
                              (long long)d->groups);

    /* the description (api/qgmm_problem.h) in the kernels' form: the same strides */
    qg_problem p;
    memset(&p, 0, sizeof p);
    p.kind = d->kind == QGMM_GEMM_M_GROUPED ? QG_M_GROUPED : QG_K_GROUPED;
    p.elem = ea;
    p.scale_mode = d->recipe == QGMM_RECIPE_BF16 ? QG_SC_NONE
                   : d->recipe == QGMM_RECIPE_FP8_ROWWISE ? QG_SC_ROW
                   : d->recipe == QGMM_RECIPE_FP8_BLOCKWISE ? QG_SC_BLOCK128 : QG_SC_MX32;
    p.out_f32 = d->out.dtype == QGMM_F32;
    p.groups = (int)d->groups;
    p.rows = d->rows;
    p.cols = d->cols;
    p.kdim = d->kdim;
    p.offs_multiple = (int)d->offs_multiple;
    p.a.ptr = (const uint8_t *)qgmm_ref_data(&d->a.at);
    p.a.s_row = d->a.s_row; p.a.s_k = d->a.s_k; p.a.s_grp = d->a.s_grp;
    p.b.ptr = (const uint8_t *)qgmm_ref_data(&d->b.at);
    p.b.s_row = d->b.s_row; p.b.s_k = d->b.s_k; p.b.s_grp = d->b.s_grp;
    p.sa.ptr = qgmm_ref_data(&d->sa.at);
    p.sa.s_grp = d->sa.s_grp; p.sa.s_row = d->sa.s_row; p.sa.s_k = d->sa.s_k; p.sa.i_div = (int)d->sa.i_div;
    p.sb.ptr = qgmm_ref_data(&d->sb.at);
    p.sb.s_grp = d->sb.s_grp; p.sb.s_row = d->sb.s_row; p.sb.s_k = d->sb.s_k; p.sb.i_div = (int)d->sb.i_div;
    p.offs = (const int32_t *)qgmm_ref_data(&d->offs);
    p.out = qgmm_ref_data(&d->out);
    p.so_g = d->so_grp; p.so_r = d->so_row; p.so_c = d->so_col;
    p.status = c->status_dev;
    {
        const qgmm_status st = qgmm_cuda_enter(ctx);
        if (st != QGMM_OK) return st;
    }
    /* MXFP8 on Hopper dequantizes its operands to bf16 in the context's scratch; where that
     * cannot be had, the portable kernel runs (qgmm_cuda_gemm_ws_bytes) */
    if (path != QG_PATH_PORTABLE) {
        const size_t ws = qgmm_cuda_gemm_ws_bytes(&p);
        if (ws > 0) {
            p.ws = qgmm_cuda_scratch(ctx, ws);
            if (p.ws) {
                p.ws_bytes = (int64_t)ws;
            } else { /* the failed allocation is not this op's error (last_error names it) */
                (void)cudaGetLastError();
            }
        }
    }
    const char *why = "", *used = "";
    const int rc = qgmm_cuda_gemm_run(&p, path, c->stream, &why, &used);
    if (rc == 1) return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on cuda: %s", why);
    if (rc != 0) {
        const qgmm_status st = qgmm_cuda_launch_check(ctx, "grouped_gemm");
        return st != QGMM_OK ? st : qgmm_set_error(ctx, QGMM_ERR_DEVICE, "grouped_gemm on cuda: %s", why);
    }
    return QGMM_OK;
}
