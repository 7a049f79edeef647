/*
 * fuzz_api.c — libFuzzer target for the public API on the cpu backend.
 *
 * An input is a short program: up to four calls, each an op byte followed by that op's
 * parameters, dimensions, group offsets, per-tensor departures from the valid call
 * (fuzz_harness.c: dtype, rank, shape, strides, offsets, absence, aliasing) and the
 * buffers' sizes and contents. A zero byte always decodes to the plain valid choice.
 * Every call is checked against the invariants of fz_check (docs/fuzzing.md).
 */
#include "fuzz_harness.h"

#include <stdlib.h>
#include <string.h>

const char *__asan_default_options(void);
const char *__ubsan_default_options(void);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Absurd allocations must fail cleanly rather than abort the process. */
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
const char *__ubsan_default_options(void) { return "print_stacktrace=1:halt_on_error=1"; }

static qgmm_dtype hp_dtype(int bit) { return bit ? QGMM_BF16 : QGMM_F32; }
static qgmm_dtype e8_dtype(int bit) { return bit ? QGMM_U8 : QGMM_E8M0; }
static int64_t ceil_div(int64_t x, int64_t d) { return x <= 0 ? 0 : (x - 1) / d + 1; }
/* A product clamped to int64 (the dims are fuzzed, the harness must not overflow). */
static int64_t mul(int64_t a, int64_t b)
{
    const __int128 p = (__int128)a * b;
    return p > INT64_MAX ? INT64_MAX : p < INT64_MIN ? INT64_MIN : (int64_t)p;
}

static void run(fz_call *c, qgmm_status rc)
{
    fz_check(c, rc);
    fz_release(c);
}

/* Mutates and lays out the call; 0 when it cannot run. */
static int prepare(fz_call *c, fz_in *in)
{
    fz_mutate(c, in);
    if (!fz_layout(c, in)) {
        fz_release(c);
        return 0;
    }
    fz_arm(c);
    return 1;
}

/* ------------------------------------------------------------------ cast geometry */
typedef struct cast_geom {
    int rank;
    int64_t sh[3];          /* the high-precision / fp8 data shape */
    int srank;
    int64_t sd[3];          /* scales shape */
    int64_t sst[3];         /* scales strides (blockwise layouts), 0: contiguous */
    qgmm_dtype sdt, hp, f8;
    int64_t G;              /* > 0: jagged rowwise */
    int rd;                 /* rowwise reduce dim used for the geometry */
    qgmm_fp8_rowwise_params rp;
    qgmm_mxfp8_params mp;
    qgmm_fp8_blockwise_params bp;
} cast_geom;

static void rowwise_geom(fz_in *in, cast_geom *g)
{
    const uint8_t b = fz_u8(in);
    g->rank = 2 + (b & 1);
    const int jag = g->rank == 2 && (b >> 1 & 1);
    g->rp.reduce_dim = g->rank == 2 ? (b >> 2 & 1) : 1 + (b >> 2 & 1);
    g->rp.power_of_2 = b >> 3 & 1;
    g->rp.scale_kind = (b >> 4 & 1) ? QGMM_SCALE_RECIPROCAL : QGMM_SCALE_MULTIPLIER;
    g->hp = hp_dtype(b >> 5 & 1);
    g->f8 = fz_fp8(in, 0);
    g->rd = g->rp.reduce_dim;
    if (fz_rare(in)) {
        g->rp.reduce_dim = (int8_t)fz_u8(in);
        g->rp.power_of_2 = (int8_t)fz_u8(in);
        g->rp.scale_kind = (qgmm_scale_kind)(int8_t)fz_u8(in);
    }
    const int64_t E = g->rank == 3 ? fz_dim(in, 1, 4) : 0;
    const int64_t R = fz_dim(in, 1, 64), C = fz_dim(in, 1, 64);
    g->G = jag ? fz_groups(in) : 0;
    if (g->rank == 3) { g->sh[0] = E; g->sh[1] = R; g->sh[2] = C; }
    else { g->sh[0] = R; g->sh[1] = C; }
    g->sdt = QGMM_F32;
    if (g->G) {
        g->srank = 2;
        g->sd[0] = g->G;
        g->sd[1] = g->sh[1 - g->rd];
    } else if (g->rank == 2) {
        g->srank = 1;
        g->sd[0] = g->sh[1 - g->rd];
    } else {
        g->srank = 2;
        g->sd[0] = E;
        g->sd[1] = g->sh[g->rd == 2 ? 1 : 2];
    }
}

static void mx_geom(fz_in *in, cast_geom *g)
{
    const uint8_t b = fz_u8(in);
    g->rank = 2 + (b & 1);
    const int r = g->rank;
    g->mp.block_dim = (b >> 1 & 1) ? r - 2 : r - 1;
    g->mp.mode = (b >> 2 & 1) ? QGMM_MX_RCEIL : QGMM_MX_FLOOR;
    g->mp.scale_layout = (b >> 3 & 1) ? QGMM_SCALES_BLOCKED : QGMM_SCALES_PLAIN;
    g->hp = hp_dtype(b >> 4 & 1);
    g->sdt = e8_dtype(b >> 5 & 1);
    g->f8 = fz_fp8(in, 0);
    const int bd = g->mp.block_dim;
    if (fz_rare(in)) {
        g->mp.block_dim = (int8_t)fz_u8(in);
        g->mp.mode = (qgmm_mx_mode)(int8_t)fz_u8(in);
        g->mp.scale_layout = (qgmm_scale_layout)(int8_t)fz_u8(in);
    }
    const int64_t E = r == 3 ? fz_dim(in, 1, 4) : 1;
    const int64_t blk = fz_dim(in, 32, 64), other = fz_dim(in, 1, 64);
    const int od = bd == r - 1 ? r - 2 : r - 1;
    if (r == 3) g->sh[0] = E;
    g->sh[bd] = blk;
    g->sh[od] = other;
    const int64_t blocks = blk / 32;
    if (g->mp.scale_layout == QGMM_SCALES_BLOCKED) {
        g->srank = 1;
        g->sd[0] = mul(E, (int64_t)qgmm_blocked_scales_bytes(other, blocks));
    } else if (r == 2) {
        g->srank = 2;
        g->sd[0] = other;
        g->sd[1] = blocks;
    } else {
        g->srank = 3;
        g->sd[0] = E;
        g->sd[1] = other;
        g->sd[2] = blocks;
    }
}

static void blockwise_geom(fz_in *in, cast_geom *g)
{
    const uint8_t b = fz_u8(in);
    g->rank = 2 + (b & 1);
    g->bp.block = (b >> 1 & 1) ? QGMM_BLOCK_128X128 : QGMM_BLOCK_1X128;
    const qgmm_blockwise_layout layout = (qgmm_blockwise_layout)((b >> 2) % 3);
    g->hp = hp_dtype(b >> 4 & 1);
    g->f8 = fz_fp8(in, 0);
    g->sdt = QGMM_F32;
    const qgmm_block_shape block = g->bp.block;
    if (fz_rare(in)) g->bp.block = (qgmm_block_shape)(int8_t)fz_u8(in);
    const int64_t E = g->rank == 3 ? fz_dim(in, 1, 4) : 0;
    const int64_t R = fz_dim(in, 1, 160), K = fz_dim(in, 128, 256);
    if (g->rank == 3) { g->sh[0] = E; g->sh[1] = R; g->sh[2] = K; }
    else { g->sh[0] = R; g->sh[1] = K; }
    qgmm_tensor v;
    size_t bytes = 0;
    if (qgmm_blockwise_scales_view(block, layout, g->rank, g->sh, NULL, 0, &v, &bytes) == QGMM_OK) {
        g->srank = v.rank;
        for (int d = 0; d < 3; ++d) { g->sd[d] = v.shape[d]; g->sst[d] = v.strides[d]; }
    } else { /* fuzzed K: the logical row-major shape */
        const int64_t rows = block == QGMM_BLOCK_1X128 ? R : ceil_div(R, 128);
        g->srank = g->rank;
        if (g->rank == 3) { g->sd[0] = E; g->sd[1] = rows; g->sd[2] = K / 128; }
        else { g->sd[0] = rows; g->sd[1] = K / 128; }
    }
}

/* The scales slot of a cast; blockwise layouts keep their strides. */
static int add_scales(fz_call *c, const cast_geom *g, fz_role role)
{
    const int s = fz_add(c, "scales", role, g->sdt, g->srank, g->sd[0], g->sd[1], g->sd[2]);
    if (g->sst[0] || g->sst[1]) for (int d = 0; d < 3; ++d) c->s[s].t.strides[d] = g->sst[d];
    return s;
}

/* ------------------------------------------------------------------ casts */
static void op_rowwise(fz_in *in)
{
    cast_geom g;
    memset(&g, 0, sizeof g);
    rowwise_geom(in, &g);
    fz_call c;
    fz_begin(&c, "qgmm_quantize_fp8_rowwise");
    const int x = fz_add(&c, "x", FZ_IN, g.hp, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    const int offs = g.G ? fz_add_offs(&c, in, "offs", g.G, g.sh[g.rd], 1) : -1;
    if (offs >= 0) fz_offs_extent(&c, offs, x, g.rd, 1);
    const int q = fz_add(&c, "q", FZ_OUT, g.f8, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    const int s = add_scales(&c, &g, FZ_OUT);
    const int null_p = fz_rare(in) == 3;
    if (!prepare(&c, in)) return;
    run(&c, qgmm_quantize_fp8_rowwise(fz_ctx, null_p ? NULL : &g.rp, fz_t(&c, x), fz_t(&c, offs),
                                      fz_t(&c, q), fz_t(&c, s)));
}

static void op_rowwise_dual(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    const int jag = !(b & 1);
    qgmm_fp8_rowwise_params p[2];
    for (int k = 0; k < 2; ++k) {
        p[k].reduce_dim = b >> (1 + k) & 1;
        p[k].power_of_2 = b >> (3 + k) & 1;
        p[k].scale_kind = (b >> (5 + k) & 1) ? QGMM_SCALE_MULTIPLIER : QGMM_SCALE_RECIPROCAL;
    }
    const int rd0 = p[0].reduce_dim, rd1 = p[1].reduce_dim;
    if (fz_rare(in)) p[fz_u8(in) & 1].reduce_dim = (int8_t)fz_u8(in);
    const int64_t T = fz_dim(in, 1, 64), N0 = fz_dim(in, 1, 64), N1 = fz_dim(in, 1, 64);
    const int64_t G = jag ? fz_groups(in) : 0;
    const qgmm_dtype h0 = hp_dtype(b >> 7 & 1), f0 = fz_fp8(in, 0), f1 = fz_fp8(in, 0);
    fz_call c;
    fz_begin(&c, "qgmm_quantize_fp8_rowwise_dual");
    const int x0 = fz_add(&c, "x0", FZ_IN, h0, 2, rd0 ? N0 : T, rd0 ? T : N0, 0);
    const int q0 = fz_add(&c, "q0", FZ_OUT, f0, 2, rd0 ? N0 : T, rd0 ? T : N0, 0);
    const int s0 = G ? fz_add(&c, "scales0", FZ_OUT, QGMM_F32, 2, G, N0, 0)
                     : fz_add(&c, "scales0", FZ_OUT, QGMM_F32, 1, N0, 0, 0);
    const int x1 = fz_add(&c, "x1", FZ_IN, QGMM_BF16, 2, rd1 ? N1 : T, rd1 ? T : N1, 0);
    const int q1 = fz_add(&c, "q1", FZ_OUT, f1, 2, rd1 ? N1 : T, rd1 ? T : N1, 0);
    const int s1 = G ? fz_add(&c, "scales1", FZ_OUT, QGMM_F32, 2, G, N1, 0)
                     : fz_add(&c, "scales1", FZ_OUT, QGMM_F32, 1, N1, 0, 0);
    const int offs = G ? fz_add_offs(&c, in, "offs", G, T, 1) : -1;
    if (offs >= 0) fz_offs_extent(&c, offs, x0, rd0, 1);
    if (!prepare(&c, in)) return;
    run(&c, qgmm_quantize_fp8_rowwise_dual(fz_ctx, &p[0], fz_t(&c, x0), fz_t(&c, q0), fz_t(&c, s0),
                                           &p[1], fz_t(&c, x1), fz_t(&c, q1), fz_t(&c, s1),
                                           fz_t(&c, offs)));
}

static void op_mxfp8(fz_in *in)
{
    cast_geom g;
    memset(&g, 0, sizeof g);
    mx_geom(in, &g);
    fz_call c;
    fz_begin(&c, "qgmm_quantize_mxfp8");
    const int x = fz_add(&c, "x", FZ_IN, g.hp, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    const int q = fz_add(&c, "q", FZ_OUT, g.f8, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    const int s = add_scales(&c, &g, FZ_OUT);
    if (!prepare(&c, in)) return;
    run(&c, qgmm_quantize_mxfp8(fz_ctx, &g.mp, fz_t(&c, x), fz_t(&c, q), fz_t(&c, s)));
}

/* MXFP8 with the scales in a grouped layout: x (T, D), offs over T; M-groups blocks
 * along D (block_dim 1), K-groups along T (block_dim 0, groups of whole 32-token blocks). */
static void op_mxfp8_grouped(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    const int kg = b & 1;
    qgmm_mxfp8_params p = {kg ? 0 : 1, (b >> 1 & 1) ? QGMM_MX_RCEIL : QGMM_MX_FLOOR,
                           kg ? QGMM_SCALES_BLOCKED_K_GROUPS : QGMM_SCALES_BLOCKED_M_GROUPS};
    const qgmm_dtype hp = hp_dtype(b >> 2 & 1), sdt = e8_dtype(b >> 3 & 1), f8 = fz_fp8(in, 0);
    if (fz_rare(in)) {
        p.block_dim = (int8_t)fz_u8(in);
        p.mode = (qgmm_mx_mode)(int8_t)fz_u8(in);
        p.scale_layout = (qgmm_scale_layout)(int8_t)fz_u8(in);
    }
    const int64_t T = kg ? fz_dim(in, 32, 128) : fz_dim(in, 1, 64), D = kg ? fz_dim(in, 1, 64) : fz_dim(in, 32, 64);
    const int64_t G = fz_groups(in);
    const int64_t bytes = kg ? (int64_t)qgmm_blocked_k_groups_bytes(D, T / 32, G)
                             : (int64_t)qgmm_blocked_m_groups_bytes(T, D / 32, G);
    fz_call c;
    fz_begin(&c, "qgmm_quantize_mxfp8_grouped");
    const int x = fz_add(&c, "x", FZ_IN, hp, 2, T, D, 0);
    const int offs = fz_add_offs(&c, in, "offs", G, T, kg ? 32 : 1);
    fz_offs_extent(&c, offs, x, 0, 1);
    if (kg) c.s[offs].ext_multiple = 32; /* whole 32-token blocks per group */
    const int q = fz_add(&c, "q", FZ_OUT, f8, 2, T, D, 0);
    const int s = fz_add(&c, "scales", FZ_OUT, sdt, 1, bytes, 0, 0);
    if (!prepare(&c, in)) return;
    run(&c, qgmm_quantize_mxfp8_grouped(fz_ctx, &p, fz_t(&c, x), fz_t(&c, offs), fz_t(&c, q), fz_t(&c, s)));
}

static void op_blockwise(fz_in *in)
{
    cast_geom g;
    memset(&g, 0, sizeof g);
    blockwise_geom(in, &g);
    fz_call c;
    fz_begin(&c, "qgmm_quantize_fp8_blockwise");
    const int x = fz_add(&c, "x", FZ_IN, g.hp, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    const int q = fz_add(&c, "q", FZ_OUT, g.f8, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    const int s = add_scales(&c, &g, FZ_OUT);
    if (!prepare(&c, in)) return;
    run(&c, qgmm_quantize_fp8_blockwise(fz_ctx, &g.bp, fz_t(&c, x), fz_t(&c, q), fz_t(&c, s)));
}

static void op_dequantize(fz_in *in)
{
    const uint8_t kind = fz_u8(in) % 3;
    cast_geom g;
    memset(&g, 0, sizeof g);
    qgmm_quant_format f;
    memset(&f, 0, sizeof f);
    f.kind = (qgmm_quant_kind)kind;
    if (kind == 0) rowwise_geom(in, &g);
    else if (kind == 1) mx_geom(in, &g);
    else blockwise_geom(in, &g);
    f.rowwise = g.rp;
    f.mx = g.mp;
    f.blockwise = g.bp;
    if (fz_rare(in)) f.kind = (qgmm_quant_kind)(int8_t)fz_u8(in);
    fz_call c;
    fz_begin(&c, "qgmm_dequantize");
    const int q = fz_add(&c, "q", FZ_IN, g.f8, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    const int s = add_scales(&c, &g, FZ_IN);
    const int offs = g.G ? fz_add_offs(&c, in, "offs", g.G, g.sh[g.rd], 1) : -1;
    if (offs >= 0) fz_offs_extent(&c, offs, q, g.rd, 1);
    const int out = fz_add(&c, "out", FZ_OUT, g.hp, g.rank, g.sh[0], g.sh[1], g.sh[2]);
    if (!prepare(&c, in)) return;
    run(&c, qgmm_dequantize(fz_ctx, &f, fz_t(&c, q), fz_t(&c, s), fz_t(&c, offs), fz_t(&c, out)));
}

/* ------------------------------------------------------------------ layouts */
static void op_blocked(fz_in *in, int to)
{
    const uint8_t b = fz_u8(in);
    qgmm_blocked_variant v = (qgmm_blocked_variant)(b % 4);
    const qgmm_blocked_variant geomv = v;
    const qgmm_dtype dt = e8_dtype(b >> 2 & 1), bdt = e8_dtype(b >> 3 & 1);
    const int with_starts = to && (b >> 4 & 1);
    if (fz_rare(in)) v = (qgmm_blocked_variant)(int8_t)fz_u8(in);
    const int64_t E = geomv == QGMM_BLOCKED_3D ? fz_dim(in, 1, 4) : 0;
    const int64_t R = fz_dim(in, 1, 64), C = fz_dim(in, 1, 8);
    const int grouped = geomv == QGMM_BLOCKED_M_GROUPS || geomv == QGMM_BLOCKED_K_GROUPS;
    const int64_t G = grouped ? fz_groups(in) : 0;
    int64_t bytes;
    switch (geomv) {
    case QGMM_BLOCKED_2D: bytes = (int64_t)qgmm_blocked_scales_bytes(R, C); break;
    case QGMM_BLOCKED_3D: bytes = mul(E, (int64_t)qgmm_blocked_scales_bytes(R, C)); break;
    case QGMM_BLOCKED_M_GROUPS: bytes = (int64_t)qgmm_blocked_m_groups_bytes(R, C, G); break;
    default: bytes = (int64_t)qgmm_blocked_k_groups_bytes(R, C, G); break;
    }
    fz_call c;
    fz_begin(&c, to ? "qgmm_scales_to_blocked" : "qgmm_scales_from_blocked");
    const int plain = geomv == QGMM_BLOCKED_3D
                          ? fz_add(&c, to ? "in" : "out", to ? FZ_IN : FZ_OUT, dt, 3, E, R, C)
                          : fz_add(&c, to ? "in" : "out", to ? FZ_IN : FZ_OUT, dt, 2, R, C, 0);
    const int blk = fz_add(&c, to ? "out" : "in", to ? FZ_OUT : FZ_IN, bdt, 1, bytes, 0, 0);
    int offs = -1;
    if (geomv == QGMM_BLOCKED_M_GROUPS) {
        offs = fz_add_offs(&c, in, "offs", G, R, 1);
        fz_offs_extent(&c, offs, plain, 0, 1);
    } else if (geomv == QGMM_BLOCKED_K_GROUPS) {
        offs = fz_add_offs(&c, in, "offs", G, mul(C, 32), 32);
        fz_offs_extent(&c, offs, plain, 1, 32);
        if (v == geomv) c.s[offs].ext_multiple = 32; /* whole scale columns per group */
    }
    const int starts = with_starts ? fz_add(&c, "group_starts", FZ_OUT, QGMM_I32, 1, G, 0, 0) : -1;
    if (!prepare(&c, in)) return;
    if (to)
        run(&c, qgmm_scales_to_blocked(fz_ctx, v, fz_t(&c, plain), fz_t(&c, offs), fz_t(&c, blk),
                                       fz_t(&c, starts)));
    else
        run(&c, qgmm_scales_from_blocked(fz_ctx, v, fz_t(&c, blk), fz_t(&c, offs), fz_t(&c, plain)));
}

static void op_to_blocked(fz_in *in) { op_blocked(in, 1); }
static void op_from_blocked(fz_in *in) { op_blocked(in, 0); }

static int alignment_of(fz_in *in, uint8_t b)
{
    static const int a[3] = {16, 32, 128};
    return fz_rare(in) ? (int)fz_u32(in) : a[b % 3];
}

static void op_pad(fz_in *in, int pad)
{
    const uint8_t b = fz_u8(in);
    const int A = alignment_of(in, b);
    const qgmm_dtype dt = (qgmm_dtype)(1 + fz_u8(in) % 9);
    const int64_t T = fz_dim(in, 1, 64), D = fz_dim(in, 1, 16), G = fz_groups(in);
    const int64_t P = qgmm_padded_rows_bound(T, G, A > 0 ? A : 16);
    fz_call c;
    fz_begin(&c, pad ? "qgmm_pad_token_groups" : "qgmm_unpad_token_groups");
    const int x = fz_add(&c, pad ? "x" : "x_padded", FZ_IN, dt, 2, pad ? T : P, D, 0);
    const int offs = fz_add_offs(&c, in, "offs", G, T, 1);
    const int out = fz_add(&c, "out", FZ_OUT, dt, 2, pad ? P : T, D, 0);
    fz_offs_extent(&c, offs, pad ? x : out, 0, 1);
    int ps = -1, po = -1;
    if (pad) {
        if (!(b >> 2 & 1)) ps = fz_add(&c, "padded_start", FZ_OUT, QGMM_I32, 1, G, 0, 0);
        if (!(b >> 3 & 1)) po = fz_add(&c, "padded_offs", FZ_OUT, QGMM_I32, 1, G, 0, 0);
    }
    if (!prepare(&c, in)) return;
    if (pad)
        run(&c, qgmm_pad_token_groups(fz_ctx, A, fz_t(&c, x), fz_t(&c, offs), fz_t(&c, out),
                                      fz_t(&c, ps), fz_t(&c, po)));
    else
        run(&c, qgmm_unpad_token_groups(fz_ctx, A, fz_t(&c, x), fz_t(&c, offs), fz_t(&c, out)));
}

static void op_pad_groups(fz_in *in) { op_pad(in, 1); }
static void op_unpad_groups(fz_in *in) { op_pad(in, 0); }

static void op_row_ids(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    const int padded = b & 1;
    const int A = alignment_of(in, b >> 1);
    const int64_t T = fz_dim(in, 1, 64), G = fz_groups(in);
    int64_t rows = padded ? qgmm_padded_rows_bound(T, G, A > 0 ? A : 16) : T;
    if (fz_rare(in)) rows = fz_dim(in, 1, 300);
    fz_call c;
    fz_begin(&c, "qgmm_group_row_ids");
    const int offs = fz_add_offs(&c, in, "offs", G, T, 1);
    int po = -1;
    if (padded) {
        po = fz_add_offs(&c, in, "padded_offs", G, rows, 1);
        c.s[po].offs_from = offs;
        c.s[po].offs_align = A;
    }
    const int ids = fz_add(&c, "row_ids", FZ_OUT, QGMM_I32, 1, rows, 0, 0);
    fz_mutate(&c, in);
    /* with padded offsets the real ones index the padded groups, not the rows */
    if (po >= 0 && !c.s[po].absent) {
        c.s[offs].ext_slot = -2;
        fz_offs_extent(&c, po, ids, 0, 1);
    } else {
        fz_offs_extent(&c, offs, ids, 0, 1);
    }
    if (!fz_layout(&c, in)) {
        fz_release(&c);
        return;
    }
    fz_arm(&c);
    run(&c, qgmm_group_row_ids(fz_ctx, fz_t(&c, offs), fz_t(&c, po), fz_t(&c, ids)));
}

/* ------------------------------------------------------------------ grouped GEMM */
static void op_gemm(fz_in *in)
{
    const uint8_t b = fz_u8(in);
    qgmm_grouped_gemm_params p = {(qgmm_gemm_kind)(b & 1), (qgmm_recipe)(b >> 1 & 3)};
    const qgmm_gemm_kind kind = p.kind;
    const qgmm_recipe r = p.recipe;
    const qgmm_dtype odt = hp_dtype(b >> 3 & 1);
    const int null_p = fz_rare(in) == 3;
    if (fz_rare(in)) {
        p.kind = (qgmm_gemm_kind)(int8_t)fz_u8(in);
        p.recipe = (qgmm_recipe)(int8_t)fz_u8(in);
    }
    const qgmm_dtype da = r == QGMM_RECIPE_BF16 ? QGMM_BF16 : fz_fp8(in, r == QGMM_RECIPE_MXFP8);
    const qgmm_dtype db = r == QGMM_RECIPE_BF16 ? QGMM_BF16 : fz_fp8(in, r == QGMM_RECIPE_MXFP8);
    const qgmm_dtype mx = e8_dtype(b >> 4 & 1);
    const int64_t gran = r == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : r == QGMM_RECIPE_MXFP8 ? 32 : 1;
    const int64_t N = fz_dim(in, 1, 64), G = fz_groups(in);
    fz_call c;
    fz_begin(&c, "qgmm_grouped_gemm");
    int a, bb, sa = -1, sb = -1, offs, out;
    if (kind == QGMM_GEMM_M_GROUPED) {
        const int64_t M = fz_dim(in, 1, 64), K = fz_dim(in, gran, 64);
        a = fz_add(&c, "a", FZ_IN, da, 2, M, K, 0);
        bb = fz_add(&c, "b", FZ_IN, db, 3, G, N, K);
        if (r == QGMM_RECIPE_FP8_ROWWISE) {
            sa = fz_add(&c, "a_scales", FZ_IN, QGMM_F32, 1, M, 0, 0);
            sb = fz_add(&c, "b_scales", FZ_IN, QGMM_F32, 2, G, N, 0);
        } else if (r == QGMM_RECIPE_FP8_BLOCKWISE) {
            sa = fz_add(&c, "a_scales", FZ_IN, QGMM_F32, 2, M, K / 128, 0);
            sb = fz_add(&c, "b_scales", FZ_IN, QGMM_F32, 3, G, ceil_div(N, 128), K / 128);
        } else if (r == QGMM_RECIPE_MXFP8) {
            sa = fz_add(&c, "a_scales", FZ_IN, mx, 1, (int64_t)qgmm_blocked_m_groups_bytes(M, K / 32, G), 0, 0);
            sb = fz_add(&c, "b_scales", FZ_IN, mx, 1, mul(G, (int64_t)qgmm_blocked_scales_bytes(N, K / 32)), 0, 0);
        }
        offs = fz_add_offs(&c, in, "offs", G, M, 1);
        out = fz_add(&c, "out", FZ_OUT, odt, 2, M, N, 0);
    } else {
        const int64_t M = fz_dim(in, 1, gran > 1 ? 2 * gran : 64), K = fz_dim(in, 1, 64);
        a = fz_add(&c, "a", FZ_IN, da, 2, M, N, 0);
        bb = fz_add(&c, "b", FZ_IN, db, 2, M, K, 0);
        if (r == QGMM_RECIPE_FP8_ROWWISE) {
            sa = fz_add(&c, "a_scales", FZ_IN, QGMM_F32, 2, G, N, 0);
            sb = fz_add(&c, "b_scales", FZ_IN, QGMM_F32, 2, G, K, 0);
        } else if (r == QGMM_RECIPE_FP8_BLOCKWISE) {
            sa = fz_add(&c, "a_scales", FZ_IN, QGMM_F32, 2, N, ceil_div(M, 128), 0);
            sb = fz_add(&c, "b_scales", FZ_IN, QGMM_F32, 2, K, ceil_div(M, 128), 0);
        } else if (r == QGMM_RECIPE_MXFP8) {
            sa = fz_add(&c, "a_scales", FZ_IN, mx, 1, (int64_t)qgmm_blocked_k_groups_bytes(N, ceil_div(M, 32), G), 0, 0);
            sb = fz_add(&c, "b_scales", FZ_IN, mx, 1, (int64_t)qgmm_blocked_k_groups_bytes(K, ceil_div(M, 32), G), 0, 0);
        }
        offs = fz_add_offs(&c, in, "offs", G, M, gran);
        out = fz_add(&c, "out", FZ_OUT, odt, 3, G, N, K);
        /* blockwise and MX wgrad want whole scale blocks per group */
        if (p.kind == kind && p.recipe == r) c.s[offs].ext_multiple = gran;
    }
    fz_offs_extent(&c, offs, a, 0, 1);
    if (!prepare(&c, in)) return;
    run(&c, qgmm_grouped_gemm(fz_ctx, null_p ? NULL : &p, fz_t(&c, a), fz_t(&c, bb), fz_t(&c, sa),
                              fz_t(&c, sb), fz_t(&c, offs), fz_t(&c, out)));
}

/* ------------------------------------------------------------------ composite */
static void op_moe(fz_in *in, int backward)
{
    static const qgmm_dtype f8[4] = {QGMM_DTYPE_INVALID, QGMM_F8E4M3FN, QGMM_F8E4M3FNUZ, QGMM_F8E5M2};
    const uint8_t b = fz_u8(in);
    qgmm_moe_params p = {(qgmm_recipe)(b & 3), f8[b >> 2 & 3], (qgmm_mx_mode)(b >> 4 & 1)};
    const qgmm_recipe r = p.recipe;
    const qgmm_dtype odt = hp_dtype(b >> 5 & 1);
    if (fz_rare(in)) {
        p.recipe = (qgmm_recipe)(int8_t)fz_u8(in);
        p.fp8_dtype = (qgmm_dtype)(int8_t)fz_u8(in);
        p.mx_mode = (qgmm_mx_mode)(int8_t)fz_u8(in);
    }
    const int64_t gran = r == QGMM_RECIPE_FP8_BLOCKWISE ? 128 : r == QGMM_RECIPE_MXFP8 ? 32 : 1;
    const int64_t M = fz_dim(in, 1, 64), N = fz_dim(in, gran, 64), K = fz_dim(in, gran, 64);
    const int64_t E = fz_groups(in);
    fz_call c;
    fz_begin(&c, backward ? "qgmm_moe_experts_backward" : "qgmm_moe_experts_forward");
    const int x = fz_add(&c, "x", FZ_IN, QGMM_BF16, 2, M, K, 0);
    const int w = fz_add(&c, "w", FZ_IN, QGMM_BF16, 3, E, N, K);
    const int dy = backward ? fz_add(&c, "dy", FZ_IN, QGMM_BF16, 2, M, N, 0) : -1;
    const int offs = fz_add_offs(&c, in, "offs", E, M, 1);
    fz_offs_extent(&c, offs, x, 0, 1);
    const int y = backward ? fz_add(&c, "dx", FZ_OUT, odt, 2, M, K, 0)
                           : fz_add(&c, "y", FZ_OUT, odt, 2, M, N, 0);
    const int dw = backward ? fz_add(&c, "dw", FZ_OUT, odt, 3, E, N, K) : -1;
    c.ws_slot = fz_add(&c, "workspace", FZ_WS, QGMM_U8, 1, 0, 0, 0);
    fz_mutate(&c, in);
    /* the region the composite may use, from the shapes it will see */
    const qgmm_tensor *xt = &c.s[x].t, *wt = &c.s[w].t;
    c.ws_need = qgmm_moe_workspace_bytes(&p, xt->shape[0], wt->shape[1], xt->shape[1], wt->shape[0]);
    c.s[c.ws_slot].t.shape[0] = c.ws_need < FZ_BUF_CAP ? (int64_t)c.ws_need : (int64_t)FZ_BUF_CAP;
    if (!fz_layout(&c, in)) {
        fz_release(&c);
        return;
    }
    fz_arm(&c);
    if (backward)
        run(&c, qgmm_moe_experts_backward(fz_ctx, &p, fz_t(&c, x), fz_t(&c, w), fz_t(&c, dy),
                                          fz_t(&c, offs), fz_t(&c, y), fz_t(&c, dw), fz_ws(&c)));
    else
        run(&c, qgmm_moe_experts_forward(fz_ctx, &p, fz_t(&c, x), fz_t(&c, w), fz_t(&c, offs),
                                         fz_t(&c, y), fz_ws(&c)));
}

static void op_moe_forward(fz_in *in) { op_moe(in, 0); }
static void op_moe_backward(fz_in *in) { op_moe(in, 1); }

/* ------------------------------------------------------------------ buffers */
static void op_absurd_alloc(fz_in *in)
{
    static const size_t sizes[7] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 255, SIZE_MAX - 256,
                                    (size_t)1 << 63, ((size_t)1 << 62) + 1, (size_t)1 << 48};
    const uint8_t k = fz_u8(in);
    const size_t bytes = k % 8 < 7 ? sizes[k % 8] : ((size_t)1 << 44) | fz_u32(in);
    fz_call c;
    fz_begin(&c, "qgmm_buffer_alloc");
    fz_arm(&c);
    qgmm_buffer *b = NULL;
    const qgmm_status rc = qgmm_buffer_alloc(fz_ctx, bytes, &b);
    /* nothing near this size can exist under ASan (its allocator stops at 2^40) */
    if (rc == QGMM_OK) {
        fz_report(&c, "absurd-alloc", "a %zu-byte buffer was created (qgmm_buffer_size says %zu)", bytes,
                  qgmm_buffer_size(b));
        qgmm_buffer_free(b);
        fz_release(&c);
        return;
    }
    fz_check(&c, rc);
    fz_release(&c);
}

/* fill / upload / download / copy over fuzzed ranges of small buffers */
static void op_buffer_range(fz_in *in)
{
    const uint8_t sub = fz_u8(in) % 4;
    static const char *names[4] = {"qgmm_buffer_fill", "qgmm_buffer_upload", "qgmm_buffer_download",
                                   "qgmm_buffer_copy"};
    const int64_t bytes = fz_dim(in, 1, 4096);
    const uint8_t value = fz_u8(in);
    const int null_host = fz_rare(in) == 3;
    fz_call c;
    fz_begin(&c, names[sub]);
    c.tls_error = 1;
    const int dst = fz_add(&c, "buf", sub == 2 ? FZ_IN : FZ_OUT, QGMM_U8, 1, bytes, 0, 0);
    const int src = sub == 3 ? fz_add(&c, "src", FZ_IN, QGMM_U8, 1, bytes, 0, 0) : -1;
    fz_mutate(&c, in);
    for (int i = 0; i < c.n; ++i) { /* only buffer, offset and the byte count mean anything here */
        c.s[i].t.dtype = QGMM_U8;
        c.s[i].t.rank = 1;
        c.s[i].t.strides[0] = 1;
        c.s[i].t.shape[0] = c.s[dst].t.shape[0]; /* one byte count for both ends */
    }
    if (!fz_layout(&c, in)) {
        fz_release(&c);
        return;
    }
    const size_t n = (size_t)(uint64_t)c.s[dst].t.shape[0];
    const size_t host_n = n < FZ_BUF_CAP ? n : FZ_BUF_CAP; /* no buffer is larger */
    uint8_t *host = malloc(host_n ? host_n : 1);
    if (!host) {
        fz_release(&c);
        return;
    }
    memset(host, value, host_n);
    fz_arm(&c);
    qgmm_buffer *db = c.s[dst].null_ptr ? NULL : c.s[dst].t.buffer;
    const size_t doff = c.s[dst].t.offset;
    qgmm_status rc;
    switch (sub) {
    case 0: rc = qgmm_buffer_fill(db, doff, n, value); break;
    case 1: rc = qgmm_buffer_upload(db, doff, null_host ? NULL : host, n); break;
    case 2: rc = qgmm_buffer_download(db, doff, null_host ? NULL : host, n); break;
    default:
        rc = qgmm_buffer_copy(db, doff, c.s[src].null_ptr ? NULL : c.s[src].t.buffer, c.s[src].t.offset, n);
        break;
    }
    fz_check(&c, rc);
    fz_release(&c);
    free(host);
}

/* ------------------------------------------------------------------ host-side helpers */
static void op_host_functions(fz_in *in)
{
    fz_call c;
    fz_begin(&c, "host-side functions");
    const uint8_t sub = fz_u8(in) % 5;
    const int64_t d0 = fz_dim(in, 128, 256), d1 = fz_dim(in, 1, 64), d2 = fz_dim(in, 128, 256);
    const int64_t g = fz_groups(in);
    switch (sub) {
    case 0: {
        const int64_t shape[3] = {d0, d1, d2};
        const uint8_t a = fz_u8(in);
        c.op = "qgmm_blockwise_scales_view";
        qgmm_tensor v;
        size_t bytes = 0;
        const qgmm_status rc = qgmm_blockwise_scales_view((qgmm_block_shape)(a % 3), (qgmm_blockwise_layout)(a / 3 % 4),
                                                          2 + (a >> 5) % 3, shape, NULL, 0, &v, &bytes);
        if (rc == QGMM_OK && qgmm_tensor_span_bytes(&v) > bytes)
            fz_report(&c, "view-bytes", "the view spans %zu bytes but *bytes says %zu",
                      qgmm_tensor_span_bytes(&v), bytes);
        break;
    }
    case 1:
        (void)qgmm_blocked_scales_bytes(d0, d1);
        (void)qgmm_blocked_m_groups_bytes(d1, d2, g);
        (void)qgmm_blocked_k_groups_bytes(d0, d2, g);
        (void)qgmm_padded_rows_bound(d0, g, (int)(fz_u8(in) + 1));
        break;
    case 2: {
        const uint8_t a = fz_u8(in);
        const qgmm_moe_params p = {(qgmm_recipe)(a & 3), (qgmm_dtype)(a >> 2 & 7), (qgmm_mx_mode)(a >> 5 & 1)};
        (void)qgmm_moe_workspace_bytes(&p, d1, d0, d2, g);
        break;
    }
    case 4: { /* events in any order, backend info at any index, the context's strings */
        const uint8_t a = fz_u8(in);
        c.op = "qgmm_event_*";
        fz_arm(&c);
        qgmm_event *e0 = NULL, *e1 = NULL;
        double ms = 0;
        fz_check_status(&c, qgmm_event_create(fz_ctx, &e0));
        fz_check_status(&c, qgmm_event_create(fz_ctx, &e1));
        if (a & 1) fz_check_status(&c, qgmm_event_record(e0));
        if (a & 2) fz_check_status(&c, qgmm_event_record(e1));
        fz_arm(&c);
        const qgmm_status rc = qgmm_event_elapsed_ms(a & 4 ? e1 : e0, a & 8 ? NULL : e1, a & 16 ? NULL : &ms);
        c.tls_error = 1;
        fz_check_status(&c, rc);
        const int start_recorded = a & 4 ? a & 2 : a & 1, end_recorded = a & 2;
        if (rc == QGMM_OK && (!start_recorded || !end_recorded))
            fz_report(&c, "event-unrecorded", "elapsed time of an event never recorded was given");
        qgmm_event_destroy(e0);
        qgmm_event_destroy(e1);
        qgmm_backend_info info;
        (void)qgmm_backend_get_info((int)(int8_t)fz_u8(in), a & 32 ? NULL : &info);
        if (!qgmm_context_describe(fz_ctx) || !qgmm_context_backend_name(fz_ctx))
            fz_report(&c, "null-string", "qgmm_context_describe or _backend_name gave NULL");
        break;
    }
    default: {
        /* the span must never be under-reported: it is what every bounds check trusts */
        qgmm_tensor t;
        memset(&t, 0, sizeof t);
        t.dtype = (qgmm_dtype)(fz_u8(in) % 11);
        t.rank = fz_u8(in) % 5;
        for (int d = 0; d < QGMM_MAX_RANK; ++d) {
            t.shape[d] = fz_dim(in, 1, 64);
            t.strides[d] = fz_rare(in) ? (int64_t)fz_u64(in) : fz_dim(in, 1, 64);
        }
        c.op = "qgmm_tensor_span_bytes";
        (void)qgmm_tensor_numel(&t);
        const size_t span = qgmm_tensor_span_bytes(&t);
        const size_t es = qgmm_dtype_size(t.dtype);
        if (es && t.rank >= 1 && t.rank <= QGMM_MAX_RANK) {
            __int128 last = 0, n = 1;
            int legal = 1;
            for (int d = 0; d < t.rank; ++d) {
                legal &= t.shape[d] >= 0 && (t.shape[d] <= 1 || t.strides[d] >= 1);
                n *= t.shape[d] > 0 ? 1 : 0;
                if (t.shape[d] > 0) { /* each term below 2^127 / 4: the sum and its bytes fit */
                    const __int128 e = (__int128)(t.shape[d] - 1) * t.strides[d], lim = (__int128)1 << 120;
                    last += e > lim ? lim : e < -lim ? -lim : e;
                }
            }
            const __int128 want = n ? (last + 1) * (__int128)es : 0;
            const size_t want_sat = want > (__int128)SIZE_MAX ? SIZE_MAX : (size_t)want;
            if (legal && span < want_sat)
                fz_report(&c, "span-underreported",
                          "dtype %d rank %d shape (%lld, %lld, %lld) strides (%lld, %lld, %lld): span %zu, "
                          "elements reach %zu bytes", (int)t.dtype, t.rank, (long long)t.shape[0],
                          (long long)t.shape[1], (long long)t.shape[2], (long long)t.strides[0],
                          (long long)t.strides[1], (long long)t.strides[2], span, want_sat);
        }
        break;
    }
    }
    if (!qgmm_status_string((qgmm_status)(int8_t)d1) || !qgmm_dtype_name((qgmm_dtype)(int8_t)d1))
        fz_report(&c, "null-string", "a status or dtype name was NULL for %d", (int)(int8_t)d1);
}

/* ------------------------------------------------------------------ entry points */
typedef void (*op_fn)(fz_in *in);
static const op_fn k_ops[] = {
    op_rowwise,      op_rowwise_dual,  op_mxfp8,       op_blockwise,   op_dequantize,
    op_to_blocked,   op_from_blocked,  op_pad_groups,  op_unpad_groups, op_row_ids,
    op_gemm,         op_moe_forward,   op_moe_backward, op_absurd_alloc, op_buffer_range,
    op_host_functions, op_mxfp8_grouped,
};
#define FZ_NOPS (sizeof k_ops / sizeof k_ops[0])

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size, 0};
    for (int k = 0; k < 4 && (k == 0 || in.i < in.n); ++k) k_ops[fz_u8(&in) % FZ_NOPS](&in);
    return 0;
}
