/*
 * vk_ops_gemm.c — grouped GEMM (M- and K-grouped, all four recipes) on gemm.comp. The
 * group table (offs_prep.comp) gives each group's rows and, for M-grouped problems, the
 * number of 64-row tiles before it; the host dispatches the upper bound of tiles
 * (ceil(M/64) + G row tiles x column tiles) and surplus workgroups exit on the device,
 * so no offsets are read on the host. K-grouped problems take row tiles of the non-empty
 * groups only; gemm_zero.comp writes the empty groups' zero matrices.
 * On devices with cooperative matrices (vk_coop.c) gemm_coopmat.comp (128x128 tiles) runs
 * the FP8 recipes (fp8 -> f16 is exact) and, where VK_KHR_shader_bfloat16 is there too, BF16
 * (bf16 -> f16 would not be exact). It stages 16-byte chunks along a unit-stride dim of each
 * operand, so an operand with no unit stride falls back to the tiled shader.
 */
#include "vk_internal.h"
#include "glsl/params.h"
#include "glsl/gemm_params.h"

#include <stdint.h>
#include <string.h>

#define GEMM_TILE 64      /* gemm.comp: BM = BN */
#define GEMM_COOP_TILE 128 /* gemm_coopmat.comp: BM = BN */

/* The one place a GEMM's kernel is chosen, from the builds the device can run (vk_coop.c
 * vk_coop_choose, with the context's tuning) and the operands: gemm_coopmat.comp where the
 * recipe has a cooperative-matrix build here and each operand has a unit stride along the
 * depth or along its rows/cols (its 16-byte staging needs one), on workgroup-scope matrices
 * for BF16 and FP8 rowwise where the device has them; else the tiled gemm.comp. */
static int gemm_pipe(const vk_ctx *c, const qgmm_gemm_problem *d)
{
    const int a_unit = d->a.s_k == 1 || d->a.s_row == 1, b_unit = d->b.s_k == 1 || d->b.s_row == 1;
    const int fp8 = qgmm_dtype_is_fp8(d->a.at.dtype) && qgmm_dtype_is_fp8(d->b.at.dtype);
    if (d->recipe == QGMM_RECIPE_BF16)
        return c->coop_bf16 && a_unit && b_unit ? (c->coop_wg ? VKP_GEMM_COOP_BF16_WG_KHR : VKP_GEMM_COOP_BF16_KHR) : VKP_GEMM;
    if (fp8 && a_unit && b_unit && c->gemm_path != VK_GEMM_TILED)
        return d->recipe == QGMM_RECIPE_FP8_ROWWISE
                   ? (c->gemm_path == VK_GEMM_COOP_KHR ? (c->coop_wg_fp8 ? VKP_GEMM_COOP_FP8_WG_KHR : VKP_GEMM_COOP_FP8_KHR)
                                                       : VKP_GEMM_COOP_FP8)
                   : (c->gemm_path == VK_GEMM_COOP_KHR ? VKP_GEMM_COOP_FP8_BLK_KHR : VKP_GEMM_COOP_FP8_BLK);
    return qgmm_dtype_is_fp8(d->a.at.dtype) ? VKP_GEMM_FP8 : VKP_GEMM;
}

/* The shaders' parameter block (gemm_params.h) from the problem description. */
static void gemm_params(const qgmm_gemm_problem *d, int64_t tile, qg_gemm_params *p)
{
    memset(p, 0, sizeof *p);
    p->kind = d->kind == QGMM_GEMM_M_GROUPED ? 0 : 1;
    p->recipe = d->recipe;
    p->a_addr = (int64_t)vk_ref_addr(&d->a.at);
    p->a_i = d->a.s_row;
    p->a_c = d->a.s_k;
    p->a_dt = d->a.at.dtype;
    p->b_addr = (int64_t)vk_ref_addr(&d->b.at);
    p->b_g = d->b.s_grp;
    p->b_j = d->b.s_row;
    p->b_c = d->b.s_k;
    p->b_dt = d->b.at.dtype;
    p->o_addr = (int64_t)vk_ref_addr(&d->out);
    p->o_g = d->so_grp;
    p->o_i = d->so_row;
    p->o_j = d->so_col;
    p->o_dt = d->out.dtype;
    p->a_icontig = p->a_i == 1 && p->a_c != 1;
    p->b_jcontig = p->b_j == 1 && p->b_c != 1;
    p->rows = d->rows;
    p->cols = d->cols;
    p->depth = d->kdim;
    p->groups = d->groups;
    p->ntj = (d->cols + tile - 1) / tile;
    p->nti = (d->rows + tile - 1) / tile;
    if (d->recipe == QGMM_RECIPE_FP8_ROWWISE || d->recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        p->sa_addr = (int64_t)vk_ref_addr(&d->sa.at);
        p->sa_g = d->sa.s_grp;
        p->sa_i = d->sa.s_row;
        p->sa_c = d->sa.s_k;
        p->sb_addr = (int64_t)vk_ref_addr(&d->sb.at);
        p->sb_g = d->sb.s_grp;
        p->sb_j = d->sb.s_row;
        p->sb_c = d->sb.s_k;
        p->sb_jdiv = d->sb.i_div;
    } else if (d->recipe == QGMM_RECIPE_MXFP8) {
        p->sa_addr = (int64_t)vk_ref_addr(&d->sa.at);
        p->sb_addr = (int64_t)vk_ref_addr(&d->sb.at);
        p->sa_stride = d->sa.s_byte;
        p->sb_stride = d->sb.s_byte;
        p->a_cols_pad = d->sa.cols_pad;
        p->a_rows_pad = d->sa.rows_pad;
        p->b_cols_pad = d->sb.cols_pad;
        p->b_rows_pad = d->sb.rows_pad;
        p->b_per_exp = d->sb.rows_pad * d->sb.cols_pad;
    }
}

qgmm_status vk_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *d)
{
    vk_ctx *c = vk_of(ctx);
    const int mg = d->kind == QGMM_GEMM_M_GROUPED;
    const int pipe = gemm_pipe(c, d);
    const int coop = pipe != VKP_GEMM && pipe != VKP_GEMM_FP8;
    const int64_t tile = coop ? GEMM_COOP_TILE : GEMM_TILE;
    qg_gemm_params p;
    gemm_params(d, tile, &p);
    const int np = (int)(sizeof p / sizeof(int64_t));
    const int64_t M = d->tokens, G = d->groups;
    /* the table's tile fields: M-grouped, row tiles before / through each group; K-grouped,
     * non-empty groups before / through it (a tile longer than any group counts 1 each).
     * MXFP8 also gets each group's padded start of its blocked scales. */
    const int64_t align = d->recipe == QGMM_RECIPE_MXFP8 ? d->mx_group_align : 1;
    const int64_t div = d->recipe == QGMM_RECIPE_MXFP8 ? d->mx_group_div : 1;
    const qgmm_tensor offs = qgmm_tensor_make(d->offs.buffer, d->offs.offset, QGMM_I32, 1, &G);
    qgmm_status st = vk_offs_prep(c, &offs, M, d->offs_multiple, align, mg ? tile : INT32_MAX, div, 0, 0, 0, -1);
    if (st != QGMM_OK) return st;
    p.table = (int64_t)c->scratch.addr;
    /* at most min(G, M) groups are non-empty. M-grouped: each adds at most one partial row
     * tile (empty ones none). K-grouped: each takes its row tiles, and gemm_zero.comp writes
     * the zero matrices of the empty ones (beside the GEMM: disjoint outputs, no barrier) */
    const int64_t nonempty = G < M ? G : M;
    const int64_t row_tiles = mg ? (M + tile - 1) / tile + nonempty : nonempty * p.nti;
    p.nwg = row_tiles * p.ntj;
    if (!mg) {
        p.zchunks = (d->rows * d->cols + GZ_CHUNK - 1) / GZ_CHUNK;
        st = vk_dispatch_spec_ex(c, VKP_GEMM_ZERO, NULL, 0, (const int64_t *)&p, np, G * p.zchunks, p.nwg == 0);
        if (st != QGMM_OK) return st;
    }
    if (!coop) return vk_dispatch(c, pipe, (const int64_t *)&p, np, p.nwg);
    /* gemm_coopmat.comp's specialization constants (ids in its header) */
    const int32_t spec[3] = {d->recipe, d->a.at.dtype, d->b.at.dtype};
    if (pipe != VKP_GEMM_COOP_BF16_WG_KHR && pipe != VKP_GEMM_COOP_FP8_WG_KHR)
        return vk_dispatch_spec(c, pipe, spec, 3, (const int64_t *)&p, np, p.nwg);
    /* the workgroup-scope build computes the lean tiles (whole and aligned, gemm_coopmat.comp),
     * the subgroup-scope one the others: two dispatches over disjoint output tiles that read
     * the same inputs, so no barrier between them (they may overlap on the GPU) */
    st = vk_dispatch_spec_ex(c, pipe, spec, 3, (const int64_t *)&p, np, p.nwg, 0);
    if (st != QGMM_OK) return st;
    p.skip_lean = 1;
    return vk_dispatch_spec(c, pipe == VKP_GEMM_COOP_BF16_WG_KHR ? VKP_GEMM_COOP_BF16_KHR : VKP_GEMM_COOP_FP8_KHR, spec, 3,
                            (const int64_t *)&p, np, p.nwg);
}
