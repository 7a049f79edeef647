/*
 * The loopback transport: R ranks of one process, each on its own context and thread. Every
 * collective step copies through host memory with the public buffer calls, so it serves any
 * backend: a rank downloads what it sends (which waits for its context), the ranks meet at a
 * barrier, each uploads what the others sent it, and a second barrier frees the staging.
 * It synchronises each rank's context by design (docs/ep.md, "Transports").
 */
#include "ep_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct lb_group {
    int n;
    int refs; /* ranks not yet destroyed */
    pthread_mutex_t mu;
    pthread_barrier_t bar;
    void **stage;      /* per rank: what it sends, host memory */
    size_t *stage_cap; /* bytes of each stage */
    int32_t *rows;     /* (n, n): rows rank r sends rank p, at [r * n + p] */
    int64_t *shape;    /* (n, 2): each rank's (per_peer) or (row_bytes, cap_rows) of this step */
} lb_group;

typedef struct lb_rank {
    lb_group *g;
    int rank;
} lb_rank;

/* Grows this rank's own stage (only its owner touches it between barriers). */
static int stage_reserve(lb_group *g, int r, size_t bytes)
{
    if (g->stage_cap[r] >= bytes) return 1;
    void *p = realloc(g->stage[r], bytes ? bytes : 1);
    if (!p) return 0;
    g->stage[r] = p;
    g->stage_cap[r] = bytes;
    return 1;
}

/* Before the first barrier each rank posts the sizes of its step; after it every rank
 * checks that all agree (plans made with different num_experts, top_k or widths would
 * otherwise read past each other's rows), so all of them refuse a mismatched step alike. */
static void post_shape(lb_group *g, int r, int64_t a, int64_t b)
{
    g->shape[2 * r] = a;
    g->shape[2 * r + 1] = b;
}

static qgmm_status check_shapes(const lb_group *g, qgmm_context *ctx, int r, const char *what)
{
    for (int p = 0; p < g->n; ++p)
        if (g->shape[2 * p] != g->shape[2 * r] || g->shape[2 * p + 1] != g->shape[2 * r + 1])
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "loopback transport: rank %d's %s is (%lld, %lld) but rank %d's is (%lld, %lld); "
                                  "every rank's plan and call must agree", p, what, (long long)g->shape[2 * p],
                                  (long long)g->shape[2 * p + 1], r, (long long)g->shape[2 * r],
                                  (long long)g->shape[2 * r + 1]);
    return QGMM_OK;
}

/* Every rank passes both barriers whatever happened, so one rank's error never leaves the
 * others waiting; the error is reported by the rank that saw it. */
static qgmm_status lb_exchange_counts(qgmm_ep_transport *tp, qgmm_context *ctx, const qgmm_tensor *send,
                                      const qgmm_tensor *recv, int64_t per_peer)
{
    lb_rank *t = tp;
    lb_group *g = t->g;
    const int n = g->n, r = t->rank;
    const size_t bytes = (size_t)n * (size_t)per_peer * sizeof(int32_t);
    qgmm_status st = QGMM_OK;
    if (!stage_reserve(g, r, bytes))
        st = qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "loopback transport: no host memory for %zu bytes", bytes);
    else
        st = qgmm_buffer_download(send->buffer, send->offset, g->stage[r], bytes);
    post_shape(g, r, per_peer, 0);
    pthread_barrier_wait(&g->bar);
    const qgmm_status agree = check_shapes(g, ctx, r, "counts per peer");
    if (st == QGMM_OK) st = agree;
    int32_t *mine = st == QGMM_OK ? malloc(bytes ? bytes : 1) : NULL;
    if (st == QGMM_OK && !mine)
        st = qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "loopback transport: no host memory for %zu bytes", bytes);
    if (st == QGMM_OK) {
        const size_t slot = (size_t)per_peer * sizeof(int32_t);
        for (int p = 0; p < n; ++p) memcpy((char *)mine + p * slot, (const char *)g->stage[p] + r * slot, slot);
        st = qgmm_buffer_upload(recv->buffer, recv->offset, mine, bytes);
    }
    free(mine);
    pthread_barrier_wait(&g->bar);
    return st;
}

static qgmm_status lb_alltoallv(qgmm_ep_transport *tp, qgmm_context *ctx, const qgmm_tensor *send,
                                const qgmm_tensor *recv, int64_t row_bytes, int64_t cap_rows,
                                const qgmm_tensor *send_rows, const qgmm_tensor *recv_rows)
{
    (void)recv_rows; /* what arrives is what the senders' counts say */
    lb_rank *t = tp;
    lb_group *g = t->g;
    const int n = g->n, r = t->rank;
    const size_t slot = (size_t)cap_rows * (size_t)row_bytes;
    int32_t *rows = g->rows + (size_t)r * n;
    qgmm_status st = qgmm_buffer_download(send_rows->buffer, send_rows->offset, rows, (size_t)n * sizeof(int32_t));
    if (st == QGMM_OK && !stage_reserve(g, r, (size_t)n * slot))
        st = qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "loopback transport: no host memory for %zu bytes",
                            (size_t)n * slot);
    for (int p = 0; p < n && st == QGMM_OK; ++p)
        st = qgmm_buffer_download(send->buffer, send->offset + p * slot, (char *)g->stage[r] + p * slot,
                                  (size_t)rows[p] * (size_t)row_bytes);
    if (st != QGMM_OK) memset(rows, 0, (size_t)n * sizeof(int32_t)); /* send nothing */
    post_shape(g, r, row_bytes, cap_rows);
    pthread_barrier_wait(&g->bar);
    const qgmm_status agree = check_shapes(g, ctx, r, "(wire row bytes, rows per slot)");
    if (st == QGMM_OK) st = agree;
    for (int p = 0; p < n && st == QGMM_OK; ++p) {
        const size_t nb = (size_t)g->rows[(size_t)p * n + r] * (size_t)row_bytes;
        if (nb) st = qgmm_buffer_upload(recv->buffer, recv->offset + p * slot,
                                        (const char *)g->stage[p] + r * slot, nb);
    }
    pthread_barrier_wait(&g->bar);
    return st;
}

static void lb_destroy(qgmm_ep_transport *tp)
{
    lb_rank *t = tp;
    lb_group *g = t->g;
    pthread_mutex_lock(&g->mu);
    const int last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    free(t);
    if (!last) return;
    for (int i = 0; i < g->n; ++i) free(g->stage[i]);
    free(g->stage);
    free(g->stage_cap);
    free(g->rows);
    free(g->shape);
    pthread_barrier_destroy(&g->bar);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

static const qgmm_ep_transport_vtable lb_vtable = {
    .name = "loopback",
    .exchange_counts = lb_exchange_counts,
    .alltoallv = lb_alltoallv,
    .destroy = lb_destroy,
};

qgmm_status qgmm_ep_loopback_create(int n, qgmm_ep_transport **t, const qgmm_ep_transport_vtable **vt)
{
    lb_group *g = calloc(1, sizeof *g);
    if (!g) return QGMM_ERR_OUT_OF_MEMORY;
    g->n = n;
    g->refs = n;
    g->stage = calloc((size_t)n, sizeof *g->stage);
    g->stage_cap = calloc((size_t)n, sizeof *g->stage_cap);
    g->rows = calloc((size_t)n * n, sizeof *g->rows);
    g->shape = calloc((size_t)n * 2, sizeof *g->shape);
    lb_rank **ranks = calloc((size_t)n, sizeof *ranks);
    int ok = g->stage && g->stage_cap && g->rows && g->shape && ranks;
    for (int i = 0; ok && i < n; ++i) {
        ranks[i] = calloc(1, sizeof **ranks);
        ok = ranks[i] != NULL;
        if (ok) {
            ranks[i]->g = g;
            ranks[i]->rank = i;
        }
    }
    if (ok && pthread_mutex_init(&g->mu, NULL) != 0) ok = 0;
    if (ok && pthread_barrier_init(&g->bar, NULL, (unsigned)n) != 0) {
        pthread_mutex_destroy(&g->mu);
        ok = 0;
    }
    if (!ok) {
        for (int i = 0; ranks && i < n; ++i) free(ranks[i]);
        free(ranks);
        free(g->stage);
        free(g->stage_cap);
        free(g->rows);
        free(g->shape);
        free(g);
        return QGMM_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < n; ++i) t[i] = ranks[i];
    free(ranks);
    *vt = &lb_vtable;
    return QGMM_OK;
}
