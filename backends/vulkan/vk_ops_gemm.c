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
#include "../../kernels/glsl/params.h"
#include "qgmm_layout_maps.h"

#include <stdint.h>
#include <string.h>

#define GEMM_TILE 64      /* gemm.comp: BM = BN */
#define GEMM_COOP_TILE 128 /* gemm_coopmat.comp: BM = BN */

/* The one place a GEMM's kernel is chosen, from the builds the device can run (vk_coop.c
 * vk_coop_choose, with the context's tuning) and the operands: gemm_coopmat.comp where the
 * recipe has a cooperative-matrix build here and each operand has a unit stride along the
 * depth or along its rows/cols (its 16-byte staging needs one), on workgroup-scope matrices
 * for BF16 and FP8 rowwise where the device has them; else the tiled gemm.comp. */
static int gemm_pipe(const vk_ctx *c, int recipe, int mg, const qgmm_tensor *a, const qgmm_tensor *b)
{
    /* unit stride along the depth or along the rows/cols, for A (i, c) and B (j, c) */
    const int a_unit = mg ? (a->strides[1] == 1 || a->strides[0] == 1) : (a->strides[0] == 1 || a->strides[1] == 1);
    const int b_unit = mg ? (b->strides[2] == 1 || b->strides[1] == 1) : (b->strides[0] == 1 || b->strides[1] == 1);
    if (recipe == QGMM_RECIPE_BF16)
        return c->coop_bf16 && a_unit && b_unit ? (c->coop_wg ? VKP_GEMM_COOP_BF16_WG_KHR : VKP_GEMM_COOP_BF16_KHR) : VKP_GEMM;
    if (qgmm_dtype_is_fp8(a->dtype) && qgmm_dtype_is_fp8(b->dtype) && a_unit && b_unit && c->gemm_path != VK_GEMM_TILED)
        return recipe == QGMM_RECIPE_FP8_ROWWISE
                   ? (c->gemm_path == VK_GEMM_COOP_KHR ? (c->coop_wg_fp8 ? VKP_GEMM_COOP_FP8_WG_KHR : VKP_GEMM_COOP_FP8_KHR)
                                                       : VKP_GEMM_COOP_FP8)
                   : (c->gemm_path == VK_GEMM_COOP_KHR ? VKP_GEMM_COOP_FP8_BLK_KHR : VKP_GEMM_COOP_FP8_BLK);
    return qgmm_dtype_is_fp8(a->dtype) ? VKP_GEMM_FP8 : VKP_GEMM;
}

qgmm_status vk_grouped_gemm(qgmm_context *ctx, const qgmm_grouped_gemm_params *prm, const qgmm_tensor *a,
                            const qgmm_tensor *b, const qgmm_tensor *sa, const qgmm_tensor *sb,
                            const qgmm_tensor *offs, const qgmm_tensor *out)
{
    vk_ctx *c = vk_of(ctx);
    const int mg = prm->kind == QGMM_GEMM_M_GROUPED;
    const int recipe = prm->recipe;
    const int pipe = gemm_pipe(c, recipe, mg, a, b);
    const int coop = pipe != VKP_GEMM && pipe != VKP_GEMM_FP8;
    const int64_t GEMM_BM = coop ? GEMM_COOP_TILE : GEMM_TILE, GEMM_BN = GEMM_BM;
    if (offs->shape[0] > 1 && offs->strides[0] != 1)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "offs: vulkan needs a contiguous i32 vector");
    int64_t p[QP_MAX];
    memset(p, 0, sizeof p);
    const int64_t M = a->shape[0], G = offs->shape[0];
    int64_t rows, cols, depth;
    p[GM_KIND] = mg ? 0 : 1;
    p[GM_RECIPE] = recipe;
    p[GM_A] = (int64_t)vk_tensor_addr(a);
    p[GM_ADT] = a->dtype;
    p[GM_B] = (int64_t)vk_tensor_addr(b);
    p[GM_BDT] = b->dtype;
    p[GM_OUT] = (int64_t)vk_tensor_addr(out);
    p[GM_ODT] = out->dtype;
    if (mg) {
        rows = M; cols = b->shape[1]; depth = a->shape[1];
        p[GM_AI] = a->strides[0]; p[GM_AC] = a->strides[1];
        p[GM_BG] = b->strides[0]; p[GM_BJ] = b->strides[1]; p[GM_BC] = b->strides[2];
        p[GM_OG] = 0; p[GM_OI] = out->strides[0]; p[GM_OJ] = out->strides[1];
    } else {
        rows = a->shape[1]; cols = b->shape[1]; depth = M;
        p[GM_AI] = a->strides[1]; p[GM_AC] = a->strides[0];
        p[GM_BG] = 0; p[GM_BJ] = b->strides[1]; p[GM_BC] = b->strides[0];
        p[GM_OG] = out->strides[0]; p[GM_OI] = out->strides[1]; p[GM_OJ] = out->strides[2];
    }
    p[GM_A_ICONTIG] = p[GM_AI] == 1 && p[GM_AC] != 1;
    p[GM_B_JCONTIG] = p[GM_BJ] == 1 && p[GM_BC] != 1;
    p[GM_ROWS] = rows;
    p[GM_COLS] = cols;
    p[GM_DEPTH] = depth;
    p[GM_G] = G;
    p[GM_NTJ] = (cols + GEMM_BN - 1) / GEMM_BN;
    p[GM_NTI] = (rows + GEMM_BM - 1) / GEMM_BM;
    int64_t multiple = 1, align = 1, div = 1;
    if (recipe == QGMM_RECIPE_FP8_ROWWISE) {
        p[GM_SA] = (int64_t)vk_tensor_addr(sa);
        p[GM_SB] = (int64_t)vk_tensor_addr(sb);
        if (mg) { /* a_scales (M), b_scales (E, N) */
            p[GM_SAI] = sa->strides[0];
            p[GM_SBG] = sb->strides[0]; p[GM_SBJ] = sb->strides[1];
        } else {  /* a_scales (G, N), b_scales (G, K) */
            p[GM_SAG] = sa->strides[0]; p[GM_SAI] = sa->strides[1];
            p[GM_SBG] = sb->strides[0]; p[GM_SBJ] = sb->strides[1];
        }
    } else if (recipe == QGMM_RECIPE_FP8_BLOCKWISE) {
        p[GM_SA] = (int64_t)vk_tensor_addr(sa);
        p[GM_SB] = (int64_t)vk_tensor_addr(sb);
        p[GM_SAI] = sa->strides[0]; p[GM_SAC] = sa->strides[1];
        if (mg) { /* (E, ceil(N/128), K/128) */
            p[GM_SBG] = sb->strides[0]; p[GM_SBJ] = sb->strides[1]; p[GM_SBC] = sb->strides[2];
            p[GM_SBJDIV] = 128;
        } else {  /* (K, M/128) */
            p[GM_SBJ] = sb->strides[0]; p[GM_SBC] = sb->strides[1];
            p[GM_SBJDIV] = 1;
            multiple = 128;
        }
    } else if (recipe == QGMM_RECIPE_MXFP8) {
        p[GM_SA] = (int64_t)vk_tensor_addr(sa);
        p[GM_SB] = (int64_t)vk_tensor_addr(sb);
        p[GM_SASTRIDE] = sa->strides[0];
        p[GM_SBSTRIDE] = sb->strides[0];
        if (mg) {
            p[GM_ACOLSPAD] = qgmm_blocked_cols(depth / 32);
            p[GM_BCOLSPAD] = p[GM_ACOLSPAD];
            p[GM_BPEREXP] = qgmm_blocked_rows(cols) * p[GM_BCOLSPAD];
            align = 128; /* padded start rows of the M-groups blocked a_scales */
        } else {
            p[GM_AROWSPAD] = qgmm_blocked_rows(rows);
            p[GM_BROWSPAD] = qgmm_blocked_rows(cols);
            multiple = 32;
            align = 4;
            div = 32; /* padded start scale columns of the K-groups blocked scales */
        }
    }
    if (G == 0) return QGMM_OK;
    /* the table's tile fields: M-grouped, row tiles before / through each group; K-grouped,
     * non-empty groups before / through it (a tile longer than any group counts 1 each) */
    qgmm_status st = vk_offs_prep(c, offs, M, multiple, align, mg ? GEMM_BM : INT32_MAX, div, 0, 0, 0, -1);
    if (st != QGMM_OK) return st;
    p[GM_TABLE] = (int64_t)c->scratch.addr;
    /* at most min(G, M) groups are non-empty. M-grouped: each adds at most one partial row
     * tile (empty ones none). K-grouped: each takes its row tiles, and gemm_zero.comp writes
     * the zero matrices of the empty ones (beside the GEMM: disjoint outputs, no barrier) */
    const int64_t nonempty = G < M ? G : M;
    const int64_t row_tiles = mg ? (M + GEMM_BM - 1) / GEMM_BM + nonempty : nonempty * p[GM_NTI];
    p[GM_NWG] = row_tiles * p[GM_NTJ];
    if (!mg) {
        p[GM_ZCHUNKS] = (rows * cols + GZ_CHUNK - 1) / GZ_CHUNK;
        st = vk_dispatch_spec_ex(c, VKP_GEMM_ZERO, NULL, 0, p, QP_MAX, G * p[GM_ZCHUNKS], p[GM_NWG] == 0);
        if (st != QGMM_OK) return st;
    }
    if (!coop) return vk_dispatch(c, pipe, p, QP_MAX, p[GM_NWG]);
    /* gemm_coopmat.comp's specialization constants (ids in its header) */
    const int32_t spec[3] = {recipe, a->dtype, b->dtype};
    if (pipe != VKP_GEMM_COOP_BF16_WG_KHR && pipe != VKP_GEMM_COOP_FP8_WG_KHR)
        return vk_dispatch_spec(c, pipe, spec, 3, p, QP_MAX, p[GM_NWG]);
    /* the workgroup-scope build computes the lean tiles (whole and aligned, gemm_coopmat.comp),
     * the subgroup-scope one the others: two dispatches over disjoint output tiles that read
     * the same inputs, so no barrier between them (they may overlap on the GPU) */
    st = vk_dispatch_spec_ex(c, pipe, spec, 3, p, QP_MAX, p[GM_NWG], 0);
    if (st != QGMM_OK) return st;
    p[GM_SKIPLEAN] = 1;
    return vk_dispatch_spec(c, pipe == VKP_GEMM_COOP_BF16_WG_KHR ? VKP_GEMM_COOP_BF16_KHR : VKP_GEMM_COOP_FP8_KHR, spec, 3,
                            p, QP_MAX, p[GM_NWG]);
}
