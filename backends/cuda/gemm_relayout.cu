/*
 * gemm_relayout.cu — BF16 operands that are not K-contiguous (the (E, K, N) view of expert
 * weights in dgrad, row-major token-major operands in wgrad) are copied once into a
 * K-contiguous scratch layout so the Hopper wgmma/TMA kernel can take them; without this
 * such calls fall to the portable mma.sync kernel at about a third of the speed. A bf16
 * copy is exact, so results are those of the same GEMM on contiguous operands.
 */
#include "cuda_internal.h"
#include "gemm_problem.cuh"

namespace {

constexpr int QG_RT = 32; /* tile edge */

/* dst[g][r][k] (row stride ld, group stride gs) = src[g*s_grp + r*s_row + k*s_k]. Reads run
 * along r (the source's contiguous dim in the cases above), writes along k, through a
 * padded shared tile. */
__global__ void qg_relayout_bf16(const uint16_t *__restrict__ src, int64_t s_grp, int64_t s_row,
                                 int64_t s_k, uint16_t *__restrict__ dst, int64_t rows, int64_t kdim,
                                 int64_t ld, int64_t gs)
{
    __shared__ uint16_t tile[QG_RT][QG_RT + 2];
    const int64_t g = blockIdx.z;
    const int64_t r0 = (int64_t)blockIdx.y * QG_RT, k0 = (int64_t)blockIdx.x * QG_RT;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int j = ty; j < QG_RT; j += blockDim.y) {
        const int64_t r = r0 + tx, k = k0 + j;
        if (r < rows && k < kdim) tile[j][tx] = src[g * s_grp + r * s_row + k * s_k];
    }
    __syncthreads();
    for (int j = ty; j < QG_RT; j += blockDim.y) {
        const int64_t r = r0 + j, k = k0 + tx;
        if (r < rows && k < ld) dst[g * gs + r * ld + k] = k < kdim ? tile[tx][j] : (uint16_t)0;
    }
}

int64_t qg_round8(int64_t v) { return (v + 7) / 8 * 8; }

/* Bytes one operand needs in K-contiguous form: groups x rows x round8(kdim) bf16. */
size_t qg_relayout_bytes(int64_t groups, int64_t rows, int64_t kdim)
{
    return (size_t)(groups * rows * qg_round8(kdim)) * 2 + 256;
}

void qg_relayout(qg_operand *op, int64_t groups, int64_t rows, int64_t kdim, uint16_t *dst,
                 cudaStream_t stream)
{
    const int64_t ld = qg_round8(kdim), gs = rows * ld;
    dim3 block(QG_RT, 8), grid((unsigned)((ld + QG_RT - 1) / QG_RT), (unsigned)((rows + QG_RT - 1) / QG_RT),
                               (unsigned)groups);
    qg_relayout_bf16<<<grid, block, 0, stream>>>((const uint16_t *)op->ptr, op->s_grp, op->s_row, op->s_k,
                                                 dst, rows, kdim, ld, gs);
    op->ptr = (const uint8_t *)dst;
    op->s_grp = groups > 1 ? gs : 0;
    op->s_row = ld;
    op->s_k = 1;
}

} // namespace

extern "C" void qgmm_cuda_gemm_relayout_bf16(qgmm_context *ctx, qg_problem *p)
{
    qgmm_cuda_ctx *c = qgmm_cuda_ctx_of(ctx);
    if (p->elem != QG_ELEM_BF16 || c->cc_major != 9 || p->kdim <= 0) return;
    const int fix_a = p->a.s_k != 1, fix_b = p->b.s_k != 1;
    if (!fix_a && !fix_b) return;
    const int64_t ga = 1, gb = p->kind == QG_M_GROUPED ? p->groups : 1;
    const size_t na = fix_a ? qg_relayout_bytes(ga, p->rows, p->kdim) : 0;
    const size_t nb = fix_b ? qg_relayout_bytes(gb, p->cols, p->kdim) : 0;
    uint8_t *s = (uint8_t *)qgmm_cuda_scratch(ctx, na + nb);
    if (!s) return; /* no scratch: the portable kernel takes the strided operands */
    if (fix_a) qg_relayout(&p->a, ga, p->rows, p->kdim, (uint16_t *)s, c->stream);
    if (fix_b) qg_relayout(&p->b, gb, p->cols, p->kdim, (uint16_t *)(s + na), c->stream);
}
