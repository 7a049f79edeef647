/*
 * Expert parallelism over the loopback transport (docs/ep.md), 2, 3, 4 and 8 ranks, one
 * context and one thread per rank:
 *  - the expert-parallel layer's forward (y) and backward (dx, dw) are byte-identical to
 *    qgmm_moe_experts_forward/_backward on one context over all ranks' tokens sorted by
 *    expert, followed by the same weighted sums, for every recipe;
 *  - uneven routing, an expert with no tokens, a rank with no experts (receives nothing),
 *    a rank with no tokens;
 *  - low-precision dispatch (FP8 rowwise, 1x128 blockwise, MXFP8 plain and blocked) equals
 *    quantizing what a bf16 dispatch delivered; the exact-size mode matches the worst-case one;
 *  - a bad expert id on one rank: every rank sends nothing, writes nothing, and its
 *    synchronize reports QGMM_ERR_BAD_OFFSETS naming qgmm_ep_route.
 * Backend: argv[1] or "cpu"; a backend without the ep_* kernels must say so (exit 77).
 */
#include "qgmm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks, failures;
static pthread_mutex_t check_mu = PTHREAD_MUTEX_INITIALIZER;
#define CHECK(cond, ...) do { pthread_mutex_lock(&check_mu); ++checks; if (!(cond)) { ++failures; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
    pthread_mutex_unlock(&check_mu); } while (0)
#define OK(call) do { qgmm_status s_ = (call); CHECK(s_ == QGMM_OK, "%s: %s: %s", #call, \
    qgmm_status_string(s_), qgmm_last_error(NULL)); } while (0)

static const char *backend = "cpu";
/* One context per rank and one for the reference, made once: a Vulkan context compiles its
 * pipelines as it first uses them, so reusing the contexts keeps the test quick. */
enum { MAX_RANKS = 8 };
/* the plans' alignment of each local expert's received rows, and the reference's */
enum { ALIGN = 16 };
static qgmm_context *g_ctx[MAX_RANKS + 1];

static uint16_t to_bf16(float f)
{
    union { float f; uint32_t u; } v = {f};
    return (uint16_t)((v.u + 0x7FFF + ((v.u >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h) { union { uint32_t u; float f; } v = {(uint32_t)h << 16}; return v.f; }
static uint32_t rng = 11;
static uint32_t next(void) { rng = rng * 1664525u + 1013904223u; return rng >> 8; }
static float urand(void) { return (float)next() / 16777216.0f * 2.0f - 1.0f; }

static qgmm_buffer *upload(qgmm_context *c, const void *p, size_t n)
{
    qgmm_buffer *b = NULL;
    qgmm_buffer_alloc(c, n ? n : 1, &b);
    if (n) qgmm_buffer_upload(b, 0, p, n);
    return b;
}
static qgmm_buffer *poisoned(qgmm_context *c, size_t n)
{
    qgmm_buffer *b = NULL;
    qgmm_buffer_alloc(c, n ? n : 1, &b);
    qgmm_buffer_fill(b, 0, n ? n : 1, 0xA5);
    return b;
}
static qgmm_tensor t2(qgmm_buffer *b, qgmm_dtype t, int64_t r, int64_t c)
{
    const int64_t s[2] = {r, c};
    return qgmm_tensor_make(b, 0, t, 2, s);
}
static qgmm_tensor t3(qgmm_buffer *b, qgmm_dtype t, int64_t e, int64_t r, int64_t c)
{
    const int64_t s[3] = {e, r, c};
    return qgmm_tensor_make(b, 0, t, 3, s);
}
static void *download(qgmm_buffer *b, size_t n)
{
    void *h = malloc(n ? n : 1);
    qgmm_buffer_download(b, 0, h, n);
    return h;
}

/* ---------------------------------------------------------------- one configuration */

typedef struct config {
    const char *name;
    int R, E, k;
    int64_t N, K;
    int T[MAX_RANKS];         /* tokens per rank */
    int32_t expert_rank[64];  /* used when map is set */
    int map;
    int unused_expert;        /* an expert no token picks */
    int bad_rank;             /* >= 0: this rank routes an id = E */
    qgmm_recipe recipe;
    qgmm_dtype out_dtype;
} config;

typedef struct world {
    const config *c;
    int64_t Tg, off[MAX_RANKS + 1];  /* global tokens; rank r's start */
    uint16_t *x, *dy, *w;            /* global bf16 x (Tg, K), dy (Tg, N), w (E, N, K) */
    int32_t *ids;                    /* (Tg, k) */
    float *wt;                       /* (Tg, k) */
    uint8_t *y_ref, *dx_ref, *dw_ref;/* (Tg, N), (Tg, K), (E, N, K) of out_dtype */
    qgmm_context *ctx[MAX_RANKS];
    qgmm_ep_comm *comm[MAX_RANKS];
} world;

static float load(const uint8_t *p, qgmm_dtype t, int64_t i)
{
    if (t == QGMM_F32) { float f; memcpy(&f, p + i * 4, 4); return f; }
    uint16_t h; memcpy(&h, p + i * 2, 2); return from_bf16(h);
}
static void store(uint8_t *p, qgmm_dtype t, int64_t i, float v)
{
    if (t == QGMM_F32) memcpy(p + i * 4, &v, 4);
    else { const uint16_t h = to_bf16(v); memcpy(p + i * 2, &h, 2); }
}

/* The one-device composite over all tokens sorted by expert (stable), each expert's rows
 * padded with zero rows to the plan's alignment as in the receive layout, then the sums.
 * The padding matters on GPUs: their tensor-core sums depend on where a group's tokens sit
 * within the 16-byte-aligned slices the wgrad GEMM reads (docs/ep.md, "Equivalence"). */
static void reference(world *W)
{
    const config *c = W->c;
    const int64_t Tg = W->Tg, k = c->k, N = c->N, K = c->K, E = c->E;
    const int64_t M = qgmm_padded_rows_bound(Tg * k, E, ALIGN);
    const qgmm_dtype od = c->out_dtype;
    const size_t oes = qgmm_dtype_size(od);
    int64_t *row = malloc((size_t)(Tg * k + 1) * sizeof *row);
    uint16_t *xp = calloc((size_t)(M * K + 1), 2), *dyp = calloc((size_t)(M * N + 1), 2);
    int32_t *offs = malloc((size_t)E * 4);
    int64_t m = 0;
    for (int64_t e = 0; e < E; ++e) {
        for (int64_t g = 0; g < Tg; ++g)
            for (int64_t j = 0; j < k; ++j)
                if (W->ids[g * k + j] == e) {
                    row[g * k + j] = m;
                    memcpy(xp + m * K, W->x + g * K, (size_t)K * 2);
                    for (int64_t n = 0; n < N; ++n) dyp[m * N + n] = to_bf16(W->wt[g * k + j] * from_bf16(W->dy[g * N + n]));
                    ++m;
                }
        m = (m + ALIGN - 1) / ALIGN * ALIGN;
        offs[e] = (int32_t)m;
    }
    qgmm_context *ctx = g_ctx[MAX_RANKS];
    qgmm_buffer *bx = upload(ctx, xp, (size_t)(M * K) * 2), *bdy = upload(ctx, dyp, (size_t)(M * N) * 2);
    qgmm_buffer *bw = upload(ctx, W->w, (size_t)(E * N * K) * 2), *bo = upload(ctx, offs, (size_t)E * 4);
    qgmm_buffer *by = poisoned(ctx, (size_t)(M * N) * oes), *bdx = poisoned(ctx, (size_t)(M * K) * oes);
    qgmm_buffer *bdw = poisoned(ctx, (size_t)(E * N * K) * oes), *ws = NULL;
    const qgmm_moe_params p = QGMM_MOE_PARAMS_INIT(c->recipe);
    const size_t wsb = qgmm_moe_workspace_bytes(&p, M, N, K, E);
    if (wsb) qgmm_buffer_alloc(ctx, wsb, &ws);
    const qgmm_tensor x = t2(bx, QGMM_BF16, M, K), dy = t2(bdy, QGMM_BF16, M, N), w = t3(bw, QGMM_BF16, E, N, K);
    const int64_t so[1] = {E};
    const qgmm_tensor o = qgmm_tensor_make(bo, 0, QGMM_I32, 1, so);
    const qgmm_tensor y = t2(by, od, M, N), dx = t2(bdx, od, M, K), dw = t3(bdw, od, E, N, K);
    OK(qgmm_moe_experts_forward(ctx, &p, &x, &w, &o, &y, ws));
    OK(qgmm_moe_experts_backward(ctx, &p, &x, &w, &dy, &o, &dx, &dw, ws));
    OK(qgmm_synchronize(ctx));
    uint8_t *yp = download(by, (size_t)(M * N) * oes), *dxp = download(bdx, (size_t)(M * K) * oes);
    W->dw_ref = download(bdw, (size_t)(E * N * K) * oes);
    W->y_ref = malloc((size_t)(Tg * N + 1) * oes);
    W->dx_ref = malloc((size_t)(Tg * K + 1) * oes);
    for (int64_t g = 0; g < Tg; ++g) {
        for (int64_t n = 0; n < N; ++n) {
            float acc = 0.0f;
            for (int64_t j = 0; j < k; ++j) {
                const float prod = W->wt[g * k + j] * load(yp, od, row[g * k + j] * N + n);
                acc = acc + prod;
            }
            store(W->y_ref, od, g * N + n, acc);
        }
        for (int64_t kk = 0; kk < K; ++kk) {
            float acc = 0.0f;
            for (int64_t j = 0; j < k; ++j) {
                const float prod = 1.0f * load(dxp, od, row[g * k + j] * K + kk);
                acc = acc + prod;
            }
            store(W->dx_ref, od, g * K + kk, acc);
        }
    }
    qgmm_buffer *all[] = {bx, bdy, bw, bo, by, bdx, bdw, ws};
    for (int i = 0; i < 8; ++i) qgmm_buffer_free(all[i]);
    free(row), free(xp), free(dyp), free(offs), free(yp), free(dxp);
}

typedef struct rank_job {
    world *W;
    int r;
} rank_job;

static qgmm_ep_plan *make_plan(world *W, int r, int64_t max_row_bytes)
{
    const config *c = W->c;
    int64_t maxT = 0;
    for (int i = 0; i < c->R; ++i) if (c->T[i] > maxT) maxT = c->T[i];
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(c->E, c->k, maxT, max_row_bytes);
    pp.alignment = ALIGN;
    pp.expert_rank = c->map ? c->expert_rank : NULL;
    qgmm_ep_plan *plan = NULL;
    OK(qgmm_ep_plan_create(W->comm[r], &pp, &plan));
    return plan;
}

/* The layer on rank r against the reference. */
static void *layer_rank(void *arg)
{
    rank_job *j = arg;
    world *W = j->W;
    const config *c = W->c;
    const int r = j->r;
    qgmm_context *ctx = W->ctx[r];
    const int64_t T = c->T[r], t0 = W->off[r], k = c->k, N = c->N, K = c->K;
    const qgmm_dtype od = c->out_dtype;
    const size_t oes = qgmm_dtype_size(od);
    qgmm_ep_plan *plan = make_plan(W, r, qgmm_ep_wire_row_bytes(QGMM_F32, N > K ? N : K, 0));
    const int64_t L = qgmm_ep_plan_local_experts(plan);
    const qgmm_moe_params p = QGMM_MOE_PARAMS_INIT(c->recipe);
    qgmm_ep_moe *layer = NULL;
    OK(qgmm_ep_moe_create(plan, &p, N, K, od, &layer));
    /* this rank's tokens and its experts' weights */
    int32_t *ids = malloc((size_t)(T * k + 1) * 4);
    memcpy(ids, W->ids + t0 * k, (size_t)(T * k) * 4);
    if (r == c->bad_rank && T > 0) ids[T * k - 1] = c->E;
    uint16_t *wl = malloc((size_t)(L * N * K + 1) * 2);
    for (int64_t l = 0; l < L; ++l)
        memcpy(wl + l * N * K, W->w + qgmm_ep_plan_local_expert_id(plan, l) * N * K, (size_t)(N * K) * 2);
    qgmm_buffer *bx = upload(ctx, W->x + t0 * K, (size_t)(T * K) * 2), *bdy = upload(ctx, W->dy + t0 * N, (size_t)(T * N) * 2);
    qgmm_buffer *bids = upload(ctx, ids, (size_t)(T * k) * 4), *bwt = upload(ctx, W->wt + t0 * k, (size_t)(T * k) * 4);
    qgmm_buffer *bw = upload(ctx, wl, (size_t)(L * N * K) * 2);
    qgmm_buffer *by = poisoned(ctx, (size_t)(T * N) * oes), *bdx = poisoned(ctx, (size_t)(T * K) * oes);
    qgmm_buffer *bdw = poisoned(ctx, (size_t)(L * N * K) * oes);
    const qgmm_tensor x = t2(bx, QGMM_BF16, T, K), dy = t2(bdy, QGMM_BF16, T, N);
    const qgmm_tensor tid = t2(bids, QGMM_I32, T, k), wt = t2(bwt, QGMM_F32, T, k);
    const qgmm_tensor w = t3(bw, QGMM_BF16, L, N, K), dw = t3(bdw, od, L, N, K);
    const qgmm_tensor y = t2(by, od, T, N), dx = t2(bdx, od, T, K);
    OK(qgmm_ep_moe_forward(layer, &x, &tid, &wt, L ? &w : NULL, &y));
    OK(qgmm_ep_moe_backward(layer, &dy, &wt, L ? &w : NULL, &dx, L ? &dw : NULL));
    const qgmm_status s = qgmm_synchronize(ctx);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", qgmm_last_error(ctx));
    uint8_t *yh = download(by, (size_t)(T * N) * oes), *dxh = download(bdx, (size_t)(T * K) * oes);
    uint8_t *dwh = download(bdw, (size_t)(L * N * K) * oes);
    if (c->bad_rank >= 0) {
        CHECK(s == QGMM_ERR_BAD_OFFSETS && strstr(msg, "qgmm_ep_route") && strstr(msg, "expert_ids"),
              "%s rank %d: a bad expert id gave %s: %s", c->name, r, qgmm_status_string(s), msg);
        int untouched = 1;
        for (size_t i = 0; i < (size_t)(T * N) * oes; ++i) untouched &= yh[i] == 0xA5;
        for (size_t i = 0; i < (size_t)(T * K) * oes; ++i) untouched &= dxh[i] == 0xA5;
        for (size_t i = 0; i < (size_t)(L * N * K) * oes; ++i) untouched &= dwh[i] == 0xA5;
        CHECK(untouched, "%s rank %d: a refused step wrote its outputs", c->name, r);
    } else {
        CHECK(s == QGMM_OK, "%s rank %d: synchronize: %s", c->name, r, msg);
        CHECK(!memcmp(yh, W->y_ref + (size_t)(t0 * N) * oes, (size_t)(T * N) * oes), "%s rank %d: y differs", c->name, r);
        CHECK(!memcmp(dxh, W->dx_ref + (size_t)(t0 * K) * oes, (size_t)(T * K) * oes), "%s rank %d: dx differs", c->name, r);
        for (int64_t l = 0; l < L; ++l)
            CHECK(!memcmp(dwh + (size_t)(l * N * K) * oes,
                          W->dw_ref + (size_t)(qgmm_ep_plan_local_expert_id(plan, l) * N * K) * oes, (size_t)(N * K) * oes),
                  "%s rank %d: dw of local expert %lld differs", c->name, r, (long long)l);
    }
    qgmm_buffer *all[] = {bx, bdy, bids, bwt, bw, by, bdx, bdw};
    for (int i = 0; i < 8; ++i) qgmm_buffer_free(all[i]);
    free(ids), free(wl), free(yh), free(dxh), free(dwh);
    qgmm_ep_moe_destroy(layer);
    qgmm_ep_plan_destroy(plan);
    return NULL;
}

/* Low-precision dispatch on rank r: fp8 data and scales equal quantizing the bf16 dispatch. */
static void *lowp_rank(void *arg)
{
    rank_job *j = arg;
    world *W = j->W;
    const config *c = W->c;
    const int r = j->r;
    qgmm_context *ctx = W->ctx[r];
    const int64_t T = c->T[r], t0 = W->off[r], k = c->k, D = c->K;
    qgmm_ep_plan *plan = make_plan(W, r, qgmm_ep_wire_row_bytes(QGMM_BF16, D, 0));
    const int64_t L = qgmm_ep_plan_local_experts(plan), R = qgmm_ep_plan_recv_rows(plan), G = L ? L : 1;
    qgmm_buffer *bx = upload(ctx, W->x + t0 * D, (size_t)(T * D) * 2), *bids = upload(ctx, W->ids + t0 * k, (size_t)(T * k) * 4);
    const qgmm_tensor x = t2(bx, QGMM_BF16, T, D), tid = t2(bids, QGMM_I32, T, k);
    OK(qgmm_ep_route(plan, &tid));
    qgmm_buffer *bo = poisoned(ctx, (size_t)R * D * 2), *boffs = poisoned(ctx, (size_t)G * 4);
    const int64_t so[1] = {L};
    const qgmm_tensor out = t2(bo, QGMM_BF16, R, D), offs = qgmm_tensor_make(boffs, 0, QGMM_I32, 1, so);
    OK(qgmm_ep_dispatch(plan, &x, NULL, NULL, &out, NULL, L ? &offs : NULL));
    /* exact-size mode: one synchronisation, then a dispatch into exactly that many rows */
    int64_t rows = -1;
    OK(qgmm_ep_received_rows(plan, &rows));
    OK(qgmm_synchronize(ctx));
    qgmm_buffer *bex = poisoned(ctx, (size_t)rows * D * 2);
    const qgmm_tensor exact = t2(bex, QGMM_BF16, rows, D);
    OK(qgmm_ep_dispatch(plan, &x, NULL, NULL, &exact, NULL, NULL));
    uint8_t *full = download(bo, (size_t)R * D * 2), *ex = download(bex, (size_t)rows * D * 2);
    CHECK(!memcmp(full, ex, (size_t)rows * D * 2), "%s rank %d: exact-size dispatch differs", c->name, r);
    /* one row short: refused on the device, nothing written */
    const int64_t few = rows > 0 ? rows - 1 : 0;
    qgmm_buffer *bfew = poisoned(ctx, (size_t)few * D * 2);
    const qgmm_tensor short_out = t2(bfew, QGMM_BF16, few, D);
    OK(qgmm_ep_dispatch(plan, &x, NULL, NULL, &short_out, NULL, NULL));
    const qgmm_status ss = qgmm_synchronize(ctx);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", qgmm_last_error(ctx));
    uint8_t *fh = download(bfew, (size_t)few * D * 2);
    int untouched = 1;
    for (size_t i = 0; i < (size_t)few * D * 2; ++i) untouched &= fh[i] == 0xA5;
    if (rows > 0)
        CHECK(ss == QGMM_ERR_BAD_OFFSETS && strstr(msg, "qgmm_ep_dispatch: out holds fewer rows") && untouched,
              "%s rank %d: a short out gave %s: %s", c->name, r, qgmm_status_string(ss), msg);
    else
        CHECK(ss == QGMM_OK, "%s rank %d: %s", c->name, r, msg);
    free(fh);
    qgmm_buffer_free(bfew);
    /* each format: quantize x, dispatch data + scales; quantize the bf16 dispatch output */
    for (int f = 0; f < 4; ++f) {
        const int mx = f >= 2, blocked = f == 3, blockwise = f == 1;
        const int64_t sc = mx ? D / 32 : blockwise ? D / 128 : 1;
        const qgmm_dtype sd = mx ? QGMM_E8M0 : QGMM_F32;
        const size_t ses = qgmm_dtype_size(sd);
        const size_t bb = qgmm_blocked_m_groups_bytes(R, sc, G);
        qgmm_buffer *bq = poisoned(ctx, (size_t)(T * D)), *bs = poisoned(ctx, (size_t)(T * sc) * ses);
        qgmm_buffer *bqo = poisoned(ctx, (size_t)R * D), *bso = poisoned(ctx, blocked ? bb : (size_t)(R * sc) * ses);
        qgmm_buffer *brq = poisoned(ctx, (size_t)R * D), *brs = poisoned(ctx, (size_t)(R * sc) * ses);
        qgmm_buffer *brb = poisoned(ctx, bb);
        const qgmm_tensor q = t2(bq, QGMM_F8E4M3FN, T, D), qo = t2(bqo, QGMM_F8E4M3FN, R, D);
        const qgmm_tensor rq = t2(brq, QGMM_F8E4M3FN, R, D);
        const int64_t s1[1] = {T}, r1[1] = {R}, b1[1] = {(int64_t)bb};
        const int rowwise = f == 0;
        const qgmm_tensor s = rowwise ? qgmm_tensor_make(bs, 0, sd, 1, s1) : t2(bs, sd, T, sc);
        const qgmm_tensor rs = rowwise ? qgmm_tensor_make(brs, 0, sd, 1, r1) : t2(brs, sd, R, sc);
        const qgmm_tensor so2 = blocked ? qgmm_tensor_make(bso, 0, sd, 1, b1) : rowwise ? qgmm_tensor_make(bso, 0, sd, 1, r1)
                                                                                        : t2(bso, sd, R, sc);
        const qgmm_tensor rb = qgmm_tensor_make(brb, 0, sd, 1, b1);
        if (mx) {
            const qgmm_mxfp8_params mp = QGMM_MXFP8_PARAMS_INIT(1);
            OK(qgmm_quantize_mxfp8(ctx, &mp, &x, &q, &s));
            OK(qgmm_quantize_mxfp8(ctx, &mp, &out, &rq, &rs));
            if (blocked && L) OK(qgmm_scales_to_blocked(ctx, QGMM_BLOCKED_M_GROUPS, &rs, &offs, &rb, NULL));
        } else if (blockwise) {
            const qgmm_fp8_blockwise_params bp = QGMM_FP8_BLOCKWISE_PARAMS_INIT(QGMM_BLOCK_1X128);
            OK(qgmm_quantize_fp8_blockwise(ctx, &bp, &x, &q, &s));
            OK(qgmm_quantize_fp8_blockwise(ctx, &bp, &out, &rq, &rs));
        } else {
            const qgmm_fp8_rowwise_params rp = QGMM_FP8_ROWWISE_PARAMS_INIT(1);
            OK(qgmm_quantize_fp8_rowwise(ctx, &rp, &x, NULL, &q, &s));
            OK(qgmm_quantize_fp8_rowwise(ctx, &rp, &out, NULL, &rq, &rs));
        }
        OK(qgmm_ep_dispatch(plan, &q, &s, NULL, &qo, &so2, NULL));
        OK(qgmm_synchronize(ctx));
        uint8_t *a = download(bqo, (size_t)R * D), *b = download(brq, (size_t)R * D);
        CHECK(!memcmp(a, b, (size_t)R * D), "%s rank %d format %d: fp8 data differ", c->name, r, f);
        free(a), free(b);
        if (blocked) {
            a = download(bso, bb), b = download(brb, bb);
            CHECK(!L || !memcmp(a, b, bb), "%s rank %d: MXFP8 blocked scales differ", c->name, r);
        } else {
            a = download(bso, (size_t)(R * sc) * ses), b = download(brs, (size_t)(R * sc) * ses);
            int same = 1;
            for (int64_t i = 0; i < R; ++i) {
                int real = 0; /* padding rows: the dispatch's scales are 0, the cast's a zero row's */
                for (int64_t d = 0; d < D; ++d) real |= full[(i * D + d) * 2] | full[(i * D + d) * 2 + 1];
                if (real || mx) same &= !memcmp(a + i * sc * ses, b + i * sc * ses, (size_t)sc * ses);
            }
            CHECK(same, "%s rank %d format %d: scales differ", c->name, r, f);
        }
        free(a), free(b);
        qgmm_buffer *all[] = {bq, bs, bqo, bso, brq, brs, brb};
        for (int i = 0; i < 7; ++i) qgmm_buffer_free(all[i]);
    }
    free(full), free(ex);
    qgmm_buffer *all[] = {bx, bids, bo, boffs, bex};
    for (int i = 0; i < 5; ++i) qgmm_buffer_free(all[i]);
    qgmm_ep_plan_destroy(plan);
    return NULL;
}

/* Ranks whose plans disagree (4 and 6 experts over 2 ranks): the loopback transport refuses
 * the route on both, naming the mismatch, instead of reading past the other's counts. */
static void *mismatch_rank(void *arg)
{
    rank_job *j = arg;
    qgmm_context *ctx = j->W->ctx[j->r];
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(j->r ? 6 : 4, 1, 4, 256);
    qgmm_ep_plan *plan = NULL;
    OK(qgmm_ep_plan_create(j->W->comm[j->r], &pp, &plan));
    const int32_t ids[4] = {0, 1, 2, 3};
    qgmm_buffer *b = upload(ctx, ids, sizeof ids);
    const qgmm_tensor t = t2(b, QGMM_I32, 4, 1);
    const qgmm_status s = qgmm_ep_route(plan, &t);
    CHECK(s == QGMM_ERR_INVALID_ARGUMENT && strstr(qgmm_last_error(ctx), "must agree"),
          "rank %d: plans that disagree gave %s: %s", j->r, qgmm_status_string(s), qgmm_last_error(ctx));
    qgmm_buffer_free(b);
    qgmm_ep_plan_destroy(plan);
    return NULL;
}

static void build_world(world *W, const config *c)
{
    memset(W, 0, sizeof *W);
    W->c = c;
    for (int r = 0; r < c->R; ++r) W->off[r + 1] = W->off[r] + c->T[r];
    W->Tg = W->off[c->R];
    const int64_t Tg = W->Tg, k = c->k, N = c->N, K = c->K, E = c->E;
    W->x = malloc((size_t)(Tg * K + 1) * 2);
    W->dy = malloc((size_t)(Tg * N + 1) * 2);
    W->w = malloc((size_t)(E * N * K) * 2);
    W->ids = malloc((size_t)(Tg * k + 1) * 4);
    W->wt = malloc((size_t)(Tg * k + 1) * 4);
    for (int64_t i = 0; i < Tg * K; ++i) W->x[i] = to_bf16(urand());
    for (int64_t i = 0; i < Tg * N; ++i) W->dy[i] = to_bf16(urand());
    for (int64_t i = 0; i < E * N * K; ++i) W->w[i] = to_bf16(0.05f * urand());
    for (int64_t g = 0; g < Tg; ++g)
        for (int64_t j = 0; j < k; ++j) {
            int32_t e;
            do { /* skewed: low ids more often; distinct per token; never the unused one */
                e = (int32_t)((next() % (uint32_t)E) * (next() % 2 ? 1 : 0) + (next() % 3 == 0 ? next() % (uint32_t)E : 0)) % (int32_t)E;
                int dup = e == c->unused_expert;
                for (int64_t i = 0; i < j; ++i) dup |= W->ids[g * k + i] == e;
                if (!dup) break;
            } while (1);
            W->ids[g * k + j] = e;
            W->wt[g * k + j] = 0.25f + 0.5f * (urand() + 1.0f) / 2.0f;
        }
}

static void free_world(world *W)
{
    free(W->x), free(W->dy), free(W->w), free(W->ids), free(W->wt), free(W->y_ref), free(W->dx_ref), free(W->dw_ref);
}

static int run_ranks(world *W, void *(*fn)(void *))
{
    const config *c = W->c;
    for (int r = 0; r < c->R; ++r) W->ctx[r] = g_ctx[r];
    OK(qgmm_ep_comm_create_loopback(c->R, W->ctx, W->comm));
    pthread_t th[MAX_RANKS];
    rank_job jobs[MAX_RANKS];
    for (int r = 0; r < c->R; ++r) {
        jobs[r].W = W;
        jobs[r].r = r;
        pthread_create(&th[r], NULL, fn, &jobs[r]);
    }
    for (int r = 0; r < c->R; ++r) pthread_join(th[r], NULL);
    for (int r = 0; r < c->R; ++r) {
        qgmm_ep_comm_destroy(W->comm[r]);
        OK(qgmm_synchronize(W->ctx[r])); /* the next configuration starts from a clean status */
    }
    return 1;
}

static void run_layer(const config *c)
{
    world W;
    build_world(&W, c);
    reference(&W);
    run_ranks(&W, layer_rank);
    free_world(&W);
}

/* Host-side refusals: each names the call and the argument, nothing is enqueued. */
static void refusals(void)
{
    qgmm_context *ctx[2] = {g_ctx[0], g_ctx[1]};
    qgmm_ep_comm *comm[2];
    CHECK(qgmm_ep_comm_create_loopback(0, ctx, comm) == QGMM_ERR_INVALID_ARGUMENT &&
          strstr(qgmm_last_error(NULL), "nranks"), "0 ranks accepted");
    qgmm_context *same[2] = {ctx[0], ctx[0]};
    CHECK(qgmm_ep_comm_create_loopback(2, same, comm) == QGMM_ERR_INVALID_ARGUMENT, "one context for two ranks accepted");
    /* a backend without an NCCL transport refuses one (with it, (void *)1 is no communicator) */
    unsigned char id[QGMM_EP_UNIQUE_ID_BYTES];
    if (qgmm_ep_nccl_unique_id(ctx[0], id) == QGMM_ERR_UNSUPPORTED)
        CHECK(qgmm_ep_comm_create_nccl(ctx[0], (void *)1, &comm[0]) == QGMM_ERR_UNSUPPORTED &&
              strstr(qgmm_last_error(ctx[0]), "loopback"), "NCCL on %s: %s", backend, qgmm_last_error(ctx[0]));
    OK(qgmm_ep_comm_create_loopback(2, ctx, comm));
    qgmm_ep_plan *plan = NULL;
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(3, 2, 16, 256);
    CHECK(qgmm_ep_plan_create(comm[0], &pp, &plan) == QGMM_ERR_INVALID_ARGUMENT &&
          strstr(qgmm_last_error(ctx[0]), "num_experts"), "3 experts split evenly over 2 ranks accepted");
    pp.num_experts = 4;
    pp.alignment = 8;
    CHECK(qgmm_ep_plan_create(comm[0], &pp, &plan) == QGMM_ERR_INVALID_ARGUMENT &&
          strstr(qgmm_last_error(ctx[0]), "alignment"), "alignment 8 accepted");
    pp.alignment = 16;
    const int32_t map[4] = {0, 1, 2, 0};
    pp.expert_rank = map;
    CHECK(qgmm_ep_plan_create(comm[0], &pp, &plan) == QGMM_ERR_INVALID_ARGUMENT &&
          strstr(qgmm_last_error(ctx[0]), "expert_rank[2]"), "a map naming rank 2 of 2 accepted");
    pp.expert_rank = NULL;
    OK(qgmm_ep_plan_create(comm[0], &pp, &plan));
    qgmm_buffer *b = poisoned(ctx[0], 4096);
    const qgmm_tensor ids3 = t2(b, QGMM_I32, 4, 3), x = t2(b, QGMM_BF16, 4, 64), out = t2(b, QGMM_BF16, 8, 64);
    CHECK(qgmm_ep_route(plan, &ids3) == QGMM_ERR_INVALID_ARGUMENT && strstr(qgmm_last_error(ctx[0]), "top_k"),
          "ids with 3 columns for top_k 2 accepted");
    CHECK(qgmm_ep_dispatch(plan, &x, NULL, NULL, &out, NULL, NULL) == QGMM_ERR_INVALID_ARGUMENT &&
          strstr(qgmm_last_error(ctx[0]), "routed"), "dispatch before route accepted");
    qgmm_buffer_free(b);
    qgmm_ep_plan_destroy(plan);
    qgmm_ep_comm_destroy(comm[0]);
    qgmm_ep_comm_destroy(comm[1]);
}

int main(int argc, char **argv)
{
    backend = argc > 1 ? argv[1] : "cpu";
    qgmm_context *probe = NULL;
    if (qgmm_context_create(backend, 0, &probe) != QGMM_OK) {
        printf("SKIP: backend %s unavailable: %s\n", backend, qgmm_last_error(NULL));
        return 77;
    }
    /* a backend without the ep_* kernels must say so on the first collective */
    qgmm_ep_comm *one = NULL;
    qgmm_ep_plan *plan = NULL;
    OK(qgmm_ep_comm_create_loopback(1, &probe, &one));
    qgmm_ep_plan_params pp = QGMM_EP_PLAN_PARAMS_INIT(2, 1, 4, 256);
    OK(qgmm_ep_plan_create(one, &pp, &plan));
    qgmm_buffer *b = poisoned(probe, 64);
    const qgmm_tensor ids = t2(b, QGMM_I32, 4, 1);
    const qgmm_status s = qgmm_ep_route(plan, &ids);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", qgmm_last_error(probe));
    qgmm_buffer_free(b);
    qgmm_ep_plan_destroy(plan);
    qgmm_ep_comm_destroy(one);
    qgmm_synchronize(probe);
    g_ctx[0] = probe;
    if (s == QGMM_ERR_UNSUPPORTED) {
        const int clear = strstr(msg, "qgmm_ep_route") && strstr(msg, "expert-parallel") != NULL;
        printf("%s: %s\n", clear ? "SKIP" : "FAIL: unclear refusal", msg);
        qgmm_context_destroy(probe);
        return clear ? 77 : 1;
    }
    for (int r = 1; r <= MAX_RANKS; ++r)
        if (qgmm_context_create(backend, 0, &g_ctx[r]) != QGMM_OK) {
            printf("FAIL: context %d: %s\n", r, qgmm_last_error(NULL));
            return 1;
        }
    refusals();
    static const struct { qgmm_recipe r; const char *name; } recipes[] = {
        {QGMM_RECIPE_BF16, "bf16"}, {QGMM_RECIPE_FP8_ROWWISE, "fp8_rowwise"},
        {QGMM_RECIPE_FP8_BLOCKWISE, "fp8_blockwise"}, {QGMM_RECIPE_MXFP8, "mxfp8"}};
    /* 2 ranks, even split; 3 ranks, rank 2 holds no expert (receives nothing) and rank 1 no
     * tokens; 4 ranks, uneven map; 8 ranks, even split with one expert each */
    config base[4] = {
        {"2 ranks", 2, 4, 2, 128, 128, {23, 9}, {0}, 0, 1, -1, QGMM_RECIPE_BF16, QGMM_BF16},
        {"3 ranks", 3, 5, 2, 128, 128, {17, 0, 12}, {0, 1, 0, 1, 0}, 1, 3, -1, QGMM_RECIPE_BF16, QGMM_BF16},
        {"4 ranks", 4, 6, 3, 128, 128, {11, 19, 5, 8}, {0, 0, 1, 2, 3, 3}, 1, 4, -1, QGMM_RECIPE_BF16, QGMM_BF16},
        {"8 ranks", 8, 8, 2, 128, 128, {6, 3, 9, 4, 7, 2, 5, 8}, {0}, 0, 5, -1, QGMM_RECIPE_BF16, QGMM_BF16},
    };
    for (int b = 0; b < 4; ++b)
        for (int i = 0; i < 4; ++i) {
            config c = base[b];
            c.recipe = recipes[i].r;
            char name[64];
            snprintf(name, sizeof name, "%s %s", base[b].name, recipes[i].name);
            c.name = name;
            run_layer(&c);
            printf("%s: %d checks, %d failures so far\n", name, checks, failures);
        }
    config f32 = base[2];
    f32.name = "4 ranks bf16 f32 out";
    f32.out_dtype = QGMM_F32;
    run_layer(&f32);
    config bad = base[1];
    bad.name = "3 ranks bad id on rank 2";
    bad.bad_rank = 2;
    run_layer(&bad);
    world W;
    config mm = base[0];
    mm.name = "2 ranks, plans that disagree";
    memset(&W, 0, sizeof W);
    W.c = &mm;
    run_ranks(&W, mismatch_rank);
    config lp = base[2];
    lp.name = "4 ranks low-precision dispatch";
    build_world(&W, &lp);
    run_ranks(&W, lowp_rank);
    free_world(&W);
    for (int r = 0; r <= MAX_RANKS; ++r) qgmm_context_destroy(g_ctx[r]);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
