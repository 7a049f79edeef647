/*
 * qgmm_cases_catalog.c — the suites as data: which (op, variant, dtype, shape class)
 * cases exist, their names and ids, and what one execution costs (bytes, FLOPs).
 *
 * Names are derived from the descriptor fields (never typed by hand) so a name always
 * says exactly what the case runs, and qgmm_case_reshape can rebuild it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qgmm_cases_impl.h"

/* ------------------------------------------------------------------ naming */
static const char *dt_short(qgmm_dtype t)
{
    switch (t) {
    case QGMM_F32: return "f32";
    case QGMM_BF16: return "bf16";
    case QGMM_F16: return "f16";
    case QGMM_F8E4M3FN: return "e4m3fn";
    case QGMM_F8E4M3FNUZ: return "e4m3fnuz";
    case QGMM_F8E5M2: return "e5m2";
    case QGMM_E8M0: return "e8m0";
    case QGMM_I32: return "i32";
    case QGMM_U8: return "u8";
    default: return "invalid";
    }
}

const char *qgmm_case_recipe_name(qgmm_recipe r)
{
    switch (r) {
    case QGMM_RECIPE_BF16: return "bf16";
    case QGMM_RECIPE_FP8_ROWWISE: return "fp8_rowwise";
    case QGMM_RECIPE_FP8_BLOCKWISE: return "fp8_blockwise";
    case QGMM_RECIPE_MXFP8: return "mxfp8";
    }
    return "?";
}

static const char *bw_layout_short(qgmm_blockwise_layout l)
{
    return l == QGMM_BLOCKWISE_TORCHAO ? "torchao" : l == QGMM_BLOCKWISE_DEEPGEMM ? "deepgemm" : "rowmajor";
}

static const char *blocked_short(qgmm_blocked_variant v)
{
    switch (v) {
    case QGMM_BLOCKED_2D: return "2d";
    case QGMM_BLOCKED_3D: return "3d";
    case QGMM_BLOCKED_M_GROUPS: return "m_groups";
    case QGMM_BLOCKED_K_GROUPS: return "k_groups";
    }
    return "?";
}

static const char *mx_layout_short(qgmm_scale_layout l)
{
    switch (l) {
    case QGMM_SCALES_PLAIN: return "plain";
    case QGMM_SCALES_BLOCKED: return "blocked";
    case QGMM_SCALES_BLOCKED_M_GROUPS: return "m_groups";
    case QGMM_SCALES_BLOCKED_K_GROUPS: return "k_groups";
    }
    return "?";
}

const char *qgmm_case_groups_name(qgmm_group_pattern g)
{
    switch (g) {
    case QGMM_GROUPS_NONE: return "none";
    case QGMM_GROUPS_EVEN: return "even";
    case QGMM_GROUPS_RAGGED: return "ragged";
    case QGMM_GROUPS_EMPTY: return "empty";
    case QGMM_GROUPS_SINGLE: return "single";
    case QGMM_GROUPS_SHORT: return "short";
    case QGMM_GROUPS_BAD: return "badoffs";
    }
    return "?";
}

const char *qgmm_case_input_name(qgmm_input_pattern p)
{
    return p == QGMM_INPUT_EDGE ? "edge" : p == QGMM_INPUT_WIDE ? "wide" : "normal";
}

static const char *pass_short(qgmm_recipe_pass p)
{
    return p == QGMM_PASS_DGRAD ? "dgrad" : p == QGMM_PASS_WGRAD ? "wgrad" : "fwd";
}

static const char *rowwise_variant(const qgmm_case *c)
{
    const int E = c->shape.E > 0, jag = c->groups != QGMM_GROUPS_NONE;
    if (E) return c->rowwise.reduce_dim == 2 ? "3d_row" : "3d_transpose_rhs";
    if (jag) return c->rowwise.reduce_dim == 1 ? "jagged_row" : "jagged_col";
    return c->rowwise.reduce_dim == 1 ? "row" : "col";
}

static void make_name(qgmm_case *c)
{
    const char *pitch = c->padded_pitch ? ".pitch" : "";
    char *n = c->name;
    const size_t cap = sizeof c->name;
    const char *kind = c->rowwise.scale_kind == QGMM_SCALE_RECIPROCAL ? "recip" : "mult";
    const char *pow2 = c->rowwise.power_of_2 ? ".pow2" : "";
    const int E = c->shape.E > 0;
    switch (c->op) {
    case QGMM_CASE_FP8_ROWWISE:
        snprintf(n, cap, "fp8_rowwise.%s.%s%s.%s.%s%s", rowwise_variant(c), kind, pow2,
                 dt_short(c->q_dtype), dt_short(c->in_dtype), pitch);
        break;
    case QGMM_CASE_FP8_ROWWISE_DUAL:
        snprintf(n, cap, "fp8_rowwise_dual.jagged_col.%s%s.%s.%s", kind, pow2, dt_short(c->q_dtype),
                 dt_short(c->in_dtype));
        break;
    case QGMM_CASE_MXFP8:
        snprintf(n, cap, "mxfp8.%s%s.%s.%s.%s.%s%s", E ? "3d_" : "",
                 c->mx.block_dim == (E ? 2 : 1) ? "dim0" : "dim1", mx_layout_short(c->mx.scale_layout),
                 c->mx.mode == QGMM_MX_RCEIL ? "rceil" : "floor", dt_short(c->q_dtype),
                 dt_short(c->in_dtype), pitch);
        break;
    case QGMM_CASE_FP8_BLOCKWISE:
        snprintf(n, cap, "fp8_blockwise.%s%s.%s.%s.%s%s%s", E ? "3d_" : "",
                 c->blockwise.block == QGMM_BLOCK_1X128 ? "1x128" : "128x128",
                 bw_layout_short(c->blockwise_layout), dt_short(c->q_dtype), dt_short(c->in_dtype), pitch,
                 c->transposed_in ? ".xt" : c->transposed_out ? ".qt" : "");
        break;
    case QGMM_CASE_DEQUANTIZE:
        if (c->dequant_kind == QGMM_QUANT_FP8_ROWWISE)
            snprintf(n, cap, "dequant.fp8_rowwise.%s.%s.%s.%s%s", rowwise_variant(c), kind,
                     dt_short(c->q_dtype), dt_short(c->out_dtype), pitch);
        else if (c->dequant_kind == QGMM_QUANT_MXFP8)
            snprintf(n, cap, "dequant.mxfp8.%s%s.%s.%s.%s", E ? "3d_" : "",
                     c->mx.block_dim == (E ? 2 : 1) ? "dim0" : "dim1",
                     c->mx.scale_layout == QGMM_SCALES_BLOCKED ? "blocked" : "plain",
                     dt_short(c->q_dtype), dt_short(c->out_dtype));
        else
            snprintf(n, cap, "dequant.fp8_blockwise.%s%s.%s.%s.%s", E ? "3d_" : "",
                     c->blockwise.block == QGMM_BLOCK_1X128 ? "1x128" : "128x128",
                     bw_layout_short(c->blockwise_layout), dt_short(c->q_dtype),
                     dt_short(c->out_dtype));
        break;
    case QGMM_CASE_SCALES_TO_BLOCKED:
        snprintf(n, cap, "to_blocked.%s%s", blocked_short(c->blocked), c->row_ids_padded ? ".starts" : "");
        break;
    case QGMM_CASE_SCALES_FROM_BLOCKED:
        snprintf(n, cap, "from_blocked.%s", blocked_short(c->blocked));
        break;
    case QGMM_CASE_PAD:
        snprintf(n, cap, "pad_token_groups.a%d.%s", c->alignment, dt_short(c->in_dtype));
        break;
    case QGMM_CASE_UNPAD:
        snprintf(n, cap, "unpad_token_groups.a%d.%s", c->alignment, dt_short(c->in_dtype));
        break;
    case QGMM_CASE_GROUP_ROW_IDS:
        if (c->row_ids_padded)
            snprintf(n, cap, "group_row_ids.padded.a%d", c->alignment);
        else
            snprintf(n, cap, "group_row_ids.plain");
        break;
    case QGMM_CASE_GROUPED_GEMM:
        snprintf(n, cap, "gemm.%s.%s.%s.out_%s", c->gemm.kind == QGMM_GEMM_M_GROUPED ? "m" : "k",
                 qgmm_case_recipe_name(c->gemm.recipe),
                 c->gemm.recipe == QGMM_RECIPE_BF16 ? "bf16" : dt_short(c->q_dtype),
                 dt_short(c->out_dtype));
        break;
    case QGMM_CASE_RECIPE:
        snprintf(n, cap, "recipe.%s%s.%s.%s.out_%s", qgmm_case_recipe_name(c->gemm.recipe),
                 c->gemm.recipe == QGMM_RECIPE_MXFP8 ? (c->mx.mode == QGMM_MX_RCEIL ? ".rceil" : ".floor") : "",
                 pass_short(c->pass), dt_short(c->q_dtype), dt_short(c->out_dtype));
        break;
    case QGMM_CASE_MOE_FORWARD:
    case QGMM_CASE_MOE_BACKWARD:
        snprintf(n, cap, "moe_experts.%s.%s%s.%s.out_%s", c->op == QGMM_CASE_MOE_FORWARD ? "forward" : "backward",
                 qgmm_case_recipe_name(c->gemm.recipe),
                 c->gemm.recipe == QGMM_RECIPE_MXFP8 ? (c->mx.mode == QGMM_MX_RCEIL ? ".rceil" : ".floor") : "",
                 c->gemm.recipe == QGMM_RECIPE_BF16 ? "bf16" : dt_short(c->q_dtype), dt_short(c->out_dtype));
        break;
    default:
        snprintf(n, cap, "unknown");
    }
}

static void make_id(qgmm_case *c)
{
    char shape[128];
    const qgmm_case_shape *s = &c->shape;
    int k = 0;
    shape[0] = 0;
#define ADD(fmt, v) k += snprintf(shape + k, sizeof shape - (size_t)k, fmt, (long long)(v))
    if (s->E > 0) ADD("E%lld.", s->E);
    ADD("M%lld", s->M);
    if (s->N > 0) ADD(".N%lld", s->N);
    if (s->K > 0) ADD(".K%lld", s->K);
    if (c->groups != QGMM_GROUPS_NONE) {
        ADD(".G%lld", c->groups == QGMM_GROUPS_SINGLE ? 1 : s->G);
        k += snprintf(shape + k, sizeof shape - (size_t)k, ".%s", qgmm_case_groups_name(c->groups));
        if (c->groups == QGMM_GROUPS_BAD)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "_%s",
                          (c->seed & 1) && s->G >= 2 ? "decreasing" : "past_end");
        if (c->group_multiple > 1) ADD("%lld", c->group_multiple);
    }
#undef ADD
    snprintf(shape + k, sizeof shape - (size_t)k, ".%s", qgmm_case_input_name(c->input));
    snprintf(c->id, sizeof c->id, "%s/%s", c->name, shape);
}

int qc_family_of(qgmm_case_op op)
{
    switch (op) {
    case QGMM_CASE_SCALES_TO_BLOCKED:
    case QGMM_CASE_SCALES_FROM_BLOCKED: return QGMM_FAMILY_LAYOUT;
    case QGMM_CASE_PAD:
    case QGMM_CASE_UNPAD:
    case QGMM_CASE_GROUP_ROW_IDS: return QGMM_FAMILY_DATA;
    case QGMM_CASE_GROUPED_GEMM: return QGMM_FAMILY_GEMM;
    case QGMM_CASE_RECIPE: return QGMM_FAMILY_RECIPE;
    case QGMM_CASE_MOE_FORWARD:
    case QGMM_CASE_MOE_BACKWARD: return QGMM_FAMILY_COMPOSITE;
    default: return QGMM_FAMILY_CAST;
    }
}

/* ------------------------------------------------------------------ cost */
static double covered_rows(const qgmm_case *c)
{
    int32_t *offs;
    const int64_t G = qgmm_case_offsets(c, NULL, 0);
    if (G <= 0) return (double)c->shape.M;
    offs = malloc((size_t)G * sizeof *offs);
    if (!offs) return (double)c->shape.M;
    qgmm_case_offsets(c, offs, G);
    const double rows = offs[G - 1];
    free(offs);
    return rows;
}

void qc_finish_case(qgmm_case *c)
{
    const qgmm_case_shape *s = &c->shape;
    const double E = s->E > 0 ? (double)s->E : 1.0;
    const double in = (double)qgmm_dtype_size(c->in_dtype);
    const double outsz = (double)qgmm_dtype_size(c->out_dtype);
    const double G = c->groups == QGMM_GROUPS_NONE ? 0.0 : (c->groups == QGMM_GROUPS_SINGLE ? 1.0 : (double)s->G);
    const double MK = E * (double)s->M * (double)s->K;
    c->family = (qgmm_case_family)qc_family_of(c->op);
    c->check = c->family >= QGMM_FAMILY_GEMM ? QGMM_CHECK_NUMERIC : QGMM_CHECK_EXACT;
    c->flops = 0.0;
    switch (c->op) {
    case QGMM_CASE_FP8_ROWWISE: /* read x twice would be an implementation detail: once */
    case QGMM_CASE_FP8_BLOCKWISE:
        c->bytes = MK * (in + 1.0) + 4.0 * (MK / (c->op == QGMM_CASE_FP8_BLOCKWISE ? 128.0 : (double)(c->rowwise.reduce_dim == 1 || c->rowwise.reduce_dim == 2 ? s->K : s->M)));
        break;
    case QGMM_CASE_FP8_ROWWISE_DUAL:
        c->bytes = (double)s->M * (double)(s->K + s->N) * (in + 1.0) + 4.0 * G * (double)(s->K + s->N);
        break;
    case QGMM_CASE_MXFP8:
        c->bytes = MK * (in + 1.0) + MK / 32.0;
        break;
    case QGMM_CASE_DEQUANTIZE:
        c->bytes = MK * (1.0 + outsz);
        break;
    case QGMM_CASE_SCALES_TO_BLOCKED:
    case QGMM_CASE_SCALES_FROM_BLOCKED:
        c->bytes = 2.0 * MK / 32.0;
        break;
    case QGMM_CASE_PAD:
    case QGMM_CASE_UNPAD:
        c->bytes = 2.0 * (double)s->M * (double)s->K * in;
        break;
    case QGMM_CASE_GROUP_ROW_IDS:
        c->bytes = 4.0 * (double)s->M;
        break;
    case QGMM_CASE_MOE_BACKWARD: { /* dgrad (M x K out, contraction N) + wgrad */
        const double rows = covered_rows(c);
        const double Gd = G > 0 ? G : 1.0;
        const double MN = (double)s->M * (double)s->N, MKb = (double)s->M * (double)s->K;
        const double NK = (double)s->N * (double)s->K;
        c->flops = 4.0 * rows * (double)s->N * (double)s->K;
        c->bytes = 2.0 * (MN + Gd * NK + MKb) + outsz * (MKb + Gd * NK);
        break;
    }
    case QGMM_CASE_GROUPED_GEMM:
    case QGMM_CASE_MOE_FORWARD:
    case QGMM_CASE_RECIPE: {
        const double opnd = c->gemm.recipe == QGMM_RECIPE_BF16 ? 2.0 : 1.0;
        const double rows = covered_rows(c);
        const double Gd = G > 0 ? G : 1.0;
        const int pass = c->op == QGMM_CASE_GROUPED_GEMM ? (c->gemm.kind == QGMM_GEMM_K_GROUPED ? 2 : 0)
                                                          : (int)c->pass;
        /* (rows, Nout, Kc) of the GEMM a pass runs */
        double Nout = (double)s->N, Kc = (double)s->K;
        if (pass == QGMM_PASS_DGRAD) { Nout = (double)s->K; Kc = (double)s->N; }
        if (pass == QGMM_PASS_WGRAD) {
            c->flops = 2.0 * rows * (double)s->N * (double)s->K;
            c->bytes = opnd * (double)s->M * (double)(s->N + s->K) + outsz * Gd * (double)s->N * (double)s->K;
        } else {
            c->flops = 2.0 * rows * Nout * Kc;
            c->bytes = opnd * ((double)s->M * Kc + Gd * Nout * Kc) + outsz * (double)s->M * Nout;
        }
        if (c->op != QGMM_CASE_GROUPED_GEMM) /* plus reading the bf16 sources once */
            c->bytes += 2.0 * (pass == QGMM_PASS_WGRAD ? (double)s->M * (double)(s->N + s->K)
                                                        : (double)s->M * Kc + Gd * Nout * Kc);
        break;
    }
    default:
        c->bytes = 0.0;
    }
    make_name(c);
    make_id(c);
}

/* ------------------------------------------------------------------ builders */
typedef struct qc_list {
    qgmm_case *v;
    int n, cap;
} qc_list;

static uint64_t g_seed_counter = 1;

static void push(qc_list *l, qgmm_case c)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        qgmm_case *nv = realloc(l->v, (size_t)l->cap * sizeof *nv);
        if (!nv) abort(); /* a static table that cannot be built: nothing sensible to do */
        l->v = nv;
    }
    if (!c.seed) c.seed = qc_mix_seed(0x71676d6du, g_seed_counter++);
    qc_finish_case(&c);
    l->v[l->n++] = c;
}

static qgmm_case shape_case(qgmm_case_op op, int64_t E, int64_t M, int64_t N, int64_t K, int64_t G,
                            qgmm_group_pattern gp, int mult, qgmm_input_pattern inp)
{
    qgmm_case c;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.shape.E = E; c.shape.M = M; c.shape.N = N; c.shape.K = K; c.shape.G = G;
    c.groups = gp;
    c.group_multiple = mult > 1 ? mult : 1;
    c.input = inp;
    c.in_dtype = QGMM_BF16;
    c.q_dtype = QGMM_F8E4M3FN;
    c.out_dtype = QGMM_F32;
    c.alignment = 32;
    c.blockwise_layout = QGMM_BLOCKWISE_ROW_MAJOR;
    return c;
}

static qgmm_case rowwise(int64_t E, int64_t M, int64_t K, int reduce_dim, qgmm_group_pattern gp,
                         int64_t G, qgmm_dtype in, qgmm_dtype q, int pow2, qgmm_scale_kind kind,
                         qgmm_input_pattern inp)
{
    qgmm_case c = shape_case(QGMM_CASE_FP8_ROWWISE, E, M, 0, K, G, gp, 1, inp);
    c.rowwise.reduce_dim = reduce_dim;
    c.rowwise.power_of_2 = pow2;
    c.rowwise.scale_kind = kind;
    c.in_dtype = in;
    c.q_dtype = q;
    /* colwise and the 3D transpose rhs write q transposed, as their GEMMs consume it */
    c.transposed_out = (E == 0 && reduce_dim == 0) || (E > 0 && reduce_dim == 1);
    return c;
}

static qgmm_case mx(int64_t E, int64_t M, int64_t K, int dim1, qgmm_scale_layout lay, qgmm_mx_mode mode,
                    qgmm_dtype in, qgmm_dtype q, qgmm_input_pattern inp)
{
    qgmm_case c = shape_case(QGMM_CASE_MXFP8, E, M, 0, K, 0, QGMM_GROUPS_NONE, 1, inp);
    const int last = E > 0 ? 2 : 1;
    c.mx.block_dim = dim1 ? last - 1 : last;
    c.mx.scale_layout = lay;
    c.mx.mode = mode;
    c.in_dtype = in;
    c.q_dtype = q;
    c.transposed_out = dim1;
    return c;
}

static qgmm_case blockwise(int64_t E, int64_t M, int64_t K, qgmm_block_shape b,
                           qgmm_blockwise_layout lay, qgmm_dtype in, qgmm_dtype q,
                           qgmm_input_pattern inp)
{
    qgmm_case c = shape_case(QGMM_CASE_FP8_BLOCKWISE, E, M, 0, K, 0, QGMM_GROUPS_NONE, 1, inp);
    c.blockwise.block = b;
    c.blockwise_layout = lay;
    c.in_dtype = in;
    c.q_dtype = q;
    return c;
}

static qgmm_case gemm(qgmm_gemm_kind kind, qgmm_recipe r, int64_t M, int64_t N, int64_t K,
                      int64_t G, qgmm_group_pattern gp, int mult, qgmm_dtype out)
{
    qgmm_case c = shape_case(QGMM_CASE_GROUPED_GEMM, 0, M, N, K, G, gp, mult, QGMM_INPUT_NORMAL);
    c.gemm.kind = kind;
    c.gemm.recipe = r;
    c.pass = kind == QGMM_GEMM_K_GROUPED ? QGMM_PASS_WGRAD : QGMM_PASS_FORWARD;
    c.out_dtype = out;
    c.q_dtype = r == QGMM_RECIPE_BF16 ? QGMM_BF16 : QGMM_F8E4M3FN;
    c.blockwise_layout = QGMM_BLOCKWISE_DEEPGEMM;
    /* MXFP8 GEMM operands are made with RCEIL (NVIDIA's recipe, what tcgen05 hardware
     * scaling expects). FLOOR clips block values in [448, 512)*2^e to 448 and sits only
     * ~0.5 dB above the 27 dB forward floor on Gaussian data (26.5 dB seen at some shapes);
     * the recipe.* cases cover FLOOR end to end with their measured margins. */
    c.mx.mode = QGMM_MX_RCEIL;
    return c;
}

static int gemm_group_multiple(qgmm_recipe r, qgmm_gemm_kind k)
{
    if (k != QGMM_GEMM_K_GROUPED) return 1;
    return r == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : r == QGMM_RECIPE_MXFP8 ? 32 : 1;
}

static qgmm_case recipe(qgmm_recipe r, qgmm_recipe_pass pass, qgmm_mx_mode mode, int64_t M,
                        int64_t N, int64_t K, int64_t E, qgmm_group_pattern gp, qgmm_dtype out)
{
    const qgmm_gemm_kind kind = pass == QGMM_PASS_WGRAD ? QGMM_GEMM_K_GROUPED : QGMM_GEMM_M_GROUPED;
    qgmm_case c = shape_case(QGMM_CASE_RECIPE, 0, M, N, K, E, gp, gemm_group_multiple(r, kind),
                             QGMM_INPUT_NORMAL);
    c.gemm.kind = kind;
    c.gemm.recipe = r;
    c.pass = pass;
    c.mx.mode = mode;
    c.out_dtype = out;
    c.q_dtype = QGMM_F8E4M3FN;
    c.blockwise_layout = QGMM_BLOCKWISE_DEEPGEMM;
    return c;
}

static qgmm_case moe(int backward, qgmm_recipe r, qgmm_mx_mode mode, int64_t M, int64_t N, int64_t K,
                     int64_t E, qgmm_group_pattern gp, qgmm_dtype out)
{
    qgmm_case c = shape_case(backward ? QGMM_CASE_MOE_BACKWARD : QGMM_CASE_MOE_FORWARD, 0, M, N, K, E, gp, 1,
                             QGMM_INPUT_NORMAL);
    c.gemm.kind = QGMM_GEMM_M_GROUPED;
    c.gemm.recipe = r;
    c.pass = backward ? QGMM_PASS_DGRAD : QGMM_PASS_FORWARD;
    c.mx.mode = mode;
    c.out_dtype = out;
    c.q_dtype = QGMM_F8E4M3FN;
    return c;
}

/* ------------------------------------------------------------------ conformance */
static const qgmm_dtype k_fp8[] = {QGMM_F8E4M3FN, QGMM_F8E4M3FNUZ, QGMM_F8E5M2};

static void build_conformance(qc_list *l)
{
    const qgmm_input_pattern inps[] = {QGMM_INPUT_NORMAL, QGMM_INPUT_EDGE};

    /* FP8 rowwise: every direction x fp8 dtype x input, scale kind and pow2 spread over */
    for (int d = 0; d < 3; ++d)
        for (int ip = 0; ip < 2; ++ip) {
            const qgmm_input_pattern inp = inps[ip];
            const int pow2 = (d + ip) & 1;
            const qgmm_scale_kind sk = ip ? QGMM_SCALE_RECIPROCAL : QGMM_SCALE_MULTIPLIER;
            push(l, rowwise(0, 96, 160, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, k_fp8[d], pow2, sk, inp));
            push(l, rowwise(0, 160, 96, 0, QGMM_GROUPS_NONE, 0, QGMM_F32, k_fp8[d], !pow2, sk, inp));
            push(l, rowwise(3, 64, 96, 2, QGMM_GROUPS_NONE, 0, QGMM_BF16, k_fp8[d], 0, sk, inp));
            push(l, rowwise(3, 64, 96, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, k_fp8[d], pow2,
                            QGMM_SCALE_RECIPROCAL, inp));
        }
    push(l, rowwise(0, 64, 256, 1, QGMM_GROUPS_NONE, 0, QGMM_F32, QGMM_F8E4M3FN, 0,
                    QGMM_SCALE_RECIPROCAL, QGMM_INPUT_WIDE));
    /* rows longer than 16384 elements (the Vulkan backend's cast.comp register path at 256 lanes
     * x 16 units; cast_rows.comp takes up to 16384) and jagged groups of thousands of columns
     * (cast_jrows.comp at 32 lanes per segment on a subgroup of 32) */
    push(l, rowwise(0, 4, 20480, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, QGMM_F8E4M3FN, 0, QGMM_SCALE_RECIPROCAL,
                    QGMM_INPUT_EDGE));
    push(l, rowwise(0, 6, 24000, 1, QGMM_GROUPS_RAGGED, 3, QGMM_BF16, QGMM_F8E5M2, 0, QGMM_SCALE_MULTIPLIER,
                    QGMM_INPUT_NORMAL));
    /* rows beyond the register paths (bf16 > 32768: whole-row segments on the Vulkan backend's
     * cast_jrows.comp; f32 > 16384: its generic path) */
    push(l, rowwise(0, 3, 40000, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, QGMM_F8E4M3FN, 1, QGMM_SCALE_RECIPROCAL,
                    QGMM_INPUT_EDGE));
    push(l, rowwise(0, 3, 20000, 1, QGMM_GROUPS_NONE, 0, QGMM_F32, QGMM_F8E4M3FNUZ, 0, QGMM_SCALE_MULTIPLIER,
                    QGMM_INPUT_NORMAL));
    /* jagged per-group: groups along K (rowwise) and along M (colwise), every pattern */
    const qgmm_group_pattern gps[] = {QGMM_GROUPS_RAGGED, QGMM_GROUPS_EMPTY, QGMM_GROUPS_SINGLE,
                                      QGMM_GROUPS_EVEN};
    for (int g = 0; g < 4; ++g) {
        const qgmm_input_pattern inp = g == 1 ? QGMM_INPUT_EDGE : QGMM_INPUT_NORMAL;
        push(l, rowwise(0, 64, 200, 1, gps[g], 5, QGMM_BF16, QGMM_F8E4M3FN, g == 3,
                        QGMM_SCALE_RECIPROCAL, inp));
        push(l, rowwise(0, 200, 48, 0, gps[g], 5, QGMM_BF16, g == 2 ? QGMM_F8E4M3FNUZ : QGMM_F8E4M3FN,
                        0, QGMM_SCALE_RECIPROCAL, inp));
    }
    for (int g = 0; g < 2; ++g) {
        qgmm_case c = shape_case(QGMM_CASE_FP8_ROWWISE_DUAL, 0, 160, 48, 80, 4, gps[g], 1,
                                 g ? QGMM_INPUT_EDGE : QGMM_INPUT_NORMAL);
        c.rowwise.reduce_dim = 0;
        c.rowwise.scale_kind = QGMM_SCALE_RECIPROCAL;
        c.transposed_out = 1;
        push(l, c);
    }

    /* MXFP8: dim0/dim1 x layout x mode x dtype, 2D and 3D */
    for (int dim1 = 0; dim1 < 2; ++dim1)
        for (int lay = 0; lay < 2; ++lay)
            for (int mode = 0; mode < 2; ++mode)
                for (int d = 0; d < 3; ++d) {
                    if (d == 1 && (lay || dim1)) continue; /* fnuz: once per mode is enough */
                    const qgmm_input_pattern inp = (mode + d) & 1 ? QGMM_INPUT_EDGE : QGMM_INPUT_NORMAL;
                    /* rows 70 / 96 are not multiples of 128 and 224/32 = 7 scale columns are
                     * not a multiple of 4: both paddings of the blocked layout show */
                    push(l, mx(0, dim1 ? 96 : 70, dim1 ? 80 : 224, dim1, (qgmm_scale_layout)lay,
                               (qgmm_mx_mode)mode, d == 2 ? QGMM_F32 : QGMM_BF16, k_fp8[d], inp));
                }
    for (int dim1 = 0; dim1 < 2; ++dim1)
        for (int lay = 0; lay < 2; ++lay)
            push(l, mx(2, 64, 96, dim1, (qgmm_scale_layout)lay, (qgmm_mx_mode)(lay ^ dim1), QGMM_BF16,
                       QGMM_F8E4M3FN, dim1 ? QGMM_INPUT_EDGE : QGMM_INPUT_NORMAL));
    push(l, mx(0, 64, 256, 0, QGMM_SCALES_PLAIN, QGMM_MX_FLOOR, QGMM_F32, QGMM_F8E4M3FN, QGMM_INPUT_WIDE));
    /* MXFP8 with the scales written straight into the grouped GEMMs' layouts: M-groups
     * (dim0, any group size: 300 rows in 5 groups) and K-groups (dim1, groups of whole
     * 32-token blocks over 640 tokens), every group pattern */
    for (int g = 0; g < 4; ++g) {
        qgmm_case c = mx(0, 300, 6 * 32, 0, QGMM_SCALES_BLOCKED_M_GROUPS, (qgmm_mx_mode)(g & 1),
                         g == 3 ? QGMM_F32 : QGMM_BF16, k_fp8[g == 2 ? 2 : 0],
                         g & 1 ? QGMM_INPUT_EDGE : QGMM_INPUT_NORMAL);
        c.groups = gps[g]; c.shape.G = 5; push(l, c);
        c = mx(0, 20 * 32, 150, 1, QGMM_SCALES_BLOCKED_K_GROUPS, (qgmm_mx_mode)!(g & 1),
               g == 1 ? QGMM_F32 : QGMM_BF16, k_fp8[g == 3 ? 2 : 0], g & 1 ? QGMM_INPUT_NORMAL : QGMM_INPUT_EDGE);
        c.groups = gps[g]; c.shape.G = 4; c.group_multiple = 32; push(l, c);
    }

    /* FP8 blockwise: block x layout x dtype; 128x128 with a ragged last tile row */
    for (int lay = 0; lay < 3; ++lay)
        for (int d = 0; d < 3; ++d) {
            if (d == 1 && lay) continue;
            const qgmm_input_pattern inp = (lay + d) & 1 ? QGMM_INPUT_EDGE : QGMM_INPUT_NORMAL;
            push(l, blockwise(0, 100, 384, QGMM_BLOCK_1X128, (qgmm_blockwise_layout)lay,
                              d == 2 ? QGMM_F32 : QGMM_BF16, k_fp8[d], inp));
            push(l, blockwise(0, 200, 256, QGMM_BLOCK_128X128, (qgmm_blockwise_layout)lay, QGMM_BF16,
                              k_fp8[d], inp));
        }
    push(l, blockwise(2, 130, 256, QGMM_BLOCK_128X128, QGMM_BLOCKWISE_DEEPGEMM, QGMM_BF16,
                      QGMM_F8E4M3FN, QGMM_INPUT_EDGE));
    push(l, blockwise(2, 64, 256, QGMM_BLOCK_1X128, QGMM_BLOCKWISE_ROW_MAJOR, QGMM_BF16,
                      QGMM_F8E4M3FN, QGMM_INPUT_WIDE));
    /* 128x128 tiles of f32 x (the Vulkan backend's cast_2d.comp f32 build), a ragged tile row */
    push(l, blockwise(0, 200, 256, QGMM_BLOCK_128X128, QGMM_BLOCKWISE_ROW_MAJOR, QGMM_F32, QGMM_F8E5M2,
                      QGMM_INPUT_EDGE));
    push(l, blockwise(2, 130, 256, QGMM_BLOCK_128X128, QGMM_BLOCKWISE_DEEPGEMM, QGMM_F32, QGMM_F8E4M3FN,
                      QGMM_INPUT_NORMAL));
    /* x the transposed view of a row-major tensor, as the MoE composite casts its wgrad
     * operands (1x128 along the tokens) and its dgrad weights (128x128 of (E, K, N)); and
     * the same tiles of the row-major weights written column-major */
    for (int t = 0; t < 4; ++t) {
        qgmm_case c = blockwise(t < 2 ? 0 : 2, t < 2 ? 96 : t == 2 ? 256 : 200, t < 2 ? 384 : 256,
                                t < 2 ? QGMM_BLOCK_1X128 : QGMM_BLOCK_128X128, QGMM_BLOCKWISE_DEEPGEMM,
                                t == 1 ? QGMM_F32 : QGMM_BF16, QGMM_F8E4M3FN,
                                t & 1 ? QGMM_INPUT_EDGE : QGMM_INPUT_NORMAL);
        c.transposed_in = t < 3;
        c.transposed_out = t == 3;
        push(l, c);
    }
    /* more 128x128 tiles (864) than an H100 holds resident blocks: blocks loop over tiles
     * (CUDA tile128 / tile128t), both the row-major weights and their (E, K, N) view */
    for (int t = 0; t < 2; ++t) {
        qgmm_case c = blockwise(3, 2304, 2048, QGMM_BLOCK_128X128, QGMM_BLOCKWISE_DEEPGEMM, QGMM_BF16,
                                QGMM_F8E4M3FN, QGMM_INPUT_NORMAL);
        c.transposed_in = t;
        push(l, c);
    }

    /* dequantize: every format, f32 and bf16 out */
    for (int o = 0; o < 2; ++o) {
        const qgmm_dtype out = o ? QGMM_BF16 : QGMM_F32;
        qgmm_case c = rowwise(0, 96, 160, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, k_fp8[o], 0,
                              QGMM_SCALE_RECIPROCAL, QGMM_INPUT_EDGE);
        c.op = QGMM_CASE_DEQUANTIZE; c.dequant_kind = QGMM_QUANT_FP8_ROWWISE; c.out_dtype = out;
        push(l, c);
        c = rowwise(0, 120, 64, 0, QGMM_GROUPS_EMPTY, 4, QGMM_BF16, QGMM_F8E4M3FN, 0,
                    o ? QGMM_SCALE_MULTIPLIER : QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL);
        c.op = QGMM_CASE_DEQUANTIZE; c.dequant_kind = QGMM_QUANT_FP8_ROWWISE; c.out_dtype = out;
        push(l, c);
        c = rowwise(2, 48, 64, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, QGMM_F8E5M2, 0,
                    QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL);
        c.op = QGMM_CASE_DEQUANTIZE; c.dequant_kind = QGMM_QUANT_FP8_ROWWISE; c.out_dtype = out;
        push(l, c);
        for (int dim1 = 0; dim1 < 2; ++dim1) {
            c = mx(0, 96, 160, dim1, (qgmm_scale_layout)(o ^ dim1), QGMM_MX_FLOOR, QGMM_BF16,
                   k_fp8[2 * dim1], QGMM_INPUT_EDGE);
            c.op = QGMM_CASE_DEQUANTIZE; c.dequant_kind = QGMM_QUANT_MXFP8; c.out_dtype = out;
            push(l, c);
        }
        c = mx(2, 64, 96, 0, (qgmm_scale_layout)o, QGMM_MX_FLOOR, QGMM_BF16, QGMM_F8E4M3FN,
               QGMM_INPUT_NORMAL);
        c.op = QGMM_CASE_DEQUANTIZE; c.dequant_kind = QGMM_QUANT_MXFP8; c.out_dtype = out;
        push(l, c);
        for (int b = 0; b < 2; ++b) {
            c = blockwise(0, b ? 200 : 100, 256, (qgmm_block_shape)b,
                          b ? QGMM_BLOCKWISE_ROW_MAJOR : (qgmm_blockwise_layout)(1 + o), QGMM_BF16,
                          QGMM_F8E4M3FN, QGMM_INPUT_EDGE);
            c.op = QGMM_CASE_DEQUANTIZE; c.dequant_kind = QGMM_QUANT_FP8_BLOCKWISE; c.out_dtype = out;
            push(l, c);
        }
    }

    /* scales to / from the blocked layout */
    for (int dir = 0; dir < 2; ++dir) {
        const qgmm_case_op op = dir ? QGMM_CASE_SCALES_FROM_BLOCKED : QGMM_CASE_SCALES_TO_BLOCKED;
        qgmm_case c = shape_case(op, 0, 200, 0, 7 * 32, 0, QGMM_GROUPS_NONE, 1, QGMM_INPUT_NORMAL);
        c.blocked = QGMM_BLOCKED_2D; c.in_dtype = QGMM_U8; push(l, c);
        c = shape_case(op, 0, 256, 0, 8 * 32, 0, QGMM_GROUPS_NONE, 1, QGMM_INPUT_NORMAL);
        c.blocked = QGMM_BLOCKED_2D; c.in_dtype = QGMM_E8M0; push(l, c);
        c = shape_case(op, 3, 130, 0, 5 * 32, 0, QGMM_GROUPS_NONE, 1, QGMM_INPUT_NORMAL);
        c.blocked = QGMM_BLOCKED_3D; c.in_dtype = QGMM_U8; push(l, c);
        for (int g = 0; g < 4; ++g) {
            c = shape_case(op, 0, 300, 0, 6 * 32, 5, gps[g], 1, QGMM_INPUT_NORMAL);
            c.blocked = QGMM_BLOCKED_M_GROUPS; c.in_dtype = QGMM_U8;
            c.row_ids_padded = !dir && (g & 1); /* to_blocked: also ask for group starts */
            push(l, c);
            c = shape_case(op, 0, 150, 0, 20 * 32, 4, gps[g], 32, QGMM_INPUT_NORMAL);
            c.blocked = QGMM_BLOCKED_K_GROUPS; c.in_dtype = QGMM_U8;
            c.row_ids_padded = !dir && !(g & 1);
            push(l, c);
        }
    }

    /* token-group padding, unpadding and row ids */
    const int aligns[] = {16, 32, 128};
    const qgmm_dtype pad_dt[] = {QGMM_BF16, QGMM_U8, QGMM_F32};
    for (int a = 0; a < 3; ++a)
        for (int g = 0; g < 4; ++g) {
            qgmm_case c = shape_case(QGMM_CASE_PAD, 0, 300, 0, 64, 6, gps[g], 1, QGMM_INPUT_NORMAL);
            c.alignment = aligns[a];
            c.in_dtype = pad_dt[(a + g) % 3];
            push(l, c);
            c.op = QGMM_CASE_UNPAD;
            c.seed = 0;
            push(l, c);
        }
    {
        qgmm_case c = shape_case(QGMM_CASE_PAD, 0, 300, 0, 64, 6, QGMM_GROUPS_SHORT, 1, QGMM_INPUT_NORMAL);
        c.alignment = 32;
        push(l, c);
        c.op = QGMM_CASE_UNPAD; c.seed = 0;
        push(l, c);
    }
    for (int g = 0; g < 4; ++g) {
        qgmm_case c = shape_case(QGMM_CASE_GROUP_ROW_IDS, 0, 300, 0, 0, 6, gps[g], 1, QGMM_INPUT_NORMAL);
        c.in_dtype = QGMM_I32;
        push(l, c);
        c.row_ids_padded = 1;
        c.alignment = aligns[g % 3];
        c.seed = 0;
        push(l, c);
    }

    /* grouped GEMMs: recipe x kind x out dtype x group pattern */
    const qgmm_group_pattern ggp[] = {QGMM_GROUPS_RAGGED, QGMM_GROUPS_EMPTY, QGMM_GROUPS_SINGLE,
                                      QGMM_GROUPS_SHORT};
    for (int r = 0; r < 4; ++r)
        for (int o = 0; o < 2; ++o) {
            const qgmm_dtype out = o ? QGMM_F32 : QGMM_BF16;
            for (int g = 0; g < 4; ++g) {
                if (o && g >= 2) continue; /* f32 out: the two main patterns */
                push(l, gemm(QGMM_GEMM_M_GROUPED, (qgmm_recipe)r, 200, 96, 256, 5, ggp[g], 1, out));
            }
            for (int g = 0; g < 3; ++g) {
                if (o && g >= 2) continue;
                const int mult = gemm_group_multiple((qgmm_recipe)r, QGMM_GEMM_K_GROUPED);
                push(l, gemm(QGMM_GEMM_K_GROUPED, (qgmm_recipe)r, 512, 96, 128, 4, ggp[g], mult, out));
            }
        }
    /* e5m2 / e4m3fnuz operands once each */
    {
        qgmm_case c = gemm(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_FP8_ROWWISE, 128, 64, 128, 3,
                           QGMM_GROUPS_RAGGED, 1, QGMM_BF16);
        c.q_dtype = QGMM_F8E4M3FNUZ; push(l, c);
        c = gemm(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_MXFP8, 128, 64, 128, 3, QGMM_GROUPS_RAGGED, 1,
                 QGMM_BF16);
        c.q_dtype = QGMM_F8E5M2; push(l, c);
    }
    /* whole 128x128 output tiles (groups of multiples of 128 rows, aligned operands): what
     * the Vulkan workgroup-scope builds compute (BF16, FP8 rowwise; the cases above are
     * narrower than one tile), beside a partial tile for the subgroup-scope build */
    {
        push(l, gemm(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_BF16, 384, 272, 256, 2, QGMM_GROUPS_RAGGED, 128, QGMM_BF16));
        qgmm_case c = gemm(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_FP8_ROWWISE, 384, 272, 256, 2, QGMM_GROUPS_RAGGED, 128,
                           QGMM_BF16);
        push(l, c);
        c.q_dtype = QGMM_F8E5M2; push(l, c);
        push(l, gemm(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_BF16, 512, 256, 272, 3, QGMM_GROUPS_RAGGED, 16, QGMM_BF16));
        push(l, gemm(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_FP8_ROWWISE, 512, 256, 272, 3, QGMM_GROUPS_RAGGED, 16, QGMM_F32));
    }

    /* recipe level: the backend's casts feeding its GEMMs reach torchao's SQNR floors */
    for (int r = 1; r < 4; ++r)
        for (int p = 0; p < 3; ++p) {
            push(l, recipe((qgmm_recipe)r, (qgmm_recipe_pass)p, QGMM_MX_FLOOR, 256, 256, 256, 4,
                           p == 1 ? QGMM_GROUPS_EMPTY : QGMM_GROUPS_RAGGED, QGMM_BF16));
            if (r == QGMM_RECIPE_MXFP8)
                push(l, recipe((qgmm_recipe)r, (qgmm_recipe_pass)p, QGMM_MX_RCEIL, 256, 256, 256, 4,
                               QGMM_GROUPS_RAGGED, QGMM_BF16));
        }
}

/* Strided operands (rows 32 elements apart, gaps that must stay untouched) and 128
 * groups (most of them empty or tiny). */
static void build_strided_and_many_groups(qc_list *l)
{
    qgmm_case c = rowwise(0, 64, 160, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, QGMM_F8E4M3FN, 0,
                          QGMM_SCALE_RECIPROCAL, QGMM_INPUT_EDGE);
    c.padded_pitch = 1; push(l, c);
    c = rowwise(0, 96, 64, 0, QGMM_GROUPS_NONE, 0, QGMM_F32, QGMM_F8E4M3FN, 0, QGMM_SCALE_MULTIPLIER,
                QGMM_INPUT_NORMAL);
    c.padded_pitch = 1; push(l, c);
    c = rowwise(2, 64, 96, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, QGMM_F8E4M3FN, 0, QGMM_SCALE_RECIPROCAL,
                QGMM_INPUT_NORMAL);
    c.padded_pitch = 1; push(l, c);
    c = mx(0, 70, 224, 0, QGMM_SCALES_BLOCKED, QGMM_MX_RCEIL, QGMM_BF16, QGMM_F8E4M3FN, QGMM_INPUT_EDGE);
    c.padded_pitch = 1; push(l, c);
    c = mx(0, 96, 80, 1, QGMM_SCALES_PLAIN, QGMM_MX_FLOOR, QGMM_BF16, QGMM_F8E4M3FN, QGMM_INPUT_NORMAL);
    c.padded_pitch = 1; push(l, c);
    c = blockwise(0, 100, 256, QGMM_BLOCK_1X128, QGMM_BLOCKWISE_DEEPGEMM, QGMM_BF16, QGMM_F8E4M3FN,
                  QGMM_INPUT_NORMAL);
    c.padded_pitch = 1; push(l, c);
    c = blockwise(2, 130, 128, QGMM_BLOCK_128X128, QGMM_BLOCKWISE_ROW_MAJOR, QGMM_BF16, QGMM_F8E4M3FN,
                  QGMM_INPUT_NORMAL);
    c.padded_pitch = 1; push(l, c);

    push(l, rowwise(0, 300, 32, 0, QGMM_GROUPS_RAGGED, 128, QGMM_BF16, QGMM_F8E4M3FN, 0,
                    QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL));
    /* segments longer than a GPU workgroup or lane group keeps in registers (re-read): long
     * columns with rows not a multiple of 8 and columns not a multiple of 16, both q layouts
     * (the first of a name is what suites/nightly.suite reshapes: normal input, never edge);
     * more groups than a workgroup has lanes; wide jagged rows with empty groups */
    static const struct {
        int64_t E, M, K;
        int rd, G, pow2, transposed;
        qgmm_group_pattern gp;
        qgmm_dtype q;
        qgmm_scale_kind kind;
        qgmm_input_pattern in;
    } longseg[] = {
        {0, 2500, 40, 0, 0, 0, 1, QGMM_GROUPS_NONE, QGMM_F8E4M3FN, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL},
        {0, 2500, 40, 0, 0, 1, 0, QGMM_GROUPS_NONE, QGMM_F8E5M2, QGMM_SCALE_MULTIPLIER, QGMM_INPUT_EDGE},
        {2, 2100, 24, 1, 0, 0, 1, QGMM_GROUPS_NONE, QGMM_F8E4M3FN, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_EDGE},
        {0, 4200, 16, 0, 3, 0, 1, QGMM_GROUPS_RAGGED, QGMM_F8E4M3FN, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_EDGE},
        {0, 4200, 16, 0, 2, 0, 0, QGMM_GROUPS_EVEN, QGMM_F8E4M3FNUZ, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL},
        {0, 700, 16, 0, 300, 0, 1, QGMM_GROUPS_RAGGED, QGMM_F8E4M3FN, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL},
        {0, 40, 3000, 1, 3, 0, 0, QGMM_GROUPS_RAGGED, QGMM_F8E4M3FN, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_EDGE},
        {0, 24, 1000, 1, 7, 1, 0, QGMM_GROUPS_EMPTY, QGMM_F8E5M2, QGMM_SCALE_MULTIPLIER, QGMM_INPUT_NORMAL},
        /* one live group of 4 (EMPTY), 2.7x the mean the GPU plans a launch for: the CUDA
         * colring passes it through its ring twice (amax, then cast); then two live groups
         * of 5 with an unaligned edge between them */
        {0, 8192, 72, 0, 4, 0, 1, QGMM_GROUPS_EMPTY, QGMM_F8E4M3FN, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL},
        {0, 6001, 40, 0, 5, 1, 1, QGMM_GROUPS_EMPTY, QGMM_F8E5M2, QGMM_SCALE_MULTIPLIER, QGMM_INPUT_EDGE},
        /* the 3D weights of many experts (the MoE dgrad weights): columns of 1000 rows (8
         * pieces of 128, the last ragged) and a partial last 64-column strip */
        {8, 1000, 136, 1, 0, 0, 1, QGMM_GROUPS_NONE, QGMM_F8E4M3FN, QGMM_SCALE_RECIPROCAL, QGMM_INPUT_EDGE},
    };
    for (size_t i = 0; i < sizeof longseg / sizeof longseg[0]; ++i) {
        c = rowwise(longseg[i].E, longseg[i].M, longseg[i].K, longseg[i].rd, longseg[i].gp, longseg[i].G, QGMM_BF16,
                    longseg[i].q, longseg[i].pow2, longseg[i].kind, longseg[i].in);
        c.transposed_out = longseg[i].transposed;
        push(l, c);
    }
    c = shape_case(QGMM_CASE_PAD, 0, 300, 0, 32, 128, QGMM_GROUPS_RAGGED, 1, QGMM_INPUT_NORMAL);
    c.alignment = 16; push(l, c);
    c = shape_case(QGMM_CASE_SCALES_TO_BLOCKED, 0, 300, 0, 2 * 32, 128, QGMM_GROUPS_RAGGED, 1, QGMM_INPUT_NORMAL);
    c.blocked = QGMM_BLOCKED_M_GROUPS; c.in_dtype = QGMM_U8; c.row_ids_padded = 1; push(l, c);
    push(l, gemm(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_BF16, 300, 32, 64, 128, QGMM_GROUPS_RAGGED, 1, QGMM_BF16));
    push(l, gemm(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_MXFP8, 300, 32, 64, 128, QGMM_GROUPS_EMPTY, 1, QGMM_BF16));
    push(l, gemm(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_FP8_ROWWISE, 300, 32, 64, 128, QGMM_GROUPS_RAGGED, 1,
                 QGMM_F32));
}

/* Invalid device offsets: every grouped op must detect them on the device, write
 * nothing and report QGMM_ERR_BAD_OFFSETS at synchronize. */
static void build_bad_offsets(qc_list *l)
{
    for (int v = 0; v < 2; ++v) { /* two seeds: usually one of each kind of breakage */
        const uint64_t seed = 0x0ffbad00ull + (uint64_t)v;
        qgmm_case c = rowwise(0, 64, 200, 1, QGMM_GROUPS_BAD, 5, QGMM_BF16, QGMM_F8E4M3FN, 0,
                              QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL);
        c.seed = seed; push(l, c);
        c = rowwise(0, 200, 48, 0, QGMM_GROUPS_BAD, 5, QGMM_BF16, QGMM_F8E4M3FN, 0, QGMM_SCALE_RECIPROCAL,
                    QGMM_INPUT_NORMAL);
        c.seed = seed + 10; push(l, c);
        c = shape_case(QGMM_CASE_FP8_ROWWISE_DUAL, 0, 160, 48, 80, 4, QGMM_GROUPS_BAD, 1, QGMM_INPUT_NORMAL);
        c.rowwise.reduce_dim = 0; c.rowwise.scale_kind = QGMM_SCALE_RECIPROCAL; c.transposed_out = 1;
        c.seed = seed + 20; push(l, c);
        c = shape_case(QGMM_CASE_SCALES_TO_BLOCKED, 0, 300, 0, 6 * 32, 5, QGMM_GROUPS_BAD, 1, QGMM_INPUT_NORMAL);
        c.blocked = QGMM_BLOCKED_M_GROUPS; c.in_dtype = QGMM_U8; c.row_ids_padded = 1;
        c.seed = seed + 30; push(l, c);
        c = shape_case(QGMM_CASE_SCALES_TO_BLOCKED, 0, 150, 0, 20 * 32, 4, QGMM_GROUPS_BAD, 32, QGMM_INPUT_NORMAL);
        c.blocked = QGMM_BLOCKED_K_GROUPS; c.in_dtype = QGMM_U8;
        c.seed = seed + 40; push(l, c);
        c = shape_case(QGMM_CASE_SCALES_FROM_BLOCKED, 0, 300, 0, 6 * 32, 5, QGMM_GROUPS_BAD, 1, QGMM_INPUT_NORMAL);
        c.blocked = QGMM_BLOCKED_M_GROUPS; c.in_dtype = QGMM_U8;
        c.seed = seed + 50; push(l, c);
        c = mx(0, 300, 6 * 32, 0, QGMM_SCALES_BLOCKED_M_GROUPS, QGMM_MX_RCEIL, QGMM_BF16, QGMM_F8E4M3FN,
               QGMM_INPUT_NORMAL);
        c.groups = QGMM_GROUPS_BAD; c.shape.G = 5; c.seed = seed + 52; push(l, c);
        c = mx(0, 20 * 32, 150, 1, QGMM_SCALES_BLOCKED_K_GROUPS, QGMM_MX_RCEIL, QGMM_BF16, QGMM_F8E4M3FN,
               QGMM_INPUT_NORMAL);
        c.groups = QGMM_GROUPS_BAD; c.shape.G = 4; c.group_multiple = 32; c.seed = seed + 54; push(l, c);
        c = shape_case(QGMM_CASE_PAD, 0, 300, 0, 64, 6, QGMM_GROUPS_BAD, 1, QGMM_INPUT_NORMAL);
        c.alignment = 32; c.seed = seed + 60; push(l, c);
        c.op = QGMM_CASE_UNPAD; c.seed = seed + 70; push(l, c);
        c = shape_case(QGMM_CASE_GROUP_ROW_IDS, 0, 300, 0, 0, 6, QGMM_GROUPS_BAD, 1, QGMM_INPUT_NORMAL);
        c.in_dtype = QGMM_I32; c.seed = seed + 80; push(l, c);
        c = gemm(QGMM_GEMM_M_GROUPED, QGMM_RECIPE_BF16, 200, 96, 128, 5, QGMM_GROUPS_BAD, 1, QGMM_BF16);
        c.seed = seed + 90; push(l, c);
        c = gemm(QGMM_GEMM_K_GROUPED, QGMM_RECIPE_FP8_ROWWISE, 512, 96, 128, 4, QGMM_GROUPS_BAD, 1, QGMM_F32);
        c.seed = seed + 100; push(l, c);
        c = moe(0, QGMM_RECIPE_FP8_ROWWISE, QGMM_MX_FLOOR, 256, 256, 256, 4, QGMM_GROUPS_BAD, QGMM_BF16);
        c.seed = seed + 110; push(l, c);
    }
}

static void build_composite(qc_list *l)
{
    /* the one-call MoE layer: ragged groups (not multiples of 32/128), so the backward
     * pass must pad the token groups before its blockwise / MX wgrad */
    for (int r = 0; r < 4; ++r)
        for (int b = 0; b < 2; ++b)
            push(l, moe(b, (qgmm_recipe)r, r == QGMM_RECIPE_MXFP8 && b ? QGMM_MX_RCEIL : QGMM_MX_FLOOR, 256, 256,
                        256, 4, b ? QGMM_GROUPS_EMPTY : QGMM_GROUPS_RAGGED, r == 1 ? QGMM_F32 : QGMM_BF16));
}

/* ------------------------------------------------------------------ benchmark suites */
/* ops-spec §8. "nightly" is the full list; "smoke" a handful of small MoE-like shapes
 * that still run in seconds on the CPU backend (CI has no GPU). */
static void add_cast_variants(qc_list *l, int64_t M, int64_t K)
{
    push(l, rowwise(0, M, K, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, QGMM_F8E4M3FN, 0,
                    QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL));
    push(l, rowwise(0, M, K, 0, QGMM_GROUPS_RAGGED, 8, QGMM_BF16, QGMM_F8E4M3FN, 0,
                    QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL));
    push(l, mx(0, M, K, 0, QGMM_SCALES_BLOCKED, QGMM_MX_RCEIL, QGMM_BF16, QGMM_F8E4M3FN, QGMM_INPUT_NORMAL));
    push(l, mx(0, M, K, 0, QGMM_SCALES_PLAIN, QGMM_MX_FLOOR, QGMM_BF16, QGMM_F8E4M3FN, QGMM_INPUT_NORMAL));
    push(l, mx(0, M, K, 1, QGMM_SCALES_PLAIN, QGMM_MX_FLOOR, QGMM_BF16, QGMM_F8E4M3FN, QGMM_INPUT_NORMAL));
    push(l, blockwise(0, M, K, QGMM_BLOCK_1X128, QGMM_BLOCKWISE_DEEPGEMM, QGMM_BF16, QGMM_F8E4M3FN,
                      QGMM_INPUT_NORMAL));
}

static void add_weight_variants(qc_list *l, int64_t E, int64_t N, int64_t K)
{
    push(l, rowwise(E, N, K, 1, QGMM_GROUPS_NONE, 0, QGMM_BF16, QGMM_F8E4M3FN, 0,
                    QGMM_SCALE_RECIPROCAL, QGMM_INPUT_NORMAL));
    push(l, mx(E, N, K, 0, QGMM_SCALES_BLOCKED, QGMM_MX_RCEIL, QGMM_BF16, QGMM_F8E4M3FN, QGMM_INPUT_NORMAL));
    push(l, blockwise(E, N, K, QGMM_BLOCK_128X128, QGMM_BLOCKWISE_DEEPGEMM, QGMM_BF16, QGMM_F8E4M3FN,
                      QGMM_INPUT_NORMAL));
}

static void add_gemm_variants(qc_list *l, int64_t M, int64_t N, int64_t K, int64_t G)
{
    const qgmm_group_pattern gp = G == 1 ? QGMM_GROUPS_SINGLE : QGMM_GROUPS_RAGGED;
    for (int r = 0; r < 4; ++r) {
        qgmm_case c = gemm(QGMM_GEMM_M_GROUPED, (qgmm_recipe)r, M, N, K, G, gp, 16, QGMM_BF16);
        push(l, c);
        const int mult = gemm_group_multiple((qgmm_recipe)r, QGMM_GEMM_K_GROUPED);
        c = gemm(QGMM_GEMM_K_GROUPED, (qgmm_recipe)r, M, N, K, G, gp, mult > 16 ? mult : 16, QGMM_BF16);
        push(l, c);
    }
}

static void add_pad(qc_list *l, int64_t T, int64_t D, int64_t G)
{
    qgmm_case c = shape_case(QGMM_CASE_PAD, 0, T, 0, D, G, G == 1 ? QGMM_GROUPS_SINGLE : QGMM_GROUPS_RAGGED,
                             1, QGMM_INPUT_NORMAL);
    c.alignment = 32;
    push(l, c);
    c.op = QGMM_CASE_UNPAD; c.seed = 0;
    push(l, c);
}

static void add_swizzle3d(qc_list *l, int64_t E, int64_t N, int64_t K)
{
    qgmm_case c = shape_case(QGMM_CASE_SCALES_TO_BLOCKED, E, N, 0, K, 0, QGMM_GROUPS_NONE, 1,
                             QGMM_INPUT_NORMAL);
    c.blocked = QGMM_BLOCKED_3D;
    c.in_dtype = QGMM_U8;
    push(l, c);
}

static void build_smoke(qc_list *l)
{
    add_cast_variants(l, 8192, 2048);
    add_weight_variants(l, 1, 2048, 1536);
    add_swizzle3d(l, 2, 2048, 1536);
    add_pad(l, 16384, 1536, 4);
    add_gemm_variants(l, 4096, 512, 1024, 4);
    push(l, recipe(QGMM_RECIPE_MXFP8, QGMM_PASS_FORWARD, QGMM_MX_RCEIL, 4096, 512, 1024, 4,
                   QGMM_GROUPS_RAGGED, QGMM_BF16));
}

static void build_nightly(qc_list *l)
{
    const int64_t tokens[] = {8192, 16384, 32768, 65536, 131072};
    const int64_t ks[] = {2048, 5120, 7168};
    for (int t = 0; t < 5; ++t)
        for (int k = 0; k < 3; ++k) add_cast_variants(l, tokens[t], ks[k]);
    const int64_t es[] = {1, 16, 128};
    for (int e = 0; e < 3; ++e) {
        add_weight_variants(l, es[e], 8192, 5120);
        add_weight_variants(l, es[e], 5120, 8192);
    }
    const int64_t se[] = {1, 2, 4, 8, 16};
    for (int e = 0; e < 5; ++e) {
        add_swizzle3d(l, se[e], 8192, 5120);
        add_swizzle3d(l, se[e], 5120, 8192);
    }
    const int64_t dims[] = {1536, 2048, 5120, 7168};
    const int64_t gs[] = {1, 4, 8, 16};
    for (int d = 0; d < 4; ++d)
        for (int g = 0; g < 4; ++g) add_pad(l, 16384, dims[d], gs[g]);
    static const int64_t gemms[][4] = {
        {32768, 8192, 5120, 1}, {32768, 8192, 5120, 2}, {32768, 8192, 5120, 8},
        {128000, 8192, 5120, 1}, {128000, 8192, 5120, 2}, {32768, 2048, 7168, 4},
        {32768, 2048, 7168, 8}, {128000, 2048, 7168, 4}, {128000, 2048, 7168, 8},
        {16384, 1536, 5120, 16}, {16384, 2048, 7168, 64},
    };
    for (size_t i = 0; i < sizeof gemms / sizeof gemms[0]; ++i)
        add_gemm_variants(l, gemms[i][0], gemms[i][1], gemms[i][2], gemms[i][3]);
}

/* ------------------------------------------------------------------ registry */
static const char *const k_suites[] = {"conformance", "smoke", "nightly", NULL};
static qc_list g_lists[3];
static int g_built[3];

static qc_list *suite_list(const char *suite)
{
    if (!suite) return NULL;
    for (int i = 0; k_suites[i]; ++i) {
        if (strcmp(suite, k_suites[i]) != 0) continue;
        if (!g_built[i]) {
            g_built[i] = 1;
            if (i == 0) {
                build_conformance(&g_lists[i]);
                build_strided_and_many_groups(&g_lists[i]);
                build_composite(&g_lists[i]);
                build_bad_offsets(&g_lists[i]);
            }
            else if (i == 1) build_smoke(&g_lists[i]);
            else build_nightly(&g_lists[i]);
        }
        return &g_lists[i];
    }
    return NULL;
}

const char *const *qgmm_case_suites(void) { return k_suites; }

int qgmm_case_count(const char *suite)
{
    qc_list *l = suite_list(suite);
    return l ? l->n : 0;
}

const qgmm_case *qgmm_case_get(const char *suite, int index)
{
    qc_list *l = suite_list(suite);
    if (!l || index < 0 || index >= l->n) return NULL;
    return &l->v[index];
}

const qgmm_case *qgmm_case_find(const char *suite, const char *id_or_name)
{
    qc_list *l = suite_list(suite);
    if (!l || !id_or_name) return NULL;
    for (int i = 0; i < l->n; ++i)
        if (strcmp(l->v[i].id, id_or_name) == 0) return &l->v[i];
    for (int i = 0; i < l->n; ++i)
        if (strcmp(l->v[i].name, id_or_name) == 0) return &l->v[i];
    return NULL;
}

static qgmm_status why(char *out, size_t cap, const char *msg)
{
    if (out && cap) snprintf(out, cap, "%s", msg);
    return QGMM_ERR_INVALID_ARGUMENT;
}

qgmm_status qgmm_case_reshape(const qgmm_case *tmpl, const qgmm_case_shape *shape,
                              qgmm_case *out, char *why_out, size_t why_cap)
{
    if (!tmpl || !shape || !out) return why(why_out, why_cap, "tmpl, shape and out must be non-NULL");
    qgmm_case c = *tmpl;
    c.shape = *shape;
    if (c.shape.M <= 0) return why(why_out, why_cap, "M must be positive");
    if ((tmpl->shape.E > 0) != (c.shape.E > 0))
        return why(why_out, why_cap, "E > 0 (3D) must match the template's rank");
    if (c.groups != QGMM_GROUPS_NONE && c.groups != QGMM_GROUPS_SINGLE && c.shape.G <= 0)
        return why(why_out, why_cap, "this variant has groups: G must be positive");
    const int mx_like = c.op == QGMM_CASE_MXFP8 || (c.op == QGMM_CASE_DEQUANTIZE && c.dequant_kind == QGMM_QUANT_MXFP8);
    if (mx_like) {
        const int dim1 = c.transposed_out;
        if ((dim1 ? c.shape.M : c.shape.K) % 32) return why(why_out, why_cap, "MXFP8: the blocked extent must be a multiple of 32");
    }
    if ((c.op == QGMM_CASE_SCALES_TO_BLOCKED || c.op == QGMM_CASE_SCALES_FROM_BLOCKED) && c.shape.K % 32)
        return why(why_out, why_cap, "scale layouts: K must be a multiple of 32 (scales are (M, K/32))");
    const int bw_like = c.op == QGMM_CASE_FP8_BLOCKWISE || (c.op == QGMM_CASE_DEQUANTIZE && c.dequant_kind == QGMM_QUANT_FP8_BLOCKWISE);
    if (bw_like && c.shape.K % 128) return why(why_out, why_cap, "FP8 blockwise: K must be a multiple of 128");
    if (c.family >= QGMM_FAMILY_GEMM) {
        if (c.shape.N <= 0 || c.shape.K <= 0) return why(why_out, why_cap, "GEMM: N and K must be positive");
        const int64_t contraction = c.op == QGMM_CASE_RECIPE && c.pass == QGMM_PASS_DGRAD ? c.shape.N : c.shape.K;
        if (c.gemm.kind == QGMM_GEMM_M_GROUPED && c.gemm.recipe == QGMM_RECIPE_FP8_BLOCKWISE && contraction % 128)
            return why(why_out, why_cap, "FP8 blockwise GEMM: the contraction dim must be a multiple of 128");
        if (c.gemm.kind == QGMM_GEMM_M_GROUPED && c.gemm.recipe == QGMM_RECIPE_MXFP8 && contraction % 32)
            return why(why_out, why_cap, "MXFP8 GEMM: the contraction dim must be a multiple of 32");
    }
    if (c.group_multiple > 1 && c.groups != QGMM_GROUPS_NONE && qc_group_extent(&c) % c.group_multiple)
        return why(why_out, why_cap, "the grouped extent must be a multiple of the group size multiple");
    qc_finish_case(&c);
    *out = c;
    if (why_out && why_cap) why_out[0] = 0;
    return QGMM_OK;
}

void qgmm_case_describe(const qgmm_case *c, char *out, size_t cap)
{
    static const char *fam[] = {"cast", "layout", "data", "gemm", "recipe", "composite"};
    snprintf(out, cap, "%s [%s, %s check] in %s q %s out %s, E=%lld M=%lld N=%lld K=%lld G=%lld %s, "
             "input %s, seed %llu, %.3g bytes, %.3g flops",
             c->id, fam[c->family], c->check == QGMM_CHECK_EXACT ? "exact" : "numeric",
             dt_short(c->in_dtype), dt_short(c->q_dtype), dt_short(c->out_dtype),
             (long long)c->shape.E, (long long)c->shape.M, (long long)c->shape.N,
             (long long)c->shape.K, (long long)c->shape.G, qgmm_case_groups_name(c->groups),
             qgmm_case_input_name(c->input), (unsigned long long)c->seed, c->bytes, c->flops);
}
