/*
 * ep_nccl.cu — the NCCL transport of expert parallelism (docs/ep.md, "Transports"), built
 * only when CMake finds NCCL (QGMM_HAVE_NCCL). Everything is enqueued in order with the
 * context's stream; nothing reads device memory on the host. The wire exchange moves whole
 * slots (cap_rows rows per peer) so the device-side counts never need a host read: one
 * ncclAlltoAll, or in chunks (exchange_chunk: rows [lo, hi) of every peer's slot as grouped
 * ncclSend/ncclRecv; the own slot never moves) on the transport's own stream, so the pack
 * of the next chunk and the unpack of the last run beside it; events order the two streams.
 * The counts go as grouped ncclSend/ncclRecv of per_peer ints.
 * NVLink multicast is left as NCCL's environment sets it; qgmm never enables it.
 */
#include "cuda_internal.h"
#include "cuda_ep.h"

#include <nccl.h>
#include <stdlib.h>
#include <string.h>

static_assert(sizeof(ncclUniqueId) == QGMM_EP_UNIQUE_ID_BYTES, "QGMM_EP_UNIQUE_ID_BYTES is NCCL's unique id size");

namespace {

struct nccl_transport {
    ncclComm_t comm;
    int owned; /* created from a unique id: destroyed with the transport */
    int nranks, rank;
    cudaStream_t side;                        /* the chunks' exchanges */
    cudaEvent_t ready[QGMM_EP_MAX_CHUNKS];    /* the context's stream reached chunk c */
    cudaEvent_t done[QGMM_EP_MAX_CHUNKS];     /* chunk c has landed */
};

qgmm_status nccl_check(qgmm_context *ctx, ncclResult_t r, const char *what)
{
    if (r == ncclSuccess) return QGMM_OK;
    return qgmm_set_error(ctx, r == ncclInvalidArgument || r == ncclInvalidUsage ? QGMM_ERR_INVALID_ARGUMENT
                                                                                 : QGMM_ERR_DEVICE,
                          "%s: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(NULL));
}

qgmm_status exchange_counts(qgmm_ep_transport *tp, qgmm_context *ctx, const qgmm_tensor *send,
                            const qgmm_tensor *recv, int64_t per_peer)
{
    nccl_transport *t = (nccl_transport *)tp;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    cudaStream_t s = qgmm_cuda_ctx_of(ctx)->stream;
    const int32_t *snd = (const int32_t *)qgmm_tensor_data(send);
    int32_t *rcv = (int32_t *)qgmm_tensor_data(recv);
    ncclResult_t r = ncclGroupStart();
    for (int p = 0; p < t->nranks && r == ncclSuccess; ++p) {
        r = ncclSend(snd + p * per_peer, (size_t)per_peer, ncclInt32, p, t->comm, s);
        if (r == ncclSuccess) r = ncclRecv(rcv + p * per_peer, (size_t)per_peer, ncclInt32, p, t->comm, s);
    }
    const ncclResult_t e = ncclGroupEnd();
    return nccl_check(ctx, r != ncclSuccess ? r : e, "ep exchange_counts (ncclSend/ncclRecv)");
}

qgmm_status alltoallv(qgmm_ep_transport *tp, qgmm_context *ctx, const qgmm_tensor *send, const qgmm_tensor *recv,
                      int64_t row_bytes, int64_t cap_rows, const qgmm_tensor *send_rows,
                      const qgmm_tensor *recv_rows)
{
    (void)send_rows;
    (void)recv_rows;
    nccl_transport *t = (nccl_transport *)tp;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    /* slot p of send goes to rank p's slot `rank`: exactly ncclAlltoAll of one slot's bytes */
    return nccl_check(ctx, ncclAlltoAll(qgmm_tensor_data(send), qgmm_tensor_data(recv), (size_t)(cap_rows * row_bytes),
                                        ncclUint8, t->comm, qgmm_cuda_ctx_of(ctx)->stream),
                      "ep alltoallv (ncclAlltoAll)");
}

qgmm_status exchange_chunk(qgmm_ep_transport *tp, qgmm_context *ctx, const qgmm_tensor *send,
                           const qgmm_tensor *recv, int64_t row_bytes, int64_t cap_rows, int64_t lo, int64_t hi,
                           int c)
{
    nccl_transport *t = (nccl_transport *)tp;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    cudaStream_t s = qgmm_cuda_ctx_of(ctx)->stream;
    st = qgmm_cuda_check(ctx, cudaEventRecord(t->ready[c], s), "cudaEventRecord");
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, cudaStreamWaitEvent(t->side, t->ready[c], 0), "cudaStreamWaitEvent");
    if (st != QGMM_OK) return st;
    const uint8_t *snd = (const uint8_t *)qgmm_tensor_data(send);
    uint8_t *rcv = (uint8_t *)qgmm_tensor_data(recv);
    const size_t bytes = (size_t)((hi - lo) * row_bytes);
    const size_t at = (size_t)(lo * row_bytes), slot = (size_t)(cap_rows * row_bytes);
    /* slot p goes to rank p's slot `rank`; the own slot is not moved (own_direct: the
     * backend reads the own rows where they are) */
    ncclResult_t r = ncclGroupStart();
    for (int p = 0; p < t->nranks && r == ncclSuccess; ++p) {
        if (p == t->rank) continue;
        r = ncclSend(snd + p * slot + at, bytes, ncclUint8, p, t->comm, t->side);
        if (r == ncclSuccess) r = ncclRecv(rcv + p * slot + at, bytes, ncclUint8, p, t->comm, t->side);
    }
    const ncclResult_t e = ncclGroupEnd();
    st = nccl_check(ctx, r != ncclSuccess ? r : e, "ep exchange_chunk (ncclSend/ncclRecv)");
    if (st == QGMM_OK) st = qgmm_cuda_check(ctx, cudaEventRecord(t->done[c], t->side), "cudaEventRecord");
    return st;
}

qgmm_status wait_chunk(qgmm_ep_transport *tp, qgmm_context *ctx, int c)
{
    nccl_transport *t = (nccl_transport *)tp;
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    return qgmm_cuda_check(ctx, cudaStreamWaitEvent(qgmm_cuda_ctx_of(ctx)->stream, t->done[c], 0),
                           "cudaStreamWaitEvent");
}

void destroy(qgmm_ep_transport *tp)
{
    nccl_transport *t = (nccl_transport *)tp;
    if (!t) return;
    if (t->owned) ncclCommDestroy(t->comm);
    for (int c = 0; c < QGMM_EP_MAX_CHUNKS; ++c) {
        if (t->ready[c]) cudaEventDestroy(t->ready[c]);
        if (t->done[c]) cudaEventDestroy(t->done[c]);
    }
    if (t->side) cudaStreamDestroy(t->side);
    free(t);
}

const qgmm_ep_transport_vtable g_nccl_vt = {"nccl", exchange_counts, alltoallv, destroy, exchange_chunk, wait_chunk};

qgmm_status transport_create(qgmm_context *ctx, qgmm_ep_transport_kind kind, const void *handle, int nranks,
                             int rank, const qgmm_ep_transport_vtable **vt, qgmm_ep_transport **out,
                             int *out_nranks, int *out_rank)
{
    qgmm_status st = qgmm_cuda_enter(ctx);
    if (st != QGMM_OK) return st;
    nccl_transport *t = (nccl_transport *)calloc(1, sizeof *t);
    if (!t) return qgmm_set_error(ctx, QGMM_ERR_OUT_OF_MEMORY, "ep nccl transport: out of host memory");
    if (kind == QGMM_EP_TRANSPORT_NCCL_COMM) {
        t->comm = (ncclComm_t)handle;
        int dev = -1;
        st = nccl_check(ctx, ncclCommCuDevice(t->comm, &dev), "ncclCommCuDevice");
        if (st == QGMM_OK && dev != qgmm_cuda_ctx_of(ctx)->device)
            st = qgmm_set_error(ctx, QGMM_ERR_INVALID_ARGUMENT,
                                "nccl_comm is on CUDA device %d; the context is on device %d", dev,
                                qgmm_cuda_ctx_of(ctx)->device);
    } else {
        ncclUniqueId id;
        memcpy(&id, handle, sizeof id);
        st = nccl_check(ctx, ncclCommInitRank(&t->comm, nranks, id, rank), "ncclCommInitRank");
        t->owned = st == QGMM_OK;
    }
    if (st == QGMM_OK) st = nccl_check(ctx, ncclCommCount(t->comm, &t->nranks), "ncclCommCount");
    if (st == QGMM_OK) st = nccl_check(ctx, ncclCommUserRank(t->comm, &t->rank), "ncclCommUserRank");
    if (st == QGMM_OK)
        st = qgmm_cuda_check(ctx, cudaStreamCreateWithFlags(&t->side, cudaStreamNonBlocking), "cudaStreamCreate");
    for (int c = 0; c < QGMM_EP_MAX_CHUNKS && st == QGMM_OK; ++c) {
        st = qgmm_cuda_check(ctx, cudaEventCreateWithFlags(&t->ready[c], cudaEventDisableTiming), "cudaEventCreate");
        if (st == QGMM_OK)
            st = qgmm_cuda_check(ctx, cudaEventCreateWithFlags(&t->done[c], cudaEventDisableTiming), "cudaEventCreate");
    }
    if (st != QGMM_OK) {
        destroy(t);
        return st;
    }
    *vt = &g_nccl_vt;
    *out = t;
    *out_nranks = t->nranks;
    *out_rank = t->rank;
    return QGMM_OK;
}

qgmm_status unique_id(qgmm_context *ctx, void *id_out)
{
    ncclUniqueId id;
    const qgmm_status st = nccl_check(ctx, ncclGetUniqueId(&id), "ncclGetUniqueId");
    if (st == QGMM_OK) memcpy(id_out, &id, sizeof id);
    return st;
}

} // namespace

extern "C" void qgmm_cuda_fill_ep_transport(qgmm_backend_vtable *v)
{
    v->ep_transport_create = transport_create;
    v->ep_unique_id = unique_id;
}
