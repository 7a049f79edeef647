/*
 * cast_ops_table.cu — the vtable slots of the cast, layout and padding launchers
 * (cast_*.cu, layout_*.cu). Named like them so that the HIP plugin and its host emulation,
 * which compile exactly those files, share the list with the CUDA plugin.
 */
#include "cuda_internal.h"

extern "C" void qgmm_cuda_fill_cast_ops(qgmm_backend_vtable *v)
{
    v->cast = qgmm_cuda_cast;
    v->quantize_fp8_rowwise_dual = qgmm_cuda_quantize_fp8_rowwise_dual;
    v->pad_cast = qgmm_cuda_pad_cast;
    v->mx_round_trip = qgmm_cuda_mx_round_trip;
    v->scales_to_blocked = qgmm_cuda_scales_to_blocked;
    v->scales_from_blocked = qgmm_cuda_scales_from_blocked;
    v->pad_token_groups = qgmm_cuda_pad_token_groups;
    v->unpad_token_groups = qgmm_cuda_unpad_token_groups;
    v->group_row_ids = qgmm_cuda_group_row_ids;
}
