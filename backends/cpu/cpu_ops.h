/*
 * cpu_ops.h — the CPU reference backend's op entry points (one file per family:
 * cpu_cast.c, cpu_layout.c, cpu_gemm.c, cpu_ep.c) and the services they share (cpu_backend.c).
 *
 * Arguments arrive validated by api/ (see api/qgmm_backend.h). The CPU backend is the
 * numerics oracle: plain C11, every per-element rule from the kernels/ headers, inputs read
 * through their strides, outputs written through their strides.
 */
#ifndef QGMM_CPU_OPS_H
#define QGMM_CPU_OPS_H

#include "qgmm_backend.h"

/* Raises bits in the context's device status word (reported by qgmm_synchronize). Used
 * for bad offsets: the op then returns QGMM_OK having written nothing. */
void qgmm_cpu_raise_status(qgmm_context *ctx, uint32_t bits);

/* Element access through a tensor's strides (CPU buffers are host memory). */
static inline int64_t qgmm_cpu_elem_index(const qgmm_tensor *t, int64_t i0, int64_t i1, int64_t i2)
{
    int64_t idx = 0;
    const int64_t ii[3] = {i0, i1, i2};
    for (int d = 0; d < t->rank; ++d) idx += ii[d] * t->strides[d];
    return idx;
}
/* Reads element as f32 (f32/bf16/f16 inputs), through the strides. */
float qgmm_cpu_load_f32(const qgmm_tensor *t, int64_t linear_elem_index);
/* Writes an f32 as the tensor's float dtype (f32 or bf16 round-to-nearest-even). */
void qgmm_cpu_store_f32(const qgmm_tensor *t, int64_t linear_elem_index, float v);
/* The same on element i of `data` read or written as `dtype`. */
float qgmm_cpu_load_at(const void *data, qgmm_dtype dtype, int64_t i);
void qgmm_cpu_store_at(void *data, qgmm_dtype dtype, int64_t i, float v);

/* Every cast and dequantize (cpu_cast.c). */
qgmm_status qgmm_cpu_cast(qgmm_context *ctx, const qgmm_cast_problem *p);
qgmm_status qgmm_cpu_scales_to_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                       const qgmm_tensor *in, const qgmm_tensor *offs,
                                       const qgmm_tensor *out, const qgmm_tensor *group_starts);
qgmm_status qgmm_cpu_scales_from_blocked(qgmm_context *ctx, qgmm_blocked_variant v,
                                         const qgmm_tensor *in, const qgmm_tensor *offs,
                                         const qgmm_tensor *out);
qgmm_status qgmm_cpu_pad_token_groups(qgmm_context *ctx, int alignment, const qgmm_tensor *x,
                                      const qgmm_tensor *offs, const qgmm_tensor *out,
                                      const qgmm_tensor *padded_start,
                                      const qgmm_tensor *padded_offs);
qgmm_status qgmm_cpu_unpad_token_groups(qgmm_context *ctx, int alignment,
                                        const qgmm_tensor *x_padded, const qgmm_tensor *offs,
                                        const qgmm_tensor *out);
qgmm_status qgmm_cpu_group_row_ids(qgmm_context *ctx, const qgmm_tensor *offs,
                                   const qgmm_tensor *padded_offs, const qgmm_tensor *row_ids);
qgmm_status qgmm_cpu_grouped_gemm(qgmm_context *ctx, const qgmm_gemm_problem *p);

#endif /* QGMM_CPU_OPS_H */
