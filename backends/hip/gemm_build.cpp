/*
 * gemm_build.cpp — translates the grouped GEMM's description (api/qgmm_problem.h) into the
 * qgmm_hg_problem the MFMA kernel reads (raw pointers, the same strides), and refuses what
 * the kernel does not handle. No HIP runtime call: the plugin (gemm_entry.cpp) and the
 * host emulation test (emu/) share it.
 */
#include "hip_gemm.h"

#include <string.h>

static int hg_is_fp8(qgmm_dtype d)
{
    return d == QGMM_F8E4M3FN || d == QGMM_F8E4M3FNUZ || d == QGMM_F8E5M2;
}

static qgmm_hg_operand hg_operand(const qgmm_gemm_operand &o)
{
    qgmm_hg_operand r;
    r.ptr = (const uint8_t *)qgmm_ref_data(&o.at);
    r.s_row = o.s_row;
    r.s_k = o.s_k;
    r.s_grp = o.s_grp;
    r.dtype = (int)o.at.dtype;
    return r;
}

static qgmm_hg_scales hg_scales(const qgmm_gemm_scales &s)
{
    qgmm_hg_scales r;
    r.ptr = qgmm_ref_data(&s.at);
    r.s_grp = s.s_grp;
    r.s_row = s.s_row;
    r.s_k = s.s_k;
    r.i_div = (int)s.i_div;
    return r;
}

extern "C" qgmm_status qgmm_hip_gemm_build(const qgmm_context *ctx, const qgmm_gemm_problem *d, uint32_t *status,
                                           qgmm_hg_problem *out_p)
{
    const qgmm_dtype da = d->a.at.dtype, db = d->b.at.dtype;
    const int bf16 = d->recipe == QGMM_RECIPE_BF16;
    if (bf16 ? (da != QGMM_BF16 || db != QGMM_BF16) : (!hg_is_fp8(da) || !hg_is_fp8(db)))
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on hip: operand dtypes %s x %s for recipe %d",
                              qgmm_dtype_name(da), qgmm_dtype_name(db), (int)d->recipe);
    if (d->out.dtype != QGMM_BF16 && d->out.dtype != QGMM_F32)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on hip: out dtype %s (bf16 or f32)",
                              qgmm_dtype_name(d->out.dtype));
    if (d->groups > QGMM_HG_MAX_GROUPS)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "grouped_gemm on hip: offs has %lld groups; at most %d",
                              (long long)d->groups, (int)QGMM_HG_MAX_GROUPS);

    qgmm_hg_problem &p = *out_p;
    memset(&p, 0, sizeof p);
    p.kind = d->kind == QGMM_GEMM_M_GROUPED ? QGMM_HG_M_GROUPED : QGMM_HG_K_GROUPED;
    p.scale_mode = d->recipe == QGMM_RECIPE_BF16 ? QGMM_HG_SC_NONE
                   : d->recipe == QGMM_RECIPE_FP8_ROWWISE ? QGMM_HG_SC_ROW
                   : d->recipe == QGMM_RECIPE_FP8_BLOCKWISE ? QGMM_HG_SC_BLOCK128 : QGMM_HG_SC_MX32;
    p.out_f32 = d->out.dtype == QGMM_F32;
    p.groups = d->groups;
    p.rows = d->rows;
    p.cols = d->cols;
    p.kdim = d->kdim;
    p.offs_multiple = d->offs_multiple;
    p.a = hg_operand(d->a);
    p.b = hg_operand(d->b);
    p.sa = hg_scales(d->sa);
    p.sb = hg_scales(d->sb);
    p.offs = (const int32_t *)qgmm_ref_data(&d->offs);
    p.offs_stride = 1;
    p.out = qgmm_ref_data(&d->out);
    p.so_g = d->so_grp;
    p.so_r = d->so_row;
    p.so_c = d->so_col;
    p.status = status;
    return QGMM_OK;
}
