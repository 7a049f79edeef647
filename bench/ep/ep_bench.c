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
 *     The expert-parallel layer (forward + backward, BF16 and FP8 rowwise) over NCCL is
 *     byte-identical to the one-device composite over all ranks' tokens, run by each rank
 *     on its own GPU (the reference of tests/test_ep.c);
 *  2. bench, for every combination of the comma lists --tokens, --dim and --experts: top
 *     --topk uniform experts, wire slots of --capacity x the balanced load: dispatch (BF16,
 *     FP8 rowwise) and combine against ncclAlltoAll of the same slot bytes on the same
 *     stream, over the caller's own communicator (qgmm_ep_comm_create_nccl); with --layer,
 *     the layer's forward + backward (--recipes, expert output --ffn columns) against the
 *     same layer on this GPU alone (a one-rank communicator, all experts) with the same
 *     tokens per GPU (weak scaling) and, with --strong, with all ranks' tokens (the same
 *     global batch).
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

#define MAXL 8
typedef struct opts {
    int nranks, rank, reps;
    int64_t tokens[MAXL], dim[MAXL], experts[MAXL], topk, ffn;
    int ntokens, ndim, nexperts;
    double capacity;
    int layer, strong, recipes; /* recipes: bit 0 BF16, bit 1 FP8 rowwise */
    const char *id_file;
} opts;

/* One benchmark configuration (an element of the lists). */
typedef struct shape {
    int64_t T, D, E;
} shape;

static void usage(FILE *f)
{
    fprintf(f, "usage: ep_bench [--nranks N] [--tokens T,..] [--dim D,..] [--experts E,..] [--topk K] [--capacity F]\n"
               "                [--reps R] [--layer] [--strong] [--ffn N] [--recipes bf16,fp8]\n"
               "  Expert-parallel dispatch/combine over NCCL, one process per GPU (N, default 2, GPUs).\n"
               "  Checks the CUDA results byte for byte against the CPU reference and the layer against\n"
               "  the one-device composite, then times dispatch + combine (BF16 and FP8 rowwise dispatch)\n"
               "  against ncclAlltoAll of the same bytes, for every combination of the lists.\n"
               "  --tokens T    tokens per rank (default 4096)   --dim D      columns, the layer's K (default 7168)\n"
               "  --experts E   experts (default 64)             --topk K     experts per token (default 8)\n"
               "  --capacity F  wire slot rows as a multiple of the balanced load T*K/N (default 1.1)\n"
               "  --reps R      timed repetitions (default 20; the layer takes a quarter, at least 3)\n"
               "  --layer       also time the layer's forward + backward against this GPU alone with the\n"
               "                same tokens per GPU (weak scaling); --strong: and with all ranks' tokens\n"
               "  --ffn N       the experts' output columns N of the layer (default 2048)\n"
               "  --recipes L   the layer's recipes, a comma list of bf16 and fp8 (FP8 rowwise; default both)\n"
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
static float bf16_f(uint16_t h)
{
    union { uint32_t u; float f; } v = {(uint32_t)h << 16};
    return v.f;
}
static uint16_t f_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}
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

enum { NRES = 10 };
typedef struct result {
    size_t n[NRES];
    uint8_t *b[NRES];
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
    /* rows of 64 KiB: slots wide enough that the NCCL transport exchanges them in chunks */
    {
        enum { BD = 32768 };
        qgmm_ep_plan_params bp = QGMM_EP_PLAN_PARAMS_INIT(CE, CK, CT, qgmm_ep_wire_row_bytes(QGMM_BF16, BD, 0));
        bp.alignment = CALIGN;
        qgmm_ep_plan *big = NULL;
        TRY(qgmm_ep_plan_create(comm, &bp, &big));
        const int64_t R2 = qgmm_ep_plan_recv_rows(big);
        uint16_t *xw = malloc((size_t)(T * BD) * 2);
        for (int64_t i = 0; i < T * BD; ++i) xw[i] = (uint16_t)(0x3C00 + hash((uint32_t)(r * 7000003 + i)) % 0x800);
        qgmm_buffer *bxw = up(c, xw, (size_t)(T * BD) * 2), *ow = zeroed(c, (size_t)(R2 * BD) * 2);
        qgmm_buffer *cw = zeroed(c, (size_t)(T * BD) * 2);
        const qgmm_tensor txw = t2(bxw, QGMM_BF16, T, BD), tow = t2(ow, QGMM_BF16, R2, BD), tcw = t2(cw, QGMM_BF16, T, BD);
        TRY(qgmm_ep_route(big, &tid));
        TRY(qgmm_ep_dispatch(big, &txw, NULL, &tw, &tow, NULL, NULL));
        TRY(qgmm_ep_combine(big, &tow, NULL, &tcw));
        TRY(qgmm_synchronize(c));
        keep(res, 8, ow, (size_t)(R2 * BD) * 2);
        keep(res, 9, cw, (size_t)(T * BD) * 2);
        qgmm_buffer_free(bxw), qgmm_buffer_free(ow), qgmm_buffer_free(cw);
        free(xw);
        qgmm_ep_plan_destroy(big);
    }
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

static void layer_check(const opts *o, qgmm_ep_comm *comm);

static void check(const opts *o, qgmm_context *ctx, const void *qgmm_id)
{
    static const char *what[NRES] = {"bf16 dispatch", "bf16 weighted dispatch", "fp8 rowwise dispatch data",
                                     "fp8 rowwise dispatch scales", "mxfp8 blocked scales", "offs",
                                     "weighted combine f32", "plain combine bf16", "64 KiB rows weighted dispatch",
                                     "64 KiB rows plain combine"};
    qgmm_ep_comm *comm = NULL;
    TRY(qgmm_ep_comm_create_nccl_id(ctx, qgmm_id, o->nranks, o->rank, &comm));
    CHECK(qgmm_ep_comm_rank(comm) == o->rank && qgmm_ep_comm_nranks(comm) == o->nranks, "communicator rank/size");
    result mine;
    memset(&mine, 0, sizeof mine);
    const qgmm_status bad = check_rank(comm, &mine);
    CHECK(bad == QGMM_ERR_BAD_OFFSETS, "a bad expert id on rank %d gave %s on cuda", o->nranks - 1,
          qgmm_status_string(bad));
    layer_check(o, comm);
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
    for (int i = 0; i < NRES; ++i) {
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
        for (int j = 0; j < NRES; ++j) free(cr[i].res.b[j]);
        qgmm_ep_comm_destroy(lc[i]);
        qgmm_context_destroy(cc[i]);
    }
    for (int j = 0; j < NRES; ++j) free(mine.b[j]);
}

/* ---------------------------------------------------------------- the benchmark */

static double ms_between(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    CU(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

/* Uniform routing of rank r's T tokens: K distinct experts of E per token. */
static void uniform_ids(int r, int64_t T, int64_t K, int64_t E, int32_t *ids)
{
    for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < K; ++j) {
            int32_t e;
            int again;
            uint32_t salt = 0;
            do {
                e = (int32_t)(hash((uint32_t)(r * 7777777 + t * 131 + j * 17 + (int64_t)salt++ * 1000003)) % E);
                again = 0;
                for (int64_t m = 0; m < j; ++m) again |= ids[t * K + m] == e;
            } while (again);
            ids[t * K + j] = e;
        }
}

/* Wire slot rows: capacity x the balanced load T*K/P, a multiple of 16. */
static int64_t slot_rows(const opts *o, int64_t T, int64_t P)
{
    const int64_t cap = (int64_t)ceil(o->capacity * (double)(T * o->topk) / (double)P);
    return (cap + 15) / 16 * 16;
}

static void bench(const opts *o, const shape *sh, qgmm_ep_comm *comm, cudaStream_t stream, ncclComm_t nc)
{
    qgmm_context *ctx = qgmm_ep_comm_context(comm);
    const int64_t T = sh->T, D = sh->D, E = sh->E, K = o->topk, P = o->nranks;
    const int64_t cap = slot_rows(o, T, P);
    const int64_t rb16 = qgmm_ep_wire_row_bytes(QGMM_BF16, D, 0), rb8 = qgmm_ep_wire_row_bytes(QGMM_F8E4M3FN, D, 4);
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(E, (int)K, T, rb16);
    pp.max_rows_per_peer = cap;
    qgmm_ep_plan *plan = NULL;
    TRY(qgmm_ep_plan_create(comm, &pp, &plan));
    const int64_t R = qgmm_ep_plan_recv_rows(plan);
    int32_t *ids = malloc((size_t)(T * K) * 4);
    uint16_t *w = malloc((size_t)(T * K) * 2);
    uniform_ids(o->rank, T, K, E, ids);
    for (int64_t i = 0; i < T * K; ++i) w[i] = 0x3E00;
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
}

/* ---------------------------------------------------------------- the layer */

static const struct { qgmm_recipe r; const char *name; } g_recipes[] = {
    {QGMM_RECIPE_BF16, "bf16"}, {QGMM_RECIPE_FP8_ROWWISE, "fp8_rowwise"},
    {QGMM_RECIPE_FP8_BLOCKWISE, "fp8_blockwise"}, {QGMM_RECIPE_MXFP8, "mxfp8"}};

/* Milliseconds per forward + backward of the layer of recipe r on comm: this rank's T
 * tokens (uniform routing, seeded by seed_rank) of K = D columns, E experts, --ffn output
 * columns, cap wire rows per peer (0: never overflowing). */
static double layer_ms(const opts *o, qgmm_ep_comm *comm, int seed_rank, int64_t T, int64_t D, int64_t E,
                       int64_t cap, qgmm_recipe r, int reps)
{
    qgmm_context *ctx = qgmm_ep_comm_context(comm);
    const int64_t K = D, N = o->ffn, k = o->topk;
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(E, (int)k, T, qgmm_ep_wire_row_bytes(QGMM_BF16, N > K ? N : K, 0));
    pp.max_rows_per_peer = cap;
    qgmm_ep_plan *plan = NULL;
    TRY(qgmm_ep_plan_create(comm, &pp, &plan));
    const int64_t L = qgmm_ep_plan_local_experts(plan);
    const qgmm_moe_params mp = QGMM_MOE_PARAMS_INIT(r);
    qgmm_ep_moe *layer = NULL;
    TRY(qgmm_ep_moe_create(plan, &mp, N, K, QGMM_BF16, &layer));
    int32_t *ids = malloc((size_t)(T * k) * 4);
    uint16_t *wt = malloc((size_t)(T * k) * 2);
    uniform_ids(seed_rank, T, k, E, ids);
    for (int64_t i = 0; i < T * k; ++i) wt[i] = 0x3E00;
    qgmm_buffer *bid = up(ctx, ids, (size_t)(T * k) * 4), *bwt = up(ctx, wt, (size_t)(T * k) * 2);
    qgmm_buffer *bx = zeroed(ctx, (size_t)(T * K) * 2), *bdy = zeroed(ctx, (size_t)(T * N) * 2);
    qgmm_buffer *bw = zeroed(ctx, (size_t)(L * N * K) * 2), *by = zeroed(ctx, (size_t)(T * N) * 2);
    qgmm_buffer *bdx = zeroed(ctx, (size_t)(T * K) * 2), *bdw = zeroed(ctx, (size_t)(L * N * K) * 2);
    TRY(qgmm_buffer_fill(bx, 0, (size_t)(T * K) * 2, 0x3C));
    TRY(qgmm_buffer_fill(bdy, 0, (size_t)(T * N) * 2, 0x3C));
    if (L) TRY(qgmm_buffer_fill(bw, 0, (size_t)(L * N * K) * 2, 0x3C));
    const qgmm_tensor x = t2(bx, QGMM_BF16, T, K), dy = t2(bdy, QGMM_BF16, T, N), tid = t2(bid, QGMM_I32, T, k);
    const qgmm_tensor twt = t2(bwt, QGMM_BF16, T, k), y = t2(by, QGMM_BF16, T, N), dx = t2(bdx, QGMM_BF16, T, K);
    const int64_t s3[3] = {L, N, K};
    const qgmm_tensor w = qgmm_tensor_make(bw, 0, QGMM_BF16, 3, s3), dw = qgmm_tensor_make(bdw, 0, QGMM_BF16, 3, s3);
    qgmm_event *ev[2];
    TRY(qgmm_event_create(ctx, &ev[0]));
    TRY(qgmm_event_create(ctx, &ev[1]));
    for (int rep = -2; rep < reps; ++rep) {
        if (rep == 0) TRY(qgmm_event_record(ev[0]));
        TRY(qgmm_ep_moe_forward(layer, &x, &tid, &twt, L ? &w : NULL, &y));
        TRY(qgmm_ep_moe_backward(layer, &dy, &twt, L ? &w : NULL, &dx, L ? &dw : NULL));
    }
    TRY(qgmm_event_record(ev[1]));
    const qgmm_status st = qgmm_synchronize(ctx);
    CHECK(st == QGMM_OK, "layer steps: %s: %s", qgmm_status_string(st), qgmm_last_error(ctx));
    double ms = 0;
    TRY(qgmm_event_elapsed_ms(ev[0], ev[1], &ms));
    qgmm_event_destroy(ev[0]);
    qgmm_event_destroy(ev[1]);
    qgmm_buffer *all[] = {bid, bwt, bx, bdy, bw, by, bdx, bdw};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i) qgmm_buffer_free(all[i]);
    free(ids), free(wt);
    qgmm_ep_moe_destroy(layer);
    qgmm_ep_plan_destroy(plan);
    return ms / reps;
}

/* The layer on P GPUs against this GPU alone (one = a one-rank communicator of this GPU). */
static void layer_bench(const opts *o, const shape *sh, qgmm_ep_comm *comm, qgmm_ep_comm *one)
{
    const int64_t T = sh->T, D = sh->D, E = sh->E, P = o->nranks, N = o->ffn, k = o->topk;
    const int reps = o->reps / 4 > 3 ? o->reps / 4 : 3;
    for (int i = 0; i < 2; ++i) {
        if (!(o->recipes & (1 << i))) continue;
        const qgmm_recipe r = g_recipes[i].r;
        const double ep = layer_ms(o, comm, o->rank, T, D, E, slot_rows(o, T, P), r, reps);
        const double alone = layer_ms(o, one, o->rank, T, D, E, 0, r, reps);
        const double flop = 6.0 * (double)(T * k) * (double)N * (double)D;
        printf("rank %d layer %-11s T=%lld/GPU K=%lld N=%lld E=%lld k=%lld P=%lld: fwd+bwd %8.3f ms (%6.1f TFLOP/s "
               "per GPU); this GPU alone, same tokens: %8.3f ms; weak-scaling efficiency %.3f\n", o->rank,
               g_recipes[i].name, (long long)T, (long long)D, (long long)N, (long long)E, (long long)k, (long long)P, ep,
               flop / ep / 1e9, alone, alone / ep);
        if (o->strong) {
            const double glob = layer_ms(o, one, o->rank, T * P, D, E, 0, r, reps);
            printf("rank %d layer %-11s global batch %lld tokens: this GPU alone %8.3f ms, %lld GPUs %8.3f ms: "
                   "speedup %.2fx\n", o->rank, g_recipes[i].name, (long long)(T * P), glob, (long long)P, ep, glob / ep);
        }
    }
}

/* The layer over NCCL against the one-device composite over all ranks' tokens (sorted by
 * expert, each expert's rows padded to the plan's alignment of 16, as tests/test_ep.c
 * does), run on this GPU: y and dx of this rank's tokens, dw of its experts, every recipe. */
enum { LT = 96, LK = 256, LN = 128, LTOPK = 3 };
static int64_t layer_tokens(int r) { return LT - 29 * (r % 3); }
static void layer_check(const opts *o, qgmm_ep_comm *comm)
{
    qgmm_context *c = qgmm_ep_comm_context(comm);
    const int P = o->nranks, me = o->rank, k = LTOPK;
    const int64_t E = 4 * P, K = LK, N = LN, A = 16;
    int64_t off[MAXR + 1] = {0};
    for (int r = 0; r < P; ++r) off[r + 1] = off[r] + layer_tokens(r);
    const int64_t Tg = off[P], T = layer_tokens(me), t0 = off[me];
    uint16_t *x = malloc((size_t)(Tg * K) * 2), *dy = malloc((size_t)(Tg * N) * 2), *w = malloc((size_t)(E * N * K) * 2);
    int32_t *ids = malloc((size_t)(Tg * k) * 4);
    float *wt = malloc((size_t)(Tg * k) * 4);
    for (int64_t i = 0; i < Tg * K; ++i) x[i] = (uint16_t)(0x3C00 + hash((uint32_t)i) % 0x700 + (hash((uint32_t)i * 3) & 1) * 0x8000);
    for (int64_t i = 0; i < Tg * N; ++i) dy[i] = (uint16_t)(0x3C00 + hash((uint32_t)i + 77) % 0x700 + (hash((uint32_t)i * 5) & 1) * 0x8000);
    for (int64_t i = 0; i < E * N * K; ++i) w[i] = (uint16_t)(0x3000 + hash((uint32_t)i + 999) % 0x700 + (hash((uint32_t)i * 7) & 1) * 0x8000);
    for (int64_t g = 0; g < Tg; ++g)
        for (int j = 0; j < k; ++j) {
            int32_t e;
            int dup;
            uint32_t salt = 0;
            do { /* skewed: expert 1 never chosen, low ids often */
                const uint32_t h = hash((uint32_t)(g * 31 + j * 7 + salt++ * 100003));
                e = (int32_t)(h % 4 == 0 ? 0 : h % E);
                dup = e == 1;
                for (int m = 0; m < j; ++m) dup |= ids[g * k + m] == e;
            } while (dup);
            ids[g * k + j] = e;
            wt[g * k + j] = 0.25f + (float)(hash((uint32_t)(g * k + j)) % 512) / 1024.0f;
        }
    /* the one-device composite, over a multiple of 16 rows as the receive layout is (the
     * CUDA wgrad GEMM takes its Hopper kernel only for 16-byte aligned token strides) */
    const int64_t M = qgmm_padded_rows_bound(Tg * k, E, (int)A);
    uint16_t *xp = calloc((size_t)(M * K), 2), *dyp = calloc((size_t)(M * N), 2);
    int64_t *row = malloc((size_t)(Tg * k) * sizeof *row);
    int32_t *offs = malloc((size_t)E * 4);
    int64_t m = 0;
    for (int64_t e = 0; e < E; ++e) {
        for (int64_t g = 0; g < Tg; ++g)
            for (int j = 0; j < k; ++j)
                if (ids[g * k + j] == e) {
                    row[g * k + j] = m;
                    memcpy(xp + m * K, x + g * K, (size_t)K * 2);
                    for (int64_t n = 0; n < N; ++n) {
                        const float v = wt[g * k + j] * bf16_f(dy[g * N + n]);
                        dyp[m * N + n] = f_bf16(v);
                    }
                    ++m;
                }
        m = (m + A - 1) / A * A;
        offs[e] = (int32_t)m;
    }
    const int64_t Lr = E / P; /* even split: experts me * Lr .. */
    for (int i = 0; i < 4; ++i) {
        const qgmm_moe_params mp = QGMM_MOE_PARAMS_INIT(g_recipes[i].r);
        qgmm_buffer *bx = up(c, xp, (size_t)(M * K) * 2), *bdy = up(c, dyp, (size_t)(M * N) * 2);
        qgmm_buffer *bw = up(c, w, (size_t)(E * N * K) * 2), *bo = up(c, offs, (size_t)E * 4);
        qgmm_buffer *by = zeroed(c, (size_t)(M * N) * 2), *bdx = zeroed(c, (size_t)(M * K) * 2);
        qgmm_buffer *bdw = zeroed(c, (size_t)(E * N * K) * 2), *ws = NULL;
        const size_t wsb = qgmm_moe_workspace_bytes(&mp, M, N, K, E);
        if (wsb) ws = zeroed(c, wsb);
        const int64_t s3[3] = {E, N, K}, s1[1] = {E};
        const qgmm_tensor tx = t2(bx, QGMM_BF16, M, K), tdy = t2(bdy, QGMM_BF16, M, N);
        const qgmm_tensor tw = qgmm_tensor_make(bw, 0, QGMM_BF16, 3, s3), to = qgmm_tensor_make(bo, 0, QGMM_I32, 1, s1);
        const qgmm_tensor ty = t2(by, QGMM_BF16, M, N), tdx = t2(bdx, QGMM_BF16, M, K);
        const qgmm_tensor tdw = qgmm_tensor_make(bdw, 0, QGMM_BF16, 3, s3);
        TRY(qgmm_moe_experts_forward(c, &mp, &tx, &tw, &to, &ty, ws));
        TRY(qgmm_moe_experts_backward(c, &mp, &tx, &tw, &tdy, &to, &tdx, &tdw, ws));
        TRY(qgmm_synchronize(c));
        uint16_t *yr = malloc((size_t)(M * N) * 2), *dxr = malloc((size_t)(M * K) * 2), *dwr = malloc((size_t)(E * N * K) * 2);
        TRY(qgmm_buffer_download(by, 0, yr, (size_t)(M * N) * 2));
        TRY(qgmm_buffer_download(bdx, 0, dxr, (size_t)(M * K) * 2));
        TRY(qgmm_buffer_download(bdw, 0, dwr, (size_t)(E * N * K) * 2));
        qgmm_buffer *all[] = {bx, bdy, bw, bo, by, bdx, bdw, ws};
        for (int b = 0; b < 8; ++b) qgmm_buffer_free(all[b]);
        /* the layer over NCCL on this rank's tokens */
        qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(E, k, LT, qgmm_ep_wire_row_bytes(QGMM_BF16, K, 0));
        qgmm_ep_plan *plan = NULL;
        TRY(qgmm_ep_plan_create(comm, &pp, &plan));
        qgmm_ep_moe *layer = NULL;
        TRY(qgmm_ep_moe_create(plan, &mp, N, K, QGMM_BF16, &layer));
        qgmm_buffer *lx = up(c, x + t0 * K, (size_t)(T * K) * 2), *ldy = up(c, dy + t0 * N, (size_t)(T * N) * 2);
        qgmm_buffer *lid = up(c, ids + t0 * k, (size_t)(T * k) * 4), *lwt = up(c, wt + t0 * k, (size_t)(T * k) * 4);
        qgmm_buffer *lw = up(c, w + me * Lr * N * K, (size_t)(Lr * N * K) * 2);
        qgmm_buffer *ly = zeroed(c, (size_t)(T * N) * 2), *ldx = zeroed(c, (size_t)(T * K) * 2);
        qgmm_buffer *ldw = zeroed(c, (size_t)(Lr * N * K) * 2);
        const int64_t l3[3] = {Lr, N, K};
        const qgmm_tensor ax = t2(lx, QGMM_BF16, T, K), ady = t2(ldy, QGMM_BF16, T, N), aid = t2(lid, QGMM_I32, T, k);
        const qgmm_tensor awt = t2(lwt, QGMM_F32, T, k), ay = t2(ly, QGMM_BF16, T, N), adx = t2(ldx, QGMM_BF16, T, K);
        const qgmm_tensor aw = qgmm_tensor_make(lw, 0, QGMM_BF16, 3, l3), adw = qgmm_tensor_make(ldw, 0, QGMM_BF16, 3, l3);
        TRY(qgmm_ep_moe_forward(layer, &ax, &aid, &awt, &aw, &ay));
        TRY(qgmm_ep_moe_backward(layer, &ady, &awt, &aw, &adx, &adw));
        TRY(qgmm_synchronize(c));
        uint16_t *gy = malloc((size_t)(T * N) * 2), *gdx = malloc((size_t)(T * K) * 2), *gdw = malloc((size_t)(Lr * N * K) * 2);
        TRY(qgmm_buffer_download(ly, 0, gy, (size_t)(T * N) * 2));
        TRY(qgmm_buffer_download(ldx, 0, gdx, (size_t)(T * K) * 2));
        TRY(qgmm_buffer_download(ldw, 0, gdw, (size_t)(Lr * N * K) * 2));
        /* the reference's weighted sums of this rank's tokens, in slot order, f32 */
        int64_t dy_bad = 0, dx_bad = 0, dw_bad = 0;
        for (int64_t t = 0; t < T; ++t) {
            const int64_t g = t0 + t;
            for (int64_t n = 0; n < N; ++n) {
                float acc = 0.0f;
                for (int j = 0; j < k; ++j) acc = acc + wt[g * k + j] * bf16_f(yr[row[g * k + j] * N + n]);
                dy_bad += f_bf16(acc) != gy[t * N + n];
            }
            for (int64_t kk = 0; kk < K; ++kk) {
                float acc = 0.0f;
                for (int j = 0; j < k; ++j) acc = acc + bf16_f(dxr[row[g * k + j] * K + kk]);
                dx_bad += f_bf16(acc) != gdx[t * K + kk];
            }
        }
        for (int64_t i2 = 0; i2 < Lr * N * K; ++i2) dw_bad += gdw[i2] != dwr[me * Lr * N * K + i2];
        CHECK(dy_bad == 0 && dx_bad == 0 && dw_bad == 0, "layer %s over NCCL: %lld y, %lld dx, %lld dw elements differ "
              "from the one-device composite", g_recipes[i].name, (long long)dy_bad, (long long)dx_bad, (long long)dw_bad);
        printf("rank %d check layer %-13s y, dx, dw %s the one-device composite\n", me, g_recipes[i].name,
               dy_bad || dx_bad || dw_bad ? "DIFFER from" : "identical to");
        qgmm_buffer *lall[] = {lx, ldy, lid, lwt, lw, ly, ldx, ldw};
        for (int b = 0; b < 8; ++b) qgmm_buffer_free(lall[b]);
        free(yr), free(dxr), free(dwr), free(gy), free(gdx), free(gdw);
        qgmm_ep_moe_destroy(layer);
        qgmm_ep_plan_destroy(plan);
    }
    free(x), free(dy), free(w), free(ids), free(wt), free(xp), free(dyp), free(row), free(offs);
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
    qgmm_ep_comm *comm = NULL, *one = NULL;
    TRY(qgmm_ep_comm_create_nccl(ctx, nc, &comm));
    if (o->layer) { /* this GPU alone: a one-rank communicator */
        uint8_t id1[QGMM_EP_UNIQUE_ID_BYTES];
        TRY(qgmm_ep_nccl_unique_id(ctx, id1));
        TRY(qgmm_ep_comm_create_nccl_id(ctx, id1, 1, 0, &one));
    }
    for (int a = 0; a < o->ntokens; ++a)
        for (int b = 0; b < o->ndim; ++b)
            for (int e = 0; e < o->nexperts; ++e) {
                const shape sh = {o->tokens[a], o->dim[b], o->experts[e]};
                bench(o, &sh, comm, stream, nc);
                if (o->layer) layer_bench(o, &sh, comm, one);
                fflush(stdout);
            }
    qgmm_ep_comm_destroy(one);
    qgmm_ep_comm_destroy(comm);
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

/* A comma list of at most MAXL positive numbers into v; the count, 0 when malformed. */
static int parse_list(const char *s, int64_t *v)
{
    int n = 0;
    while (*s) {
        char *end = NULL;
        const long long x = strtoll(s, &end, 10);
        if (end == s || x < 1 || n == MAXL || (*end && *end != ',')) return 0;
        v[n++] = x;
        s = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    opts o;
    memset(&o, 0, sizeof o);
    o.nranks = 2, o.rank = -1, o.reps = 20, o.topk = 8, o.ffn = 2048, o.capacity = 1.1, o.recipes = 3;
    o.tokens[0] = 4096, o.dim[0] = 7168, o.experts[0] = 64;
    o.ntokens = o.ndim = o.nexperts = 1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--layer") || !strcmp(a, "--strong")) {
            o.layer = 1;
            o.strong |= !strcmp(a, "--strong");
            continue;
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
        else if (!strcmp(a, "--tokens")) o.ntokens = parse_list(v, o.tokens);
        else if (!strcmp(a, "--dim")) o.ndim = parse_list(v, o.dim);
        else if (!strcmp(a, "--experts")) o.nexperts = parse_list(v, o.experts);
        else if (!strcmp(a, "--ffn")) o.ffn = atoll(v);
        else if (!strcmp(a, "--recipes")) o.recipes = (strstr(v, "bf16") ? 1 : 0) | (strstr(v, "fp8") ? 2 : 0);
        else if (!strcmp(a, "--topk")) o.topk = atoll(v);
        else if (!strcmp(a, "--capacity")) o.capacity = atof(v);
        else if (!strcmp(a, "--reps")) o.reps = atoi(v);
        else {
            fprintf(stderr, "ep_bench: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    int bad = o.nranks < 1 || o.nranks > MAXR || o.topk < 1 || o.capacity <= 0 || o.reps < 1 || o.ffn < 1 ||
              o.ffn % 8 || !o.recipes || !o.ntokens || !o.ndim || !o.nexperts;
    for (int i = 0; i < o.ntokens; ++i) bad |= o.tokens[i] < 1;
    for (int i = 0; i < o.ndim; ++i) bad |= o.dim[i] < 128 || o.dim[i] % 128;
    for (int i = 0; i < o.nexperts; ++i)
        bad |= o.experts[i] < o.nranks || o.experts[i] % o.nranks || o.topk > o.experts[i];
    if (bad) {
        fprintf(stderr, "ep_bench: need 1 <= nranks <= %d, tokens >= 1, dims multiples of 128, experts multiples "
                        "of nranks, 1 <= topk <= experts, capacity > 0, reps >= 1, ffn a multiple of 8, recipes "
                        "from bf16,fp8, lists of at most %d numbers\n", MAXR, MAXL);
        return 2;
    }
    if (o.rank < 0) return launch(&o, argc, argv);
    if (o.rank >= o.nranks || !o.id_file) {
        fprintf(stderr, "ep_bench: --rank must be below --nranks and comes with --id-file\n");
        return 2;
    }
    return rank_main(&o);
}
