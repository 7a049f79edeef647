/*
 * ep_internal.h — the structs behind the expert-parallel handles (docs/ep.md), shared by
 * api/ep.c (communicators, plans, route / dispatch / combine), api/ep_loopback.c (the
 * in-process transport) and api/moe_ep.c (the layer).
 */
#ifndef QGMM_EP_INTERNAL_H
#define QGMM_EP_INTERNAL_H

#include "qgmm_internal.h"

struct qgmm_ep_comm {
    qgmm_context *ctx;
    int nranks, rank;
    const qgmm_ep_transport_vtable *tvt;
    qgmm_ep_transport *t;
};

struct qgmm_ep_plan {
    qgmm_ep_comm *comm;
    qgmm_ep_desc d;          /* the device state the backend ops read and write */
    int64_t max_tokens;
    int64_t max_row_bytes;
    int routed;              /* qgmm_ep_route was enqueued at least once */
    int64_t *local_ids;      /* host (L): global id of each local expert */
    qgmm_buffer *tables;     /* every i32 table of d */
    qgmm_buffer *send_wire, *recv_wire;
};

/* ep_loopback.c: the transports of an in-process group of n ranks (t[i], vt for all). */
qgmm_status qgmm_ep_loopback_create(int n, qgmm_ep_transport **t, const qgmm_ep_transport_vtable **vt);

/* ep.c: a u8 rank-1 view of a whole buffer (the wires). */
qgmm_tensor qgmm_ep_bytes(qgmm_buffer *buf);

#endif /* QGMM_EP_INTERNAL_H */
