/*
 * cuda_ep.h — expert parallelism on the CUDA plugin (docs/ep.md): the four ep_* routing
 * slots (ep_route.cu) and, when NCCL was found at configure time, the NCCL transport
 * (nccl/ep_nccl.c, QGMM_HAVE_NCCL).
 */
#ifndef QGMM_CUDA_EP_H
#define QGMM_CUDA_EP_H

#include "qgmm_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets ep_route, ep_layout, ep_pack, ep_unpack and, with NCCL, the transport slots. */
void qgmm_cuda_fill_ep_ops(qgmm_backend_vtable *v);
/* Sets ep_transport_create and ep_unique_id (nccl/ep_nccl.c). */
void qgmm_cuda_fill_ep_transport(qgmm_backend_vtable *v);

#ifdef __cplusplus
}
#endif

#endif
