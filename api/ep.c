/*
 * Expert parallelism (docs/ep.md): communicators, plans, and the collective route /
 * dispatch / combine. Each op validates everything on the host, then enqueues the backend's
 * routing op, the transport's exchange and the next routing op on the rank's context; no
 * device memory is read on the host except by qgmm_ep_received_rows (exact-size mode).
 */
#include "ep_internal.h"
#include "checked.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

#define EP_MAX_RANKS 1024
#define EP_MAX_TOPK 1024
/* A transport that exchanges in chunks (exchange_chunk) gets chunks of at least this many
 * bytes per peer, at most QGMM_EP_MAX_CHUNKS: each NCCL exchange has a fixed cost that the
 * overlap of the next pack and the last unpack repays only for large chunks, so slots
 * below twice this size go in one exchange (docs/ep.md, "Reading of the figures"). */
#define EP_CHUNK_BYTES ((int64_t)128 << 20)

/* Sets the plan's wire window to chunk c of n ([0, cap) for c = 0 of 1). */
static void set_window(qgmm_ep_desc *d, int c, int n)
{
    const int64_t w = (d->cap + n - 1) / n;
    d->win_lo = (int64_t)c * w < d->cap ? (int64_t)c * w : d->cap;
    d->win_hi = d->win_lo + w < d->cap ? d->win_lo + w : d->cap;
}

/* What the device checks of each op find, as qgmm_synchronize names them. */
static const char route_check[] =
    "an expert id outside [0, num_experts), more rows for one rank than max_rows_per_peer, "
    "or more received rows than max_recv_rows, on this rank or another";

qgmm_tensor qgmm_ep_bytes(qgmm_buffer *buf)
{
    const int64_t n[1] = {(int64_t)qgmm_buffer_size(buf)};
    return qgmm_tensor_make(buf, 0, QGMM_U8, 1, n);
}

/* ---------------------------------------------------------------- communicators */
static qgmm_status comm_new(qgmm_context *ctx, int nranks, int rank, const qgmm_ep_transport_vtable *vt,
                            qgmm_ep_transport *t, qgmm_ep_comm **out)
{
    qgmm_ep_comm *c = calloc(1, sizeof *c);
    if (!c) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for a communicator");
    c->ctx = ctx;
    c->nranks = nranks;
    c->rank = rank;
    c->tvt = vt;
    c->t = t;
    *out = c;
    return QGMM_OK;
}

qgmm_status qgmm_ep_comm_create_loopback(int nranks, qgmm_context *const *ctxs, qgmm_ep_comm **comms)
{
    static const char op[] = "qgmm_ep_comm_create_loopback";
    qgmm_clear_error(NULL);
    if (nranks < 1 || nranks > EP_MAX_RANKS)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: nranks is %d; must be in [1, %d]", op,
                              nranks, EP_MAX_RANKS);
    if (!ctxs || !comms)
        return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: %s is NULL", op, ctxs ? "comms" : "ctxs");
    for (int i = 0; i < nranks; ++i) {
        if (!ctxs[i])
            return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: ctxs[%d] is NULL", op, i);
        for (int j = 0; j < i; ++j)
            if (ctxs[j] == ctxs[i])
                return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT,
                                      "%s: ctxs[%d] and ctxs[%d] are one context; each rank needs its own",
                                      op, j, i);
    }
    qgmm_ep_transport **t = calloc((size_t)nranks, sizeof *t);
    qgmm_ep_comm **c = calloc((size_t)nranks, sizeof *c);
    const qgmm_ep_transport_vtable *vt = NULL;
    if (!t || !c || qgmm_ep_loopback_create(nranks, t, &vt) != QGMM_OK) {
        free(t);
        free(c);
        return qgmm_set_error(NULL, QGMM_ERR_OUT_OF_MEMORY, "%s: no host memory for %d ranks", op, nranks);
    }
    for (int i = 0; i < nranks; ++i) {
        if (comm_new(ctxs[i], nranks, i, vt, t[i], &c[i]) != QGMM_OK) {
            for (int j = 0; j < nranks; ++j) {
                vt->destroy(t[j]);
                free(c[j]);
            }
            free(t);
            free(c);
            return qgmm_set_error(NULL, QGMM_ERR_OUT_OF_MEMORY, "%s: no host memory for %d ranks", op, nranks);
        }
    }
    memcpy(comms, c, (size_t)nranks * sizeof *c);
    free(t);
    free(c);
    return QGMM_OK;
}

static qgmm_status backend_transport(qgmm_context *ctx, const char *op, qgmm_ep_transport_kind kind,
                                     const void *handle, int nranks, int rank, qgmm_ep_comm **out)
{
    if (!out) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: out is NULL", op);
    if (!ctx->vt->ep_transport_create)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "%s: backend %s has no NCCL transport; use qgmm_ep_comm_create_loopback", op,
                              ctx->backend_name);
    const qgmm_ep_transport_vtable *vt = NULL;
    qgmm_ep_transport *t = NULL;
    int n = 0, r = 0;
    qgmm_status st = ctx->vt->ep_transport_create(ctx, kind, handle, nranks, rank, &vt, &t, &n, &r);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    st = comm_new(ctx, n, r, vt, t, out);
    if (st != QGMM_OK) vt->destroy(t);
    return st;
}

qgmm_status qgmm_ep_comm_create_nccl(qgmm_context *ctx, void *nccl_comm, qgmm_ep_comm **out)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!nccl_comm)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "qgmm_ep_comm_create_nccl: nccl_comm is NULL");
    return backend_transport(ctx, "qgmm_ep_comm_create_nccl", QGMM_EP_TRANSPORT_NCCL_COMM, nccl_comm, 0, 0, out);
}

qgmm_status qgmm_ep_nccl_unique_id(qgmm_context *ctx, void *id_out)
{
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!id_out) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "qgmm_ep_nccl_unique_id: id_out is NULL");
    if (!ctx->vt->ep_unique_id)
        return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                              "qgmm_ep_nccl_unique_id: backend %s has no NCCL transport", ctx->backend_name);
    return ctx->vt->ep_unique_id(ctx, id_out);
}

qgmm_status qgmm_ep_comm_create_nccl_id(qgmm_context *ctx, const void *unique_id, int nranks, int rank,
                                        qgmm_ep_comm **out)
{
    static const char op[] = "qgmm_ep_comm_create_nccl_id";
    QGMM_TRY(qgmm_check_ctx(ctx));
    if (!unique_id) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: unique_id is NULL", op);
    if (nranks < 1 || nranks > EP_MAX_RANKS)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: nranks is %d; must be in [1, %d]", op, nranks,
                              EP_MAX_RANKS);
    if (rank < 0 || rank >= nranks)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: rank is %d; must be in [0, %d)", op, rank,
                              nranks);
    return backend_transport(ctx, op, QGMM_EP_TRANSPORT_NCCL_UNIQUE_ID, unique_id, nranks, rank, out);
}

void qgmm_ep_comm_destroy(qgmm_ep_comm *comm)
{
    if (!comm) return;
    comm->tvt->destroy(comm->t);
    free(comm);
}

int qgmm_ep_comm_rank(const qgmm_ep_comm *comm) { return comm ? comm->rank : -1; }
int qgmm_ep_comm_nranks(const qgmm_ep_comm *comm) { return comm ? comm->nranks : 0; }
qgmm_context *qgmm_ep_comm_context(const qgmm_ep_comm *comm) { return comm ? comm->ctx : NULL; }

int64_t qgmm_ep_wire_row_bytes(qgmm_dtype dtype, int64_t cols, int64_t scale_bytes)
{
    const int64_t es = (int64_t)qgmm_dtype_size(dtype);
    int64_t b = 0, r = 0;
    if (es == 0 || cols < 0 || scale_bytes < 0 || cols > QGMM_MAX_EXTENT || scale_bytes > QGMM_MAX_EXTENT) return 0;
    if (!qgmm_add_i64(cols * es, scale_bytes, &b) || !qgmm_round_up_checked(b, 16, &r)) return 0;
    return r;
}

/* ---------------------------------------------------------------- plans */
static qgmm_status plan_params_check(qgmm_context *ctx, const qgmm_ep_plan_params *p, int nranks)
{
    if (!p) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p is NULL");
    if (p->num_experts < 1 || p->num_experts > INT32_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->num_experts is %lld; must be in [1, 2^31)",
                              (long long)p->num_experts);
    if (p->top_k < 1 || p->top_k > EP_MAX_TOPK)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->top_k is %d; must be in [1, %d]", p->top_k,
                              EP_MAX_TOPK);
    if (p->max_tokens < 0 || p->max_tokens > INT32_MAX / p->top_k)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "p->max_tokens is %lld; max_tokens * top_k must be in [0, 2^31)",
                              (long long)p->max_tokens);
    if (p->max_row_bytes < 16 || p->max_row_bytes % 16)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "p->max_row_bytes is %lld; must be a positive multiple of 16 "
                              "(qgmm_ep_wire_row_bytes)", (long long)p->max_row_bytes);
    if (p->alignment != 16 && p->alignment != 32 && p->alignment != 128)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->alignment is %d; must be 16, 32 or 128",
                              p->alignment);
    if (p->max_rows_per_peer < 0 || p->max_rows_per_peer > INT32_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->max_rows_per_peer is %lld; must be in [0, 2^31)",
                              (long long)p->max_rows_per_peer);
    if (p->max_recv_rows < 0 || p->max_recv_rows > INT32_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "p->max_recv_rows is %lld; must be in [0, 2^31)",
                              (long long)p->max_recv_rows);
    if (!p->expert_rank && p->num_experts % nranks)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "p->expert_rank is NULL (an even split) but num_experts %lld is not a multiple "
                              "of the %d ranks", (long long)p->num_experts, nranks);
    for (int64_t e = 0; p->expert_rank && e < p->num_experts; ++e)
        if (p->expert_rank[e] < 0 || p->expert_rank[e] >= nranks)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                  "p->expert_rank[%lld] is %d; must be in [0, %d)", (long long)e,
                                  (int)p->expert_rank[e], nranks);
    return QGMM_OK;
}

/* The i32 tables of the plan, laid out in one buffer (each at a 256-byte boundary). */
typedef struct table_spec {
    qgmm_tensor *t;
    int64_t n;
} table_spec;

static qgmm_status plan_alloc(qgmm_ep_plan *pl, const int32_t *rank_of, const int32_t *local_of)
{
    qgmm_context *ctx = pl->comm->ctx;
    qgmm_ep_desc *d = &pl->d;
    const int64_t R = d->nranks, S = d->local_max + 1;
    const table_spec specs[] = {
        {&d->expert_rank, d->num_experts}, {&d->expert_local, d->num_experts},
        {&d->pos, pl->max_tokens * d->top_k}, {&d->send_src, R * d->cap},
        {&d->send_counts, R * S}, {&d->recv_counts, R * S},
        {&d->send_rows, R}, {&d->recv_rows, R},
        {&d->recv_dst, R * d->cap}, {&d->offs, d->local > 0 ? d->local : 1},
        {&d->state, 1},
    };
    size_t at[QGMM_NARGS(specs)], used = 0;
    for (int i = 0; i < QGMM_NARGS(specs); ++i) {
        size_t end = 0;
        if (!qgmm_round_up_size(used, 256, &at[i]) ||
            !qgmm_add_size(at[i], (size_t)specs[i].n * sizeof(int32_t), &end))
            return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "the plan's tables do not fit in memory");
        used = end;
    }
    size_t wire = 0;
    if (!qgmm_mul_size((size_t)R * (size_t)d->cap, (size_t)pl->max_row_bytes, &wire))
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY,
                              "the wire buffers (%lld ranks x %lld rows x %lld bytes) do not fit in memory",
                              (long long)R, (long long)d->cap, (long long)pl->max_row_bytes);
    QGMM_TRY(qgmm_buffer_alloc(ctx, used, &pl->tables));
    qgmm_status st = qgmm_buffer_alloc(ctx, wire, &pl->send_wire);
    if (st == QGMM_OK) st = qgmm_buffer_alloc(ctx, wire, &pl->recv_wire);
    if (st != QGMM_OK) return st;
    for (int i = 0; i < QGMM_NARGS(specs); ++i) {
        const int64_t shape[1] = {specs[i].n};
        *specs[i].t = qgmm_tensor_make(pl->tables, at[i], QGMM_I32, 1, shape);
    }
    const size_t eb = (size_t)d->num_experts * sizeof(int32_t);
    QGMM_TRY(qgmm_buffer_upload(pl->tables, d->expert_rank.offset, rank_of, eb));
    QGMM_TRY(qgmm_buffer_upload(pl->tables, d->expert_local.offset, local_of, eb));
    const int32_t refused = 1; /* no step routed yet: every op writes nothing */
    return qgmm_buffer_upload(pl->tables, d->state.offset, &refused, sizeof refused);
}

qgmm_status qgmm_ep_plan_create(qgmm_ep_comm *comm, const qgmm_ep_plan_params *p, qgmm_ep_plan **out)
{
    static const char op[] = "qgmm_ep_plan_create";
    qgmm_clear_error(NULL);
    if (!comm) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: comm is NULL", op);
    qgmm_context *ctx = comm->ctx;
    qgmm_clear_error(ctx);
    if (!out) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: out is NULL", op);
    qgmm_status st = plan_params_check(ctx, p, comm->nranks);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    const int R = comm->nranks;
    const int64_t E = p->num_experts;
    int32_t *rank_of = malloc((size_t)E * sizeof *rank_of), *local_of = malloc((size_t)E * sizeof *local_of);
    int64_t *per_rank = calloc((size_t)R, sizeof *per_rank);
    qgmm_ep_plan *pl = calloc(1, sizeof *pl);
    if (!rank_of || !local_of || !per_rank || !pl) {
        free(rank_of), free(local_of), free(per_rank), free(pl);
        return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld experts", op, (long long)E);
    }
    for (int64_t e = 0; e < E; ++e) {
        rank_of[e] = p->expert_rank ? p->expert_rank[e] : (int32_t)(e / (E / R));
        local_of[e] = (int32_t)per_rank[rank_of[e]]++;
    }
    qgmm_ep_desc *d = &pl->d;
    d->nranks = R;
    d->rank = comm->rank;
    d->top_k = p->top_k;
    d->alignment = p->alignment;
    d->num_experts = E;
    d->local = per_rank[comm->rank];
    for (int r = 0; r < R; ++r)
        if (per_rank[r] > d->local_max) d->local_max = per_rank[r];
    d->cap = p->max_rows_per_peer ? p->max_rows_per_peer : p->max_tokens * p->top_k;
    int64_t bound = p->max_recv_rows;
    if (!bound) bound = qgmm_padded_rows_bound((int64_t)R * d->cap, d->local > 0 ? d->local : 1, p->alignment);
    free(per_rank);
    pl->comm = comm;
    pl->max_tokens = p->max_tokens;
    pl->max_row_bytes = p->max_row_bytes;
    if (bound > INT32_MAX) {
        const long long cap = (long long)d->cap;
        free(rank_of), free(local_of), free(pl);
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "%s: the receive layout would need %lld rows (%d ranks x %lld rows per peer, "
                              "padded), past the int32 offsets; declare max_rows_per_peer or max_recv_rows",
                              op, (long long)bound, R, cap);
    }
    d->max_recv_rows = bound;
    set_window(d, 0, 1);
    d->own_direct = comm->tvt->exchange_chunk != NULL; /* such a transport leaves the own slot alone */
    pl->local_ids = malloc((size_t)(d->local > 0 ? d->local : 1) * sizeof *pl->local_ids);
    st = pl->local_ids ? plan_alloc(pl, rank_of, local_of)
                       : qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "no host memory for the plan");
    for (int64_t e = 0, l = 0; pl->local_ids && e < E; ++e)
        if (rank_of[e] == comm->rank) pl->local_ids[l++] = e;
    free(rank_of);
    free(local_of);
    if (st != QGMM_OK) {
        qgmm_ep_plan_destroy(pl);
        return qgmm_error_prefix(ctx, st, "%s: ", op);
    }
    *out = pl;
    return QGMM_OK;
}

void qgmm_ep_plan_destroy(qgmm_ep_plan *plan)
{
    if (!plan) return;
    qgmm_buffer_free(plan->tables);
    qgmm_buffer_free(plan->send_wire);
    qgmm_buffer_free(plan->recv_wire);
    free(plan->local_ids);
    free(plan);
}

int64_t qgmm_ep_plan_local_experts(const qgmm_ep_plan *plan) { return plan ? plan->d.local : 0; }
int64_t qgmm_ep_plan_local_expert_id(const qgmm_ep_plan *plan, int64_t l)
{
    return plan && l >= 0 && l < plan->d.local ? plan->local_ids[l] : -1;
}
int64_t qgmm_ep_plan_recv_rows(const qgmm_ep_plan *plan) { return plan ? plan->d.max_recv_rows : 0; }

/* ---------------------------------------------------------------- ops */
/* The first checks of every op on a plan; *ctx receives the rank's context. */
static qgmm_status plan_ctx(qgmm_ep_plan *plan, const char *op, qgmm_context **ctx)
{
    qgmm_clear_error(NULL);
    if (!plan) return qgmm_set_error(NULL, QGMM_ERR_INVALID_ARGUMENT, "%s: plan is NULL", op);
    *ctx = plan->comm->ctx;
    qgmm_clear_error(*ctx);
    return QGMM_OK;
}

static qgmm_status need_slot(qgmm_context *ctx, const void *slot, const char *what)
{
    if (slot) return QGMM_OK;
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED,
                          "backend %s has no expert-parallel %s kernel (docs/ep.md, \"Backend contract\")",
                          ctx->backend_name, what);
}

qgmm_status qgmm_ep_route(qgmm_ep_plan *plan, const qgmm_tensor *expert_ids)
{
    static const char op[] = "qgmm_ep_route";
    qgmm_context *ctx = NULL;
    QGMM_TRY(plan_ctx(plan, op, &ctx));
    qgmm_status st = qgmm_check_tensor(ctx, "expert_ids", expert_ids, QGMM_MASK_I32, 2, 2);
    if (st == QGMM_OK && expert_ids->shape[1] != plan->d.top_k)
        st = qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "expert_ids.shape[1] is %lld; the plan's top_k is %d",
                            (long long)expert_ids->shape[1], plan->d.top_k);
    if (st == QGMM_OK && expert_ids->shape[0] > plan->max_tokens)
        st = qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "expert_ids has %lld tokens; the plan's max_tokens is %lld",
                            (long long)expert_ids->shape[0], (long long)plan->max_tokens);
    if (st == QGMM_OK) st = need_slot(ctx, ctx->vt->ep_route, "route");
    if (st == QGMM_OK) st = need_slot(ctx, ctx->vt->ep_layout, "layout");
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    qgmm_ep_desc *d = &plan->d;
    d->tokens = expert_ids->shape[0];
    plan->routed = 0; /* the tables change from here on: only a whole route makes them usable */
    st = ctx->vt->ep_route(ctx, d, expert_ids);
    if (st == QGMM_OK) st = plan->comm->tvt->exchange_counts(plan->comm->t, ctx, &d->send_counts, &d->recv_counts,
                                                             d->local_max + 1);
    if (st == QGMM_OK) st = ctx->vt->ep_layout(ctx, d);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    plan->routed = 1;
    return qgmm_device_check_enqueued(ctx, st, op, "expert_ids", route_check);
}

qgmm_status qgmm_ep_received_rows(qgmm_ep_plan *plan, int64_t *rows)
{
    static const char op[] = "qgmm_ep_received_rows";
    qgmm_context *ctx = NULL;
    QGMM_TRY(plan_ctx(plan, op, &ctx));
    if (!rows) return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: rows is NULL", op);
    if (!plan->routed)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s: the plan was never routed (qgmm_ep_route)", op);
    int32_t v[2] = {0, 0};
    const qgmm_ep_desc *d = &plan->d;
    /* the host synchronisation of the exact-size mode */
    QGMM_TRY(qgmm_buffer_download(plan->tables, d->state.offset, &v[0], sizeof v[0]));
    if (d->local > 0)
        QGMM_TRY(qgmm_buffer_download(plan->tables, d->offs.offset + (size_t)(d->local - 1) * sizeof(int32_t),
                                      &v[1], sizeof v[1]));
    if (v[0])
        return qgmm_set_error(ctx, QGMM_ERR_BAD_OFFSETS, "%s: the last qgmm_ep_route was refused: %s (device check)",
                              op, route_check);
    *rows = v[1];
    return QGMM_OK;
}

static int is_hp(qgmm_dtype t) { return t == QGMM_BF16 || t == QGMM_F32; }

/* The scales that travel with a quantized x (see qgmm_ep_dispatch); *row_bytes gets their
 * bytes per row, *cols their columns. */
static qgmm_status check_scales(qgmm_context *ctx, const qgmm_tensor *x, const qgmm_tensor *xs, int64_t *bytes,
                                int64_t *cols)
{
    const int64_t T = x->shape[0], D = x->shape[1];
    QGMM_TRY(qgmm_check_tensor(ctx, "x_scales", xs, QGMM_MASK(QGMM_F32) | QGMM_MASK_E8M0, 1, 2));
    if (!qgmm_dtype_is_fp8(x->dtype))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "x_scales is given but x has dtype %s; scales "
                              "travel with fp8 data", qgmm_dtype_name(x->dtype));
    if (xs->rank == 1) {
        if (xs->dtype != QGMM_F32)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "x_scales has rank 1 and dtype %s; rowwise "
                                  "scales are f32 (T)", qgmm_dtype_name(xs->dtype));
        QGMM_TRY(qgmm_check_shape(ctx, "x_scales", xs, 1, T, 0, 0));
        *cols = 1;
    } else {
        const int64_t block = xs->dtype == QGMM_F32 ? 128 : 32;
        if (D % block)
            return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "x has D=%lld; %s scales need D a multiple of %lld",
                                  (long long)D, block == 128 ? "1x128 blockwise" : "MXFP8", (long long)block);
        QGMM_TRY(qgmm_check_shape(ctx, "x_scales", xs, 2, T, D / block, 0));
        QGMM_TRY(qgmm_check_rows_contiguous(ctx, "x_scales", xs));
        *cols = D / block;
    }
    *bytes = *cols * (int64_t)qgmm_dtype_size(xs->dtype);
    return QGMM_OK;
}

static qgmm_status check_weights(qgmm_context *ctx, const qgmm_ep_plan *plan, const qgmm_tensor *w, int *present)
{
    QGMM_TRY(qgmm_check_optional(ctx, "weights", w, QGMM_MASK_HP, 2, 2, present));
    if (*present) QGMM_TRY(qgmm_check_shape(ctx, "weights", w, 2, plan->d.tokens, plan->d.top_k, 0));
    return QGMM_OK;
}

static qgmm_status check_row_bytes(qgmm_context *ctx, const qgmm_ep_plan *plan, int64_t row_bytes)
{
    if (row_bytes > 0 && row_bytes <= plan->max_row_bytes) return QGMM_OK;
    return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                          "a wire row takes %lld bytes; the plan's max_row_bytes is %lld", (long long)row_bytes,
                          (long long)plan->max_row_bytes);
}

static qgmm_status dispatch_check(qgmm_ep_plan *plan, qgmm_context *ctx, const qgmm_tensor *x,
                                  const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *out,
                                  const qgmm_tensor *out_scales, const qgmm_tensor *offs, int64_t *row_bytes,
                                  int *blocked)
{
    const qgmm_ep_desc *d = &plan->d;
    if (!plan->routed)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "the plan was never routed (qgmm_ep_route)");
    QGMM_TRY(need_slot(ctx, ctx->vt->ep_pack, "pack"));
    QGMM_TRY(need_slot(ctx, ctx->vt->ep_unpack, "unpack"));
    if (plan->d.own_direct) QGMM_TRY(need_slot(ctx, ctx->vt->ep_own_rows, "own-rows"));
    QGMM_TRY(qgmm_check_tensor(ctx, "x", x, QGMM_MASK_ANY, 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "x", x, 2, d->tokens, x->shape[1], 0));
    QGMM_TRY(qgmm_check_rows_contiguous(ctx, "x", x));
    const int64_t D = x->shape[1];
    int has_s = 0, has_w = 0, has_os = 0, has_offs = 0;
    int64_t sbytes = 0, scols = 0;
    QGMM_TRY(qgmm_check_optional(ctx, "x_scales", xs, QGMM_MASK_ANY, 1, 2, &has_s));
    if (has_s) QGMM_TRY(check_scales(ctx, x, xs, &sbytes, &scols));
    QGMM_TRY(check_weights(ctx, plan, w, &has_w));
    if (has_w && (!is_hp(x->dtype) || has_s))
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                              "weights are given with x %s%s; weighted dispatch is for bf16 or f32 rows",
                              qgmm_dtype_name(x->dtype), has_s ? " and x_scales" : "");
    QGMM_TRY(qgmm_check_tensor(ctx, "out", out, QGMM_MASK(x->dtype), 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "out", out, 2, out->shape[0], D, 0));
    QGMM_TRY(qgmm_check_rows_contiguous(ctx, "out", out));
    if (out->shape[0] > INT32_MAX)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "out has %lld rows; at most 2^31 - 1",
                              (long long)out->shape[0]);
    const int64_t rows = out->shape[0];
    QGMM_TRY(qgmm_check_optional(ctx, "out_scales", out_scales, QGMM_MASK_ANY, 1, 2, &has_os));
    if (has_os != has_s)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "%s is given without %s",
                              has_s ? "x_scales" : "out_scales", has_s ? "out_scales" : "x_scales");
    *blocked = 0;
    if (has_s) {
        QGMM_TRY(qgmm_check_tensor(ctx, "out_scales", out_scales, QGMM_MASK(xs->dtype) |
                                   (xs->dtype == QGMM_F32 ? 0 : QGMM_MASK_E8M0), 1, 2));
        if (xs->dtype != QGMM_F32 && out_scales->rank == 1) {
            *blocked = 1;
            QGMM_TRY(qgmm_check_blocked_shape(ctx, "out_scales", out_scales, QGMM_BLOCKED_M_GROUPS,
                                              d->local > 0 ? d->local : 1, rows, scols));
        } else if (xs->rank == 1) {
            QGMM_TRY(qgmm_check_shape(ctx, "out_scales", out_scales, 1, rows, 0, 0));
            QGMM_TRY(qgmm_check_contiguous(ctx, "out_scales", out_scales));
        } else {
            QGMM_TRY(qgmm_check_shape(ctx, "out_scales", out_scales, 2, rows, scols, 0));
            QGMM_TRY(qgmm_check_rows_contiguous(ctx, "out_scales", out_scales));
        }
    }
    QGMM_TRY(qgmm_check_optional(ctx, "offs", offs, QGMM_MASK_I32, 1, 1, &has_offs));
    if (has_offs) {
        QGMM_TRY(qgmm_check_shape(ctx, "offs", offs, 1, d->local, 0, 0));
        QGMM_TRY(qgmm_check_contiguous(ctx, "offs", offs));
    }
    *row_bytes = qgmm_ep_wire_row_bytes(x->dtype, D, sbytes);
    QGMM_TRY(check_row_bytes(ctx, plan, *row_bytes));
    const qgmm_arg outs[] = {{"out", out}, {"out_scales", out_scales}, {"offs", offs}};
    const qgmm_arg ins[] = {{"x", x}, {"x_scales", xs}, {"weights", w}};
    return qgmm_check_aliasing(ctx, NULL, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins));
}

/* How many chunks the wire exchange of rows of row_bytes takes (1: one alltoallv, or one
 * chunk where the plan runs own_direct). */
static int chunks_of(const qgmm_ep_plan *plan, int64_t row_bytes)
{
    if (!plan->d.own_direct || plan->d.nranks == 1) return 1;
    int64_t n = plan->d.cap * row_bytes / EP_CHUNK_BYTES;
    if (n > QGMM_EP_MAX_CHUNKS) n = QGMM_EP_MAX_CHUNKS;
    if (n > plan->d.cap) n = plan->d.cap;
    return n > 1 ? (int)n : 1;
}

/* Packs window c of n of the peers' slots and starts its exchange. */
static qgmm_status send_chunk(qgmm_ep_plan *plan, qgmm_ep_dir dir, int c, int n, const qgmm_tensor *x,
                              const qgmm_tensor *xs, const qgmm_tensor *w, const qgmm_tensor *sw,
                              const qgmm_tensor *rw, int64_t row_bytes)
{
    qgmm_ep_desc *d = &plan->d;
    qgmm_context *ctx = plan->comm->ctx;
    set_window(d, c, n);
    QGMM_TRY(ctx->vt->ep_pack(ctx, d, dir, x, xs, w, sw, row_bytes));
    return plan->comm->tvt->exchange_chunk(plan->comm->t, ctx, sw, rw, row_bytes, d->cap, d->win_lo, d->win_hi, c);
}

/* Whole slots through the wire: pack, one alltoallv (the counts swap roles for the combine,
 * which sends back what this rank received). */
static qgmm_status send_whole(qgmm_ep_plan *plan, qgmm_ep_dir dir, const qgmm_tensor *x, const qgmm_tensor *xs,
                              const qgmm_tensor *w, const qgmm_tensor *sw, const qgmm_tensor *rw,
                              int64_t row_bytes)
{
    qgmm_ep_desc *d = &plan->d;
    qgmm_context *ctx = plan->comm->ctx;
    const qgmm_tensor *counts = dir == QGMM_EP_DISPATCH ? &d->send_rows : &d->recv_rows;
    const qgmm_tensor *back = dir == QGMM_EP_DISPATCH ? &d->recv_rows : &d->send_rows;
    QGMM_TRY(ctx->vt->ep_pack(ctx, d, dir, x, xs, w, sw, row_bytes));
    return plan->comm->tvt->alltoallv(plan->comm->t, ctx, sw, rw, row_bytes, d->cap, counts, back);
}

qgmm_status qgmm_ep_dispatch(qgmm_ep_plan *plan, const qgmm_tensor *x, const qgmm_tensor *x_scales,
                             const qgmm_tensor *weights, const qgmm_tensor *out, const qgmm_tensor *out_scales,
                             const qgmm_tensor *offs)
{
    static const char op[] = "qgmm_ep_dispatch";
    qgmm_context *ctx = NULL;
    QGMM_TRY(plan_ctx(plan, op, &ctx));
    int64_t row_bytes = 0;
    int blocked = 0;
    qgmm_status st = dispatch_check(plan, ctx, x, x_scales, weights, out, out_scales, offs, &row_bytes, &blocked);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    qgmm_ep_desc *d = &plan->d;
    const qgmm_tensor sw = qgmm_ep_bytes(plan->send_wire), rw = qgmm_ep_bytes(plan->recv_wire);
    const qgmm_tensor none = {0};
    const qgmm_tensor *xs = qgmm_present(x_scales) ? x_scales : &none, *w = qgmm_present(weights) ? weights : &none;
    const qgmm_tensor *os = qgmm_present(out_scales) ? out_scales : &none, *of = qgmm_present(offs) ? offs : &none;
    if (!d->own_direct) {
        st = send_whole(plan, QGMM_EP_DISPATCH, x, xs, w, &sw, &rw, row_bytes);
        if (st == QGMM_OK) st = ctx->vt->ep_unpack(ctx, d, QGMM_EP_DISPATCH, &rw, row_bytes, &none, out, os, blocked, of);
    } else {
        /* chunk c goes on the wire, the own rows of window c move while it is there, then
         * chunk c - 1 (landed by now, or soon) is unpacked, then chunk c + 1 is packed */
        const int n = chunks_of(plan, row_bytes), peers = d->nranks > 1;
        const qgmm_ep_transport_vtable *tvt = plan->comm->tvt;
        for (int c = 0; c <= n && st == QGMM_OK; ++c) {
            if (c < n && peers) st = send_chunk(plan, QGMM_EP_DISPATCH, c, n, x, xs, w, &sw, &rw, row_bytes);
            if (c < n && st == QGMM_OK) {
                set_window(d, c, n);
                st = ctx->vt->ep_own_rows(ctx, d, QGMM_EP_DISPATCH, x, xs, w, &rw, row_bytes, out, os, blocked, of);
            }
            if (c > 0 && peers && st == QGMM_OK) {
                st = tvt->wait_chunk(plan->comm->t, ctx, c - 1);
                set_window(d, c - 1, n);
                if (st == QGMM_OK)
                    st = ctx->vt->ep_unpack(ctx, d, QGMM_EP_DISPATCH, &rw, row_bytes, &none, out, os, blocked, of);
            }
        }
    }
    set_window(d, 0, 1);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    return qgmm_device_check_enqueued(ctx, st, op, "out", "fewer rows than this rank receives");
}

static qgmm_status combine_check(qgmm_ep_plan *plan, qgmm_context *ctx, const qgmm_tensor *y,
                                 const qgmm_tensor *w, const qgmm_tensor *out, int64_t *row_bytes)
{
    const qgmm_ep_desc *d = &plan->d;
    int has_w = 0;
    if (!plan->routed)
        return qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT, "the plan was never routed (qgmm_ep_route)");
    QGMM_TRY(need_slot(ctx, ctx->vt->ep_pack, "pack"));
    QGMM_TRY(need_slot(ctx, ctx->vt->ep_unpack, "unpack"));
    if (plan->d.own_direct) QGMM_TRY(need_slot(ctx, ctx->vt->ep_own_rows, "own-rows"));
    QGMM_TRY(qgmm_check_tensor(ctx, "y", y, QGMM_MASK_HP, 2, 2));
    QGMM_TRY(qgmm_check_rows_contiguous(ctx, "y", y));
    QGMM_TRY(check_weights(ctx, plan, w, &has_w));
    QGMM_TRY(qgmm_check_tensor(ctx, "out", out, QGMM_MASK_OUT, 2, 2));
    QGMM_TRY(qgmm_check_shape(ctx, "out", out, 2, d->tokens, y->shape[1], 0));
    *row_bytes = qgmm_ep_wire_row_bytes(y->dtype, y->shape[1], 0);
    QGMM_TRY(check_row_bytes(ctx, plan, *row_bytes));
    const qgmm_arg outs[] = {{"out", out}};
    const qgmm_arg ins[] = {{"y", y}, {"weights", w}};
    return qgmm_check_aliasing(ctx, NULL, outs, QGMM_NARGS(outs), ins, QGMM_NARGS(ins));
}

qgmm_status qgmm_ep_combine(qgmm_ep_plan *plan, const qgmm_tensor *y, const qgmm_tensor *weights,
                            const qgmm_tensor *out)
{
    static const char op[] = "qgmm_ep_combine";
    qgmm_context *ctx = NULL;
    QGMM_TRY(plan_ctx(plan, op, &ctx));
    int64_t row_bytes = 0;
    qgmm_status st = combine_check(plan, ctx, y, weights, out, &row_bytes);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    qgmm_ep_desc *d = &plan->d;
    const qgmm_tensor sw = qgmm_ep_bytes(plan->send_wire);
    const int64_t rn[1] = {(int64_t)(qgmm_buffer_size(plan->recv_wire) / qgmm_dtype_size(y->dtype))};
    const qgmm_tensor rw = qgmm_tensor_make(plan->recv_wire, 0, y->dtype, 1, rn); /* rows of y's dtype */
    const qgmm_tensor none = {0};
    const qgmm_tensor *w = qgmm_present(weights) ? weights : &none;
    /* the reverse exchange: what this rank received goes back; a token's rows may land in
     * any chunk, so the sums wait for all of them (with own_direct the own rows are read
     * from y) */
    if (!d->own_direct) {
        st = send_whole(plan, QGMM_EP_COMBINE, y, &none, &none, &sw, &rw, row_bytes);
        if (st == QGMM_OK) st = ctx->vt->ep_unpack(ctx, d, QGMM_EP_COMBINE, &rw, row_bytes, w, out, &none, 0, &none);
    } else {
        const int n = chunks_of(plan, row_bytes), peers = d->nranks > 1;
        for (int c = 0; c < n && peers && st == QGMM_OK; ++c)
            st = send_chunk(plan, QGMM_EP_COMBINE, c, n, y, &none, &none, &sw, &rw, row_bytes);
        for (int c = 0; c < n && peers && st == QGMM_OK; ++c) st = plan->comm->tvt->wait_chunk(plan->comm->t, ctx, c);
        set_window(d, 0, 1);
        if (st == QGMM_OK)
            st = ctx->vt->ep_own_rows(ctx, d, QGMM_EP_COMBINE, y, &none, w, &rw, row_bytes, out, &none, 0, &none);
    }
    set_window(d, 0, 1);
    if (st != QGMM_OK) return qgmm_error_prefix(ctx, st, "%s: ", op);
    return qgmm_device_check_enqueued(ctx, st, op, "y", "fewer rows than this rank received");
}
