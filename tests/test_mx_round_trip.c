/*
 * test_mx_round_trip.c — a GPU plugin's mx_round_trip slot (qgmm_backend.h: the MXFP8
 * round trip of the composite's forward and dgrad operands) against the two public ops it
 * stands for, qgmm_quantize_mxfp8 (plain scales) followed by qgmm_dequantize to bf16: every
 * output byte equal. Blocks along the contiguous dim and along a strided one (rank 2 and
 * the (E, N, K) weights along N and along K), both fp8 formats, FLOOR and RCEIL, aligned
 * and unaligned rows, odd line counts, and values that leave the hardware conversion's
 * range: NaN, inf, all-zero blocks, bf16 subnormals, products below 2^-126, bf16's largest.
 * The padded form (the wgrad operands) against qgmm_pad_token_groups followed by the two ops:
 * ragged and empty groups, tokens past the last group, and bad offsets (nothing written).
 * The slot is reached through the plugin's own vtable (QGMM_PLUGIN_PATH), with the problem
 * api/ops_mx_round_trip.c builds. Usage: test_mx_round_trip [cuda|hip|hipemu] (default:
 * each where present; hipemu, the HIP plugin on the host emulation, with
 * QGMM_EXTRA_BACKENDS=hipemu as ctest sets it). Exit: 0 pass, 1 failure, 2 a setup call
 * failed, 77 no such backend.
 */
#include "qgmm.h"
#include "qgmm_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static long g_failures;

#include "qgmm_test_check.h"
#include "qgmm_test_plugin.h"

#define POISON 0xA5

typedef struct kase {
    const char *name;
    int rank;
    int64_t d0, d1, d2;  /* shape (d2 unused for rank 2) */
    int block_dim;
    int colmajor;        /* rank 2: x and out column-major (strides (1, d0)) */
    size_t offset;       /* bytes into x's and out's buffers (2: unaligned rows) */
    qgmm_dtype fp8;
    qgmm_mx_mode mode;
} kase;

/* bf16 bits of value class c (mostly ordinary values; the rest edge values) */
static uint16_t sample(uint64_t *seed, int64_t i)
{
    const uint64_t r = qgmm_test_xorshift(seed);
    const int64_t blk = i / 32;
    if (blk % 53 == 7) return 0;                                   /* an all-zero block */
    if (blk % 53 == 11) return (uint16_t)(r % 0x7F);               /* a block of bf16 subnormals */
    if (blk % 53 == 19) return (uint16_t)(0x0080 + r % 0x700);     /* tiny normals: products below 2^-126 */
    switch (r % 1009) {
    case 0: return 0x7FC1;                                         /* NaN */
    case 1: return 0xFF80;                                         /* -inf */
    case 2: return 0x7F7F;                                         /* bf16's largest */
    case 3: return 0x8000;                                         /* -0 */
    default: break;
    }
    const float v = (float)((int64_t)(r >> 20) % 200001 - 100000) / 1000.0f;
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static qgmm_tensor view(const kase *k, qgmm_buffer *b, qgmm_dtype dt)
{
    const int64_t sh[3] = {k->d0, k->d1, k->d2};
    if (k->rank == 2 && k->colmajor) {
        qgmm_tensor t = qgmm_tensor_make_colmajor(b, 0, dt, k->d0, k->d1);
        t.offset = k->offset;
        return t;
    }
    return qgmm_tensor_make(b, k->offset, dt, k->rank, sh);
}

static void run_case(const qgmm_backend_vtable *vt, const kase *k, uint64_t seed)
{
    const int64_t n = k->d0 * k->d1 * (k->rank == 3 ? k->d2 : 1);
    const size_t bytes = k->offset + (size_t)n * 2;
    uint8_t *hx = (uint8_t *)calloc(bytes, 1);
    /* element i in the order of the blocks (i / 32 names a block when blocks are contiguous) */
    for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = sample(&seed, i);
        memcpy(hx + k->offset + 2 * i, &h, 2);
    }
    qgmm_buffer *bx = qgmm_test_buf_from(hx, bytes);
    const qgmm_tensor x = view(k, bx, QGMM_BF16);

    /* the two public ops */
    qgmm_buffer *bref = qgmm_test_buf_poisoned(bytes, POISON);
    {
        qgmm_buffer *bq = qgmm_test_buf_poisoned((size_t)n, 0);
        const int64_t nblk = n / 32;
        qgmm_buffer *bs = qgmm_test_buf_poisoned((size_t)nblk, 0);
        const qgmm_tensor q = qgmm_tensor_make(bq, 0, k->fp8, k->rank, x.shape);
        /* plain scales: (E?, the other dim, blocks) */
        const int last = k->rank - 1, other = k->block_dim == last ? last - 1 : last;
        const int64_t ss[3] = {k->d0, x.shape[other], x.shape[k->block_dim] / 32};
        const qgmm_tensor s = qgmm_tensor_make(bs, 0, QGMM_E8M0, k->rank, k->rank == 3 ? ss : ss + 1);
        qgmm_mxfp8_params mp = QGMM_MXFP8_PARAMS_INIT(k->block_dim);
        mp.mode = k->mode;
        qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(k->block_dim);
        f.mx = mp;
        const qgmm_tensor out = view(k, bref, QGMM_BF16);
        OK(qgmm_quantize_mxfp8(g_ctx, &mp, &x, &q, &s));
        OK(qgmm_dequantize(g_ctx, &f, &q, &s, NULL, &out));
        OK(qgmm_synchronize(g_ctx));
        qgmm_buffer_free(bq);
        qgmm_buffer_free(bs);
    }
    /* the slot, with the problem the API builds */
    qgmm_buffer *bgot = qgmm_test_buf_poisoned(bytes, POISON);
    {
        const qgmm_tensor out = view(k, bgot, QGMM_BF16);
        qgmm_cast_problem p;
        qgmm_cast_operand o;
        const qgmm_mxfp8_params mp = {k->block_dim, k->mode, QGMM_SCALES_PLAIN};
        qgmm_mx_round_trip_problem_make(&mp, k->fp8, &x, &out, &p, &o);
        OK(vt->mx_round_trip(g_ctx, &p, &o, NULL));
        OK(qgmm_synchronize(g_ctx));
    }
    uint8_t *want = (uint8_t *)qgmm_test_fetch(bref, bytes), *got = (uint8_t *)qgmm_test_fetch(bgot, bytes);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < bytes; ++i)
        if (got[i] != want[i] && !diff++) first = i;
    CHECK(diff == 0, "%s: %zu of %zu bytes differ, first at %zu (%02x, want %02x; x bytes there %02x)", k->name, diff,
          bytes, first, diff ? got[first] : 0, diff ? want[first] : 0, diff ? hx[first] : 0);
    free(want);
    free(got);
    free(hx);
    qgmm_buffer_free(bx);
    qgmm_buffer_free(bref);
    qgmm_buffer_free(bgot);
}

/* The padded form (the wgrad operands): x (T, D) with token groups offs, against
 * qgmm_pad_token_groups(32) then the round trip of the padded rows by the two public ops;
 * out and padded_offs compared byte for byte. bad: offsets made decreasing for the slot
 * only: nothing written (out keeps its poison) and synchronize reports bad offsets. */
typedef struct pcase {
    const char *name;
    int64_t T, D;
    int G;
    int32_t offs[6];
    qgmm_dtype fp8;
    qgmm_mx_mode mode;
} pcase;

static void run_padded(const qgmm_backend_vtable *vt, const pcase *k, uint64_t seed, int bad)
{
    const int64_t P = qgmm_padded_rows_bound(k->T, k->G, 32), D = k->D;
    const size_t xb = (size_t)(k->T * D) * 2, ob = (size_t)(P * D) * 2, pb = sizeof(int32_t) * (size_t)k->G;
    uint16_t *hx = (uint16_t *)malloc(xb ? xb : 1);
    for (int64_t i = 0; i < k->T * D; ++i) hx[i] = sample(&seed, i);
    qgmm_buffer *bx = qgmm_test_buf_from(hx, xb);
    int32_t offs[6];
    memcpy(offs, k->offs, sizeof offs);
    if (bad) offs[0] = (int32_t)k->T + 1;
    qgmm_buffer *bo = qgmm_test_buf_from(k->offs, pb), *bo_bad = qgmm_test_buf_from(offs, pb);
    const int64_t xs[2] = {k->T, D}, ps[2] = {P, D};
    const qgmm_tensor x = qgmm_tensor_make(bx, 0, QGMM_BF16, 2, xs);
    /* the public ops: pad, quantize the padded rows along the tokens, dequantize */
    qgmm_buffer *bref = qgmm_test_buf_poisoned(ob, POISON), *pref = qgmm_test_buf_poisoned(pb, POISON);
    {
        qgmm_buffer *bxp = qgmm_test_buf_poisoned(ob, 0), *bq = qgmm_test_buf_poisoned((size_t)(P * D), 0);
        qgmm_buffer *bs = qgmm_test_buf_poisoned((size_t)(P * D / 32), 0);
        const qgmm_tensor xp = qgmm_tensor_make(bxp, 0, QGMM_BF16, 2, ps), q = qgmm_tensor_make(bq, 0, k->fp8, 2, ps);
        const int64_t ss[2] = {D, P / 32};
        const qgmm_tensor s = qgmm_tensor_make(bs, 0, QGMM_E8M0, 2, ss), out = qgmm_tensor_make(bref, 0, QGMM_BF16, 2, ps);
        const qgmm_tensor to = qgmm_test_t1(bo, QGMM_I32, k->G), po = qgmm_test_t1(pref, QGMM_I32, k->G);
        qgmm_mxfp8_params mp = QGMM_MXFP8_PARAMS_INIT(0);
        mp.mode = k->mode;
        qgmm_quant_format f = QGMM_QUANT_FORMAT_MXFP8_INIT(0);
        f.mx = mp;
        OK(qgmm_pad_token_groups(g_ctx, 32, &x, &to, &xp, NULL, &po));
        OK(qgmm_quantize_mxfp8(g_ctx, &mp, &xp, &q, &s));
        OK(qgmm_dequantize(g_ctx, &f, &q, &s, NULL, &out));
        OK(qgmm_synchronize(g_ctx));
        qgmm_buffer_free(bxp);
        qgmm_buffer_free(bq);
        qgmm_buffer_free(bs);
    }
    /* the slot's padded form, with the problem the API builds */
    qgmm_buffer *bgot = qgmm_test_buf_poisoned(ob, POISON), *pgot = qgmm_test_buf_poisoned(pb, POISON);
    {
        const qgmm_tensor out = qgmm_tensor_make(bgot, 0, QGMM_BF16, 2, ps);
        qgmm_cast_problem p;
        qgmm_cast_operand o;
        const qgmm_mxfp8_params mp = {0, k->mode, QGMM_SCALES_PLAIN};
        qgmm_mx_round_trip_problem_make(&mp, k->fp8, &out, &out, &p, &o); /* the padded rows, x read through g */
        p.x.at.buffer = bx;
        p.x.at.offset = 0;
        p.x.s_o = 1;
        p.x.s_r = D;
        const qgmm_pad_gather g = qgmm_test_pad_gather(bad ? bo_bad : bo, k->G, k->T, 32, pgot);
        OK(vt->mx_round_trip(g_ctx, &p, &o, &g));
        const qgmm_status st = qgmm_synchronize(g_ctx);
        CHECK(st == (bad ? QGMM_ERR_BAD_OFFSETS : QGMM_OK), "%s%s: synchronize gave %s", k->name,
              bad ? " (bad offs)" : "", qgmm_status_string(st));
    }
    uint8_t *want = (uint8_t *)qgmm_test_fetch(bref, ob), *got = (uint8_t *)qgmm_test_fetch(bgot, ob);
    uint8_t *pwant = (uint8_t *)qgmm_test_fetch(pref, pb), *pgot_h = (uint8_t *)qgmm_test_fetch(pgot, pb);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < ob; ++i)
        if (got[i] != (bad ? POISON : want[i]) && !diff++) first = i;
    CHECK(diff == 0, "%s%s: out differs in %zu of %zu bytes, first at %zu", k->name, bad ? " (bad offs)" : "", diff,
          ob, first);
    if (!bad) CHECK(memcmp(pwant, pgot_h, pb) == 0, "%s: padded_offs differ", k->name);
    free(want);
    free(got);
    free(pwant);
    free(pgot_h);
    free(hx);
    qgmm_buffer_free(bx);
    qgmm_buffer_free(bo);
    qgmm_buffer_free(bo_bad);
    qgmm_buffer_free(bref);
    qgmm_buffer_free(pref);
    qgmm_buffer_free(bgot);
    qgmm_buffer_free(pgot);
}

static const pcase pcases[] = {
    {"padded e4m3 RCEIL, 5 ragged groups, one empty", 1000, 256, 5, {31, 31, 96, 500, 990}, QGMM_F8E4M3FN,
     QGMM_MX_RCEIL},
    {"padded e5m2 FLOOR, odd width", 300, 70, 3, {64, 65, 300}, QGMM_F8E5M2, QGMM_MX_FLOOR},
    {"padded e4m3 FLOOR, empty first", 257, 128, 4, {0, 33, 200, 250}, QGMM_F8E4M3FN, QGMM_MX_FLOOR},
};

static const kase cases[] = {
    {"rows 2D e4m3 FLOOR", 2, 1000, 512, 0, 1, 0, 0, QGMM_F8E4M3FN, QGMM_MX_FLOOR},
    {"rows 2D e5m2 RCEIL, unaligned", 2, 333, 96, 0, 1, 0, 2, QGMM_F8E5M2, QGMM_MX_RCEIL},
    {"rows 3D along K e4m3 RCEIL", 3, 5, 96, 224, 2, 0, 0, QGMM_F8E4M3FN, QGMM_MX_RCEIL},
    {"cols 3D along N e4m3 FLOOR", 3, 4, 128, 200, 1, 0, 0, QGMM_F8E4M3FN, QGMM_MX_FLOOR},
    {"cols 3D along N e5m2 RCEIL, odd lines", 3, 3, 64, 77, 1, 0, 0, QGMM_F8E5M2, QGMM_MX_RCEIL},
    {"cols 2D along R e4m3 RCEIL, unaligned", 2, 256, 130, 0, 0, 0, 2, QGMM_F8E4M3FN, QGMM_MX_RCEIL},
    {"cols 2D column-major along C e5m2 FLOOR", 2, 300, 64, 0, 1, 1, 0, QGMM_F8E5M2, QGMM_MX_FLOOR},
    {"rows 2D column-major along R e4m3 FLOOR", 2, 96, 70, 0, 0, 1, 0, QGMM_F8E4M3FN, QGMM_MX_FLOOR},
};

static int has_slot(const qgmm_backend_vtable *vt) { return vt->mx_round_trip != NULL; }

static int run_backend(const char *name)
{
    const qgmm_backend_vtable *vt = qgmm_test_plugin_open(name, "mx_round_trip", has_slot, &g_ctx);
    if (!vt) return 77;
    const long before = g_failures;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) run_case(vt, &cases[c], 0x9E3779B97F4A7C15ull + c);
    for (size_t c = 0; c < sizeof pcases / sizeof pcases[0]; ++c)
        for (int bad = 0; bad < 2; ++bad) run_padded(vt, &pcases[c], 0x2545F4914F6CDD1Dull + c, bad);
    printf("%s: %zu cases, %zu padded (good and bad offsets): %s\n", name, sizeof cases / sizeof cases[0],
           sizeof pcases / sizeof pcases[0], g_failures == before ? "ok" : "FAILED");
    qgmm_context_destroy(g_ctx);
    return 0;
}

int main(int argc, char **argv)
{
    const char *all[] = {"cuda", "hip", "hipemu"};
    int ran = 0;
    for (int i = 0; i < 3; ++i) {
        if (argc > 1 && strcmp(argv[1], all[i])) continue;
        if (run_backend(all[i]) == 0) ran = 1;
    }
    if (!ran) return 77;
    return g_failures ? 1 : 0;
}
