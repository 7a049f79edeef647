/* Composite MoE expert forward/backward: built on the public ops (issue 6).
 * Not implemented yet: every call reports QGMM_ERR_UNSUPPORTED with a message. */
#include "validate.h"

size_t qgmm_moe_workspace_bytes(const qgmm_moe_params *p, int64_t M, int64_t N, int64_t K, int64_t E)
{
    (void)p; (void)M; (void)N; (void)K; (void)E;
    return 0;
}

qgmm_status qgmm_moe_experts_forward(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                     const qgmm_tensor *w, const qgmm_tensor *offs, const qgmm_tensor *y,
                                     qgmm_buffer *workspace)
{
    (void)p; (void)x; (void)w; (void)offs; (void)y; (void)workspace;
    QGMM_TRY(qgmm_check_ctx(ctx));
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "qgmm_moe_experts_forward is not implemented yet");
}

qgmm_status qgmm_moe_experts_backward(qgmm_context *ctx, const qgmm_moe_params *p, const qgmm_tensor *x,
                                      const qgmm_tensor *w, const qgmm_tensor *dy, const qgmm_tensor *offs,
                                      const qgmm_tensor *dx, const qgmm_tensor *dw, qgmm_buffer *workspace)
{
    (void)p; (void)x; (void)w; (void)dy; (void)offs; (void)dx; (void)dw; (void)workspace;
    QGMM_TRY(qgmm_check_ctx(ctx));
    return qgmm_set_error(ctx, QGMM_ERR_UNSUPPORTED, "qgmm_moe_experts_backward is not implemented yet");
}
