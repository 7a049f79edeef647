/*
 * ep_bench — expert parallelism over NCCL, one process per GPU (docs/ep.md).
 *
 * Run without --rank, it starts --nranks copies of itself (rank i on CUDA device i, the NCCL
 * unique ids passed through --id-file) with NCCL_NVLS_ENABLE=0, and fails if any rank fails.
 * Each rank:
 *  1. check: route, dispatch (bf16, bf16 weighted, FP8 rowwise, MXFP8 with blocked scales)
 *     and combine (weighted to f32, plain to bf16) on the same global tokens give, byte for
 *     byte, what the CPU reference gives for this rank over the loopback transport (all ranks
 *     in this process, one thread each); uneven token counts, skewed routing, an expert with
 *     no tokens; a bad expert id on one rank is refused on every rank (BAD_OFFSETS), over a
 *     communicator qgmm creates from a unique id;
 *  2. bench: dispatch and combine of --tokens tokens of --dim columns, top --topk of
 *     --experts uniform experts, wire slots of --capacity x the balanced load, BF16 and FP8
 *     rowwise dispatch, against ncclAlltoAll of the same slot bytes on the same stream, over
 *     the caller's own communicator (qgmm_ep_comm_create_nccl).
 */
#include "qgmm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXR 8

static int failures;
#define CHECK(cond, ...) do { if (!(cond)) { ++failures; printf("FAIL rank %d: ", g_rank); printf(__VA_ARGS__); \
    printf("\n"); } } while (0)
#define TRY(call) do { qgmm_status s_ = (call); if (s_ != QGMM_OK) { printf("rank %d: %s: %s: %s\n", g_rank, #call, \
    qgmm_status_string(s_), qgmm_last_error(NULL)); exit(1); } } while (0)
#define CU(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { printf("rank %d: %s: %s\n", g_rank, #call, \
    cudaGetErrorString(e_)); exit(1); } } while (0)
#define NC(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) { printf("rank %d: %s: %s\n", g_rank, #call, \
    ncclGetErrorString(r_)); exit(1); } } while (0)

static int g_rank = -1;

typedef struct opts {
    int nranks, rank, reps;
    int64_t tokens, dim, experts, topk;
    double capacity;
    const char *id_file;
} opts;

static void usage(FILE *f)
{
    fprintf(f, "usage: ep_bench [--nranks N] [--tokens T] [--dim D] [--experts E] [--topk K] [--capacity F] [--reps R]\n"
               "  Expert-parallel dispatch/combine over NCCL, one process per GPU (N, default 2, GPUs).\n"
               "  Checks the CUDA results byte for byte against the CPU reference, then times dispatch +\n"
               "  combine (BF16 and FP8 rowwise dispatch) against ncclAlltoAll of the same bytes.\n"
               "  --tokens T    tokens per rank (default 4096)   --dim D      columns (default 7168)\n"
               "  --experts E   experts (default 64)             --topk K     experts per token (default 8)\n"
               "  --capacity F  wire slot rows as a multiple of the balanced load T*K/N (default 1.1)\n"
               "  --reps R      timed repetitions (default 20)\n"
               "  (--rank I --id-file F: one rank, as the launcher starts it)\n");
}

/* ---------------------------------------------------------------- data of the check */

enum { CT = 300, CD = 256, CE = 8, CK = 3, CALIGN = 32 };

static uint32_t hash(uint32_t x)
{
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}
static int64_t check_tokens(int r) { return CT - 77 * r; }
/* Skewed routing with expert 5 never chosen; the bytes of rank r's tensors. */
static void check_data(int r, int32_t *ids, uint16_t *xb, uint8_t *x8, float *s8, uint8_t *sm, uint16_t *w)
{
    const int64_t T = check_tokens(r);
    for (int64_t t = 0; t < T; ++t)
        for (int j = 0; j < CK; ++j) {
            uint32_t h = hash((uint32_t)(r * 100003 + t * 7 + j)) % 16;
            int e = h < 6 ? 0 : h < 9 ? 1 : (int)(h % CE);
            if (e == 5) e = 6;
            ids[t * CK + j] = e;
            w[t * CK + j] = (uint16_t)(0x3E00 + hash((uint32_t)(r * 7919 + t * CK + j)) % 0x200);
        }
    for (int64_t i = 0; i < T * CD; ++i) {
        const uint32_t h = hash((uint32_t)(r * 1000003 + i));
        xb[i] = (uint16_t)(0x3C00 + (h % 0x800) + ((h >> 20) & 1) * 0x8000);
        x8[i] = (uint8_t)(h >> 8) & 0x7E; /* finite e4m3 */
    }
    for (int64_t t = 0; t < T; ++t) s8[t] = 1.0f + (float)(hash((uint32_t)(r * 31 + t)) % 1000) / 997.0f;
    for (int64_t i = 0; i < T * CD / 32; ++i) sm[i] = (uint8_t)(120 + hash((uint32_t)(r * 131 + i)) % 16);
}

typedef struct result {
    size_t n[8];
    uint8_t *b[8];
} result;

static qgmm_buffer *up(qgmm_context *c, const void *p, size_t n)
{
    qgmm_buffer *b = NULL;
    TRY(qgmm_buffer_alloc(c, n ? n : 16, &b));
    if (n) TRY(qgmm_buffer_upload(b, 0, p, n));
    return b;
}
static qgmm_buffer *zeroed(qgmm_context *c, size_t n)
{
    qgmm_buffer *b = NULL;
    TRY(qgmm_buffer_alloc(c, n ? n : 16, &b));
    TRY(qgmm_buffer_fill(b, 0, n ? n : 16, 0xA5));
    return b;
}
static qgmm_tensor t2(qgmm_buffer *b, qgmm_dtype t, int64_t r, int64_t c)
{
    const int64_t s[2] = {r, c};
    return qgmm_tensor_make(b, 0, t, 2, s);
}
static qgmm_tensor t1(qgmm_buffer *b, qgmm_dtype t, int64_t n)
{
    return qgmm_tensor_make(b, 0, t, 1, &n);
}
static void keep(result *res, int i, qgmm_buffer *b, size_t n)
{
    res->n[i] = n;
    res->b[i] = malloc(n ? n : 1);
    TRY(qgmm_buffer_download(b, 0, res->b[i], n));
}

/* The check's steps on one rank; the same code runs on cuda over NCCL and on the CPU over
 * loopback. Returns qgmm_synchronize's status of the bad-id step. */
static qgmm_status check_rank(qgmm_ep_comm *comm, result *res)
{
    qgmm_context *c = qgmm_ep_comm_context(comm);
    const int r = qgmm_ep_comm_rank(comm);
    const int64_t T = check_tokens(r);
    int32_t ids[CT * CK];
    uint16_t xb[CT * CD], w[CT * CK];
    uint8_t x8[CT * CD], sm[CT * CD / 32];
    float s8[CT];
    check_data(r, ids, xb, x8, s8, sm, w);
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(CE, CK, CT, qgmm_ep_wire_row_bytes(QGMM_F32, CD, 0));
    pp.alignment = CALIGN;
    qgmm_ep_plan *plan = NULL;
    TRY(qgmm_ep_plan_create(comm, &pp, &plan));
    const int64_t R = qgmm_ep_plan_recv_rows(plan), L = qgmm_ep_plan_local_experts(plan);
    qgmm_buffer *bid = up(c, ids, sizeof ids), *bxb = up(c, xb, sizeof xb), *bw = up(c, w, sizeof w);
    qgmm_buffer *bx8 = up(c, x8, sizeof x8), *bs8 = up(c, s8, sizeof s8), *bsm = up(c, sm, sizeof sm);
    const qgmm_tensor tid = t2(bid, QGMM_I32, T, CK), txb = t2(bxb, QGMM_BF16, T, CD), tw = t2(bw, QGMM_BF16, T, CK);
    const qgmm_tensor tx8 = t2(bx8, QGMM_F8E4M3FN, T, CD), ts8 = t1(bs8, QGMM_F32, T);
    const qgmm_tensor tsm = t2(bsm, QGMM_E8M0, T, CD / 32);
    TRY(qgmm_ep_route(plan, &tid));
    const size_t mxb = qgmm_blocked_m_groups_bytes(R, CD / 32, L > 0 ? L : 1);
    qgmm_buffer *o0 = zeroed(c, (size_t)R * CD * 2), *o1 = zeroed(c, (size_t)R * CD * 2);
    qgmm_buffer *o2 = zeroed(c, (size_t)R * CD), *o3 = zeroed(c, (size_t)R * 4), *o4 = zeroed(c, (size_t)R * CD);
    qgmm_buffer *o5 = zeroed(c, mxb), *of = zeroed(c, (size_t)(L > 0 ? L : 1) * 4);
    qgmm_buffer *c0 = zeroed(c, (size_t)T * CD * 4), *c1 = zeroed(c, (size_t)T * CD * 2);
    const qgmm_tensor t_o0 = t2(o0, QGMM_BF16, R, CD), t_o1 = t2(o1, QGMM_BF16, R, CD);
    const qgmm_tensor t_o2 = t2(o2, QGMM_F8E4M3FN, R, CD), t_o3 = t1(o3, QGMM_F32, R);
    const qgmm_tensor t_o4 = t2(o4, QGMM_F8E4M3FN, R, CD), t_o5 = t1(o5, QGMM_E8M0, (int64_t)mxb);
    const qgmm_tensor t_of = t1(of, QGMM_I32, L);
    const qgmm_tensor t_c0 = t2(c0, QGMM_F32, T, CD), t_c1 = t2(c1, QGMM_BF16, T, CD);
    TRY(qgmm_ep_dispatch(plan, &txb, NULL, NULL, &t_o0, NULL, L > 0 ? &t_of : NULL));
    TRY(qgmm_ep_dispatch(plan, &txb, NULL, &tw, &t_o1, NULL, NULL));
    TRY(qgmm_ep_dispatch(plan, &tx8, &ts8, NULL, &t_o2, &t_o3, NULL));
    TRY(qgmm_ep_dispatch(plan, &tx8, &tsm, NULL, &t_o4, &t_o5, NULL));
    TRY(qgmm_ep_combine(plan, &t_o0, &tw, &t_c0));
    TRY(qgmm_ep_combine(plan, &t_o1, NULL, &t_c1));
    TRY(qgmm_synchronize(c));
    keep(res, 0, o0, (size_t)R * CD * 2);
    keep(res, 1, o1, (size_t)R * CD * 2);
    keep(res, 2, o2, (size_t)R * CD);
    keep(res, 3, o3, (size_t)R * 4);
    keep(res, 4, o5, mxb);
    keep(res, 5, of, (size_t)L * 4);
    keep(res, 6, c0, (size_t)T * CD * 4);
    keep(res, 7, c1, (size_t)T * CD * 2);
    /* a bad id on the last rank: every rank refuses the step */
    if (r == qgmm_ep_comm_nranks(comm) - 1) {
        ids[T / 2 * CK] = CE;
        TRY(qgmm_buffer_upload(bid, 0, ids, sizeof ids));
    }
    TRY(qgmm_ep_route(plan, &tid));
    TRY(qgmm_ep_dispatch(plan, &txb, NULL, NULL, &t_o0, NULL, NULL));
    const qgmm_status bad = qgmm_synchronize(c);
    qgmm_buffer *all[] = {bid, bxb, bw, bx8, bs8, bsm, o0, o1, o2, o3, o4, o5, of, c0, c1};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i) qgmm_buffer_free(all[i]);
    qgmm_ep_plan_destroy(plan);
    return bad;
}

typedef struct cpu_rank {
    qgmm_ep_comm *comm;
    result res;
    qgmm_status bad;
} cpu_rank;

static void *cpu_main(void *arg)
{
    cpu_rank *cr = arg;
    cr->bad = check_rank(cr->comm, &cr->res);
    return NULL;
}

static void check(const opts *o, qgmm_context *ctx, const void *qgmm_id)
{
    static const char *what[8] = {"bf16 dispatch", "bf16 weighted dispatch", "fp8 rowwise dispatch data",
                                  "fp8 rowwise dispatch scales", "mxfp8 blocked scales", "offs",
                                  "weighted combine f32", "plain combine bf16"};
    qgmm_ep_comm *comm = NULL;
    TRY(qgmm_ep_comm_create_nccl_id(ctx, qgmm_id, o->nranks, o->rank, &comm));
    CHECK(qgmm_ep_comm_rank(comm) == o->rank && qgmm_ep_comm_nranks(comm) == o->nranks, "communicator rank/size");
    result mine;
    memset(&mine, 0, sizeof mine);
    const qgmm_status bad = check_rank(comm, &mine);
    CHECK(bad == QGMM_ERR_BAD_OFFSETS, "a bad expert id on rank %d gave %s on cuda", o->nranks - 1,
          qgmm_status_string(bad));
    qgmm_ep_comm_destroy(comm);
    /* the reference: every rank on the CPU over loopback, this rank's results kept */
    qgmm_context *cc[MAXR];
    qgmm_ep_comm *lc[MAXR];
    cpu_rank cr[MAXR];
    pthread_t th[MAXR];
    for (int i = 0; i < o->nranks; ++i) TRY(qgmm_context_create("cpu", 0, &cc[i]));
    TRY(qgmm_ep_comm_create_loopback(o->nranks, cc, lc));
    for (int i = 0; i < o->nranks; ++i) {
        memset(&cr[i], 0, sizeof cr[i]);
        cr[i].comm = lc[i];
        pthread_create(&th[i], NULL, cpu_main, &cr[i]);
    }
    for (int i = 0; i < o->nranks; ++i) pthread_join(th[i], NULL);
    const result *ref = &cr[o->rank].res;
    CHECK(cr[o->rank].bad == QGMM_ERR_BAD_OFFSETS, "the CPU reference refused the bad id");
    for (int i = 0; i < 8; ++i) {
        CHECK(mine.n[i] == ref->n[i], "%s: %zu bytes on cuda, %zu on cpu", what[i], mine.n[i], ref->n[i]);
        if (mine.n[i] != ref->n[i]) continue;
        size_t diff = 0, first = 0;
        for (size_t j = mine.n[i]; j-- > 0;)
            if (mine.b[i][j] != ref->b[i][j]) ++diff, first = j;
        CHECK(diff == 0, "%s: %zu of %zu bytes differ from the CPU reference, first at %zu", what[i], diff,
              mine.n[i], first);
        printf("rank %d check %-28s %8zu bytes %s\n", o->rank, what[i], mine.n[i], diff ? "DIFFER" : "identical");
    }
    for (int i = 0; i < o->nranks; ++i) {
        for (int j = 0; j < 8; ++j) free(cr[i].res.b[j]);
        qgmm_ep_comm_destroy(lc[i]);
        qgmm_context_destroy(cc[i]);
    }
    for (int j = 0; j < 8; ++j) free(mine.b[j]);
}

/* ---------------------------------------------------------------- the benchmark */

static double ms_between(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

static void bench(const opts *o, qgmm_context *ctx, cudaStream_t stream, ncclComm_t nc)
{
    const int64_t T = o->tokens, D = o->dim, E = o->experts, K = o->topk, P = o->nranks;
    int64_t cap = (int64_t)ceil(o->capacity * (double)(T * K) / (double)P);
    cap = (cap + 15) / 16 * 16;
    qgmm_ep_comm *comm = NULL;
    TRY(qgmm_ep_comm_create_nccl(ctx, nc, &comm));
    const int64_t rb16 = qgmm_ep_wire_row_bytes(QGMM_BF16, D, 0), rb8 = qgmm_ep_wire_row_bytes(QGMM_F8E4M3FN, D, 4);
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(E, (int)K, T, rb16);
    pp.max_rows_per_peer = cap;
    qgmm_ep_plan *plan = NULL;
    TRY(qgmm_ep_plan_create(comm, &pp, &plan));
    const int64_t R = qgmm_ep_plan_recv_rows(plan);
    /* uniform routing: K distinct experts per token */
    int32_t *ids = malloc((size_t)(T * K) * 4);
    uint16_t *w = malloc((size_t)(T * K) * 2);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < K; ++j) {
            int32_t e;
            int again;
            uint32_t salt = 0;
            do {
                e = (int32_t)(hash((uint32_t)(o->rank * 7777777 + t * 131 + j * 17 + (int64_t)salt++ * 1000003)) % E);
                again = 0;
                for (int64_t m = 0; m < j; ++m) again |= ids[t * K + m] == e;
            } while (again);
            ids[t * K + j] = e;
            w[t * K + j] = 0x3E00;
        }
    qgmm_buffer *bid = up(ctx, ids, (size_t)(T * K) * 4), *bw = up(ctx, w, (size_t)(T * K) * 2);
    qgmm_buffer *bx = zeroed(ctx, (size_t)(T * D) * 2), *bx8 = zeroed(ctx, (size_t)(T * D)), *bs8 = NULL;
    float *ones = malloc((size_t)T * 4);
    for (int64_t t = 0; t < T; ++t) ones[t] = 1.0f;
    bs8 = up(ctx, ones, (size_t)T * 4);
    TRY(qgmm_buffer_fill(bx, 0, (size_t)(T * D) * 2, 0x3C));
    TRY(qgmm_buffer_fill(bx8, 0, (size_t)(T * D), 0x38));
    qgmm_buffer *brecv = zeroed(ctx, (size_t)(R * D) * 2), *brecv8 = zeroed(ctx, (size_t)(R * D));
    qgmm_buffer *brs = zeroed(ctx, (size_t)R * 4), *bout = zeroed(ctx, (size_t)(T * D) * 2);
    const qgmm_tensor tid = t2(bid, QGMM_I32, T, K), tw = t2(bw, QGMM_BF16, T, K);
    const qgmm_tensor tx = t2(bx, QGMM_BF16, T, D), tx8 = t2(bx8, QGMM_F8E4M3FN, T, D), ts8 = t1(bs8, QGMM_F32, T);
    const qgmm_tensor trecv = t2(brecv, QGMM_BF16, R, D), trecv8 = t2(brecv8, QGMM_F8E4M3FN, R, D);
    const qgmm_tensor trs = t1(brs, QGMM_F32, R), tout = t2(bout, QGMM_BF16, T, D);
    TRY(qgmm_ep_route(plan, &tid));
    int64_t rows = 0;
    TRY(qgmm_ep_received_rows(plan, &rows));
    /* NCCL's own all-to-all of the same slot bytes */
    void *a2a_s = NULL, *a2a_r = NULL;
    CU(cudaMalloc(&a2a_s, (size_t)(P * cap * rb16)));
    CU(cudaMalloc(&a2a_r, (size_t)(P * cap * rb16)));
    CU(cudaMemset(a2a_s, 0, (size_t)(P * cap * rb16)));
    cudaEvent_t ev[4];
    for (int i = 0; i < 4; ++i) CU(cudaEventCreate(&ev[i]));
    double t_d16 = 0, t_c16 = 0, t_d8 = 0, t_a16 = 0, t_a8 = 0;
    for (int rep = -2; rep < o->reps; ++rep) {
        CU(cudaEventRecord(ev[0], stream));
        TRY(qgmm_ep_dispatch(plan, &tx, NULL, NULL, &trecv, NULL, NULL));
        CU(cudaEventRecord(ev[1], stream));
        TRY(qgmm_ep_combine(plan, &trecv, &tw, &tout));
        CU(cudaEventRecord(ev[2], stream));
        TRY(qgmm_ep_dispatch(plan, &tx8, &ts8, NULL, &trecv8, &trs, NULL));
        CU(cudaEventRecord(ev[3], stream));
        CU(cudaStreamSynchronize(stream));
        if (rep >= 0) {
            t_d16 += ms_between(ev[0], ev[1]);
            t_c16 += ms_between(ev[1], ev[2]);
            t_d8 += ms_between(ev[2], ev[3]);
        }
        CU(cudaEventRecord(ev[0], stream));
        NC(ncclAlltoAll(a2a_s, a2a_r, (size_t)(cap * rb16), ncclUint8, nc, stream));
        CU(cudaEventRecord(ev[1], stream));
        NC(ncclAlltoAll(a2a_s, a2a_r, (size_t)(cap * rb8), ncclUint8, nc, stream));
        CU(cudaEventRecord(ev[2], stream));
        CU(cudaStreamSynchronize(stream));
        if (rep >= 0) {
            t_a16 += ms_between(ev[0], ev[1]);
            t_a8 += ms_between(ev[1], ev[2]);
        }
    }
    const qgmm_status st = qgmm_synchronize(ctx);
    CHECK(st == QGMM_OK, "bench steps: %s", qgmm_status_string(st));
    const double n = o->reps, peer16 = (double)((P - 1) * cap * rb16), peer8 = (double)((P - 1) * cap * rb8);
    t_d16 /= n, t_c16 /= n, t_d8 /= n, t_a16 /= n, t_a8 /= n;
    printf("rank %d bench T=%lld D=%lld E=%lld k=%lld P=%lld cap=%lld rows/peer (%.2fx balanced), received "
           "%lld padded rows\n", o->rank, (long long)T, (long long)D, (long long)E, (long long)K, (long long)P,
           (long long)cap, o->capacity, (long long)rows);
    printf("rank %d %-26s %8.3f ms  %7.1f GB/s to peers  (%lld B/row)\n", o->rank, "dispatch bf16", t_d16,
           peer16 / t_d16 / 1e6, (long long)rb16);
    printf("rank %d %-26s %8.3f ms  %7.1f GB/s to peers\n", o->rank, "combine bf16 (weighted)", t_c16,
           peer16 / t_c16 / 1e6);
    printf("rank %d %-26s %8.3f ms  %7.1f GB/s to peers  (%lld B/row)\n", o->rank, "dispatch fp8 rowwise", t_d8,
           peer8 / t_d8 / 1e6, (long long)rb8);
    printf("rank %d %-26s %8.3f ms  %7.1f GB/s\n", o->rank, "ncclAlltoAll bf16 slots", t_a16, peer16 / t_a16 / 1e6);
    printf("rank %d %-26s %8.3f ms  %7.1f GB/s\n", o->rank, "ncclAlltoAll fp8 slots", t_a8, peer8 / t_a8 / 1e6);
    printf("rank %d ratio: dispatch+combine bf16 %.1f %% of 2x ncclAlltoAll; dispatch fp8 %.1f %% of its "
           "ncclAlltoAll; fp8/bf16 dispatch time %.2f, bytes %.2f\n", o->rank, 100.0 * 2 * t_a16 / (t_d16 + t_c16),
           100.0 * t_a8 / t_d8, t_d8 / t_d16, (double)rb8 / (double)rb16);
    for (int i = 0; i < 4; ++i) cudaEventDestroy(ev[i]);
    cudaFree(a2a_s);
    cudaFree(a2a_r);
    qgmm_buffer *all[] = {bid, bw, bx, bx8, bs8, brecv, brecv8, brs, bout};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i) qgmm_buffer_free(all[i]);
    free(ids);
    free(w);
    free(ones);
    qgmm_ep_plan_destroy(plan);
    qgmm_ep_comm_destroy(comm);
}

/* ---------------------------------------------------------------- processes */

static void read_ids(const opts *o, void *ids, size_t n)
{
    for (int waited = 0; waited < 1200; ++waited) {
        FILE *f = fopen(o->id_file, "rb");
        if (f) {
            const size_t got = fread(ids, 1, n, f);
            fclose(f);
            if (got == n) return;
        }
        usleep(50000);
    }
    printf("rank %d: no unique ids in %s after 60 s\n", o->rank, o->id_file);
    exit(1);
}

static int rank_main(const opts *o)
{
    g_rank = o->rank;
    CU(cudaSetDevice(o->rank));
    cudaStream_t stream;
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    qgmm_context *ctx = NULL;
    TRY(qgmm_context_create_with_stream("cuda", o->rank, stream, &ctx));
    /* ids[0]: for the communicator qgmm creates; ids[1]: for the caller's own */
    uint8_t ids[2][QGMM_EP_UNIQUE_ID_BYTES];
    if (o->rank == 0) {
        TRY(qgmm_ep_nccl_unique_id(ctx, ids[0]));
        ncclUniqueId u;
        NC(ncclGetUniqueId(&u));
        memcpy(ids[1], &u, sizeof u);
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", o->id_file);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(ids, 1, sizeof ids, f) != sizeof ids || fclose(f) != 0 || rename(tmp, o->id_file) != 0) {
            printf("rank 0: cannot write %s: %s\n", o->id_file, strerror(errno));
            return 1;
        }
    } else {
        read_ids(o, ids, sizeof ids);
    }
    check(o, ctx, ids[0]);
    ncclUniqueId u;
    memcpy(&u, ids[1], sizeof u);
    ncclComm_t nc;
    NC(ncclCommInitRank(&nc, o->nranks, u, o->rank));
    bench(o, ctx, stream, nc);
    NC(ncclCommDestroy(nc));
    qgmm_context_destroy(ctx);
    cudaStreamDestroy(stream);
    printf("rank %d: %s (%d failures)\n", o->rank, failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}

static int launch(const opts *o, int argc, char **argv)
{
    char id_file[256];
    snprintf(id_file, sizeof id_file, "/tmp/ep_bench.%d.id", (int)getpid());
    unlink(id_file);
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    pid_t pid[MAXR];
    for (int r = 0; r < o->nranks; ++r) {
        pid[r] = fork();
        if (pid[r] == 0) {
            char rank[16];
            snprintf(rank, sizeof rank, "%d", r);
            char **args = calloc((size_t)argc + 5, sizeof *args);
            for (int i = 0; i < argc; ++i) args[i] = argv[i];
            args[argc] = "--rank";
            args[argc + 1] = rank;
            args[argc + 2] = "--id-file";
            args[argc + 3] = id_file;
            execv("/proc/self/exe", args);
            perror("execv");
            _exit(127);
        }
    }
    int bad = 0;
    for (int r = 0; r < o->nranks; ++r) {
        int status = 0;
        waitpid(pid[r], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("rank %d exited with status %d\n", r, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            bad = 1;
        }
    }
    unlink(id_file);
    printf("ep_bench: %s\n", bad ? "FAILED" : "all ranks passed");
    return bad;
}

int main(int argc, char **argv)
{
    opts o = {2, -1, 20, 4096, 7168, 64, 8, 1.1, NULL};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "ep_bench: %s needs a value\n", a);
            usage(stderr);
            return 2;
        }
        ++i;
        if (!strcmp(a, "--nranks")) o.nranks = atoi(v);
        else if (!strcmp(a, "--rank")) o.rank = atoi(v);
        else if (!strcmp(a, "--id-file")) o.id_file = v;
        else if (!strcmp(a, "--tokens")) o.tokens = atoll(v);
        else if (!strcmp(a, "--dim")) o.dim = atoll(v);
        else if (!strcmp(a, "--experts")) o.experts = atoll(v);
        else if (!strcmp(a, "--topk")) o.topk = atoll(v);
        else if (!strcmp(a, "--capacity")) o.capacity = atof(v);
        else if (!strcmp(a, "--reps")) o.reps = atoi(v);
        else {
            fprintf(stderr, "ep_bench: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o.nranks < 2 || o.nranks > MAXR || o.tokens < 1 || o.dim < 32 || o.dim % 32 || o.experts < o.nranks ||
        o.experts % o.nranks || o.topk < 1 || o.topk > o.experts || o.capacity <= 0 || o.reps < 1) {
        fprintf(stderr, "ep_bench: need 2 <= nranks <= %d, tokens >= 1, dim a multiple of 32, experts a multiple "
                        "of nranks, 1 <= topk <= experts, capacity > 0, reps >= 1\n", MAXR);
        return 2;
    }
    if (o.rank < 0) return launch(&o, argc, argv);
    if (o.rank >= o.nranks || !o.id_file) {
        fprintf(stderr, "ep_bench: --rank must be below --nranks and comes with --id-file\n");
        return 2;
    }
    return rank_main(&o);
}
