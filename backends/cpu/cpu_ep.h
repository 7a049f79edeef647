/*
 * cpu_ep.h — the CPU reference's expert-parallel routing ops (cpu_ep.c), the slots
 * ep_route, ep_layout, ep_pack and ep_unpack of api/qgmm_backend.h.
 */
#ifndef QGMM_CPU_EP_H
#define QGMM_CPU_EP_H

#include "qgmm_backend.h"

qgmm_status qgmm_cpu_ep_route(qgmm_context *ctx, const qgmm_ep_desc *d, const qgmm_tensor *expert_ids);
qgmm_status qgmm_cpu_ep_layout(qgmm_context *ctx, const qgmm_ep_desc *d);
qgmm_status qgmm_cpu_ep_pack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *x,
                             const qgmm_tensor *x_scales, const qgmm_tensor *weights, const qgmm_tensor *wire,
                             int64_t row_bytes);
qgmm_status qgmm_cpu_ep_unpack(qgmm_context *ctx, const qgmm_ep_desc *d, qgmm_ep_dir dir, const qgmm_tensor *wire,
                               int64_t row_bytes, const qgmm_tensor *weights, const qgmm_tensor *out,
                               const qgmm_tensor *out_scales, int scales_blocked, const qgmm_tensor *offs_out);

#endif /* QGMM_CPU_EP_H */
