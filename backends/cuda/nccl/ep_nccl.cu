/*
 * ep_nccl.cu — the NCCL transport of expert parallelism (docs/ep.md, "Transports"), built
 * only when CMake finds NCCL (QGMM_HAVE_NCCL). Everything is enqueued on the context's
 * stream; nothing reads device memory on the host. The wire exchange moves whole slots
 * (cap_rows rows per peer) so the device-side counts never need a host read: one
 * ncclAlltoAll. The counts go as grouped ncclSend/ncclRecv of per_peer ints.
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

void destroy(qgmm_ep_transport *tp)
{
    nccl_transport *t = (nccl_transport *)tp;
    if (!t) return;
    if (t->owned) ncclCommDestroy(t->comm);
    free(t);
}

const qgmm_ep_transport_vtable g_nccl_vt = {"nccl", exchange_counts, alltoallv, destroy};

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
