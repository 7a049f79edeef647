/*
 * cuda_casts_bench.c — qgmm-cuda-casts-bench: device-event timing of every CUDA cast,
 * layout and padding op at the ops-spec §8 shapes, through the public API.
 *
 * Per case: inputs filled with random (never constant) data, 5 warm-up runs, then N
 * timed runs each bracketed by qgmm events on the context's stream; the median is
 * reported. Bytes = every input element read once + every output byte written once
 * (the op's minimum traffic), so GB/s is comparable to the device-to-device copy
 * bandwidth measured in the same run (a qgmm_buffer_copy of 2 GiB: 2 x bytes / time).
 * Inputs of the 2D cases are >= 64 MiB (beyond the 50 MiB L2); smaller ones (padding at
 * dim 1536, scale swizzles) rotate over enough input copies to exceed 3 x L2.
 *
 * Output: one CSV line per case on stdout (op,shape,us,gbps,pct_copy,bytes) after a
 * "copy_gbps,<value>" line; bench/cuda/torch_peer.py joins it with the PyTorch peers.
 */
#include "qgmm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static qgmm_context *g_ctx;
static int g_reps = 50;
static double g_copy_gbps;
static const char *g_filter[16];
static int g_nfilter;
static int64_t g_groups; /* --shape2d's G: the jagged colwise and dual groups (0: 16 and 64) */

#define OK(call)                                                                                  \
    do {                                                                                          \
        qgmm_status s_ = (call);                                                                  \
        if (s_ != QGMM_OK) {                                                                      \
            fprintf(stderr, "FATAL %s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call,             \
                    qgmm_status_string(s_), qgmm_last_error(g_ctx));                              \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ buffers */
#define TILE_BYTES (64u << 20)
static uint8_t *g_tile;

static qgmm_buffer *rand_buf(size_t bytes, int bf16)
{
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(g_ctx, bytes, &b));
    if (!g_tile) {
        g_tile = (uint8_t *)malloc(TILE_BYTES);
        uint64_t s = 0x243F6A8885A308D3ull;
        for (size_t i = 0; i < TILE_BYTES; i += 2) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            /* bf16 with exponents in [2^-8, 2^8): finite, varied, no NaN */
            const uint16_t v = (uint16_t)(((s >> 16) & 0x807F) | ((0x77 + (s % 16)) << 7));
            g_tile[i] = (uint8_t)(v & 0xFF);
            g_tile[i + 1] = (uint8_t)(v >> 8);
        }
    }
    (void)bf16;
    for (size_t off = 0; off < bytes; off += TILE_BYTES) {
        const size_t n = bytes - off < TILE_BYTES ? bytes - off : TILE_BYTES;
        OK(qgmm_buffer_upload(b, off, g_tile, n));
    }
    return b;
}

static qgmm_buffer *out_buf(size_t bytes)
{
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(g_ctx, bytes ? bytes : 16, &b));
    OK(qgmm_buffer_fill(b, 0, bytes ? bytes : 16, 0x5A));
    return b;
}

static qgmm_tensor T(qgmm_buffer *b, qgmm_dtype t, int rank, int64_t d0, int64_t d1, int64_t d2)
{
    const int64_t s[3] = {d0, d1, d2};
    return qgmm_tensor_make(b, 0, t, rank, s);
}

static qgmm_buffer *offs_buf(int64_t extent, int64_t G, int64_t multiple, unsigned seed)
{
    /* jagged sizes (random splits, multiples of `multiple`), last group takes the rest */
    int32_t *o = (int32_t *)malloc((size_t)G * 4);
    int64_t acc = 0;
    for (int64_t g = 0; g < G; ++g) {
        seed = seed * 1103515245u + 12345u;
        const int64_t mean = extent / G;
        int64_t sz = mean / 2 + (int64_t)((seed >> 8) % (unsigned)(mean > 0 ? mean : 1));
        sz = sz / multiple * multiple;
        if (g == G - 1 || acc + sz > extent) sz = extent - acc;
        acc += sz;
        o[g] = (int32_t)acc;
    }
    qgmm_buffer *b;
    OK(qgmm_buffer_alloc(g_ctx, (size_t)G * 4, &b));
    OK(qgmm_buffer_upload(b, 0, o, (size_t)G * 4));
    free(o);
    return b;
}

/* ------------------------------------------------------------------ timing */
typedef qgmm_status (*run_fn)(void *ud, int rot);

static void bench(const char *op, const char *shape, double bytes, run_fn fn, void *ud, int nrot)
{
    char key[256];
    snprintf(key, sizeof key, "%s %s", op, shape);
    if (g_nfilter) {
        int hit = 0;
        for (int i = 0; i < g_nfilter; ++i) hit |= strstr(key, g_filter[i]) != NULL;
        if (!hit) return;
    }
    qgmm_event *e0, *e1;
    OK(qgmm_event_create(g_ctx, &e0));
    OK(qgmm_event_create(g_ctx, &e1));
    for (int i = 0; i < 5; ++i) {
        const qgmm_status s = fn(ud, i % nrot);
        if (s != QGMM_OK) {
            printf("%s,%s,NA,NA,NA,%.0f,%s\n", op, shape, bytes, qgmm_status_string(s));
            fprintf(stderr, "%s %s: %s\n", op, shape, qgmm_last_error(g_ctx));
            qgmm_event_destroy(e0);
            qgmm_event_destroy(e1);
            return;
        }
    }
    OK(qgmm_synchronize(g_ctx));
    double *ms = (double *)malloc(sizeof(double) * (size_t)g_reps);
    for (int i = 0; i < g_reps; ++i) {
        OK(qgmm_event_record(e0));
        OK(fn(ud, i % nrot));
        OK(qgmm_event_record(e1));
        OK(qgmm_event_elapsed_ms(e0, e1, &ms[i]));
    }
    const qgmm_status s = qgmm_synchronize(g_ctx);
    qsort(ms, (size_t)g_reps, sizeof(double), cmp_d);
    const double med = ms[g_reps / 2];
    const double gbps = bytes / (med * 1e-3) / 1e9;
    printf("%s,%s,%.2f,%.1f,%.1f,%.0f,%s\n", op, shape, med * 1e3, gbps, 100.0 * gbps / g_copy_gbps, bytes,
           s == QGMM_OK ? "ok" : qgmm_status_string(s));
    fflush(stdout);
    free(ms);
    qgmm_event_destroy(e0);
    qgmm_event_destroy(e1);
}

static qgmm_status run_copy(void *ud, int rot)
{
    qgmm_buffer **b = (qgmm_buffer **)ud;
    (void)rot;
    return qgmm_buffer_copy(b[1], 0, b[0], 0, qgmm_buffer_size(b[0]));
}

/* ------------------------------------------------------------------ 2D casts */
typedef struct c2 {
    int64_t M, K;
    qgmm_tensor x, q, qcol, s, deq;
    qgmm_buffer *sbuf;
    qgmm_mxfp8_params mx;
    qgmm_fp8_rowwise_params rw;
    qgmm_fp8_blockwise_params bw;
    qgmm_tensor offs;
    qgmm_tensor q1, s1; /* the second q and scales of the dual form */
} c2;

static qgmm_status r_mx(void *ud, int rot)
{
    c2 *c = (c2 *)ud;
    (void)rot;
    return qgmm_quantize_mxfp8(g_ctx, &c->mx, &c->x, c->mx.block_dim == 0 ? &c->qcol : &c->q, &c->s);
}
static qgmm_status r_rw(void *ud, int rot)
{
    c2 *c = (c2 *)ud;
    (void)rot;
    return qgmm_quantize_fp8_rowwise(g_ctx, &c->rw, &c->x, c->offs.buffer ? &c->offs : NULL,
                                     c->rw.reduce_dim == 0 ? &c->qcol : &c->q, &c->s);
}
static qgmm_status r_bw(void *ud, int rot)
{
    c2 *c = (c2 *)ud;
    (void)rot;
    return qgmm_quantize_fp8_blockwise(g_ctx, &c->bw, &c->x, &c->q, &c->s);
}
static qgmm_status r_deq(void *ud, int rot)
{
    c2 *c = (c2 *)ud;
    (void)rot;
    qgmm_quant_format f;
    memset(&f, 0, sizeof f);
    f.kind = QGMM_QUANT_MXFP8;
    f.mx = c->mx;
    return qgmm_dequantize(g_ctx, &f, &c->q, &c->s, NULL, &c->deq);
}

static qgmm_status r_dual(void *ud, int rot)
{
    c2 *c = (c2 *)ud;
    (void)rot;
    return qgmm_quantize_fp8_rowwise_dual(g_ctx, &c->rw, &c->x, &c->qcol, &c->s, &c->rw, &c->x, &c->q1, &c->s1,
                                          &c->offs);
}

/* jagged colwise over token groups (x = (tokens, dim), q column-major) with G groups */
static void case_jagged_colwise(c2 *c, const char *shape, int64_t G, double in, double qbytes)
{
    char op[64];
    qgmm_buffer *ob = offs_buf(c->M, G, 16, 11);
    c->offs = T(ob, QGMM_I32, 1, G, 0, 0);
    c->rw = (qgmm_fp8_rowwise_params){0, 0, QGMM_SCALE_RECIPROCAL};
    c->s = T(c->sbuf, QGMM_F32, 2, G, c->K, 0);
    snprintf(op, sizeof op, "fp8_jagged_colwise_g%lld", (long long)G);
    bench(op, shape, in + qbytes + 4.0 * G * c->K, r_rw, c, 1);
    memset(&c->offs, 0, sizeof c->offs);
    qgmm_buffer_free(ob);
}

static void cases_2d(int64_t M, int64_t K, int f32)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld%s", (long long)M, (long long)K, f32 ? ".f32" : "");
    const qgmm_dtype xt = f32 ? QGMM_F32 : QGMM_BF16;
    const int64_t esz = f32 ? 4 : 2;
    c2 c;
    memset(&c, 0, sizeof c);
    c.M = M;
    c.K = K;
    qgmm_buffer *xb = rand_buf((size_t)(M * K * esz), 1);
    qgmm_buffer *qb = out_buf((size_t)(M * K));
    c.sbuf = out_buf((size_t)(M + 128 * 64) * (size_t)(K / 32 + 4) * 4 + (size_t)M * 4 * 64);
    c.x = T(xb, xt, 2, M, K, 0);
    c.q = T(qb, QGMM_F8E4M3FN, 2, M, K, 0);
    c.qcol = qgmm_tensor_make_colmajor(qb, 0, QGMM_F8E4M3FN, M, K);
    const double in = (double)esz * M * K, qbytes = (double)M * K;

    /* MXFP8 dim0 FLOOR plain, RCEIL blocked; dim1 FLOOR (transposed output) */
    c.mx = (qgmm_mxfp8_params){1, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
    c.s = T(c.sbuf, QGMM_E8M0, 2, M, K / 32, 0);
    bench("mxfp8_dim0_floor", shape, in + qbytes + qbytes / 32, r_mx, &c, 1);
    c.mx = (qgmm_mxfp8_params){1, QGMM_MX_RCEIL, QGMM_SCALES_BLOCKED};
    c.s = T(c.sbuf, QGMM_E8M0, 1, (int64_t)qgmm_blocked_scales_bytes(M, K / 32), 0, 0);
    bench("mxfp8_dim0_rceil_blocked", shape, in + qbytes + qbytes / 32, r_mx, &c, 1);
    if (!f32) {
        qgmm_buffer *db = out_buf((size_t)(M * K * 2));
        c.deq = T(db, QGMM_BF16, 2, M, K, 0);
        bench("dequant_mxfp8_dim0", shape, qbytes + qbytes / 32 + in, r_deq, &c, 1);
        qgmm_buffer_free(db);
    }
    c.mx = (qgmm_mxfp8_params){0, QGMM_MX_FLOOR, QGMM_SCALES_PLAIN};
    c.s = T(c.sbuf, QGMM_E8M0, 2, K, M / 32, 0);
    bench("mxfp8_dim1_floor", shape, in + qbytes + qbytes / 32, r_mx, &c, 1);
    c.mx = (qgmm_mxfp8_params){0, QGMM_MX_RCEIL, QGMM_SCALES_BLOCKED};
    c.s = T(c.sbuf, QGMM_E8M0, 1, (int64_t)qgmm_blocked_scales_bytes(K, M / 32), 0, 0);
    bench("mxfp8_dim1_rceil_blocked", shape, in + qbytes + qbytes / 32, r_mx, &c, 1);

    /* FP8 rowwise / colwise (transposed output) */
    c.rw = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_RECIPROCAL};
    c.s = T(c.sbuf, QGMM_F32, 1, M, 0, 0);
    bench("fp8_rowwise", shape, in + qbytes + 4.0 * M, r_rw, &c, 1);
    c.rw = (qgmm_fp8_rowwise_params){0, 0, QGMM_SCALE_RECIPROCAL};
    c.s = T(c.sbuf, QGMM_F32, 1, K, 0, 0);
    bench("fp8_colwise_t", shape, in + qbytes + 4.0 * K, r_rw, &c, 1);

    /* jagged per-group colwise over token groups, 16 and 64 groups; the dual form (two
     * tensors, one offs: here x twice into two q / scales) with 16 groups; --shape2d: both
     * with its G groups */
    if (g_groups) {
        case_jagged_colwise(&c, shape, g_groups, in, qbytes);
    } else {
        case_jagged_colwise(&c, shape, 16, in, qbytes);
        case_jagged_colwise(&c, shape, 64, in, qbytes);
    }
    {
        const int64_t G = g_groups ? g_groups : 16;
        qgmm_buffer *ob = offs_buf(M, G, 16, 11);
        qgmm_buffer *q2 = out_buf((size_t)(M * K));
        qgmm_buffer *s2 = out_buf((size_t)(G * K * 4));
        c.offs = T(ob, QGMM_I32, 1, G, 0, 0);
        c.rw = (qgmm_fp8_rowwise_params){0, 0, QGMM_SCALE_RECIPROCAL};
        c.s = T(c.sbuf, QGMM_F32, 2, G, K, 0);
        c.q1 = qgmm_tensor_make_colmajor(q2, 0, QGMM_F8E4M3FN, M, K);
        c.s1 = T(s2, QGMM_F32, 2, G, K, 0);
        char op[64];
        snprintf(op, sizeof op, "fp8_jagged_colwise_dual_g%lld", (long long)G);
        bench(op, shape, 2.0 * (in + qbytes + 4.0 * G * K), r_dual, &c, 1);
        memset(&c.offs, 0, sizeof c.offs);
        qgmm_buffer_free(ob);
        qgmm_buffer_free(q2);
        qgmm_buffer_free(s2);
    }
    {
        /* jagged rowwise: x viewed (dim, tokens) = (K, M) row-major with groups over M */
        const int64_t G = 16;
        qgmm_buffer *ob = offs_buf(M, G, 16, 11);
        c2 d = c;
        d.offs = T(ob, QGMM_I32, 1, G, 0, 0);
        d.x = T(xb, xt, 2, K, M, 0);
        d.q = T(qb, QGMM_F8E4M3FN, 2, K, M, 0);
        d.rw = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_RECIPROCAL};
        d.s = T(c.sbuf, QGMM_F32, 2, G, K, 0);
        char sh2[64];
        snprintf(sh2, sizeof sh2, "%lldx%lld%s", (long long)K, (long long)M, f32 ? ".f32" : "");
        bench("fp8_jagged_rowwise_g16", sh2, in + qbytes + 4.0 * G * K, r_rw, &d, 1);
        qgmm_buffer_free(ob);
    }

    /* blockwise 1x128 (DeepGEMM / torchao activations) */
    c.bw.block = QGMM_BLOCK_1X128;
    c.s = T(c.sbuf, QGMM_F32, 2, M, K / 128, 0);
    bench("fp8_blockwise_1x128", shape, in + qbytes + 4.0 * M * K / 128, r_bw, &c, 1);

    qgmm_buffer_free(xb);
    qgmm_buffer_free(qb);
    qgmm_buffer_free(c.sbuf);
}

/* ------------------------------------------------------------------ 3D weights */
static qgmm_status r_3d_rw(void *ud, int rot)
{
    c2 *c = (c2 *)ud;
    (void)rot;
    return qgmm_quantize_fp8_rowwise(g_ctx, &c->rw, &c->x, NULL, &c->qcol, &c->s);
}

/* The dual form of an MoE layer's wgrad: dy (M, K0) and x (M, K1), one offs of G token
 * groups, both q column-major (quantize_fp8_rowwise_dual dy x). */
typedef struct cdual {
    qgmm_fp8_rowwise_params rw;
    qgmm_tensor x[2], q[2], s[2], offs;
} cdual;

static qgmm_status r_dual2(void *ud, int rot)
{
    cdual *c = (cdual *)ud;
    (void)rot;
    return qgmm_quantize_fp8_rowwise_dual(g_ctx, &c->rw, &c->x[0], &c->q[0], &c->s[0], &c->rw, &c->x[1], &c->q[1],
                                          &c->s[1], &c->offs);
}

static void case_dual(int64_t M, int64_t K0, int64_t K1, int64_t G)
{
    char shape[96], op[64];
    snprintf(shape, sizeof shape, "%lldx%lld+%lldx%lld", (long long)M, (long long)K0, (long long)M, (long long)K1);
    snprintf(op, sizeof op, "fp8_jagged_colwise_dual_g%lld", (long long)G);
    cdual c;
    memset(&c, 0, sizeof c);
    c.rw = (qgmm_fp8_rowwise_params){0, 0, QGMM_SCALE_RECIPROCAL};
    qgmm_buffer *b[7];
    const int64_t K[2] = {K0, K1};
    for (int i = 0; i < 2; ++i) {
        b[3 * i] = rand_buf((size_t)(M * K[i] * 2), 1);
        b[3 * i + 1] = out_buf((size_t)(M * K[i]));
        b[3 * i + 2] = out_buf((size_t)(G * K[i] * 4));
        c.x[i] = T(b[3 * i], QGMM_BF16, 2, M, K[i], 0);
        c.q[i] = qgmm_tensor_make_colmajor(b[3 * i + 1], 0, QGMM_F8E4M3FN, M, K[i]);
        c.s[i] = T(b[3 * i + 2], QGMM_F32, 2, G, K[i], 0);
    }
    b[6] = offs_buf(M, G, 16, 11);
    c.offs = T(b[6], QGMM_I32, 1, G, 0, 0);
    bench(op, shape, (2.0 + 1.0) * M * (K0 + K1) + 4.0 * G * (K0 + K1), r_dual2, &c, 1);
    for (int i = 0; i < 7; ++i) qgmm_buffer_free(b[i]);
}

static void cases_3d(int64_t E, int64_t N, int64_t K)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)E, (long long)N, (long long)K);
    c2 c;
    memset(&c, 0, sizeof c);
    const double n = (double)E * N * K;
    qgmm_buffer *xb = rand_buf((size_t)n * 2, 1);
    qgmm_buffer *qb = out_buf((size_t)n);
    qgmm_buffer *sb = out_buf((size_t)(E * (N + 128) * (K / 32 + 4) + E * K * 4 + E * N * K / 16384 * 4 + 4096));
    c.x = T(xb, QGMM_BF16, 3, E, N, K);
    c.q = T(qb, QGMM_F8E4M3FN, 3, E, N, K);
    /* 3D transpose rhs: scale per (e, k) over N, q strides (N*K, 1, N) */
    c.qcol = c.q;
    c.qcol.strides[0] = N * K;
    c.qcol.strides[1] = 1;
    c.qcol.strides[2] = N;
    c.rw = (qgmm_fp8_rowwise_params){1, 0, QGMM_SCALE_RECIPROCAL};
    c.s = T(sb, QGMM_F32, 2, E, K, 0);
    bench("fp8_3d_transpose_rhs", shape, 3 * n + 4.0 * E * K, r_3d_rw, &c, 1);
    c.mx = (qgmm_mxfp8_params){2, QGMM_MX_FLOOR, QGMM_SCALES_BLOCKED};
    c.s = T(sb, QGMM_E8M0, 1, E * (int64_t)qgmm_blocked_scales_bytes(N, K / 32), 0, 0);
    bench("mxfp8_3d_dim0_blocked", shape, 3 * n + n / 32, r_mx, &c, 1);
    c.bw.block = QGMM_BLOCK_128X128;
    c.s = T(sb, QGMM_F32, 3, E, (N + 127) / 128, K / 128);
    bench("fp8_blockwise_128x128", shape, 3 * n + 4.0 * E * N * K / 16384, r_bw, &c, 1);
    if (N % 128 == 0) {
        /* the dgrad weights: 128x128 tiles of the (E, K, N) view of x into row-major (E, K, N) q */
        c.x.shape[1] = K;
        c.x.shape[2] = N;
        c.x.strides[1] = 1;
        c.x.strides[2] = K;
        c.q = T(qb, QGMM_F8E4M3FN, 3, E, K, N);
        c.s = T(sb, QGMM_F32, 3, E, K / 128, N / 128);
        bench("fp8_blockwise_128x128_xt", shape, 3 * n + 4.0 * E * N * K / 16384, r_bw, &c, 1);
    }
    qgmm_buffer_free(xb);
    qgmm_buffer_free(qb);
    qgmm_buffer_free(sb);
}

/* ------------------------------------------------------------------ layouts */
typedef struct cl {
    qgmm_tensor in[8], out[8], offs, starts;
    qgmm_blocked_variant v;
} cl;

static qgmm_status r_blk(void *ud, int rot)
{
    cl *c = (cl *)ud;
    return qgmm_scales_to_blocked(g_ctx, c->v, &c->in[rot], c->offs.buffer ? &c->offs : NULL, &c->out[rot],
                                  c->starts.buffer ? &c->starts : NULL);
}

static void cases_swizzle_3d(int64_t E, int64_t R, int64_t C)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)E, (long long)R, (long long)C);
    cl c;
    memset(&c, 0, sizeof c);
    c.v = QGMM_BLOCKED_3D;
    const size_t in_b = (size_t)(E * R * C), out_b = (size_t)E * qgmm_blocked_scales_bytes(R, C);
    int nrot = (int)(150.0e6 / (double)(in_b + out_b)) + 1;
    if (nrot > 8) nrot = 8;
    qgmm_buffer *ib[8], *ob[8];
    for (int i = 0; i < nrot; ++i) {
        ib[i] = rand_buf(in_b, 0);
        ob[i] = out_buf(out_b);
        c.in[i] = T(ib[i], QGMM_U8, 3, E, R, C);
        c.out[i] = T(ob[i], QGMM_U8, 1, (int64_t)out_b, 0, 0);
    }
    bench("swizzle_3d", shape, (double)in_b + (double)out_b, r_blk, &c, nrot);
    for (int i = 0; i < nrot; ++i) {
        qgmm_buffer_free(ib[i]);
        qgmm_buffer_free(ob[i]);
    }
}

static void cases_swizzle_mgroups(int64_t M, int64_t C, int64_t G)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld.g%lld", (long long)M, (long long)C, (long long)G);
    cl c;
    memset(&c, 0, sizeof c);
    c.v = QGMM_BLOCKED_M_GROUPS;
    const size_t in_b = (size_t)(M * C), out_b = qgmm_blocked_m_groups_bytes(M, C, G);
    int nrot = (int)(150.0e6 / (double)(in_b + out_b)) + 1;
    if (nrot > 8) nrot = 8;
    qgmm_buffer *ib[8], *ob[8];
    qgmm_buffer *offb = offs_buf(M, G, 16, 5);
    c.offs = T(offb, QGMM_I32, 1, G, 0, 0);
    for (int i = 0; i < nrot; ++i) {
        ib[i] = rand_buf(in_b, 0);
        ob[i] = out_buf(out_b);
        c.in[i] = T(ib[i], QGMM_U8, 2, M, C, 0);
        c.out[i] = T(ob[i], QGMM_U8, 1, (int64_t)out_b, 0, 0);
    }
    bench("swizzle_m_groups", shape, (double)in_b + (double)out_b, r_blk, &c, nrot);
    for (int i = 0; i < nrot; ++i) {
        qgmm_buffer_free(ib[i]);
        qgmm_buffer_free(ob[i]);
    }
    qgmm_buffer_free(offb);
}

/* ------------------------------------------------------------------ padding */
typedef struct cp {
    qgmm_tensor x[4], padded[4], unpadded[4], offs, pstart, poffs;
} cp;

static qgmm_status r_pad(void *ud, int rot)
{
    cp *c = (cp *)ud;
    return qgmm_pad_token_groups(g_ctx, 32, &c->x[rot], &c->offs, &c->padded[rot], &c->pstart, &c->poffs);
}
static qgmm_status r_unpad(void *ud, int rot)
{
    cp *c = (cp *)ud;
    return qgmm_unpad_token_groups(g_ctx, 32, &c->padded[rot], &c->offs, &c->unpadded[rot]);
}

static void cases_pad(int64_t T_, int64_t D, int64_t G)
{
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lld.g%lld", (long long)T_, (long long)D, (long long)G);
    cp c;
    memset(&c, 0, sizeof c);
    const int64_t bound = qgmm_padded_rows_bound(T_, G, 32);
    const size_t xb = (size_t)(T_ * D * 2), pb = (size_t)(bound * D * 2);
    int nrot = (int)(150.0e6 / (double)(xb + pb)) + 1;
    if (nrot > 4) nrot = 4;
    qgmm_buffer *bx[4], *bp[4], *bu[4];
    qgmm_buffer *offb = offs_buf(T_, G, 1, 3);
    qgmm_buffer *ps = out_buf((size_t)G * 4), *po = out_buf((size_t)G * 4);
    c.offs = T(offb, QGMM_I32, 1, G, 0, 0);
    c.pstart = T(ps, QGMM_I32, 1, G, 0, 0);
    c.poffs = T(po, QGMM_I32, 1, G, 0, 0);
    for (int i = 0; i < nrot; ++i) {
        bx[i] = rand_buf(xb, 1);
        bp[i] = out_buf(pb);
        bu[i] = out_buf(xb);
        c.x[i] = T(bx[i], QGMM_BF16, 2, T_, D, 0);
        c.padded[i] = T(bp[i], QGMM_BF16, 2, bound, D, 0);
        c.unpadded[i] = T(bu[i], QGMM_BF16, 2, T_, D, 0);
    }
    /* bytes: read the tokens once, write every padded row (padding included) */
    bench("pad_a32", shape, (double)xb + (double)pb, r_pad, &c, nrot);
    /* unpad reads only the rows it gathers */
    bench("unpad_a32", shape, 2.0 * (double)xb, r_unpad, &c, nrot);
    for (int i = 0; i < nrot; ++i) {
        qgmm_buffer_free(bx[i]);
        qgmm_buffer_free(bp[i]);
        qgmm_buffer_free(bu[i]);
    }
    qgmm_buffer_free(offb);
    qgmm_buffer_free(ps);
    qgmm_buffer_free(po);
}

int main(int argc, char **argv)
{
    int quick = 0, focus = 0;
    int64_t shape3d[3] = {0, 0, 0}, shape2d[2] = {0, 0}, dual[4] = {0, 0, 0, 0};
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: qgmm-cuda-casts-bench [--reps N] [--quick|--focus|--shape3d E,N,K|--shape2d M,K,G|\n"
                   "       --dual M,K0,K1,G] [--filter SUBSTR]...\n"
                   "Times every CUDA cast/layout/padding op at the ops-spec section 8 shapes with\n"
                   "device events (median of N runs after 5 warm-ups, default 50) and prints CSV:\n"
                   "op,shape,us,GB/s,%% of the measured device-to-device copy bandwidth,bytes,status.\n"
                   "--filter: only the cases whose \"op shape\" contains one of the SUBSTRs.\n"
                   "--quick: one shape per family (smoke). --focus: the casts only, at (65536, 5120) and\n"
                   "(16384, 7168) bf16, (32768, 5120) f32, 3D (16, 8192, 5120) / (16, 5120, 8192) bf16.\n"
                   "--shape3d E,N,K: only the 3D weight casts of (E, N, K) bf16 (e.g. 64,4096,7168).\n"
                   "--shape2d M,K,G: only the 2D casts of (M, K) bf16, the jagged colwise and dual\n"
                   "forms with G groups (e.g. 65536,2048,16: the wgrad casts of an MoE layer).\n"
                   "--dual M,K0,K1,G: only the dual jagged colwise form of (M, K0) and (M, K1) bf16 with\n"
                   "G groups (e.g. 16384,2048,7168,8: quantize_fp8_rowwise_dual dy x of an MoE wgrad).\n"
                   "Exit 77 without a CUDA device.\n");
            return 0;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            g_reps = atoi(argv[++i]);
            if (g_reps < 1) g_reps = 1;
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--focus")) {
            focus = 1;
        } else if (!strcmp(argv[i], "--shape3d") && i + 1 < argc) {
            long long e_, n_, k_;
            if (sscanf(argv[++i], "%lld,%lld,%lld", &e_, &n_, &k_) != 3 || e_ < 1 || n_ < 1 || k_ < 128 ||
                k_ % 128 != 0) {
                fprintf(stderr, "--shape3d wants E,N,K (positive, K a multiple of 128), got %s\n", argv[i]);
                return 2;
            }
            shape3d[0] = e_;
            shape3d[1] = n_;
            shape3d[2] = k_;
        } else if (!strcmp(argv[i], "--shape2d") && i + 1 < argc) {
            long long m_, k_, g_;
            if (sscanf(argv[++i], "%lld,%lld,%lld", &m_, &k_, &g_) != 3 || m_ < 1 || k_ < 128 || k_ % 128 != 0 ||
                g_ < 1 || g_ > m_) {
                fprintf(stderr, "--shape2d wants M,K,G (K a multiple of 128, 1 <= G <= M), got %s\n", argv[i]);
                return 2;
            }
            shape2d[0] = m_;
            shape2d[1] = k_;
            g_groups = g_;
        } else if (!strcmp(argv[i], "--dual") && i + 1 < argc) {
            long long m_, k0_, k1_, g_;
            if (sscanf(argv[++i], "%lld,%lld,%lld,%lld", &m_, &k0_, &k1_, &g_) != 4 || m_ < 1 || k0_ < 128 ||
                k0_ % 128 != 0 || k1_ < 128 || k1_ % 128 != 0 || g_ < 1 || g_ > m_) {
                fprintf(stderr, "--dual wants M,K0,K1,G (K0, K1 multiples of 128, 1 <= G <= M), got %s\n", argv[i]);
                return 2;
            }
            dual[0] = m_;
            dual[1] = k0_;
            dual[2] = k1_;
            dual[3] = g_;
        } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
            if (g_nfilter == 16) {
                fprintf(stderr, "at most 16 --filter arguments\n");
                return 2;
            }
            g_filter[g_nfilter++] = argv[++i];
        } else {
            fprintf(stderr, "unknown argument %s (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (qgmm_context_create("cuda", 0, &g_ctx) != QGMM_OK) {
        fprintf(stderr, "cuda backend unavailable: %s\n", qgmm_last_error(NULL));
        return 77;
    }
    fprintf(stderr, "%s\n", qgmm_context_describe(g_ctx));
    {
        qgmm_buffer *b[2];
        const size_t bytes = (size_t)2 << 30;
        b[0] = rand_buf(bytes, 0);
        b[1] = out_buf(bytes);
        const int nf = g_nfilter;
        g_nfilter = 0;
        g_copy_gbps = 1.0;
        bench("copy_d2d", "2GiB", 2.0 * (double)bytes, run_copy, b, 1);
        g_nfilter = nf;
        /* re-measure to get the number itself */
        qgmm_event *e0, *e1;
        OK(qgmm_event_create(g_ctx, &e0));
        OK(qgmm_event_create(g_ctx, &e1));
        double ms[21];
        for (int i = 0; i < 21; ++i) {
            OK(qgmm_event_record(e0));
            OK(run_copy(b, 0));
            OK(qgmm_event_record(e1));
            OK(qgmm_event_elapsed_ms(e0, e1, &ms[i]));
        }
        qsort(ms, 21, sizeof(double), cmp_d);
        g_copy_gbps = 2.0 * (double)bytes / (ms[10] * 1e-3) / 1e9;
        printf("copy_gbps,%.1f\n", g_copy_gbps);
        qgmm_event_destroy(e0);
        qgmm_event_destroy(e1);
        qgmm_buffer_free(b[0]);
        qgmm_buffer_free(b[1]);
    }
    printf("op,shape,us,gbps,pct_copy,bytes,status\n");
    const int64_t toks[3] = {16384, 65536, 131072}, dims[3] = {2048, 5120, 7168};
    if (dual[0]) {
        case_dual(dual[0], dual[1], dual[2], dual[3]);
        qgmm_context_destroy(g_ctx);
        free(g_tile);
        return 0;
    }
    if (shape2d[0]) {
        cases_2d(shape2d[0], shape2d[1], 0);
        qgmm_context_destroy(g_ctx);
        free(g_tile);
        return 0;
    }
    if (shape3d[0]) {
        cases_3d(shape3d[0], shape3d[1], shape3d[2]);
        qgmm_context_destroy(g_ctx);
        free(g_tile);
        return 0;
    }
    if (focus) {
        cases_2d(65536, 5120, 0);
        cases_2d(16384, 7168, 0);
        cases_2d(32768, 5120, 1);
        cases_3d(16, 8192, 5120);
        cases_3d(16, 5120, 8192);
        qgmm_context_destroy(g_ctx);
        free(g_tile);
        return 0;
    }
    for (int t = 0; t < 3; ++t)
        for (int d = 0; d < 3; ++d) {
            if (quick && !(t == 0 && d == 2)) continue;
            cases_2d(toks[t], dims[d], 0);
        }
    if (!quick) cases_2d(32768, 5120, 1);
    const int64_t Es[3] = {1, 16, 128};
    for (int e = 0; e < 3; ++e) {
        if (quick && e != 1) continue;
        cases_3d(Es[e], 8192, 5120);
        cases_3d(Es[e], 5120, 8192);
    }
    const int64_t sE[5] = {1, 2, 4, 8, 16};
    for (int e = 0; e < 5; ++e) {
        if (quick && e != 4) continue;
        cases_swizzle_3d(sE[e], 8192, 5120 / 32);
        cases_swizzle_3d(sE[e], 5120, 8192 / 32);
    }
    for (int t = 0; t < 3; ++t) {
        if (quick && t) continue;
        cases_swizzle_mgroups(toks[t], 5120 / 32, 16);
        cases_swizzle_mgroups(toks[t], 7168 / 32, 64);
    }
    const int64_t pd[4] = {1536, 2048, 5120, 7168}, pg[4] = {1, 4, 8, 16};
    for (int d = 0; d < 4; ++d)
        for (int g = 0; g < 4; ++g) {
            if (quick && !(d == 3 && g == 3)) continue;
            cases_pad(16384, pd[d], pg[g]);
        }
    qgmm_context_destroy(g_ctx);
    free(g_tile);
    return 0;
}
