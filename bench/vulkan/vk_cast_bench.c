/*
 * vk_cast_bench.c — device time and bandwidth of the Vulkan backend's casts and token-group
 * padding on inputs of >= 256 MB, over the public API, with qgmm_event timestamps: warm-up,
 * then the median of --iters individually timed runs. Bytes = input read + q written +
 * scales written (pad: x read + every output row written; unpad: the real rows read and
 * written). Also times qgmm_buffer_copy (vkCmdCopyBuffer) of 1 GiB, counted as read + write.
 * The PyTorch copy_ baseline is timed by bench/vulkan/device_run.sh in the same call.
 *
 * --verify runs every op once more on a cpu context and compares q, scales and padded
 * outputs byte for byte with the Vulkan ones (exit status 1 on a difference) (the conformance suite is the numerics proof;
 * this checks the big shapes and the fast paths' wide lanes on the driver being timed).
 * With --exhaustive, f32 scales of slices holding NaNs of different payloads may differ
 * in the payload (codec.glsl's amax_combine keeps the largest, the CPU the first): the
 * documented exception; every q byte must still match.
 * --exhaustive fills x with every bf16 bit pattern (NaN, inf, zeros, subnormals included,
 * permuted per row) instead of random finite non-zero values.
 *
 * Besides the casts of the fast paths: colwise (reduce_dim 0), jagged rowwise / colwise
 * over 16 random groups, the 3D per-(e, c) cast with q transposed per expert (the dgrad
 * weights) and the MXFP8 3D dim1 cast.
 *
 * usage: vk_cast_bench [--rows M] [--cols K] [--iters N] [--batch B] [--ops I,J,...] [--f32] [--verify] [--exhaustive]
 *        (default 32768 x 5120 bf16 = 335 MB, 20 iterations)
 * build: gcc -O2 -Iapi bench/vulkan/vk_cast_bench.c -L<build>/lib -lqgmm -lm -o vk_cast_bench
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RNG_SEED 0x2545F4914F6CDD1Dull
#include "vk_bench_util.h"

enum { OP_ROWWISE, OP_MX_FLOOR, OP_MX_RCEIL, OP_MX_DIM1, OP_BW_1X128, OP_BW_128, OP_PAD, OP_UNPAD,
       OP_COLWISE, OP_JAG_ROW, OP_JAG_COL, OP_3D_T, OP_MX3D_DIM1, OP_COUNT };
static const char *const op_name[OP_COUNT] = {
    "FP8 rowwise e4m3fn, reciprocal scales", "MXFP8 dim0 FLOOR, blocked scales",
    "MXFP8 dim0 RCEIL, blocked scales",      "MXFP8 dim1 FLOOR, column-major q, plain scales",
    "FP8 blockwise 1x128",                   "FP8 blockwise 128x128",
    "pad token groups (G 16, A 32)",         "unpad token groups (G 16, A 32)",
    "FP8 colwise (reduce_dim 0)",            "FP8 jagged rowwise (16 column groups)",
    "FP8 jagged colwise (16 row groups), column-major q",    "FP8 3D per (e, c), q transposed per expert (E 16)",
    "MXFP8 3D dim1 (E 16), q transposed per expert"};

/* ops past OP_UNPAD read x twice where a whole reduction does not fit in registers: their
 * bytes are still the nominal ones (x read once) */

enum { G_PAD = 16, A_PAD = 32 };

/* --f32: the casts read an f32 x (the same bf16 values, widened); pad and unpad keep bf16 */
static int g_f32;
static int g_batch = 1; /* --batch: ops per timed pair of events (the median is per op) */
static qgmm_dtype x_dtype(void) { return g_f32 ? QGMM_F32 : QGMM_BF16; }

/* One context's buffers for every op (the same sizes on vulkan and cpu). */
typedef struct bufs {
    qgmm_context *ctx;
    qgmm_buffer *x, *xb, *q, *s, *offs, *offs_k, *pstart, *poffs, *padded, *unpadded; /* xb: bf16 x of pad */
} bufs;

typedef struct dims { int64_t M, K, P; size_t sbytes; } dims;

static qgmm_buffer *alloc(qgmm_context *ctx, size_t bytes)
{
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(ctx, bytes, &b));
    return b;
}

static void make_bufs(bufs *b, qgmm_context *ctx, const dims *d, const uint16_t *x, const int32_t *offs,
                      const int32_t *offs_k)
{
    const size_t mk = (size_t)(d->M * d->K);
    b->ctx = ctx;
    b->xb = alloc(ctx, 2 * mk);
    OK(qgmm_buffer_upload(b->xb, 0, x, 2 * mk));
    b->x = b->xb;
    if (g_f32) {
        float *xf = malloc(4 * mk);
        for (size_t i = 0; i < mk; ++i) {
            const uint32_t bits = (uint32_t)x[i] << 16; /* bf16 -> f32: exact */
            memcpy(&xf[i], &bits, 4);
        }
        b->x = alloc(ctx, 4 * mk);
        OK(qgmm_buffer_upload(b->x, 0, xf, 4 * mk));
        free(xf);
    }
    b->q = alloc(ctx, mk);
    b->s = alloc(ctx, d->sbytes);
    b->offs = alloc(ctx, 4 * G_PAD);
    OK(qgmm_buffer_upload(b->offs, 0, offs, 4 * G_PAD));
    b->offs_k = alloc(ctx, 4 * G_PAD);
    OK(qgmm_buffer_upload(b->offs_k, 0, offs_k, 4 * G_PAD));
    b->pstart = alloc(ctx, 4 * G_PAD);
    b->poffs = alloc(ctx, 4 * G_PAD);
    b->padded = alloc(ctx, (size_t)(2 * d->P * d->K));
    b->unpadded = alloc(ctx, 2 * mk);
}

static void free_bufs(bufs *b)
{
    qgmm_buffer *all[] = {b->xb, b->q, b->s, b->offs, b->offs_k, b->pstart, b->poffs, b->padded, b->unpadded};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) qgmm_buffer_free(all[i]);
    if (b->x != b->xb) qgmm_buffer_free(b->x);
}

/* Bytes the op moves (read + written) with a bf16 x. */
static double op_bytes_bf16(int op, const dims *d)
{
    const double mk = (double)d->M * (double)d->K;
    switch (op) {
    case OP_ROWWISE: return 3 * mk + 4.0 * (double)d->M;
    case OP_MX_FLOOR:
    case OP_MX_RCEIL: return 3 * mk + (double)qgmm_blocked_scales_bytes(d->M, d->K / 32);
    case OP_MX_DIM1: return 3 * mk + mk / 32;
    case OP_BW_1X128: return 3 * mk + 4 * mk / 128;
    case OP_BW_128: return 3 * mk + 4 * mk / (128.0 * 128.0);
    case OP_PAD: return 2 * mk + 2.0 * (double)d->P * (double)d->K;
    case OP_COLWISE: return 3 * mk + 4.0 * (double)d->K;
    case OP_JAG_ROW: return 3 * mk + 4.0 * G_PAD * (double)d->M;
    case OP_JAG_COL: return 3 * mk + 4.0 * G_PAD * (double)d->K;
    case OP_3D_T: return 3 * mk + 4.0 * G_PAD * (double)d->K;
    case OP_MX3D_DIM1: return 3 * mk + mk / 32;
    default: return 4 * mk;
    }
}

/* Bytes the op moves: an f32 x adds 2 bytes per element read. */
static double op_bytes(int op, const dims *d)
{
    const double extra = g_f32 && op != OP_PAD && op != OP_UNPAD ? 2.0 * (double)d->M * (double)d->K : 0;
    return op_bytes_bf16(op, d) + extra;
}

/* Enqueues op on b's context. */
static void enqueue(int op, const bufs *b, const dims *d)
{
    const int64_t M = d->M, K = d->K;
    const int64_t shx[2] = {M, K}, shg[1] = {G_PAD}, shp[2] = {d->P, K};
    const qgmm_tensor x = qgmm_tensor_make(b->x, 0, x_dtype(), 2, shx), xb = qgmm_tensor_make(b->xb, 0, QGMM_BF16, 2, shx);
    const qgmm_tensor q = qgmm_tensor_make(b->q, 0, QGMM_F8E4M3FN, 2, shx);
    qgmm_tensor s;
    switch (op) {
    case OP_ROWWISE: {
        const qgmm_fp8_rowwise_params p = {1, 0, QGMM_SCALE_RECIPROCAL};
        const int64_t sh[1] = {M};
        s = qgmm_tensor_make(b->s, 0, QGMM_F32, 1, sh);
        OK(qgmm_quantize_fp8_rowwise(b->ctx, &p, &x, NULL, &q, &s));
        break;
    }
    case OP_MX_FLOOR:
    case OP_MX_RCEIL: {
        const qgmm_mxfp8_params p = {1, op == OP_MX_RCEIL ? QGMM_MX_RCEIL : QGMM_MX_FLOOR, QGMM_SCALES_BLOCKED};
        const int64_t sh[1] = {(int64_t)qgmm_blocked_scales_bytes(M, K / 32)};
        s = qgmm_tensor_make(b->s, 0, QGMM_E8M0, 1, sh);
        OK(qgmm_quantize_mxfp8(b->ctx, &p, &x, &q, &s));
        break;
    }
    case OP_MX_DIM1: {
        const qgmm_mxfp8_params p = {0, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
        const int64_t sh[2] = {K, M / 32};
        const qgmm_tensor qc = qgmm_tensor_make_colmajor(b->q, 0, QGMM_F8E4M3FN, M, K);
        s = qgmm_tensor_make(b->s, 0, QGMM_E8M0, 2, sh);
        OK(qgmm_quantize_mxfp8(b->ctx, &p, &x, &qc, &s));
        break;
    }
    case OP_BW_1X128:
    case OP_BW_128: {
        const qgmm_fp8_blockwise_params p = {op == OP_BW_128 ? QGMM_BLOCK_128X128 : QGMM_BLOCK_1X128};
        size_t bytes;
        OK(qgmm_blockwise_scales_view(p.block, QGMM_BLOCKWISE_ROW_MAJOR, 2, shx, b->s, 0, &s, &bytes));
        OK(qgmm_quantize_fp8_blockwise(b->ctx, &p, &x, &q, &s));
        break;
    }
    case OP_COLWISE:
    case OP_JAG_ROW:
    case OP_JAG_COL: {
        const qgmm_fp8_rowwise_params p = {op == OP_JAG_ROW ? 1 : 0, 0, QGMM_SCALE_RECIPROCAL};
        const int64_t sh2[2] = {G_PAD, op == OP_JAG_ROW ? M : K}, sh1[1] = {K};
        s = op == OP_COLWISE ? qgmm_tensor_make(b->s, 0, QGMM_F32, 1, sh1) : qgmm_tensor_make(b->s, 0, QGMM_F32, 2, sh2);
        const qgmm_tensor offs = qgmm_tensor_make(op == OP_JAG_ROW ? b->offs_k : b->offs, 0, QGMM_I32, 1, shg);
        /* jagged colwise feeds the K-grouped wgrad GEMM: q column-major (tokens contiguous) */
        const qgmm_tensor qc = qgmm_tensor_make_colmajor(b->q, 0, QGMM_F8E4M3FN, M, K);
        OK(qgmm_quantize_fp8_rowwise(b->ctx, &p, &x, op == OP_COLWISE ? NULL : &offs, op == OP_JAG_COL ? &qc : &q, &s));
        break;
    }
    case OP_3D_T:
    case OP_MX3D_DIM1: { /* x (E, M/E, K); q (E, M/E, K) with strides (M/E*K, 1, M/E) */
        const int64_t R = M / G_PAD, sh3[3] = {G_PAD, R, K};
        const qgmm_tensor x3 = qgmm_tensor_make(b->x, 0, x_dtype(), 3, sh3);
        qgmm_tensor q3 = qgmm_tensor_make(b->q, 0, QGMM_F8E4M3FN, 3, sh3);
        q3.strides[1] = 1;
        q3.strides[2] = R;
        if (op == OP_3D_T) {
            const qgmm_fp8_rowwise_params p = {1, 0, QGMM_SCALE_RECIPROCAL};
            const int64_t sh[2] = {G_PAD, K};
            s = qgmm_tensor_make(b->s, 0, QGMM_F32, 2, sh);
            OK(qgmm_quantize_fp8_rowwise(b->ctx, &p, &x3, NULL, &q3, &s));
        } else {
            const qgmm_mxfp8_params p = {1, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
            const int64_t sh[3] = {G_PAD, K, R / 32};
            s = qgmm_tensor_make(b->s, 0, QGMM_E8M0, 3, sh);
            OK(qgmm_quantize_mxfp8(b->ctx, &p, &x3, &q3, &s));
        }
        break;
    }
    case OP_PAD: {
        const qgmm_tensor offs = qgmm_tensor_make(b->offs, 0, QGMM_I32, 1, shg);
        const qgmm_tensor ps = qgmm_tensor_make(b->pstart, 0, QGMM_I32, 1, shg);
        const qgmm_tensor po = qgmm_tensor_make(b->poffs, 0, QGMM_I32, 1, shg);
        const qgmm_tensor out = qgmm_tensor_make(b->padded, 0, QGMM_BF16, 2, shp);
        OK(qgmm_pad_token_groups(b->ctx, A_PAD, &xb, &offs, &out, &ps, &po));
        break;
    }
    case OP_UNPAD: {
        const qgmm_tensor offs = qgmm_tensor_make(b->offs, 0, QGMM_I32, 1, shg);
        const qgmm_tensor in = qgmm_tensor_make(b->padded, 0, QGMM_BF16, 2, shp);
        const qgmm_tensor out = qgmm_tensor_make(b->unpadded, 0, QGMM_BF16, 2, shx);
        OK(qgmm_unpad_token_groups(b->ctx, A_PAD, &in, &offs, &out));
        break;
    }
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median device ms of `iters` runs of op (after 3 warm-ups); op < 0 times the 1 GiB copy.
 * First the op runs back to back for at least 200 ms of device time: an idle H100 sits at a
 * low clock, and single synchronized runs after a pause were seen at a third of the speed
 * (the 1 GiB copy too) until the clock came up. */
static double time_op(int op, const bufs *b, const dims *d, int iters, qgmm_buffer *c0, qgmm_buffer *c1)
{
    for (double busy = 0; busy < 200.0;) {
        qgmm_event *e0, *e1;
        OK(qgmm_event_create(b->ctx, &e0));
        OK(qgmm_event_create(b->ctx, &e1));
        OK(qgmm_event_record(e0));
        for (int k = 0; k < 16; ++k) {
            if (op < 0) OK(qgmm_buffer_copy(c1, 0, c0, 0, qgmm_buffer_size(c0)));
            else enqueue(op, b, d);
        }
        OK(qgmm_event_record(e1));
        double t;
        OK(qgmm_event_elapsed_ms(e0, e1, &t));
        busy += t > 0 ? t : 1.0;
        qgmm_event_destroy(e0);
        qgmm_event_destroy(e1);
    }
    double *ms = calloc((size_t)iters, sizeof *ms);
    for (int i = -3; i < iters; ++i) {
        qgmm_event *e0, *e1;
        OK(qgmm_event_create(b->ctx, &e0));
        OK(qgmm_event_create(b->ctx, &e1));
        OK(qgmm_event_record(e0));
        for (int k = 0; k < g_batch; ++k) {
            if (op < 0) OK(qgmm_buffer_copy(c1, 0, c0, 0, qgmm_buffer_size(c0)));
            else enqueue(op, b, d);
        }
        OK(qgmm_event_record(e1));
        double t;
        OK(qgmm_event_elapsed_ms(e0, e1, &t));
        if (i >= 0) ms[i] = t / g_batch;
        qgmm_event_destroy(e0);
        qgmm_event_destroy(e1);
    }
    qsort(ms, (size_t)iters, sizeof *ms, cmp_double);
    const double med = iters % 2 ? ms[iters / 2] : 0.5 * (ms[iters / 2 - 1] + ms[iters / 2]);
    free(ms);
    return med;
}

/* Byte mismatches between [0, bytes) of two buffers of different contexts. */
static size_t diff_bytes(qgmm_buffer *a, qgmm_buffer *b, size_t bytes)
{
    uint8_t *ha = malloc(bytes), *hb = malloc(bytes);
    OK(qgmm_buffer_download(a, 0, ha, bytes));
    OK(qgmm_buffer_download(b, 0, hb, bytes));
    size_t n = 0;
    for (size_t i = 0; i < bytes; ++i) n += ha[i] != hb[i];
    free(ha);
    free(hb);
    return n;
}

/* Compares every output of op between the two contexts (outputs poisoned first, so an
 * unwritten byte shows): mismatching bytes of the data output, and of the scales in *ns
 * (pad: of padded_offs). */
static size_t verify(int op, const bufs *v, const bufs *c, const dims *d, size_t *ns)
{
    const bufs *both[2] = {v, c};
    const size_t mk = (size_t)(d->M * d->K);
    for (int i = 0; i < 2; ++i) {
        OK(qgmm_buffer_fill(both[i]->q, 0, mk, 0xA5));
        OK(qgmm_buffer_fill(both[i]->s, 0, d->sbytes, 0xA5));
        if (op == OP_UNPAD) OK(qgmm_buffer_fill(both[i]->unpadded, 0, 2 * mk, 0xA5));
        if (op == OP_PAD) OK(qgmm_buffer_fill(both[i]->padded, 0, (size_t)(2 * d->P * d->K), 0xA5));
        enqueue(op, both[i], d);
    }
    *ns = 0;
    if (op == OP_PAD) {
        *ns = diff_bytes(v->poffs, c->poffs, 4 * G_PAD);
        return diff_bytes(v->padded, c->padded, (size_t)(2 * d->P * d->K));
    }
    if (op == OP_UNPAD) return diff_bytes(v->unpadded, c->unpadded, 2 * mk);
    *ns = diff_bytes(v->s, c->s, d->sbytes);
    return diff_bytes(v->q, c->q, mk);
}

int main(int argc, char **argv)
{
    dims d = {32768, 5120, 0, 0};
    int iters = 20, do_verify = 0, exhaustive = 0;
    unsigned long long want = ~0ull; /* --ops: which ops to time */
    int mismatched = 0;              /* --verify found a differing byte: exit 1 */
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--rows") && i + 1 < argc) d.M = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--cols") && i + 1 < argc) d.K = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) g_batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--verify")) do_verify = 1;
        else if (!strcmp(argv[i], "--f32")) g_f32 = 1;
        else if (!strcmp(argv[i], "--exhaustive")) exhaustive = 1;
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
            want = 0;
            for (char *t = argv[++i], *e; *t; t = *e ? e + 1 : e) {
                const long k = strtol(t, &e, 10);
                if (e == t || k < 0 || k >= OP_COUNT || (*e && *e != ',')) { fprintf(stderr, "--ops: indices 0..%d, comma-separated\n", OP_COUNT - 1); return 2; }
                want |= 1ull << k;
            }
        } else {
            printf("usage: vk_cast_bench [--rows M] [--cols K] [--iters N] [--batch B] [--ops I,J,...] [--f32] [--verify] [--exhaustive]\n"
                   "Vulkan casts and token-group padding on a bf16 (M, K) input (default 32768 x 5120,\n"
                   "335 MB): median device ms of N runs (default 20) after warm-up, GB/s of bytes read +\n"
                   "written, plus qgmm_buffer_copy of 1 GiB. --verify: compare every output byte with\n"
                   "the cpu backend; --exhaustive: x cycles through every bf16 bit pattern; --f32: the\n"
                   "casts read x as f32 (the same values; pad and unpad stay bf16). --batch: B runs back\n"
                   "to back between the two events of each timing (default 1), the time divided by B.\n"
                   "--ops: time only these (default all):\n");
            for (int k = 0; k < OP_COUNT; ++k) printf("  %2d  %s\n", k, op_name[k]);
            return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
        }
    }
    if (d.M % (128 * G_PAD) || d.K % 128 || iters < 1 || g_batch < 1) {
        fprintf(stderr, "rows must be a multiple of %d, cols of 128, iters and batch >= 1\n", 128 * G_PAD);
        return 2;
    }
    const size_t mk = (size_t)(d.M * d.K);
    d.P = qgmm_padded_rows_bound(d.M, G_PAD, A_PAD);
    d.sbytes = 4 * mk / 32 + 4096; /* the largest scales of any op (MX dim1 / 1x128 f32 / blocked) */

    uint16_t *x = malloc(2 * mk);
    for (size_t i = 0; i < mk; ++i) {
        if (exhaustive) {
            /* row r: pattern (i * 40503 + r * 977) mod 2^16 runs through all 65536 */
            const size_t r = i / (size_t)d.K;
            x[i] = (uint16_t)(i * 40503u + r * 977u);
        } else {
            /* finite, non-zero, |x| in [2^-20, 2^21): sign, 8-bit exponent 107..147, mantissa */
            const uint64_t v = rnd();
            x[i] = (uint16_t)((v & 0x8000) | ((107 + (v >> 16) % 41) << 7) | ((v >> 32) & 0x7F));
        }
    }
    int32_t offs[G_PAD], offs_k[G_PAD]; /* token groups over the rows; column groups (jagged rowwise) */
    for (int which = 0; which < 2; ++which) {
        const int64_t n = which ? d.K : d.M;
        int64_t left = n;
        for (int g = 0; g < G_PAD; ++g) {
            const int64_t share = g == G_PAD - 1 ? left : (int64_t)(rnd() % (uint64_t)(2 * n / G_PAD + 1));
            const int64_t sz = share < left ? share : left;
            left -= sz;
            (which ? offs_k : offs)[g] = (int32_t)(n - left);
        }
    }

    qgmm_context *vk, *cpu = NULL;
    OK(qgmm_context_create("vulkan", 0, &vk));
    const char *lanes = getenv("QGMM_VULKAN_CAST_LANES"), *enc = getenv("QGMM_VULKAN_CAST_ENC");
    const char *spec = getenv("QGMM_VULKAN_CAST_SPEC");
    printf("# %s\n# QGMM_VULKAN_CAST_LANES=%s QGMM_VULKAN_CAST_ENC=%s QGMM_VULKAN_CAST_SPEC=%s\n",
           qgmm_context_describe(vk), lanes ? lanes : "(unset)", enc ? enc : "(unset)", spec ? spec : "(unset)");
    printf("# x %s (%lld, %lld) = %.0f MB, %s data; median of %d after 3 warm-ups\n", g_f32 ? "f32" : "bf16",
           (long long)d.M, (long long)d.K, (g_f32 ? 4e-6 : 2e-6) * (double)mk, exhaustive ? "every-bf16-pattern" : "random finite non-zero", iters);
    bufs bv, bc;
    make_bufs(&bv, vk, &d, x, offs, offs_k);
    if (do_verify) {
        OK(qgmm_context_create("cpu", 0, &cpu));
        make_bufs(&bc, cpu, &d, x, offs, offs_k);
    }
    /* unpad reads what pad wrote */
    enqueue(OP_PAD, &bv, &d);
    if (do_verify) enqueue(OP_PAD, &bc, &d);

    { /* lift the clocks of an idle GPU first: a second of back-to-back casts. Measured after
         a PyTorch process exited, the first op's whole timing ran 5x slow without this. */
        double busy = 0;
        for (int round = 0; round < 400 && busy < 1000.0; ++round) {
            qgmm_event *e0, *e1;
            OK(qgmm_event_create(bv.ctx, &e0));
            OK(qgmm_event_create(bv.ctx, &e1));
            OK(qgmm_event_record(e0));
            for (int k = 0; k < 16; ++k) enqueue(0, &bv, &d);
            OK(qgmm_event_record(e1));
            double t;
            OK(qgmm_event_elapsed_ms(e0, e1, &t));
            busy += t;
            qgmm_event_destroy(e0);
            qgmm_event_destroy(e1);
        }
    }
    printf("| op | ms | GB/s |%s\n|---|---|---|%s\n", do_verify ? " bytes differing from cpu: q / scales |" : "",
           do_verify ? "---|" : "");
    for (int op = 0; op < OP_COUNT; ++op) {
        if (!(want >> op & 1)) continue;
        const double ms = time_op(op, &bv, &d, iters, NULL, NULL);
        printf("| %s | %.4f | %.0f |", op_name[op], ms, op_bytes(op, &d) / (ms * 1e6));
        if (do_verify) {
            size_t ns;
            const size_t nq = verify(op, &bv, &bc, &d, &ns);
            printf(" %zu / %zu |", nq, ns);
            /* --exhaustive: NaN payloads of f32 scales may differ (see the top) */
            if (nq || (ns && (!exhaustive || op == OP_PAD))) mismatched = 1;
        }
        printf("\n");
        fflush(stdout);
    }
    const size_t gib = (size_t)1 << 30;
    qgmm_buffer *c0 = alloc(vk, gib), *c1 = alloc(vk, gib);
    OK(qgmm_buffer_fill(c0, 0, gib, 0x3C));
    const double ms = time_op(-1, &bv, &d, iters, c0, c1);
    printf("| qgmm_buffer_copy 1 GiB (vkCmdCopyBuffer), read + write | %.4f | %.0f |%s\n", ms,
           2.0 * (double)gib / (ms * 1e6), do_verify ? " |" : "");
    qgmm_buffer_free(c0);
    qgmm_buffer_free(c1);
    free_bufs(&bv);
    if (cpu) {
        free_bufs(&bc);
        qgmm_context_destroy(cpu);
    }
    qgmm_context_destroy(vk);
    free(x);
    return mismatched;
}
