/*
 * vk_ops_cast.c — FP8 rowwise / MXFP8 / FP8 blockwise quantize and dequantize: map each
 * variant onto cast.comp's (E, O, R) segment view or dequant.comp's element view; the kernel
 * a cast runs on is chosen in one place, cast_choose, with the context's tuning (vk_tuning).
 * The per-format constants the shaders need are computed here by the same C expressions as
 * kernels/qgmm_scale_rules.h, so host and reference agree by construction.
 */
#include "vk_internal.h"
#include "glsl/params.h"
#include "glsl/cast_params.h"
#include "glsl/dequant_params.h"
#include "qgmm_layout_maps.h"
#include "qgmm_scale_rules.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The f32 constants of codec.glsl's FmtConsts for fp8 format fmt. */
static void fmt_consts(int fmt, qg_cast_params *p)
{
    const float maxv = qgmm_fp8_max(fmt);
    p->c_max = qgmm_f32_bits(maxv);
    /* qgmm_rowwise_scale for any amax below 1e-12: the float64 clamp value */
    p->c_clamp = qgmm_f32_bits((float)((double)maxv / QGMM_AMAX_EPS));
    /* smallest f32 whose float64 value is >= 1e-12 (the clamp test in f32 bits) */
    float t = (float)QGMM_AMAX_EPS;
    if ((double)t < QGMM_AMAX_EPS) t = nextafterf(t, INFINITY);
    p->c_eps = qgmm_f32_bits(t);
    const float inv = (fmt == QGMM_FMT_E5M2) ? (1.0f / 57344.0f) : (fmt == QGMM_FMT_E4M3FNUZ) ? (1.0f / 240.0f) : (1.0f / 448.0f);
    p->c_inv = qgmm_f32_bits(inv);
}

static int64_t pow2_ceil(int64_t v)
{
    int64_t p = 1;
    while (p < v && p < 256) p <<= 1;
    return p;
}

/* Lane layout: consecutive lanes walk whichever of (reduce, other) is contiguous. */
static void choose_lanes(qg_cast_params *p, int64_t xo, int64_t xr, int64_t seglen, int combine, int64_t O)
{
    int64_t TO, TR, ocontig;
    if (xr == 1 || combine || xo != 1) {
        TR = pow2_ceil(seglen > 0 ? seglen : 256);
        TO = 256 / TR;
        ocontig = 0;
    } else {
        TO = 64;
        TR = 4;
        ocontig = 1;
    }
    p->to = TO;
    p->tr = TR;
    p->ocontig = ocontig;
    p->ot = combine ? 128 : TO;
    p->notiles = (O + p->ot - 1) / p->ot;
}

/* The 8-wide path of cast.comp: reduce dim contiguous in x and q, every segment a
 * multiple of 8 elements, x rows 16-byte aligned and q rows 8-byte aligned. */
static int can_vec(const qg_cast_params *p, int64_t seglen)
{
    const int64_t es = (int64_t)qgmm_dtype_size((qgmm_dtype)p->xdt);
    if (p->xr != 1 || p->qr != 1 || (es != 2 && es != 4) || seglen <= 0 || seglen % 8) return 0;
    if (p->x % 16 || (p->xo * es) % 16 || (p->xe * es) % 16) return 0;
    if (p->q % 8 || p->qo % 8 || p->qe % 8) return 0;
    return 1;
}

/* Bytes per element of an x the low-register shaders take (bf16, or f32 in their QG_XF32
 * builds), 0 for any other dtype. */
static int64_t fast_x_bytes(int64_t dtype) { return dtype == QGMM_BF16 ? 2 : dtype == QGMM_F32 ? 4 : 0; }

/* The pipeline of a low-register shader for this cast: its bf16 or f32 build (first_bf16 /
 * first_f32: the e4m3fn pipeline of each), at the cast's fp8 format. */
static int fast_pipe(const qg_cast_params *p, int first_bf16, int first_f32)
{
    return (p->xdt == QGMM_F32 ? first_f32 : first_bf16) + (int)(p->fmt - QGMM_F8E4M3FN);
}

/* cast.comp's register-resident paths (its header says what each needs). Segment path:
 * LS lanes per segment, the fewest that hold it in <= 8 units each (rows of more than 64
 * units: <= 16, which measured faster on the H100 than more lanes per row); MX blocks
 * (4 units) go to lane pairs, so each warp load covers whole sectors. */
static void fast_segments(const vk_tuning *t, qg_cast_params *p, int64_t seglen, int combine)
{
    const int mode = t->cast_lanes;
    if (mode == VK_LANES_GENERIC || !fast_x_bytes(p->xdt) || p->vec != 8 || seglen <= 0) return;
    if (combine) {
        if (seglen == 128) p->fast = 3;
        return;
    }
    const int64_t U = seglen / 8, nsegt = p->e * p->o * p->nseg;
    if (U > 4096 || nsegt >= (int64_t)1 << 30) return; /* 256 lanes x 16 units: rows of up to 32768 */
    int64_t ls = 1;
    while (ls * 8 < U) ls <<= 1;
    if (U == 4) ls = 2;
    /* long rows: up to 16 units per lane (fewer lanes and barriers per row) */
    if (U > 64 && mode != VK_LANES_V1) while (ls > 1 && (U + ls / 2 - 1) / (ls / 2) <= 16) ls >>= 1;
    if (ls > 256) return; /* v1 layouts: rows of more than 2048 units stay generic */
    p->fast = 1;
    p->ls = ls;
    p->kps = (U + ls - 1) / ls;
    p->nsegt = nsegt;
}

static void lanes_auto(const vk_tuning *t, qg_cast_params *p, int64_t seglen, int combine)
{
    p->vec = can_vec(p, seglen) ? 8 : 1;
    choose_lanes(p, p->xo, p->xr, seglen > 0 ? seglen / p->vec : 0, combine, p->o);
    fast_segments(t, p, seglen, combine);
}

/* MX along a strided dim whose other dim is contiguous (dim1): 8 columns per lane. */
static void fast_dim1(const vk_tuning *t, qg_cast_params *p)
{
    const int64_t xr = p->xr;
    if (t->cast_lanes == VK_LANES_GENERIC || !fast_x_bytes(p->xdt) || p->xo != 1 || p->o % 8 || xr % 8 || xr <= 0 || xr > ((int64_t)1 << 26)) return;
    if (p->x % 16 || p->xe % 8 || p->qr != 1 || p->qo % 16 || p->qe % 16 || p->q % 16) return;
    p->fast = 2;
    p->otiles = (p->o + 1023) / 1024;
}

/* MX dim0 rows of 4k blocks: a lane pair per 4-block chunk (cast.comp path 4). */
static void fast_mx_chunks(const vk_tuning *t, qg_cast_params *p)
{
    if (p->fast != 1 || p->nseg % 4 || t->cast_lanes == VK_LANES_V1) return;
    p->fast = 4;
    p->nsegt /= 4;
}

/* cast.comp's specialization constants (ids and values in its header). */
enum { SC_PATH, SC_RULE, SC_ENC, SC_XDT, SC_VEC, SC_KPS, SC_COUNT };

/* The constants of one dispatch: its path, and the knobs that select code inside that path
 * (the rule and encoder of the fast paths, x's dtype and lane width for the generic one).
 * Knobs a path does not branch on stay -1 (read from the parameters), so that shapes share
 * pipelines: the set depends on the variant, never on the extents, except SC_KPS, which
 * only the 16x1 row path (rows of more than 512 elements) sets, to one of 8 values. */
static void cast_spec(const qg_cast_params *p, int32_t *sc)
{
    for (int i = 0; i < SC_COUNT; ++i) sc[i] = -1;
    const int fast = (int)p->fast;
    if (fast == 0) {
        sc[SC_PATH] = 0;
        sc[SC_XDT] = (int32_t)p->xdt;
        sc[SC_VEC] = (int32_t)p->vec;
        return;
    }
    sc[SC_PATH] = fast;
    if (fast == 1) {
        if (p->kps == 2 && p->ls == 2) sc[SC_PATH] = 1;
        else if (p->kps <= 8) sc[SC_PATH] = 5;
        else {
            sc[SC_PATH] = 6;
            sc[SC_KPS] = (int32_t)p->kps;
        }
    }
    sc[SC_RULE] = (int32_t)p->rule;
    sc[SC_ENC] = (int32_t)p->enc;
}

/* Whether cast.comp path `path` gets a pipeline of its own (QGMM_VULKAN_CAST_SPEC: none, the
 * default set, all). By default the generic path (0) and MX dim1 (2): specialized, the
 * driver compiled the other fast paths to fewer registers plus local memory, and they ran
 * slower on the H100 (docs/backends-vulkan.md, "Casts"). */
static int spec_wanted(const vk_tuning *t, int path)
{
    if (t->cast_spec != VK_SPEC_DEFAULT) return t->cast_spec == VK_SPEC_ALL;
    return path == 0 || path == 2;
}

/* Whether sc may get a pipeline of its own when `pending` new ones are already planned for
 * the same call: 2 cached already, 1 new while the casts hold fewer than half of the
 * context's specialized-pipeline slots (the rest stay for the GEMM), else 0: the cast runs
 * on the unspecialized pipeline (the same bytes, the shared register budget). The casts'
 * pipes are cast.comp's, cast_rows.comp's, cast_2d.comp's, cast_cols.comp's,
 * cast_jrows.comp's and the f32 builds of all but cast.comp, VKP_CAST_E4M3FN to
 * VKP_CAST_JROWS_F32_E5M2. */
static int spec_room_after(const vk_ctx *c, int pipe, const int32_t *sc, int nsc, int pending)
{
    int mine = pending;
    for (int i = 0; i < c->nspec_pipes; ++i) {
        const vk_spec_pipe *e = &c->spec_pipes[i];
        if (e->pipe < VKP_CAST_E4M3FN || e->pipe > VKP_CAST_JROWS_F32_E5M2) continue;
        if (e->pipe == pipe && e->nspec == nsc && !memcmp(e->spec, sc, sizeof(int32_t) * (size_t)nsc)) return 2;
        ++mine;
    }
    return mine < VK_MAX_SPEC_PIPES / 2 && c->nspec_pipes + pending < VK_MAX_SPEC_PIPES;
}
static int spec_room(const vk_ctx *c, int pipe, const int32_t *sc, int nsc)
{
    return spec_room_after(c, pipe, sc, nsc, 0);
}

/* With QGMM_VK_PIPELINE_STATS, names the constants of a specialized cast pipeline about to be
 * created (room 1), so that the driver's statistics line that follows can be told apart. */
static void report_new_pipe(const vk_ctx *c, int room, int pipe, const int32_t *spec, int nspec)
{
    if (room != 1 || !c->pipestats) return;
    fprintf(stderr, "qgmm vulkan %s pipeline constants (in the shader's order):", g_vk_spirv[pipe].name);
    for (int i = 0; i < nspec; ++i) fprintf(stderr, " %d", spec[i]);
    fputc('\n', stderr);
}

/* cast_rows.comp's constants (its header). */
enum { RC_LS, RC_KPS, RC_SPL, RC_RULE, RC_ENC, RC_NIT, RC_COUNT };

/* Moves a segment cast (cast.comp paths 1 and 4) onto cast_rows.comp. Lanes per segment:
 * the fewest (a power of two, at most the workgroup) that hold it in at most
 * QGMM_VULKAN_CAST_ROWS_KPS units of 8 elements each (default 8 for bf16, 4 for f32), but
 * at least 2 (each warp load then covers whole 32-byte sectors) and at least 4 for segments
 * of 16 units or more. Segments per lane group: up to QGMM_VULKAN_CAST_ROWS_SPL (default 2)
 * consecutive ones of a row, at most 8 units per lane. So rows of 5120 take 128 lanes of 5
 * units, 1x128 blocks 4 lanes of 4 units x 2 blocks, MX blocks 2 lanes of 2 units x 2
 * blocks: the fastest of the settings timed on the H100 (docs/backends-vulkan.md,
 * "Casts"). A workgroup takes one lane-group round. Returns the workgroup count, 0 when
 * the cast stays on cast.comp: the device lacks the subgroup operations, a segment needs
 * more than 8 units per lane, one expert's blocked scales exceed 2^31 bytes, or
 * QGMM_VULKAN_CAST_ROWS=0. The shader takes its layout from the constants; of the parameters
 * only p->nsegt changes (segments, not cast.comp's 4-block chunks). */
static int64_t rows_plan(const vk_ctx *c, qg_cast_params *p, int32_t *rc)
{
    const vk_tuning *t = &c->tune;
    if (!c->cast_rows_ok || (p->fast != 1 && p->fast != 4) || !t->rows) return 0;
    if (p->skind == 2 && p->expbytes >= ((int64_t)1 << 31)) return 0; /* cast_quant.glsl scale_offset: 32-bit */
    const int64_t L = p->l > 0 ? p->l : p->r, U = L / 8;
    /* units per lane: 8 (bf16: 32 registers of x), 4 for f32 (the same 32 registers) */
    const int64_t kt = t->rows_kps ? t->rows_kps : p->xdt == QGMM_F32 ? 4 : 8;
    int64_t ls = 1;
    while (ls < 256 && ls * kt < U) ls <<= 1;
    /* at least 2 lanes (a warp load then covers whole 32-byte sectors), 4 for segments of 16
     * units and more (64 contiguous bytes per segment and load) */
    const int64_t minls = U >= 16 ? 4 : U >= 2 ? 2 : 1;
    if (ls < minls) ls = minls;
    const int64_t kps = (U + ls - 1) / ls;
    if (kps > 8) return 0;
    /* consecutive segments of a row per lane group, up to 8 units per lane: addresses,
     * row and scale offsets computed once for all of them */
    int64_t spl = t->rows_spl;
    while (spl > 1 && (spl * kps > 8 || p->nseg % spl)) spl >>= 1;
    if (p->fast == 4) p->nsegt *= 4; /* chunks of 4 MX blocks back to blocks */
    rc[RC_LS] = (int32_t)ls;
    rc[RC_KPS] = (int32_t)kps;
    rc[RC_SPL] = (int32_t)spl;
    rc[RC_RULE] = (int32_t)p->rule;
    rc[RC_ENC] = (int32_t)p->enc;
    rc[RC_NIT] = 1;
    const int64_t per = (256 / ls) * spl;
    return (p->nsegt + per - 1) / per;
}

/* cast_2d.comp's constants (its header). */
enum { TC_MODE, TC_RPL, TC_RULE, TC_ENC, TC_BPW, TC_COUNT };

/* Moves MX dim1 (cast.comp path 2) and 128x128 tiles (path 3) onto cast_2d.comp where the
 * device has the subgroup operations (QGMM_VULKAN_CAST_2D=0: stay on cast.comp). MX dim1
 * takes QGMM_VULKAN_CAST_2D_RPL rows per lane (8 or 16, default 8) and
 * QGMM_VULKAN_CAST_2D_BPW 32-row blocks per workgroup (1, 2 or 4, default 4), the fastest
 * pair timed on the H100. Returns the workgroup count, 0 to stay. */
static int64_t twod_plan(const vk_ctx *c, qg_cast_params *p, int32_t *tc)
{
    const vk_tuning *t = &c->tune;
    if (!c->cast_rows_ok || (p->fast != 2 && p->fast != 3) || !t->twod) return 0;
    if (p->skind == 2 && p->expbytes >= ((int64_t)1 << 31)) return 0; /* cast_2d.comp: 32-bit blocked offsets */
    tc[TC_MODE] = p->fast == 2 ? 0 : 1;
    /* f32 x: 8 rows (16 would hold 128 registers of x) */
    tc[TC_RPL] = p->xdt != QGMM_F32 && t->twod_rpl == 16 ? 16 : 8;
    tc[TC_RULE] = (int32_t)p->rule;
    tc[TC_ENC] = (int32_t)p->enc;
    tc[TC_BPW] = 1;
    if (p->fast == 3) {
        tc[TC_RPL] = 8; /* unused by the tile mode: one pipeline */
        return p->e * p->nseg * p->notiles;
    }
    tc[TC_BPW] = t->twod_bpw;
    const int64_t cols = (256 / (32 / tc[TC_RPL]) / tc[TC_BPW]) * 8; /* columns per workgroup */
    p->otiles = (p->o + cols - 1) / cols;
    return p->e * ((p->nseg + tc[TC_BPW] - 1) / tc[TC_BPW]) * p->otiles;
}

/* Byte offset in the scratch buffer of cast_cols.comp's words: after the group table. */
static int64_t cols_words_at(const qg_cast_params *p)
{
    return ((TAB_HEADER + TAB_STRIDE * p->nseg) * 4 + 255) / 256 * 256;
}

/* cast_cols.comp's constants (its header). */
enum { CC_LC, CC_KPL, CC_QT, CC_ENC, CC_PASS, CC_COUNT };

/* Whether an FP8 rowwise cast whose reduce dim is strided and whose other dim is contiguous
 * (colwise, per (e, c), jagged colwise: cast.comp's generic path otherwise) runs on
 * cast_cols.comp: subgroup operations, bf16 or f32 x (its QG_XF32 build, 8 rows per lane)
 * with 16-byte aligned rows and a column count that is a multiple of 8, q with 8-byte
 * aligned rows (QO == 1) or transposed (QR == 1, 8-byte aligned columns), and one scratch
 * word per (expert, group, column) beside the group table (VK_SCRATCH_BYTES).
 * Sets the constants: QGMM_VULKAN_CAST_COLS_LC lanes across a workgroup's columns (1, 2, 4,
 * 8 or 16; default 8: 128 bytes of each row), QGMM_VULKAN_CAST_COLS_KPL rows per lane (8 or
 * 16; default below: chunks of 512 or 256 rows, jagged 504); QGMM_VULKAN_CAST_COLS=0 keeps
 * cast.comp. Returns the rows of a chunk, 0 to stay. */
static int64_t cols_plan(const vk_ctx *c, const qg_cast_params *p, int jagged, int32_t *cc)
{
    const vk_tuning *t = &c->tune;
    if (!c->cast_rows_ok || !t->cols) return 0;
    const int64_t es = fast_x_bytes(p->xdt);
    if (!es || p->xo != 1 || p->xr == 1 || p->o % 8 ||
        p->x % 16 || (p->xr * es) % 16 || (p->xe * es) % 16 || p->q % 8 || p->qe % 8)
        return 0;
    if (cols_words_at(p) + 4 * p->e * p->nseg * p->o > (int64_t)VK_SCRATCH_BYTES) return 0;
    if (p->qo == 1 && p->qr % 8 == 0) cc[CC_QT] = 0;
    else if (p->qr == 1 && p->qo % 8 == 0) cc[CC_QT] = 1;
    else return 0;
    cc[CC_LC] = t->cols_lc;
    /* 16 rows per lane (chunks of 512 rows), 8 for whole-dim segments with q transposed (the
     * faster of the two for each on the H100); f32 x: 8 (16 rows of two loads each would hold
     * 128 registers of x) */
    const int kpl = t->cols_kpl ? t->cols_kpl : cc[CC_QT] == 1 && !jagged ? 8 : 16;
    cc[CC_KPL] = kpl == 8 || es == 4 ? 8 : 16;
    cc[CC_ENC] = (int32_t)p->enc;
    /* a chunk: the rows the lanes hold, 8 fewer for jagged groups (whose chunks start
     * anywhere: the lanes' 8-row grid starts up to 7 rows before them) */
    return (256 / t->cols_lc) * cc[CC_KPL] - (jagged ? 8 : 0);
}

/* cast_jrows.comp's constants (its header). */
enum { JC_LS, JC_KPS, JC_ENC, JC_COUNT };

/* The jagged rowwise cast along the contiguous dim (offs over the columns), or whole bf16
 * rows of 32769-65536 elements (long_rows), on cast_jrows.comp: subgroup shuffles, bf16 or
 * f32 x (its QG_XF32 build) with 16-byte aligned rows whose length is a multiple of 8, q rows
 * contiguous and 8-byte aligned. Lanes per segment: the fewest (power of two, at most the
 * subgroup size) that together hold one and a half times the mean group width at 8 units a
 * lane (bf16) or 4 (f32), or QGMM_VULKAN_CAST_JROWS_LS; QGMM_VULKAN_CAST_JROWS_KPS units per
 * lane in registers (default 4), at most QGMM_VULKAN_CAST_JROWS_WGS persistent workgroups
 * (default 1056); QGMM_VULKAN_CAST_JROWS=0 keeps cast.comp. Returns the workgroup count, 0
 * to stay. */
static int64_t jrows_plan(const vk_ctx *c, qg_cast_params *p, int32_t *jc)
{
    const vk_tuning *t = &c->tune;
    if (!c->cast_rows_ok || !t->jrows || p->e != 1) return 0;
    const int64_t es = fast_x_bytes(p->xdt);
    if (!es || p->xr != 1 || p->qr != 1 || p->r % 8 ||
        p->x % 16 || (p->xo * es) % 16 || p->q % 8 || p->qo % 8)
        return 0;
    /* the shader's indices are 32-bit: a row's bytes, and the segments plus one stride of
     * the persistent loop (at most 65535 x 256), stay below 2^31 */
    if (p->r * es >= ((int64_t)1 << 31) || p->o * p->nseg >= ((int64_t)1 << 31) - ((int64_t)1 << 24))
        return 0;
    const int64_t units = (3 * p->r / (2 * p->nseg) + 7) / 8; /* 1.5 x the mean group, in units */
    /* up to the subgroup size: wide groups ran faster on more lanes on the H100 (groups of
     * ~2048 columns: 32 lanes), and f32 x counts 4 units a lane (each is two loads) */
    const int per_lane = es == 4 ? 4 : 8;
    int ls = 1;
    while ((uint32_t)ls < c->subgroup_size && ls * per_lane < units) ls <<= 1;
    if (t->jrows_ls) ls = t->jrows_ls;
    jc[JC_LS] = ls;
    /* later units are re-read: fewer registers, more workgroups resident */
    jc[JC_KPS] = t->jrows_kps;
    jc[JC_ENC] = (int32_t)p->enc;
    /* persistent workgroups, at most one row of the dispatch grid (QGMM_VULKAN_DISPATCH_X):
     * the shader takes its id and stride from the x dimension alone */
    const int64_t per = 256 / ls, need = (p->o * p->nseg + per - 1) / per;
    const int64_t most = t->jrows_wgs < t->dispatch_x ? t->jrows_wgs : t->dispatch_x;
    return need < most ? need : most;
}

/* Plain rowwise bf16 rows of 32769-65536 elements (longer than cast.comp's register path
 * holds) go to cast_jrows.comp as one segment per row; longer rows and f32 rows measured
 * faster on cast.comp's generic path (H100). QGMM_VULKAN_CAST_LONGROWS=0: always generic. */
static int long_rows(const vk_tuning *t, const qg_cast_params *p)
{
    return t->longrows && p->xdt == QGMM_BF16 && p->xr == 1 && p->nseg == 1 && p->r > 32768 &&
           p->r <= 65536;
}

/* The kernels a cast runs on. */
enum { CK_COMP, CK_ROWS, CK_2D, CK_COLS, CK_JROWS };

/* One cast as it will run: the kernel, its pipeline and constants (nspec 0: cast.comp's
 * unspecialized pipeline), whether each specialized pipeline is cached or new (spec_room;
 * cast_cols.comp: one per pass), the workgroups, the rows of a cast_cols chunk, and the
 * parameter block as that kernel reads it. */
typedef struct cast_plan {
    int kernel, pipe, nspec;
    int32_t spec[VK_MAX_SPEC_CONST];
    int room[3];
    int64_t groups, chunk;
    qg_cast_params p;
} cast_plan;

/* The cast variants, as the kernel choice tells them apart. */
enum { CV_ROWWISE, CV_ROWWISE_JAGGED, CV_MX_ALONG_ROWS, CV_MX_ACROSS_ROWS, CV_1X128, CV_128X128 };

/* cast_cols.comp for pl (its three passes each need a pipeline slot): 1 when taken. */
static int cols_choose(const vk_ctx *c, int jagged, cast_plan *pl)
{
    static const int order[3] = {1, 0, 2}; /* amax, scales, quantize */
    const int64_t chunk = cols_plan(c, &pl->p, jagged, pl->spec);
    if (chunk <= 0) return 0;
    const int pipe = fast_pipe(&pl->p, VKP_CAST_COLS_E4M3FN, VKP_CAST_COLS_F32_E4M3FN);
    int fresh = 0;
    for (int i = 0; i < 3; ++i) {
        pl->spec[CC_PASS] = order[i];
        pl->room[i] = spec_room_after(c, pipe, pl->spec, CC_COUNT, fresh);
        if (!pl->room[i]) return 0;
        fresh += pl->room[i] == 1;
    }
    pl->kernel = CK_COLS;
    pl->pipe = pipe;
    pl->nspec = CC_COUNT;
    pl->chunk = chunk;
    return 1;
}

/* A low-register kernel (`plan`: rows_plan, twod_plan or jrows_plan on `pipe`) for pl when it
 * takes the cast and a pipeline slot is free: 1 when taken. plan works on a copy of the
 * parameters, so a refused cast leaves them as the next candidate expects. */
static int lowreg_choose(const vk_ctx *c, int kernel, int pipe, int nspec,
                         int64_t (*plan)(const vk_ctx *, qg_cast_params *, int32_t *), cast_plan *pl)
{
    qg_cast_params pr = pl->p;
    const int64_t groups = plan(c, &pr, pl->spec);
    pl->room[0] = groups > 0 ? spec_room(c, pipe, pl->spec, nspec) : 0;
    if (!pl->room[0]) return 0;
    pl->p = pr;
    pl->kernel = kernel;
    pl->pipe = pipe;
    pl->nspec = nspec;
    pl->groups = groups;
    return 1;
}

/* cast.comp at the path its lane plan (p->fast) says, specialized where spec_wanted and a
 * slot allow. Its register-resident paths 1-4 decode bf16 only: f32 x, planned like bf16 so
 * that the low-register shaders' f32 builds could take it, goes to the vector path 0. */
static void comp_choose(const vk_ctx *c, cast_plan *pl)
{
    qg_cast_params *p = &pl->p;
    if (p->xdt == QGMM_F32) p->fast = 0;
    int64_t groups = p->e * p->nseg * p->notiles;
    if (p->fast == 4) {
        groups = (p->nsegt + 127) / 128;
    } else if (p->fast == 1) {
        const int64_t per = (256 / p->ls) * (p->ls == 2 && p->kps == 2 ? 4 : 1); /* cast_seg_2x4 */
        groups = (p->nsegt + per - 1) / per;
    } else if (p->fast == 2) {
        groups = p->e * p->nseg * p->otiles;
    }
    pl->kernel = CK_COMP;
    pl->pipe = VKP_CAST_E4M3FN + (int)(p->fmt - QGMM_F8E4M3FN);
    pl->groups = groups;
    cast_spec(p, pl->spec);
    pl->room[0] = spec_wanted(&c->tune, pl->spec[SC_PATH]) && groups > 0 ? spec_room(c, pl->pipe, pl->spec, SC_COUNT) : 0;
    pl->nspec = pl->room[0] ? SC_COUNT : 0;
}

/* The one place a cast's kernel is chosen, from the variant and its parameter block p (the
 * problem: tensors, extents, strides, rule; no table yet). In order, each taking the cast
 * only where its conditions hold and a pipeline slot is free:
 *   FP8 rowwise along a strided dim                        cast_cols.comp (three passes)
 *   FP8 rowwise jagged along the columns; bf16 rows of 32769-65536   cast_jrows.comp
 *   rows, 1x128 blocks, MX dim0 (cast.comp paths 1 and 4)  cast_rows.comp
 *   MX dim1, 128x128 tiles (cast.comp paths 2 and 3)       cast_2d.comp
 *   anything else                                          cast.comp (five paths)
 * The low-register shaders need compute subgroup operations (c->cast_rows_ok). */
static void cast_choose(const vk_ctx *c, const qg_cast_params *p, int variant, cast_plan *pl)
{
    const vk_tuning *t = &c->tune;
    memset(pl, 0, sizeof *pl);
    pl->p = *p;
    qg_cast_params *q = &pl->p;
    const int jagged = variant == CV_ROWWISE_JAGGED;
    const int64_t seglen = variant == CV_ROWWISE ? q->r : jagged ? 0 : q->l;
    lanes_auto(t, q, seglen, variant == CV_128X128);
    if (variant == CV_MX_ALONG_ROWS) fast_mx_chunks(t, q);
    if (variant == CV_MX_ACROSS_ROWS) fast_dim1(t, q);
    q->enc = t->cast_enc;
    if (variant == CV_ROWWISE || jagged) {
        if (cols_choose(c, jagged, pl)) return;
        if ((jagged || long_rows(t, q)) &&
            lowreg_choose(c, CK_JROWS, fast_pipe(q, VKP_CAST_JROWS_E4M3FN, VKP_CAST_JROWS_F32_E4M3FN), JC_COUNT,
                          jrows_plan, pl))
            return;
    }
    if (lowreg_choose(c, CK_ROWS, fast_pipe(q, VKP_CAST_ROWS_E4M3FN, VKP_CAST_ROWS_F32_E4M3FN), RC_COUNT, rows_plan, pl) ||
        lowreg_choose(c, CK_2D, fast_pipe(q, VKP_CAST_2D_E4M3FN, VKP_CAST_2D_F32_E4M3FN), TC_COUNT, twod_plan, pl))
        return;
    comp_choose(c, pl);
}

/* cast_cols.comp's passes (its header): zero the scratch words, amax, scales, quantize, each
 * pass on its own specialized pipeline. */
static qgmm_status cols_run(vk_ctx *c, cast_plan *pl)
{
    static const int order[3] = {1, 0, 2}; /* amax, scales, quantize */
    qg_cast_params *p = &pl->p;
    const int64_t chunk = pl->chunk, lc = pl->spec[CC_LC];
    p->otiles = (p->o + 8 * lc - 1) / (8 * lc);
    p->chunk = chunk;
    /* chunks per expert: whole R cut into chunks, or each group into its own (a bound: each
     * non-empty group adds at most one partial chunk, and at most R groups are non-empty) */
    p->nch = (p->r + chunk - 1) / chunk + (p->table ? (p->nseg < p->r ? p->nseg : p->r) : 0);
    const int64_t words = p->e * p->nseg * p->o;
    p->amax = (int64_t)c->scratch.addr + cols_words_at(p);
    qgmm_status st = vk_fill(c, (uint64_t)p->amax, 4 * words, 0);
    for (int i = 0; i < 3 && st == QGMM_OK; ++i) {
        pl->spec[CC_PASS] = order[i];
        report_new_pipe(c, pl->room[i], pl->pipe, pl->spec, CC_COUNT);
        const int64_t groups = order[i] == 0 ? (words + 255) / 256 : p->e * p->nch * p->otiles;
        if (groups > 0) st = vk_dispatch_spec(c, pl->pipe, pl->spec, CC_COUNT, (const int64_t *)p, QG_CAST_NP, groups);
    }
    return st;
}

/* Enqueues the cast cast_choose planned (the group table, where it has one, in place). */
static qgmm_status cast_run(vk_ctx *c, cast_plan *pl)
{
    if (pl->kernel == CK_COLS) return cols_run(c, pl);
    if (!pl->nspec) return vk_dispatch(c, pl->pipe, (const int64_t *)&pl->p, QG_CAST_NP, pl->groups);
    if (pl->kernel == CK_COMP && pl->room[0] == 1 && c->pipestats) /* names the statistics line that follows */
        fprintf(stderr, "qgmm vulkan cast pipeline: path %d rule %d enc %d xdt %d vec %d kps %d\n", pl->spec[SC_PATH],
                pl->spec[SC_RULE], pl->spec[SC_ENC], pl->spec[SC_XDT], pl->spec[SC_VEC], pl->spec[SC_KPS]);
    else report_new_pipe(c, pl->room[0], pl->pipe, pl->spec, pl->nspec);
    return vk_dispatch_spec(c, pl->pipe, pl->spec, pl->nspec, (const int64_t *)&pl->p, QG_CAST_NP, pl->groups);
}

/* The members qg_cast_params and qg_dequant_params share, from the problem: x, q and the
 * scales' addresses and dtypes, the (e, o, r) extents and x's and q's strides. */
#define VK_CAST_GEOMETRY(p, pr)                                                               \
    do {                                                                                      \
        (p)->x = (int64_t)vk_ref_addr(&(pr)->x.at);                                           \
        (p)->xdt = (pr)->x.at.dtype;                                                          \
        (p)->q = (int64_t)vk_ref_addr(&(pr)->q.at);                                           \
        (p)->fmt = (pr)->q.at.dtype;                                                          \
        (p)->s = (int64_t)vk_ref_addr(&(pr)->scales);                                         \
        (p)->e = (pr)->e, (p)->o = (pr)->o, (p)->r = (pr)->r;                                 \
        (p)->xe = (pr)->x.s_e, (p)->xo = (pr)->x.s_o, (p)->xr = (pr)->x.s_r;                  \
        (p)->qe = (pr)->q.s_e, (p)->qo = (pr)->q.s_o, (p)->qr = (pr)->q.s_r;                  \
    } while (0)

/* A zeroed cast block with the operands and geometry every cast shares. */
void vk_cast_params_operands(struct qg_cast_params *p, const qgmm_cast_problem *pr)
{
    memset(p, 0, sizeof *p);
    VK_CAST_GEOMETRY(p, pr);
}

/* The problem's group offsets as the rank-1 tensor vk_offs_prep reads. */
static qgmm_tensor offs_tensor(const qgmm_cast_problem *pr)
{
    const int64_t G = pr->groups;
    return qgmm_tensor_make(pr->offs.buffer, pr->offs.offset, QGMM_I32, 1, &G);
}

/* MXFP8 scales: blocked (skind 2, zeroed first when quantizing: padding bytes are 0) or
 * plain (skind 1). */
static qgmm_status mx_scales(vk_ctx *c, const qgmm_cast_problem *pr, int64_t *skind, int64_t *colspad,
                             int64_t *expbytes, int64_t *se, int64_t *so, int64_t *sg)
{
    if (pr->layout != QGMM_SCALES_BLOCKED) {
        *skind = 1;
        *se = pr->ss_e;
        *so = pr->ss_o;
        *sg = pr->ss_g;
        return QGMM_OK;
    }
    if (pr->s_byte != 1)
        return qgmm_set_error(c->api, QGMM_ERR_UNSUPPORTED, "scales: blocked scales must be contiguous on vulkan");
    *skind = 2;
    *colspad = pr->cols_pad;
    *expbytes = pr->expert_bytes;
    return pr->dequantize ? QGMM_OK : vk_fill(c, vk_ref_addr(&pr->scales), pr->e * pr->expert_bytes, 0);
}

static qgmm_status quantize_rowwise(vk_ctx *c, const qgmm_cast_problem *pr)
{
    const int jagged = pr->groups > 0;
    qg_cast_params cp, *p = &cp;
    vk_cast_params_operands(p, pr);
    p->rule = 0;
    p->pow2 = pr->pow2;
    p->recip = pr->recip;
    p->se = pr->ss_e;
    p->sg = pr->ss_g;
    p->so = pr->ss_o;
    p->nseg = pr->nseg;
    fmt_consts((int)p->fmt, p);
    cast_plan pl;
    cast_choose(c, p, jagged ? CV_ROWWISE_JAGGED : CV_ROWWISE, &pl);
    if (jagged) {
        /* cast_cols.comp schedules its chunks by the table's tile prefix (tile = a chunk) */
        const qgmm_tensor offs = offs_tensor(pr);
        qgmm_status st = vk_offs_prep(c, &offs, p->r, 1, 1, pl.kernel == CK_COLS ? pl.chunk : 0, 1, 0, 0, 0, -1);
        if (st != QGMM_OK) return st;
        pl.p.table = (int64_t)c->scratch.addr;
    }
    return cast_run(c, &pl);
}

static qgmm_status quantize_mxfp8(vk_ctx *c, const qgmm_cast_problem *pr)
{
    qg_cast_params cp, *p = &cp;
    vk_cast_params_operands(p, pr);
    p->rule = pr->rceil ? 2 : 1;
    p->l = 32;
    p->nseg = pr->nseg;
    fmt_consts((int)p->fmt, p);
    qgmm_status st = mx_scales(c, pr, &p->skind, &p->colspad, &p->expbytes, &p->se, &p->so, &p->sg);
    if (st != QGMM_OK) return st;
    cast_plan pl;
    cast_choose(c, p, pr->rdim > pr->odim ? CV_MX_ALONG_ROWS : CV_MX_ACROSS_ROWS, &pl); /* blocks along the last dim or not */
    return cast_run(c, &pl);
}

static qgmm_status quantize_blockwise(vk_ctx *c, const qgmm_cast_problem *pr)
{
    const int combine = pr->o_div == 128;
    qg_cast_params cp, *p = &cp;
    vk_cast_params_operands(p, pr);
    p->rule = 0;
    p->recip = 1;
    p->l = 128;
    p->nseg = pr->nseg;
    p->combine = combine;
    p->se = pr->ss_e;
    p->so = pr->ss_o;
    p->sg = pr->ss_g;
    fmt_consts((int)p->fmt, p);
    cast_plan pl;
    cast_choose(c, p, combine ? CV_128X128 : CV_1X128, &pl);
    return cast_run(c, &pl);
}

/* dequant.comp: one lane per element, the scale found as the quantize stored it. */
static qgmm_status dequantize(vk_ctx *c, const qgmm_cast_problem *pr)
{
    qg_dequant_params dp, *p = &dp;
    memset(p, 0, sizeof *p);
    p->odiv = 1;
    if (pr->kind == QGMM_QUANT_FP8_ROWWISE) {
        p->mode = pr->recip ? 1 : 0;
        p->se = pr->ss_e;
        p->sg = pr->ss_g;
        p->so = pr->ss_o;
        if (pr->groups > 0) {
            p->nseg = pr->groups;
            const qgmm_tensor offs = offs_tensor(pr);
            qgmm_status st = vk_offs_prep(c, &offs, pr->r, 1, 1, 0, 1, 0, 0, 0, -1);
            if (st != QGMM_OK) return st;
            p->table = (int64_t)c->scratch.addr;
        }
    } else if (pr->kind == QGMM_QUANT_MXFP8) {
        p->mode = 2;
        p->l = 32;
        qgmm_status st = mx_scales(c, pr, &p->skind, &p->colspad, &p->expbytes, &p->se, &p->so, &p->sg);
        if (st != QGMM_OK) return st;
    } else {
        p->mode = 1;
        p->l = 128;
        p->odiv = pr->o_div;
        p->se = pr->ss_e;
        p->so = pr->ss_o;
        p->sg = pr->ss_g;
    }
    VK_CAST_GEOMETRY(p, pr);
    p->n = p->e * p->o * p->r;
    return vk_dispatch(c, VKP_DEQUANT, (const int64_t *)p, QG_DEQUANT_NP, (p->n + 255) / 256);
}

qgmm_status vk_cast(qgmm_context *ctx, const qgmm_cast_problem *pr)
{
    vk_ctx *c = vk_of(ctx);
    if (pr->dequantize) return dequantize(c, pr);
    switch (pr->kind) {
    case QGMM_QUANT_FP8_ROWWISE: return quantize_rowwise(c, pr);
    case QGMM_QUANT_MXFP8: return pr->groups > 0 ? vk_quantize_mxfp8_grouped(c, pr) : quantize_mxfp8(c, pr);
    case QGMM_QUANT_FP8_BLOCKWISE: return quantize_blockwise(c, pr);
    }
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "vulkan cast: format kind %d", (int)pr->kind);
}
